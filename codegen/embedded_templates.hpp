#pragma once
// The templates/<op>/*.cuh sources (by file name), compiled into the library by cmake/embed_templates.cmake.
#include <string>
#include <vector>

namespace dbsparse::codegen {

struct EmbeddedTemplate {
  const char* name;  // file name, e.g. "spmv_csr_scalar.cuh"; what generated sources #include
  const char* source;
};

const std::vector<EmbeddedTemplate>& embedded_templates();

// Hash over every template's name and text: part of every cache key.
const std::string& templates_hash();

}  // namespace dbsparse::codegen

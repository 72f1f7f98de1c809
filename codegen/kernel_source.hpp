#pragma once
// The output of the pure key -> source stage: everything NVRTC needs, nothing that touches CUDA.
#include <string>
#include <string_view>
#include <vector>

namespace dbsparse::codegen {

struct KernelSource {
  std::string key;                            // the variant's text form; names it everywhere
  std::string source;                         // the generated translation unit
  std::vector<std::string> options;           // canonical NVRTC options, arch excluded
  std::vector<std::string> name_expressions;  // kernels to look up after compilation
  // The role of each name expression ("partial", "finalize"), in the same order: plans ask a loaded
  // kernel for its entry point by role, never by position. Not part of any cache key: roles name
  // what the host does with a kernel, not what is compiled.
  std::vector<std::string> entry_names;

  // Declares one entry point: its role and the name expression NVRTC lowers.
  void add_entry(std::string role, std::string name_expression) {
    entry_names.push_back(std::move(role));
    name_expressions.push_back(std::move(name_expression));
  }
};

std::string join_options(const std::vector<std::string>& options);

}  // namespace dbsparse::codegen

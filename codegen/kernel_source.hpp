#pragma once
// The output of the pure key -> source stage: everything NVRTC needs, nothing that touches CUDA.
#include <string>
#include <vector>

namespace dbsparse::codegen {

struct KernelSource {
  std::string key;                            // the variant's text form; names it everywhere
  std::string source;                         // the generated translation unit
  std::vector<std::string> options;           // canonical NVRTC options, arch excluded
  std::vector<std::string> name_expressions;  // kernels to look up after compilation
};

std::string join_options(const std::vector<std::string>& options);

}  // namespace dbsparse::codegen

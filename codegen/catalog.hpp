#pragma once
// Every kernel variant of every op, as sources: what `precompile`, dbtune and the nvrtc test tier
// walk. An op added to dbsparse registers its search space here.
#include <string>
#include <vector>

#include "codegen/kernel_source.hpp"

namespace dbsparse::codegen {

const std::vector<std::string>& known_ops();  // "spmv", "spmspv"
// Throws UsageError for an unknown op. What is compiled ahead; include_opt_in adds the variants
// only an explicit config selects (the nvrtc tier compiles those too).
std::vector<KernelSource> op_variants(const std::string& op, bool include_opt_in = false);

}  // namespace dbsparse::codegen

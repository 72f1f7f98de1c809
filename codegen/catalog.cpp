#include "codegen/catalog.hpp"

#include "codegen/spmspv_key.hpp"
#include "codegen/spmv_key.hpp"

namespace dbsparse::codegen {

const std::vector<std::string>& known_ops() {
  static const std::vector<std::string> ops = {"spmv", "spmspv"};
  return ops;
}

std::vector<KernelSource> op_variants(const std::string& op, bool include_opt_in) {
  std::vector<KernelSource> out;
  if (op == "spmv") {
    for (const auto& k : spmv_search_space()) out.push_back(make_source(k));
  } else if (op == "spmspv") {
    for (const auto& k : spmspv_search_space(include_opt_in)) out.push_back(make_source(k));
  } else {
    throw UsageError("unknown op '" + op + "' (known: spmv, spmspv)");
  }
  return out;
}

}  // namespace dbsparse::codegen

#pragma once
// DB-Decoding's own kernels, e.g. "sparse_linear.sparsify.f32.b256": the activation sparsifier (the
// product itself is an SpMSpV plan's kernel, spmspv.*).
#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_source.hpp"
#include "codegen/keys/value_type.hpp"

namespace dbsparse::codegen {

struct SparseLinearKey {
  ValueType value = ValueType::F32;
  int block = 256;

  std::string to_string() const;
  static SparseLinearKey parse(std::string_view text);  // throws UsageError
  auto operator<=>(const SparseLinearKey&) const = default;
};

// Entry point "sparsify" (sparsify_threshold); the column bitmap layout runs on the decoding kernels.
KernelSource make_source(const SparseLinearKey& key);
std::vector<SparseLinearKey> sparse_linear_search_space();

}  // namespace dbsparse::codegen

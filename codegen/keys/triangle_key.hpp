#pragma once
// Triangle counting's kernels (templates/apps/triangles.cuh), one module per key, e.g.
// "triangles.b256": the threads of a block. Indices only, so no value type in the key; the mask
// sum of the baseline pipeline is instantiated for both value types in the same module.
#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_source.hpp"

namespace dbsparse::codegen {

struct TriangleKey {
  int block = 256;  // a multiple of 32 in [32, 1024]
  std::string to_string() const;
  static TriangleKey parse(std::string_view text);  // throws UsageError
  auto operator<=>(const TriangleKey&) const = default;
};

// Entry points, by role: "count" (tri_count<BLOCK>), "mask_sum_f32" and "mask_sum_f64"
// (tri_mask_sum<float | double, BLOCK>).
KernelSource make_source(const TriangleKey& key);
// The library's block (256) and 128 and 512.
std::vector<TriangleKey> triangle_search_space();

}  // namespace dbsparse::codegen

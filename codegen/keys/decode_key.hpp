#pragma once
// The decoding layer's kernels in a storage type, e.g. "decode_linear.colbitmap.f16.w8x8": the
// column bitmap product with lanes across rows, by columns and by row blocks, and the top-k
// threshold (templates/decode/decode_bitmap.cuh).
#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_source.hpp"

namespace dbsparse::codegen {

enum class DecodeDtype { F16, BF16, F32 };
const char* to_string(DecodeDtype d);

struct DecodeKey {
  DecodeDtype dtype = DecodeDtype::F16;
  std::string to_string() const;
  static DecodeKey parse(std::string_view text);  // throws UsageError
  auto operator<=>(const DecodeKey&) const = default;
};

// Entry points, by role (KernelSource::add_entry): "columns" (decode_fused, 8 warps, 8-column
// windows), "topk" (decode_topk_list), "row_blocks_1", "row_blocks_2", "row_blocks_4" (decode_rows,
// 8 warps, 1, 2 or 4 mask words a block), "ring" (decode_lanes_ring), "dense_columns"
// (decode_dense_cols) and, for f16 and bf16 only, "dense" (decode_dense, tensor-core mma) and
// "tiles_[warp_]w<W>s<S>" (decode_tiles, decode_tiles_warp: the tile bitmap layout on tensor-core
// mma; decode_tiles_entry).
KernelSource make_source(const DecodeKey& key);
// The role of decode_tiles (per_warp: decode_tiles_warp) with `warps` warps a block (4 or 8) and
// `stages` stages a warp (2 or 3), "tiles_[warp_]w<W>s<S>"; UsageError otherwise.
std::string decode_tiles_entry(int warps, int stages, bool per_warp = false);
// The role of decode_rows over `words` mask words (1, 2 or 4; UsageError otherwise).
const char* decode_row_blocks_entry(int words);
std::vector<DecodeKey> decode_search_space();

}  // namespace dbsparse::codegen

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

// Entry points: decode_fused<8 warps, 8-column windows>, decode_topk_list, decode_rows<8 warps, R>
// for R = 1, 2, 4, decode_lanes<8 warps> (in that order).
KernelSource make_source(const DecodeKey& key);
std::vector<DecodeKey> decode_search_space();

}  // namespace dbsparse::codegen

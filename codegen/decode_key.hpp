#pragma once
// The decoding layer's kernels in a storage type, e.g. "decode_linear.colbitmap.f16.w8": the
// active-column list and the column bitmap product (templates/sparse_linear.cuh).
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

KernelSource make_source(const DecodeKey& key);  // entry points: decode_list, decode_push, decode_topk_list
std::vector<DecodeKey> decode_search_space();

}  // namespace dbsparse::codegen

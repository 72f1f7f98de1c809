#include "codegen/keys/decode_key.hpp"

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/abi/decode.h"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {
namespace {
const char* tag(DecodeDtype d) {
  switch (d) {
    case DecodeDtype::F16:
      return "dbs::ValF16";
    case DecodeDtype::BF16:
      return "dbs::ValBF16";
    case DecodeDtype::F32:
      return "dbs::ValF32";
  }
  return "?";
}
}  // namespace

const char* to_string(DecodeDtype d) {
  switch (d) {
    case DecodeDtype::F16:
      return "f16";
    case DecodeDtype::BF16:
      return "bf16";
    case DecodeDtype::F32:
      return "f32";
  }
  return "?";
}

namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw UsageError(fmt::format("bad decode kernel key '{}': {} (form: decode_linear.colbitmap.f16.w8x8)", text, why));
}

const KeyText<DecodeKey>& decode_text() {
  using K = DecodeKey;
  static const KeyText<K> t(
      {
          word("decode_linear"),
          word("colbitmap"),
          choice("dtype", &K::dtype, {DecodeDtype::F16, DecodeDtype::BF16, DecodeDtype::F32}),
          word("w8x8"),
      },
      bad);
  return t;
}

}  // namespace

std::string DecodeKey::to_string() const { return decode_text().print(*this); }

DecodeKey DecodeKey::parse(std::string_view text) { return decode_text().parse(text); }

KernelSource make_source(const DecodeKey& key) {
  KernelSource ks;
  ks.key = key.to_string();
  ks.source = fmt::format(
      "// dbsparse generated kernel: {}\n#include \"decode_lanes_ring.cuh\"\n#include \"decode_dense_cols.cuh\"\n{}",
      ks.key, key.dtype == DecodeDtype::F32 ? "" : "#include \"decode_dense.cuh\"\n#include \"decode_tiles.cuh\"\n");
  ks.options = {"-std=c++17"};
  const char* t = tag(key.dtype);
  ks.add_entry("columns", fmt::format("dbs::decode_fused<{}, 8, 8>", t));
  ks.add_entry("topk", fmt::format("dbs::decode_topk_list<{}>", t));
  for (int words : {1, 2, 4})
    ks.add_entry(decode_row_blocks_entry(words), fmt::format("dbs::decode_rows<{}, 8, {}>", t, words));
  ks.add_entry("ring",
               fmt::format("dbs::decode_lanes_ring<{}, {}, {}>", t, abi::kDecodeLanesWarps, abi::kDecodeRingStages));
  ks.add_entry("dense_columns", fmt::format("dbs::decode_dense_cols<{}, {}, {}, {}>", t, abi::kDecodeLanesWarps,
                                            abi::kDecodeColsChunks, abi::kDecodeColsUnroll));
  // The dense and tiles paths (mma) take 16-bit values only.
  if (key.dtype != DecodeDtype::F32) {
    ks.add_entry("dense",
                 fmt::format("dbs::decode_dense<{}, {}, {}>", t, abi::kDecodeLanesWarps, abi::kDecodeDenseUnroll));
    for (bool per_warp : {false, true})
      for (int warps : {4, 8})
        for (int stages : {2, 3})
          ks.add_entry(
              decode_tiles_entry(warps, stages, per_warp),
              fmt::format("dbs::{}<{}, {}, {}>", per_warp ? "decode_tiles_warp" : "decode_tiles", t, warps, stages));
  }
  return ks;
}

std::string decode_tiles_entry(int warps, int stages, bool per_warp) {
  if ((warps != 4 && warps != 8) || (stages != 2 && stages != 3))
    throw UsageError(fmt::format("decode tiles of {} warps and {} stages: 4 or 8 warps, 2 or 3 stages", warps, stages));
  return fmt::format("tiles_{}w{}s{}", per_warp ? "warp_" : "", warps, stages);
}

const char* decode_row_blocks_entry(int words) {
  switch (words) {
    case 1:
      return "row_blocks_1";
    case 2:
      return "row_blocks_2";
    case 4:
      return "row_blocks_4";
  }
  throw UsageError(fmt::format("decode row blocks of {} mask words: 1, 2 or 4", words));
}

std::vector<DecodeKey> decode_search_space() {
  return {DecodeKey{DecodeDtype::F16}, DecodeKey{DecodeDtype::BF16}, DecodeKey{DecodeDtype::F32}};
}

}  // namespace dbsparse::codegen

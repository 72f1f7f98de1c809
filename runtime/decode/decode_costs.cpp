// The decoding layers' mappings and the cost model Auto chooses by (include/dbsparse/decode_linear.hpp).
#include <algorithm>
#include <cmath>

#include "codegen/keys/decode_key.hpp"
#include "dbsparse/abi/decode.h"
#include "dbsparse/column_bitmap.hpp"
#include "dbsparse/decode_linear.hpp"
#include "runtime/decode/decode_spec.hpp"

namespace dbsparse {

const char* to_string(DecodeMapping m) {
  switch (m) {
    case DecodeMapping::RowBlocks:
      return "row-blocks";
    case DecodeMapping::Columns:
      return "columns";
    case DecodeMapping::Lanes:
      return "lanes";
    case DecodeMapping::Ring:
      return "ring";
    case DecodeMapping::Dense:
      return "dense";
    case DecodeMapping::DenseColumns:
      return "dense-columns";
    case DecodeMapping::Auto:
      break;
  }
  return "auto";
}

// The public dtype is the key's, enumerator for enumerator.
static_assert(static_cast<int>(DecodeDtype::F16) == static_cast<int>(codegen::DecodeDtype::F16) &&
              static_cast<int>(DecodeDtype::BF16) == static_cast<int>(codegen::DecodeDtype::BF16) &&
              static_cast<int>(DecodeDtype::F32) == static_cast<int>(codegen::DecodeDtype::F32));
const char* to_string(DecodeDtype d) { return codegen::to_string(static_cast<codegen::DecodeDtype>(d)); }

// The cost model: a fixed cost per mapping (launch, list, the sums' atomics and tickets) plus the
// bytes read over a share of the copy bandwidth, less where the grid has fewer blocks than SMs.
// Fitted, not derived: refit when the kernels change. The fit and its misses:
// docs/decisions/decode-cost-model.md.
namespace {

// The fallback device: the GPU the constants were fitted on, assumed for every device because the
// model does not read the device's SM count or bandwidth yet. Its times are that GPU's; on another
// only their order (which mapping is cheaper) is meant to hold. Named here, once, so that reading
// the device's own values replaces these two and nothing else.
struct FallbackDevice {
  static constexpr double kCopyBandwidth = 4200e9;  // bytes/s, measured with the copy kernel
  static constexpr double kSms = 132;
};

constexpr double kRingFixedUs = 5.5, kRingShare = 0.40;
constexpr double kColsFixedUs = 4.0, kColsShare = 0.80;
constexpr double kDenseFixedUs = 4.0, kDenseShare = 0.92;
// The ring reads, per kept column and strip, the strip's 32 mask words and its segment offset.
constexpr double kRingSegmentHeaderBytes = 32 * 4 + 4;

double us(double bytes, double share, double blocks) {
  return bytes / (share * std::min(1.0, blocks / FallbackDevice::kSms) * FallbackDevice::kCopyBandwidth) * 1e6;
}

}  // namespace

DecodeCosts estimate_decode_costs(int32_t rows, int32_t cols, DecodeDtype dtype, double weight_density,
                                  double act_density) {
  const double esize = dtype == DecodeDtype::F32 ? 4 : 2, r = rows, c = cols;
  const double rho = std::clamp(act_density, 0.0, 1.0), omega = std::clamp(weight_density, 0.0, 1.0);
  const double strips = std::ceil(r / kBitmapStripRows);
  DecodeCosts k;
  // Ring: per kept column, each strip's mask words and offset, then its values.
  const double ring_blocks = strips * std::max(1.0, std::ceil(c / kDecodeLanesMinChunk));
  k.ring_us =
      kRingFixedUs + us(rho * (c * strips * kRingSegmentHeaderBytes + r * c * omega * esize), kRingShare, ring_blocks);
  const double slab = abi::decode_cols_slab_rows(static_cast<int>(esize));
  const double slabs = std::ceil(r / slab);
  k.dense_columns_us = kColsFixedUs + us(rho * slabs * slab * c * esize, kColsShare,
                                         slabs * std::max(1.0, std::ceil(c / kDecodeColsMinChunk)));
  k.dense_us = dtype == DecodeDtype::F32 || cols % 8 != 0
                   ? std::nan("")
                   : kDenseFixedUs + us(r * c * esize, kDenseShare, std::ceil(r / 16) * std::max(1.0, c / 128));
  return k;
}

DecodeMapping choose_decode_mapping(int32_t rows, int32_t cols, DecodeDtype dtype, double weight_density,
                                    double act_density, bool allow_dense) {
  const DecodeCosts k = estimate_decode_costs(rows, cols, dtype, weight_density, act_density);
  if (!allow_dense) return DecodeMapping::Ring;
  DecodeMapping best = DecodeMapping::Ring;
  double t = k.ring_us;
  if (k.dense_columns_us < t) best = DecodeMapping::DenseColumns, t = k.dense_columns_us;
  if (k.dense_us < t) best = DecodeMapping::Dense;  // false for NaN
  return best;
}

}  // namespace dbsparse

// The decoding layers' mappings and the cost model Auto chooses by (include/dbsparse/decode_linear.hpp).
#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

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
// bytes read over a share of the device's copy bandwidth, less where the grid has fewer blocks than
// SMs. The bandwidth and SM count are the device profile's; each mapping's share is the profile's
// calibration, and so is its fixed cost (measured by calibrate_decode on the device, at half and at
// all activations kept, interpolated between), else the values fitted where the model was first
// built. The fit and its
// misses: docs/decisions/decode-cost-model.md.
namespace {

constexpr double kRingFixedUs = 5.5, kRingShare = 0.40;
constexpr double kColsFixedUs = 4.0, kColsShare = 0.80;
constexpr double kDenseFixedUs = 4.0, kDenseShare = 0.92;
// The ring reads, per kept column and strip, the strip's 32 mask words and its segment offset.
constexpr double kRingSegmentHeaderBytes = 32 * 4 + 4;

// A calibrated quantity ("share", "fixed_us") at act_density rho: the calibration at half and at
// all kept, linear between them and held outside. seg ".small" reads the segment fitted between
// the smaller layers, where the model has one (else the larger layers').
double calibrated_at(const DeviceProfile& p, const std::string& mapping, const char* what, double fallback, double rho,
                     const char* seg) {
  auto one = [&](const char* at) {
    const std::string name = fmt::format("decode.{}.{}.{}", mapping, what, at);
    return p.calibration(name + seg, p.calibration(name, fallback));
  };
  const double half = one("half"), full = one("full");
  const double t = std::clamp((rho - 0.5) / 0.5, 0.0, 1.0);
  return half + (full - half) * t;
}

// ".small" where a call's work (bytes over the grid's fill) is below the split the calibration
// measured between its small and middle layers; "" otherwise or without a calibration.
const char* segment(const std::string& name, double rho, double work, const DeviceProfile& p) {
  const std::string key = name == "dense"
                              ? "decode.dense.split_bytes"
                              : fmt::format("decode.{}.split_bytes.{}", name, rho >= 0.75 ? "full" : "half");
  const double split = p.calibration(key, 0);
  return split > 0 && work < split ? ".small" : "";
}

}  // namespace

DecodeModelTerms decode_model_terms(DecodeMapping m, int32_t rows, int32_t cols, DecodeDtype dtype,
                                    double weight_density, double act_density) {
  const double esize = dtype == DecodeDtype::F32 ? 4 : 2, r = rows, c = cols;
  const double rho = std::clamp(act_density, 0.0, 1.0), omega = std::clamp(weight_density, 0.0, 1.0);
  DecodeModelTerms t;
  switch (m) {
    case DecodeMapping::Ring: {
      // Per kept column, each strip's mask words and offset, then its values.
      const double strips = std::ceil(r / kBitmapStripRows);
      t.fixed_us = kRingFixedUs;
      t.bytes = rho * (c * strips * kRingSegmentHeaderBytes + r * c * omega * esize);
      t.blocks = strips * std::max(1.0, std::ceil(c / kDecodeLanesMinChunk));
      return t;
    }
    case DecodeMapping::DenseColumns: {
      const double slab = abi::decode_cols_slab_rows(static_cast<int>(esize));
      const double slabs = std::ceil(r / slab);
      t.fixed_us = kColsFixedUs;
      t.bytes = rho * slabs * slab * c * esize;
      t.blocks = slabs * std::max(1.0, std::ceil(c / kDecodeColsMinChunk));
      return t;
    }
    case DecodeMapping::Dense:
      if (dtype == DecodeDtype::F32 || cols % 8 != 0) break;
      t.fixed_us = kDenseFixedUs;
      t.bytes = r * c * esize;
      t.blocks = std::ceil(r / 16) * std::max(1.0, c / 128);
      return t;
    default:
      break;
  }
  t.applies = false;
  return t;
}

double decode_model_work(const DecodeModelTerms& t, const DeviceProfile& p) {
  return t.bytes / std::min(1.0, t.blocks / std::max(p.sm_count, 1));
}

double decode_model_share(DecodeMapping m, double act_density, double work, const DeviceProfile& p) {
  switch (m) {
    case DecodeMapping::Ring:
      return calibrated_at(p, "ring", "share", kRingShare, act_density, segment("ring", act_density, work, p));
    case DecodeMapping::DenseColumns:
      return calibrated_at(p, "dense_columns", "share", kColsShare, act_density,
                           segment("dense_columns", act_density, work, p));
    case DecodeMapping::Dense: {
      const std::string seg = segment("dense", 1.0, work, p);
      return p.calibration("decode.dense.share" + seg, p.calibration("decode.dense.share", kDenseShare));
    }
    default:
      return std::nan("");
  }
}

double decode_model_fixed_us(DecodeMapping m, double act_density, double work, const DeviceProfile& p) {
  switch (m) {
    case DecodeMapping::Ring:
      return calibrated_at(p, "ring", "fixed_us", kRingFixedUs, act_density, segment("ring", act_density, work, p));
    case DecodeMapping::DenseColumns:
      return calibrated_at(p, "dense_columns", "fixed_us", kColsFixedUs, act_density,
                           segment("dense_columns", act_density, work, p));
    case DecodeMapping::Dense: {
      const std::string seg = segment("dense", 1.0, work, p);
      return p.calibration("decode.dense.fixed_us" + seg, p.calibration("decode.dense.fixed_us", kDenseFixedUs));
    }
    default:
      return std::nan("");
  }
}

double decode_model_us(const DecodeModelTerms& t, double share, const DeviceProfile& p) {
  if (!t.applies) return std::nan("");
  const double sms = std::max(p.sm_count, 1);
  return t.fixed_us + t.bytes / (share * std::min(1.0, t.blocks / sms) * p.copy_bytes_per_s) * 1e6;
}

DecodeCosts estimate_decode_costs(int32_t rows, int32_t cols, DecodeDtype dtype, double weight_density,
                                  double act_density, const DeviceProfile& device) {
  auto us = [&](DecodeMapping m) {
    DecodeModelTerms t = decode_model_terms(m, rows, cols, dtype, weight_density, act_density);
    if (!t.applies) return std::nan("");
    const double work = decode_model_work(t, device);
    t.fixed_us = decode_model_fixed_us(m, act_density, work, device);
    return decode_model_us(t, decode_model_share(m, act_density, work, device), device);
  };
  return DecodeCosts{us(DecodeMapping::Ring), us(DecodeMapping::DenseColumns), us(DecodeMapping::Dense)};
}

DecodeMapping choose_decode_mapping(int32_t rows, int32_t cols, DecodeDtype dtype, double weight_density,
                                    double act_density, const DeviceProfile& device, bool allow_dense) {
  const DecodeCosts k = estimate_decode_costs(rows, cols, dtype, weight_density, act_density, device);
  if (!allow_dense) return DecodeMapping::Ring;
  DecodeMapping best = DecodeMapping::Ring;
  double t = k.ring_us;
  if (k.dense_columns_us < t) best = DecodeMapping::DenseColumns, t = k.dense_columns_us;
  if (k.dense_us < t) best = DecodeMapping::Dense;  // false for NaN
  return best;
}

}  // namespace dbsparse

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
    case DecodeMapping::Tiles:
      return "tiles";
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

// Each mapping's name in the calibration and the constants fitted where the model was first built
// (its fallback). per_density: calibrated at half and at all of x kept (dense reads all of W
// whatever x is).
struct MappingModel {
  const char* name;
  double fixed_us, share;
  bool per_density;
};
constexpr MappingModel kRing{"ring", 5.5, 0.40, true};
constexpr MappingModel kDenseColumns{"dense_columns", 4.0, 0.80, true};
constexpr MappingModel kDense{"dense", 4.0, 0.92, false};
// Tiles: its constants are never guessed; only a profile that calibrated it (calibrate_decode)
// estimates it (model_estimates).
constexpr MappingModel kTiles{"tiles", 5.5, 0.40, false};

// Whether the model estimates mapping m on this profile: the tiles path only once calibrated on the
// device, where the others fall back to the constants fitted where the model was first built.
bool model_estimates(DecodeMapping m, const DeviceProfile& p) {
  return m != DecodeMapping::Tiles || !std::isnan(p.calibration("decode.tiles.share", std::nan("")));
}

const MappingModel* model_of(DecodeMapping m) {
  switch (m) {
    case DecodeMapping::Ring:
      return &kRing;
    case DecodeMapping::DenseColumns:
      return &kDenseColumns;
    case DecodeMapping::Dense:
      return &kDense;
    case DecodeMapping::Tiles:
      return &kTiles;
    default:
      return nullptr;
  }
}

// The ring reads, per kept column and strip, the strip's 32 mask words and its segment offset.
constexpr double kRingSegmentHeaderBytes = 32 * 4 + 4;

// A calibrated constant ("share" or "fixed_us") of mapping m at act_density rho for a call of this
// work: "decode.<m>.<what>[.half|.full][.small]". ".small" is the segment fitted between the
// smaller layers, read where the work is below the split the calibration measured at the nearer
// density (else the larger layers'); per density, the calibrations at half and at all kept,
// linear between them and held outside; each falls back to the fitted constant.
double calibrated(const DeviceProfile& p, const MappingModel& m, const char* what, double fallback, double rho,
                  double work) {
  const char* nearer = !m.per_density ? "" : rho >= 0.75 ? ".full" : ".half";
  const double split = p.calibration(fmt::format("decode.{}.split_bytes{}", m.name, nearer), 0);
  const char* seg = split > 0 && work < split ? ".small" : "";
  auto one = [&](const char* at) {
    const std::string name = fmt::format("decode.{}.{}{}", m.name, what, at);
    return p.calibration(name + seg, p.calibration(name, fallback));
  };
  if (!m.per_density) return one("");
  const double half = one(".half"), full = one(".full");
  const double t = std::clamp((rho - 0.5) / 0.5, 0.0, 1.0);
  return half + (full - half) * t;
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
      t.fixed_us = kRing.fixed_us;
      t.bytes = rho * (c * strips * kRingSegmentHeaderBytes + r * c * omega * esize);
      t.blocks = strips * std::max(1.0, std::ceil(c / kDecodeLanesMinChunk));
      return t;
    }
    case DecodeMapping::DenseColumns: {
      const double slab = abi::decode_cols_slab_rows(static_cast<int>(esize));
      const double slabs = std::ceil(r / slab);
      t.fixed_us = kDenseColumns.fixed_us;
      t.bytes = rho * slabs * slab * c * esize;
      t.blocks = slabs * std::max(1.0, std::ceil(c / kDecodeColsMinChunk));
      return t;
    }
    case DecodeMapping::Dense:
      if (dtype == DecodeDtype::F32 || cols % 8 != 0) break;
      t.fixed_us = kDense.fixed_us;
      t.bytes = r * c * esize;
      t.blocks = std::ceil(r / 16) * std::max(1.0, c / 128);
      return t;
    case DecodeMapping::Tiles: {
      // Every chunk's 512 bytes of masks and its offset, and every kept value, whatever x is.
      if (dtype == DecodeDtype::F32 || cols % 8 != 0) break;
      const double tiles = std::ceil(r / abi::kDecodeTilesRows), chunks = std::ceil(c / abi::kDecodeTilesChunkCols);
      t.fixed_us = kTiles.fixed_us;
      t.bytes = tiles * chunks * (512 + 4) + r * c * omega * esize;
      t.blocks = tiles * std::max(1.0, std::floor(chunks / abi::kDecodeTilesWarps));
      return t;
    }
    default:
      break;
  }
  t.applies = false;
  return t;
}

double decode_model_work(const DecodeModelTerms& t, const DeviceProfile& p) {
  return t.bytes / std::min(1.0, t.blocks / std::max(p.sm_count, 1));
}

double decode_model_us(const DecodeModelTerms& t, double share, const DeviceProfile& p) {
  if (!t.applies) return std::nan("");
  return t.fixed_us + decode_model_work(t, p) / (share * p.copy_bytes_per_s) * 1e6;
}

DecodeCosts estimate_decode_costs(int32_t rows, int32_t cols, DecodeDtype dtype, double weight_density,
                                  double act_density, const DeviceProfile& device) {
  auto us = [&](DecodeMapping m) {
    DecodeModelTerms t = decode_model_terms(m, rows, cols, dtype, weight_density, act_density);
    if (!t.applies || !model_estimates(m, device)) return std::nan("");
    const MappingModel& mm = *model_of(m);
    const double work = decode_model_work(t, device);
    t.fixed_us = calibrated(device, mm, "fixed_us", mm.fixed_us, act_density, work);
    return decode_model_us(t, calibrated(device, mm, "share", mm.share, act_density, work), device);
  };
  return DecodeCosts{us(DecodeMapping::Ring), us(DecodeMapping::DenseColumns), us(DecodeMapping::Dense),
                     us(DecodeMapping::Tiles)};
}

DecodeMapping choose_decode_mapping(int32_t rows, int32_t cols, DecodeDtype dtype, double weight_density,
                                    double act_density, const DeviceProfile& device, bool allow_dense) {
  const DecodeCosts k = estimate_decode_costs(rows, cols, dtype, weight_density, act_density, device);
  DecodeMapping best = DecodeMapping::Ring;
  double t = k.ring_us;
  if (k.tiles_us < t) best = DecodeMapping::Tiles, t = k.tiles_us;  // false for NaN
  if (!allow_dense) return best;
  if (k.dense_columns_us < t) best = DecodeMapping::DenseColumns, t = k.dense_columns_us;
  if (k.dense_us < t) best = DecodeMapping::Dense;  // false for NaN
  return best;
}

}  // namespace dbsparse

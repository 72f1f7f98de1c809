#include "runtime/spmv/spmv_strategy.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "dbsparse/error.hpp"

namespace dbsparse {
namespace {

int lanes_for_mean(double mean, int entries) {
  int lanes = 2;
  while (lanes < 32 && lanes * entries < mean) lanes *= 2;
  return lanes;
}

codegen::SpmvKey checked(const codegen::SpmvKey& key) {
  // The key's own rules (block size, lanes) are checked by its parser: one place for them.
  return codegen::SpmvKey::parse(key.to_string());
}

bool power_of_two(int v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace

void SpmvConfig::check() const {
  auto bad = [](const std::string& what) { throw UsageError("spmv config: " + what); };
  if (block_size % 32 != 0) bad(fmt::format("'block_size' must be a multiple of 32, got {}", block_size));
  if (lanes != 0 && (lanes < 2 || !power_of_two(lanes)))
    bad(fmt::format("'lanes' must be 0 (from the mean) or 2, 4, 8, 16, 32, got {}", lanes));
  const int v[4] = {v1_lanes, v2_lanes, v3_lanes, v4_lanes};
  for (int i = 0; i < 4; ++i) {
    if (!power_of_two(v[i])) bad(fmt::format("'v{}_lanes' must be 2, 4, 8, 16 or 32, got {}", i + 1, v[i]));
    if (i && v[i] <= v[i - 1])
      bad(fmt::format("vector bins must widen: 'v{}_lanes' {} <= 'v{}_lanes' {}", i + 1, v[i], i, v[i - 1]));
  }
  for (bool f64 : {false, true})
    if (scalar_max_len > int64_t{v1_lanes} * lane_entries(f64))
      bad(fmt::format("'scalar_max_len' {} is past the first vector bin (v1_lanes x lane_entries_{} = {})",
                      scalar_max_len, f64 ? "f64" : "f32", int64_t{v1_lanes} * lane_entries(f64)));
  const int64_t widest = int64_t{v4_lanes} * std::max(lane_entries_f32, lane_entries_f64);
  if (block_max_len < widest)
    bad(fmt::format("'block_max_len' {} is below the widest vector bin (v4_lanes x lane_entries = {})", block_max_len,
                    widest));
}

codegen::SpmvKey choose_spmv_key(const SpmvConfig& cfg, int64_t rows, int64_t nnz, codegen::ValueType value) {
  using codegen::SpmvStrategy;
  codegen::SpmvKey key;
  key.value = value;
  key.block_size = cfg.block_size;
  const double mean = rows > 0 ? static_cast<double>(nnz) / static_cast<double>(rows) : 0.0;
  const int entries = cfg.lane_entries(value == codegen::ValueType::F64);
  const std::string& strategy = cfg.strategy;
  if (strategy == "scalar") {
    key.strategy = SpmvStrategy::Scalar;
  } else if (strategy == "vector") {
    key.strategy = SpmvStrategy::Vector;
  } else if (strategy == "block") {
    key.strategy = SpmvStrategy::Block;
  } else if (strategy == "longrow") {
    key.strategy = SpmvStrategy::LongRow;
  } else if (strategy == "uniform") {
    if (mean <= cfg.scalar_max(value == codegen::ValueType::F64, rows))
      key.strategy = SpmvStrategy::Scalar;
    else if (mean <= 32.0 * entries)
      key.strategy = SpmvStrategy::Vector;
    else
      key.strategy = SpmvStrategy::Block;
  } else {
    // SpmvConfig's reader admits only the strategies above and "classified".
    throw UsageError("choose_spmv_key: 'classified' has several kernels; use choose_spmv_layout");
  }
  if (key.strategy == SpmvStrategy::Vector) key.lanes = cfg.lanes > 0 ? cfg.lanes : lanes_for_mean(mean, entries);
  return checked(key);
}

SpmvLayout choose_spmv_layout(const SpmvConfig& cfg, int64_t rows, int64_t nnz, codegen::ValueType value) {
  using codegen::SpmvStrategy;
  cfg.check();
  SpmvLayout layout;
  layout.longrow_chunk = cfg.longrow_chunk;
  layout.fold_share = cfg.fold_share;
  layout.fuse_bins = cfg.fuse_bins != 0;
  if (cfg.strategy != "classified") {
    layout.bins.push_back({choose_spmv_key(cfg, rows, nnz, value), std::numeric_limits<int64_t>::max()});
    return layout;
  }
  layout.classified = true;
  const int block = cfg.block_size;
  const int64_t entries = cfg.lane_entries(value == codegen::ValueType::F64);
  auto key = [&](SpmvStrategy s, int lanes) { return checked(codegen::SpmvKey{value, s, block, lanes}); };
  layout.bins.push_back({key(SpmvStrategy::Scalar, 0), cfg.scalar_max(value == codegen::ValueType::F64, rows)});
  const int lanes[4] = {cfg.v1_lanes, cfg.v2_lanes, cfg.v3_lanes, cfg.v4_lanes};
  for (int v = 0; v < 4; ++v) layout.bins.push_back({key(SpmvStrategy::Vector, lanes[v]), lanes[v] * entries});
  layout.bins.push_back({key(SpmvStrategy::Block, 0), cfg.block_max_len});
  layout.bins.push_back({key(SpmvStrategy::LongRow, 0), std::numeric_limits<int64_t>::max()});
  layout.fused_key =
      checked(codegen::SpmvKey{value, SpmvStrategy::Classified, block, lanes[0], lanes[1], lanes[2], lanes[3]});
  if (cfg.window_max_len > 0 && layout.fuse_bins)
    for (size_t b = 0; b < static_cast<size_t>(abi::kSpmvBlockBin); ++b)  // scalar and vector bins, bounds rising
      if (layout.bins[b].max_len <= cfg.window_max_len) layout.window = layout.bins[b].max_len;
  layout.fused_key.window = static_cast<int>(layout.window);
  return layout;
}

int64_t spmv_fill_threads(const SpmvConfig& cfg, int64_t resident) {
  return cfg.fill_threads < 0 ? resident : cfg.fill_threads;
}

int spmv_fill_lanes(const SpmvConfig& cfg, int64_t rows, int64_t nnz, int64_t max_len, codegen::ValueType value,
                    int64_t resident) {
  const int64_t threads = spmv_fill_threads(cfg, resident);
  if (cfg.strategy != "classified" || threads <= 0 || rows <= 0) return 0;
  // Rows past the widest vector bin take block rows or long-row chunks: classified's own work.
  if (max_len > int64_t{cfg.v4_lanes} * std::max(cfg.lane_entries_f32, cfg.lane_entries_f64)) return 0;
  int lanes = 32;
  // No more lanes than the longest row has entries: the rest would only add shuffle steps.
  while (lanes > 2 && lanes > max_len) lanes /= 2;
  while (lanes >= 2 && rows * lanes > threads) lanes /= 2;
  // Fewer lanes than the mean row asks for (uniform's choice) would lengthen the typical row's
  // chain: there the device is full enough for the bins.
  const double mean = static_cast<double>(nnz) / static_cast<double>(rows);
  return lanes < lanes_for_mean(mean, cfg.lane_entries(value == codegen::ValueType::F64)) ? 0 : lanes;
}

SpmvLayout spmv_fill_layout(const SpmvConfig& cfg, codegen::ValueType value, int lanes, int64_t threads,
                            int64_t max_len) {
  // The config's own one-strategy layout, forced to a vector kernel of `lanes` lanes.
  SpmvConfig vector = cfg;
  vector.strategy = "vector";
  vector.lanes = lanes;
  SpmvLayout layout = choose_spmv_layout(vector, 0, 0, value);
  layout.fill_lanes = lanes;
  layout.fill_threads = threads;
  layout.fill_max_len = max_len;
  return layout;
}

int64_t spmv_grid(const codegen::SpmvKey& key, int64_t rows) {
  using codegen::SpmvStrategy;
  const int64_t b = key.block_size;
  switch (key.strategy) {
    case SpmvStrategy::Scalar:
      return (rows + b - 1) / b;
    case SpmvStrategy::Vector:
      return (rows * key.lanes + b - 1) / b;
    case SpmvStrategy::Block:
      return rows;
    case SpmvStrategy::LongRow:
    case SpmvStrategy::Classified:
    case SpmvStrategy::Classify:
    case SpmvStrategy::Gather:
      break;
  }
  throw UsageError("spmv_grid: long-row, classified and gather kernels are sized by the plan");
}

}  // namespace dbsparse

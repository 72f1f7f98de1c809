#include "runtime/spmv_strategy.hpp"

#include <algorithm>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/tuning_db.hpp"

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

}  // namespace

// A parameter from the config, else its default (one place for defaults: default_params).
// Wrong kinds (a string for block_size) are UsageErrors naming the key (config_number/string).
template <class V>
V param(const nlohmann::json& params, const std::string& name) {
  if constexpr (std::is_same_v<V, std::string>) return config_string(params, "spmv", name);
  else return static_cast<V>(config_number(params, "spmv", name));
}

// Entries a lane takes before a wider group pays off, by value type (see the header).
int lane_entries(const nlohmann::json& params, codegen::ValueType value) {
  const int e = param<int>(params, value == codegen::ValueType::F32 ? "lane_entries_f32" : "lane_entries_f64");
  if (e < 1 || e > 1024) throw UsageError(fmt::format("spmv lane_entries {} is outside [1, 1024]", e));
  return e;
}

codegen::SpmvKey choose_spmv_key(const nlohmann::json& params, int64_t rows, int64_t nnz,
                                 codegen::ValueType value) {
  using codegen::SpmvStrategy;
  codegen::SpmvKey key;
  key.value = value;
  key.block_size = param<int>(params, "block_size");
  const std::string strategy = param<std::string>(params, "strategy");
  const double mean = rows > 0 ? static_cast<double>(nnz) / static_cast<double>(rows) : 0.0;
  const int lanes = params.contains("lanes") ? param<int>(params, "lanes") : 0;  // no default: chosen by mean
  const int entries = lane_entries(params, value);
  if (strategy == "scalar") {
    key.strategy = SpmvStrategy::Scalar;
  } else if (strategy == "vector") {
    key.strategy = SpmvStrategy::Vector;
  } else if (strategy == "block") {
    key.strategy = SpmvStrategy::Block;
  } else if (strategy == "longrow") {
    key.strategy = SpmvStrategy::LongRow;
  } else if (strategy == "uniform") {
    if (mean <= entries) key.strategy = SpmvStrategy::Scalar;
    else if (mean <= 32.0 * entries) key.strategy = SpmvStrategy::Vector;
    else key.strategy = SpmvStrategy::Block;
  } else if (strategy == "classified") {
    throw UsageError("choose_spmv_key: 'classified' has several kernels; use choose_spmv_layout");
  } else {
    throw UsageError(fmt::format(
        "unknown spmv strategy '{}' (expected classified, uniform, scalar, vector, block or longrow)", strategy));
  }
  if (key.strategy == SpmvStrategy::Vector) key.lanes = lanes > 0 ? lanes : lanes_for_mean(mean, entries);
  return checked(key);
}

SpmvLayout choose_spmv_layout(const nlohmann::json& params, int64_t rows, int64_t nnz,
                              codegen::ValueType value) {
  using codegen::SpmvStrategy;
  SpmvLayout layout;
  layout.longrow_chunk = param<int64_t>(params, "longrow_chunk");
  layout.fold_share = param<double>(params, "fold_share");
  layout.fuse_bins = param<int>(params, "fuse_bins") != 0;
  if (layout.longrow_chunk < 256 || layout.longrow_chunk > (int64_t{1} << 30))
    throw UsageError(fmt::format("spmv longrow_chunk {} is outside [256, 2^30]", layout.longrow_chunk));
  const std::string strategy = param<std::string>(params, "strategy");
  if (strategy != "classified") {
    layout.bins.push_back({choose_spmv_key(params, rows, nnz, value), std::numeric_limits<int64_t>::max()});
    return layout;
  }
  layout.classified = true;
  const int block = param<int>(params, "block_size");
  const int64_t entries = lane_entries(params, value);
  auto key = [&](SpmvStrategy s, int lanes) { return checked(codegen::SpmvKey{value, s, block, lanes}); };
  layout.bins.push_back({key(SpmvStrategy::Scalar, 0), entries});
  int lanes[4];
  for (int v = 0; v < 4; ++v) {
    lanes[v] = param<int>(params, fmt::format("v{}_lanes", v + 1));
    layout.bins.push_back({key(SpmvStrategy::Vector, lanes[v]), lanes[v] * entries});
  }
  layout.bins.push_back({key(SpmvStrategy::Block, 0), param<int64_t>(params, "block_max_len")});
  layout.bins.push_back({key(SpmvStrategy::LongRow, 0), std::numeric_limits<int64_t>::max()});
  for (size_t b = 1; b < layout.bins.size(); ++b)
    if (layout.bins[b].max_len < layout.bins[b - 1].max_len)
      throw UsageError(fmt::format("spmv classified cutoffs must not decrease (bin {} ends at {}, bin {} at {}): "
                                   "vector lanes must grow and block_max_len must be at least the widest bin's",
                                   b - 1, layout.bins[b - 1].max_len, b, layout.bins[b].max_len));
  layout.fused_key = checked(codegen::SpmvKey{value, SpmvStrategy::Classified, block, lanes[0], lanes[1], lanes[2], lanes[3]});
  return layout;
}

int64_t spmv_grid(const codegen::SpmvKey& key, int64_t rows) {
  using codegen::SpmvStrategy;
  const int64_t b = key.block_size;
  switch (key.strategy) {
    case SpmvStrategy::Scalar: return (rows + b - 1) / b;
    case SpmvStrategy::Vector: return (rows * key.lanes + b - 1) / b;
    case SpmvStrategy::Block: return rows;
    case SpmvStrategy::LongRow:
    case SpmvStrategy::Classified: break;
  }
  throw UsageError("spmv_grid: long-row and classified kernels are sized by the plan");
}

}  // namespace dbsparse

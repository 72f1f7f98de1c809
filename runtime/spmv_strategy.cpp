#include "runtime/spmv_strategy.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "dbsparse/error.hpp"

namespace dbsparse {
namespace {

int lanes_for_mean(double mean) {
  int lanes = 2;
  while (lanes < 32 && lanes * 4 < mean) lanes *= 2;
  return lanes;
}

codegen::SpmvKey checked(const codegen::SpmvKey& key) {
  // The key's own rules (block size, lanes) are checked by its parser: one place for them.
  return codegen::SpmvKey::parse(key.to_string());
}

}  // namespace

codegen::SpmvKey choose_spmv_key(const nlohmann::json& params, int64_t rows, int64_t nnz,
                                 codegen::ValueType value) {
  using codegen::SpmvStrategy;
  codegen::SpmvKey key;
  key.value = value;
  key.block_size = params.value("block_size", 256);
  const std::string strategy = params.value("strategy", std::string("classified"));
  const double mean = rows > 0 ? static_cast<double>(nnz) / static_cast<double>(rows) : 0.0;
  const int lanes = params.value("lanes", 0);
  if (strategy == "scalar") {
    key.strategy = SpmvStrategy::Scalar;
  } else if (strategy == "vector") {
    key.strategy = SpmvStrategy::Vector;
  } else if (strategy == "block") {
    key.strategy = SpmvStrategy::Block;
  } else if (strategy == "longrow") {
    key.strategy = SpmvStrategy::LongRow;
  } else if (strategy == "uniform") {
    if (mean <= params.value("scalar_max_mean", 4.0)) key.strategy = SpmvStrategy::Scalar;
    else if (mean <= params.value("vector_max_mean", 64.0)) key.strategy = SpmvStrategy::Vector;
    else key.strategy = SpmvStrategy::Block;
  } else if (strategy == "classified") {
    throw UsageError("choose_spmv_key: 'classified' has several kernels; use choose_spmv_layout");
  } else {
    throw UsageError(fmt::format(
        "unknown spmv strategy '{}' (expected classified, uniform, scalar, vector, block or longrow)", strategy));
  }
  if (key.strategy == SpmvStrategy::Vector) key.lanes = lanes > 0 ? lanes : lanes_for_mean(mean);
  return checked(key);
}

SpmvLayout choose_spmv_layout(const nlohmann::json& params, int64_t rows, int64_t nnz,
                              codegen::ValueType value) {
  using codegen::SpmvStrategy;
  SpmvLayout layout;
  layout.longrow_chunk = params.value("longrow_chunk", int64_t{8192});
  layout.fold_share = params.value("fold_share", 0.02);
  if (layout.longrow_chunk < 256 || layout.longrow_chunk > (int64_t{1} << 30))
    throw UsageError(fmt::format("spmv longrow_chunk {} is outside [256, 2^30]", layout.longrow_chunk));
  const std::string strategy = params.value("strategy", std::string("classified"));
  if (strategy != "classified") {
    layout.bins.push_back({choose_spmv_key(params, rows, nnz, value), std::numeric_limits<int64_t>::max()});
    return layout;
  }
  layout.classified = true;
  const int block = params.value("block_size", 256);
  auto key = [&](SpmvStrategy s, int lanes) { return checked(codegen::SpmvKey{value, s, block, lanes}); };
  layout.bins.push_back({key(SpmvStrategy::Scalar, 0), params.value("scalar_max_len", int64_t{4})});
  for (int v = 1; v <= 3; ++v) {
    static constexpr int kLanes[] = {0, 4, 8, 32};
    static constexpr int64_t kMax[] = {0, 16, 64, 2048};
    layout.bins.push_back({key(SpmvStrategy::Vector, params.value(fmt::format("v{}_lanes", v), kLanes[v])),
                           params.value(fmt::format("v{}_max_len", v), kMax[v])});
  }
  layout.bins.push_back({key(SpmvStrategy::Block, 0), params.value("block_max_len", int64_t{65536})});
  layout.bins.push_back({key(SpmvStrategy::LongRow, 0), std::numeric_limits<int64_t>::max()});
  for (size_t b = 1; b < layout.bins.size(); ++b)
    if (layout.bins[b].max_len < layout.bins[b - 1].max_len)
      throw UsageError(fmt::format("spmv classified cutoffs must not decrease (bin {} ends at {}, bin {} at {})",
                                   b - 1, layout.bins[b - 1].max_len, b, layout.bins[b].max_len));
  return layout;
}

int64_t spmv_grid(const codegen::SpmvKey& key, int64_t rows) {
  using codegen::SpmvStrategy;
  const int64_t b = key.block_size;
  switch (key.strategy) {
    case SpmvStrategy::Scalar: return (rows + b - 1) / b;
    case SpmvStrategy::Vector: return (rows * key.lanes + b - 1) / b;
    case SpmvStrategy::Block: return rows;
    case SpmvStrategy::LongRow: break;
  }
  throw UsageError("spmv_grid: long-row kernels are launched per chunk");
}

}  // namespace dbsparse

#include "runtime/spmv_strategy.hpp"

#include <algorithm>

#include "dbsparse/error.hpp"

namespace dbsparse {
namespace {

int lanes_for_mean(double mean) {
  int lanes = 2;
  while (lanes < 32 && lanes < mean) lanes *= 2;
  return lanes;
}

}  // namespace

codegen::SpmvKey choose_spmv_key(const nlohmann::json& params, int64_t rows, int64_t nnz,
                                 codegen::ValueType value) {
  using codegen::SpmvStrategy;
  codegen::SpmvKey key;
  key.value = value;
  key.block_size = params.value("block_size", 256);
  const std::string strategy = params.value("strategy", std::string("scalar"));
  const double mean = rows > 0 ? static_cast<double>(nnz) / static_cast<double>(rows) : 0.0;
  int lanes = params.value("lanes", 0);
  if (strategy == "scalar") {
    key.strategy = SpmvStrategy::Scalar;
  } else if (strategy == "vector") {
    key.strategy = SpmvStrategy::Vector;
  } else if (strategy == "block") {
    key.strategy = SpmvStrategy::Block;
  } else if (strategy == "auto") {
    if (mean <= params.value("scalar_max_mean", 4.0)) key.strategy = SpmvStrategy::Scalar;
    else if (mean <= params.value("vector_max_mean", 64.0)) key.strategy = SpmvStrategy::Vector;
    else key.strategy = SpmvStrategy::Block;
  } else if (strategy == "longrow") {
    throw UsageError("spmv strategy 'longrow' is not wired into plans yet");
  } else {
    throw UsageError("unknown spmv strategy '" + strategy + "' (expected scalar, vector, block or auto)");
  }
  if (key.strategy == SpmvStrategy::Vector) key.lanes = lanes > 0 ? lanes : lanes_for_mean(mean);
  // The key's own rules (block size, lanes) are checked by its parser: one place for them.
  return codegen::SpmvKey::parse(key.to_string());
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
  throw UsageError("spmv_grid: long-row plans are not wired yet");
}

}  // namespace dbsparse

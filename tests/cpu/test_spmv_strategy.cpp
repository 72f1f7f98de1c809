// Problem -> key for SpMV: the strategy named by the config, or the uniform choice by mean row
// length, with the cutoffs taken from the config.
#include <doctest/doctest.h>

#include "dbsparse/error.hpp"
#include "runtime/spmv_strategy.hpp"

using namespace dbsparse;
using codegen::SpmvStrategy;
using codegen::ValueType;

TEST_CASE("SpmvKeyFollowsTheNamedStrategy") {
  auto k = choose_spmv_key({{"strategy", "scalar"}, {"block_size", 128}}, 1000, 5000, ValueType::F64);
  CHECK(k.to_string() == "spmv.scalar.f64.b128");
  CHECK(choose_spmv_key(nlohmann::json::object(), 10, 10, ValueType::F32).strategy == SpmvStrategy::Scalar);
  CHECK(choose_spmv_key({{"strategy", "vector"}, {"lanes", 4}}, 10, 1000, ValueType::F32).to_string() ==
        "spmv.vector.f32.b256.l4");
  CHECK(choose_spmv_key({{"strategy", "block"}}, 10, 1000, ValueType::F32).strategy == SpmvStrategy::Block);
  CHECK_THROWS_AS(choose_spmv_key({{"strategy", "longrow"}}, 10, 10, ValueType::F32), UsageError);
  CHECK_THROWS_AS(choose_spmv_key({{"strategy", "warp"}}, 10, 10, ValueType::F32), UsageError);
  CHECK_THROWS_AS(choose_spmv_key({{"strategy", "vector"}, {"lanes", 3}}, 10, 10, ValueType::F32), UsageError);
  CHECK_THROWS_AS(choose_spmv_key({{"block_size", 100}}, 10, 10, ValueType::F32), UsageError);
}

TEST_CASE("SpmvUniformChoiceFollowsMeanRowLength") {
  const nlohmann::json autoconf = {{"strategy", "auto"}};
  auto pick = [&](int64_t rows, int64_t nnz) { return choose_spmv_key(autoconf, rows, nnz, ValueType::F32); };
  CHECK(pick(1000, 3000).strategy == SpmvStrategy::Scalar);   // mean 3
  CHECK(pick(1000, 4000).strategy == SpmvStrategy::Scalar);   // mean 4: the cutoff is inclusive
  auto v = pick(1000, 27000);                                 // mean 27: 32 lanes cover it
  CHECK(v.strategy == SpmvStrategy::Vector);
  CHECK(v.lanes == 32);
  CHECK(pick(1000, 5000).lanes == 8);                         // mean 5 -> 8 lanes
  CHECK(pick(1000, 16000).lanes == 16);                       // mean 16 -> 16 lanes
  CHECK(pick(1000, 65000).strategy == SpmvStrategy::Block);   // mean 65
  CHECK(pick(0, 0).strategy == SpmvStrategy::Scalar);         // no rows: nothing to share
  // The cutoffs are data: the tuner moves them.
  auto moved = choose_spmv_key({{"strategy", "auto"}, {"scalar_max_mean", 1.0}}, 1000, 3000, ValueType::F32);
  CHECK(moved.strategy == SpmvStrategy::Vector);
  CHECK(moved.lanes == 4);
}

TEST_CASE("SpmvGridCoversEveryRow") {
  CHECK(spmv_grid(codegen::SpmvKey{ValueType::F32, SpmvStrategy::Scalar, 256}, 1000) == 4);
  CHECK(spmv_grid(codegen::SpmvKey{ValueType::F32, SpmvStrategy::Vector, 256, 8}, 1000) == 32);
  CHECK(spmv_grid(codegen::SpmvKey{ValueType::F32, SpmvStrategy::Vector, 256, 32}, 9) == 2);
  CHECK(spmv_grid(codegen::SpmvKey{ValueType::F32, SpmvStrategy::Block, 256}, 1000) == 1000);
}

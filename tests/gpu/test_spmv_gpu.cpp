// SpMV on the GPU against the CPU reference: generated matrices (up to 20M nonzeros), every real
// matrix in ../shared/matrices, and the edge cases of alpha/beta.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "gpu/gpu_support.hpp"

namespace {

// y = alpha*A*x + beta*y on the GPU against the CPU reference. params: an explicit config, or
// none for the plan's own look-up (tuning DB, else defaults).
template <class T>
double spmv_error(const CsrMatrix<double>& ad, double alpha, double beta, bool nan_y = false,
                  const std::optional<nlohmann::json>& params = std::nullopt) {
  CsrMatrix<T> a = ad.cast<T>();
  auto x = dbs_test::random_vector<T>(a.cols, 7);
  auto y0 = dbs_test::random_vector<T>(a.rows, 8);
  if (nan_y)
    for (auto& v : y0) v = std::numeric_limits<T>::quiet_NaN();
  auto ref = reference::spmv(a, std::span<const T>(x), alpha, beta, std::span<const T>(y0));
  auto plan =
      params ? plan_spmv(ctx(), a, Config{"spmv", *params, ConfigSource::Explicit, "test"}) : plan_spmv(ctx(), a);
  Stream s(ctx());
  DeviceBuffer<T> dx{std::span<const T>(x)}, dy{std::span<const T>(y0)};
  plan.run(dx, dy, s, static_cast<T>(alpha), static_cast<T>(beta));
  // With beta 0 a second run must leave the same y: run() keeps no state between calls.
  if (beta == 0) plan.run(dx, dy, s, static_cast<T>(alpha), static_cast<T>(beta));
  s.synchronize();
  auto got = dy.download();
  return reference::relative_error(std::span<const double>(ref), std::span<const T>(got));
}

constexpr double kTolF32 = 1e-5, kTolF64 = 1e-12;

// f32 rounding grows with the longest row: one thread of the scalar strategy adds len/4 terms per
// accumulator in sequence, and their rounding errors add up like a random walk, about
// eps * sqrt(len / 4) of the row's size. kTolF32 covers rows up to ~7000 entries (every generated
// matrix); past that (the 120000-entry test rows) the bound is that estimate with a margin of 4.
// With mt19937's x the 120000-entry row passed 1e-5; with the shared LCG's x it measured 1.03e-5
// (H200, 2026-11-30): the flat threshold had been sitting on the expected error.
double tol_f32(const CsrMatrix<double>& a) {
  int64_t longest = 0;
  for (int32_t r = 0; r < a.rows; ++r) longest = std::max<int64_t>(longest, a.row_ptr[r + 1] - a.row_ptr[r]);
  return std::max(kTolF32, 4 * 0x1p-24 * std::sqrt(static_cast<double>(longest) / 4));
}

}  // namespace

TEST_CASE("SpmvMatchesReferenceOnGeneratedMatrices") {
  for (const char* spec :
       {"stencil2d:n=300", "stencil3d:n=40,points=27", "banded:n=200000,bw=8", "fem:nodes=60000,k=3,blocks=9",
        "uniform:n=100000,d=16", "rmat:scale=15,ef=8", "powerlaw:n=50000,avg=8,alpha=1.5,max=20000"}) {
    CAPTURE(spec);
    auto a = generate(spec);
    CHECK(spmv_error<float>(a, 1, 0) <= kTolF32);
    CHECK(spmv_error<double>(a, 1, 0) <= kTolF64);
  }
}

TEST_CASE("SpmvMatchesReferenceAt20MNonzeros") {
  auto a = generate("uniform:n=1250000,d=16,seed=3");
  REQUIRE(a.nnz() == 20'000'000);
  CHECK(spmv_error<float>(a, 1, 0) <= kTolF32);
  CHECK(spmv_error<double>(a, 1, 0) <= kTolF64);
}

TEST_CASE("SpmvMatchesReferenceOnSharedMatrices") {
  for (const auto& path : dbs_test::shared_matrices()) {
    CAPTURE(path);
    auto a = read_matrix_market(path);
    CHECK(spmv_error<float>(a, 1, 0) <= kTolF32);
    CHECK(spmv_error<double>(a, 1, 0) <= kTolF64);
  }
}

TEST_CASE("SpmvHonoursAlphaAndBeta") {
  auto a = generate("rmat:scale=12,ef=8");
  CHECK(spmv_error<float>(a, 2.5, -0.5) <= kTolF32);
  CHECK(spmv_error<double>(a, 2.5, -0.5) <= kTolF64);
  CHECK(spmv_error<double>(a, 0, 1.5) <= kTolF64);               // alpha = 0: y scaled only
  CHECK(spmv_error<float>(a, 1, 0, /*nan_y=*/true) <= kTolF32);  // beta = 0 never reads y
  CHECK(spmv_error<double>(a, 1, 0, /*nan_y=*/true) <= kTolF64);
}

TEST_CASE("SpmvHandlesEdgeShapes") {
  CsrMatrix<double> one;
  one.rows = one.cols = 1;
  one.row_ptr = {0, 1};
  one.col_idx = {0};
  one.values = {3.0};
  CHECK(spmv_error<double>(one, 1, 0) <= kTolF64);

  CsrMatrix<double> empty_rows;  // rows with nothing in them still get y = beta*y
  empty_rows.rows = 5;
  empty_rows.cols = 3;
  empty_rows.row_ptr = {0, 0, 2, 2, 2, 3};
  empty_rows.col_idx = {0, 2, 1};
  empty_rows.values = {1.0, -2.0, 4.0};
  CHECK(spmv_error<double>(empty_rows, 1, 0.5) <= kTolF64);

  CsrMatrix<float> none;  // 0 × 4: nothing to launch
  none.rows = 0;
  none.cols = 4;
  auto plan = plan_spmv(ctx(), none);
  Stream s(ctx());
  DeviceBuffer<float> x(4), y(0);
  CHECK_NOTHROW(plan.run(x, y, s));
  s.synchronize();
}

TEST_CASE("SpmvRunRejectsWrongSizes") {
  auto a = generate("stencil2d:n=10").cast<float>();
  auto plan = plan_spmv(ctx(), a);
  Stream s(ctx());
  DeviceBuffer<float> x(a.cols + 1), y(a.rows);
  CHECK_THROWS_AS(plan.run(x, y, s), UsageError);
}

TEST_CASE("SpmvPlanRecordsWhereItsConfigAndKernelCameFrom") {
  auto a = generate("stencil2d:n=64").cast<float>();
  auto plan = plan_spmv(ctx(), a);
  CHECK(plan.config_source() == ConfigSource::Default);
  CHECK(plan.kernel().key == plan.kernels().front().key);
  auto again = plan_spmv(ctx(), a);
  CHECK(again.kernel().origin == "loaded");  // same context: module already resident
  CHECK(plan.explain().find(plan.kernel().key) != std::string::npos);
  CHECK(plan.explain().find("small matrix") != std::string::npos);  // 4096 rows of <= 5: one vector kernel
}

namespace {

// Every strategy and both selection modes. The "small" classified cutoffs put rows of a few
// hundred entries into the block and long-row bins, so small matrices exercise every bin.
std::vector<nlohmann::json> strategy_configs() {
  std::vector<nlohmann::json> configs;
  for (const char* s : {"scalar", "block", "longrow", "uniform", "classified"}) {
    auto p = config_to_json(SpmvConfig{});
    p["strategy"] = s;
    configs.push_back(p);
  }
  for (int l : {2, 4, 8, 16, 32}) {
    auto p = config_to_json(SpmvConfig{});
    p["strategy"] = "vector";
    p["lanes"] = l;
    configs.push_back(p);
  }
  auto unfolded = config_to_json(SpmvConfig{});
  unfolded["fold_share"] = 0.0;
  configs.push_back(unfolded);
  auto small = unfolded;
  small["block_max_len"] = 300;
  small["longrow_chunk"] = 256;
  configs.push_back(small);
  // The same bins, one kernel per bin instead of one launch for all.
  unfolded["fuse_bins"] = 0;
  small["fuse_bins"] = 0;
  configs.push_back(unfolded);
  configs.push_back(small);
  // dbtune searches the block size: every kernel (classified bins, block per row, long rows) at 128 and 512.
  for (int b : {128, 512})
    for (const char* s : {"classified", "block", "longrow"}) {
      auto p = config_to_json(SpmvConfig{});
      p["strategy"] = s;
      p["block_size"] = b;
      configs.push_back(p);
    }
  // Short rows in memory order, 32 a warp (window_max_len): the scalar bin alone (8), up to the
  // l4 bin (64; f64 rounds down to 32) and every row-kernel bin (1024 rounds down to the widest);
  // then with the small cutoffs and no folding, as given and in degree order, so windows run
  // beside listed vector, block and long-row bins.
  for (int w : {8, 64, 1024}) {
    auto p = config_to_json(SpmvConfig{});
    p["window_max_len"] = w;
    configs.push_back(p);
  }
  auto windowed = config_to_json(SpmvConfig{});
  windowed["fold_share"] = 0.0;
  windowed["block_max_len"] = 300;
  windowed["longrow_chunk"] = 256;
  windowed["window_max_len"] = 64;
  configs.push_back(windowed);
  windowed["reorder"] = "degree";
  configs.push_back(windowed);
  // A's columns in degree order (x gathered first): with every launch kind after the gather (the
  // one-launch classified kernel, a kernel per bin with split long rows, one strategy).
  for (const char* s : {"classified", "uniform", "scalar"}) {
    auto p = config_to_json(SpmvConfig{});
    p["strategy"] = s;
    p["reorder"] = "degree";
    configs.push_back(p);
  }
  auto ordered = small;  // one kernel per bin, long rows split into 256-entry chunks
  ordered["reorder"] = "degree";
  configs.push_back(ordered);
  // auto at thresholds every matrix with 4 entries a column passes (degree) and none passes.
  for (const int64_t min_cols : {int64_t{0}, int64_t{INT32_MAX}}) {
    auto p = config_to_json(SpmvConfig{});
    p["reorder"] = "auto";
    p["reorder_min_hub_share"] = 0.0;
    p["reorder_min_cols"] = min_cols;
    configs.push_back(p);
  }
  // The classified configs above run their bins (a small matrix would take the one-kernel path
  // instead); that path on its own: as the device's threads allow, on every matrix whose rows fit
  // the widest vector bin (fill_threads past any matrix here), and in degree order.
  for (auto& p : configs)
    if (p["strategy"] == "classified") p["fill_threads"] = 0;
  for (const int64_t threads : {int64_t{-1}, int64_t{INT32_MAX}})
    for (const char* order : {"none", "degree"}) {
      auto p = config_to_json(SpmvConfig{});
      p["fill_threads"] = threads;
      p["reorder"] = order;
      configs.push_back(p);
    }
  return configs;
}

template <class T>
double strategy_error(const CsrMatrix<double>& ad, const nlohmann::json& params, double alpha, double beta,
                      bool nan_y) {
  return spmv_error<T>(ad, alpha, beta, nan_y, params);
}

// One row holding every nonzero, between empty rows.
CsrMatrix<double> one_full_row(int32_t rows, int32_t cols, int32_t full) {
  CsrMatrix<double> a;
  a.rows = rows;
  a.cols = cols;
  a.row_ptr.assign(static_cast<size_t>(rows) + 1, 0);
  for (int32_t c = 0; c < cols; ++c) {
    a.col_idx.push_back(c);
    a.values.push_back(1.0 + (c % 7) * 0.25);
  }
  for (int32_t r = full + 1; r <= rows; ++r) a.row_ptr[r] = cols;
  return a;
}

// Rows of every class: empty, short, medium, a few hundred, and two past the block bin (70000 and
// 120000 entries), in a 20000 x 150000 matrix.
CsrMatrix<double> mixed_rows() {
  CsrMatrix<double> a;
  a.rows = 20000;
  a.cols = 150000;
  a.row_ptr.push_back(0);
  for (int32_t r = 0; r < a.rows; ++r) {
    int32_t len = r % 9;  // 0..8
    if (r % 50 == 0) len = 40;
    if (r >= 5000 && r < 5100) len = 500;
    if (r == 100) len = 70000;
    if (r == 9000) len = 120000;
    const int32_t step = std::max(1, a.cols / std::max(len, 1));
    for (int32_t k = 0; k < len; ++k) {
      a.col_idx.push_back(k * step + r % step);  // ascending, < len * step <= cols
      a.values.push_back(0.5 + ((r + k) % 11) * 0.125);
    }
    a.row_ptr.push_back(static_cast<int32_t>(a.col_idx.size()));
  }
  return a;
}

}  // namespace

TEST_CASE("SpmvStrategiesMatchReference") {
  std::vector<std::pair<std::string, CsrMatrix<double>>> mats;
  for (const char* spec :
       {"stencil2d:n=300", "stencil3d:n=30,points=27", "fem:nodes=60000,k=3,blocks=9", "rmat:scale=14,ef=8",
        "powerlaw:n=20000,avg=40,alpha=1.5,max=15000", "powerlaw:n=200000,avg=8,alpha=1.2,max=150000"})
    mats.emplace_back(spec, generate(spec));
  mats.emplace_back("mixed rows up to 120000 long", mixed_rows());
  mats.emplace_back("one full row of 120000 between empty rows", one_full_row(1000, 120000, 500));
  mats.emplace_back("one 1x1", one_full_row(1, 1, 0));
  dbs_test::Shard shard;  // a (matrix, config) a shard under a sanitizer (hardening_run.sh SAN_SHARDS)
  for (const auto& [name, a] : mats) {
    for (const auto& params : strategy_configs()) {
      if (!shard.next()) continue;
      CAPTURE(name);
      CAPTURE(params.dump());
      CHECK(strategy_error<float>(a, params, 1.5, 0.0, true) <= tol_f32(a));  // beta 0: NaN in y unread
      CHECK(strategy_error<float>(a, params, 1.5, 0.5, false) <= tol_f32(a));
      CHECK(strategy_error<double>(a, params, 0.0, 0.5, false) <= kTolF64);  // alpha 0: y = beta*y
      CHECK(strategy_error<double>(a, params, -2.0, 0.0, true) <= kTolF64);
    }
  }
}

TEST_CASE("SpmvStrategiesMatchReferenceOnSharedMatricesAndEdgeShapes") {
  CsrMatrix<double> none;  // 0 x 5
  none.rows = 0;
  none.cols = 5;
  none.row_ptr = {0};
  for (const auto& params : strategy_configs()) {
    CAPTURE(params.dump());
    CHECK_NOTHROW(strategy_error<float>(none, params, 1.0, 0.0, false));
    for (const auto& path : dbs_test::shared_matrices()) {
      CAPTURE(path);
      CHECK(strategy_error<double>(read_matrix_market(path), params, 1.0, 0.25, false) <= kTolF64);
    }
  }
}

TEST_CASE("SpmvClassifiedSplitsMixedRowsAndFoldsThinBins") {
  auto mixed = mixed_rows().cast<float>();
  auto plan = plan_spmv(ctx(), mixed, Config{"spmv", config_to_json(SpmvConfig{}), ConfigSource::Explicit, "test"});
  CHECK(plan.launches() == 1);  // every bin in one launch
  CHECK(plan.explain().find("chunks of") != std::string::npos);
  auto split_params = config_to_json(SpmvConfig{});
  split_params["fuse_bins"] = 0;
  auto split = plan_spmv(ctx(), mixed, Config{"spmv", split_params, ConfigSource::Explicit, "test"});
  CHECK(split.launches() >= 4);  // short rows, a middle bin, long-row chunks and their finalize
  auto window_params = config_to_json(SpmvConfig{});
  window_params["window_max_len"] = 64;
  auto windowed = plan_spmv(ctx(), mixed, Config{"spmv", window_params, ConfigSource::Explicit, "test"});
  CHECK(windowed.launches() == 1);
  CHECK(windowed.explain().find(".w64") != std::string::npos);
  CHECK(windowed.explain().find("rows of length <= 64 in memory order") != std::string::npos);
  window_params["fuse_bins"] = 0;  // asked for where it cannot apply: explain says so
  CHECK(plan_spmv(ctx(), mixed, Config{"spmv", window_params, ConfigSource::Explicit, "test"})
            .explain()
            .find("window_max_len 64 not applied: fuse_bins 0") != std::string::npos);
  auto regular = generate("stencil3d:n=40,points=27").cast<float>();
  auto one = plan_spmv(ctx(), regular, Config{"spmv", config_to_json(SpmvConfig{}), ConfigSource::Explicit, "test"});
  CHECK(one.launches() == 1);  // boundary rows fold into the interior's bin: one kernel, no list
}

// reorder degree: a second call with another x must read that x (the plan's ordered copy is
// refreshed each call), inside a captured graph too, and explain names the order.
TEST_CASE("SpmvColumnOrderMatchesReferenceCallAfterCall") {
  const auto ad = generate("rmat:scale=14,ef=16,scramble=1");
  const auto a = ad.cast<float>();
  auto params = config_to_json(SpmvConfig{});
  params["reorder"] = "degree";
  auto plan = plan_spmv(ctx(), a, Config{"spmv", params, ConfigSource::Explicit, "test"});
  CHECK(plan.explain().find("columns in degree order") != std::string::npos);
  CHECK(plan.shares_call_state());
  Stream s(ctx());
  DeviceBuffer<float> dy(static_cast<size_t>(a.rows));
  for (uint64_t seed : {11, 12, 13}) {
    CAPTURE(seed);
    const auto x = dbs_test::random_vector<float>(a.cols, seed);
    DeviceBuffer<float> dx{std::span<const float>(x)};
    const auto ref = reference::spmv(a, std::span<const float>(x));
    if (seed == 13) {
      CudaGraph g = CudaGraph::capture(s, [&] { plan.run(dx, dy, s); });
      g.replay(s);
    } else {
      plan.run(dx, dy, s);
    }
    s.synchronize();
    CHECK(reference::relative_error(std::span<const double>(ref), std::span<const float>(dy.download())) <=
          tol_f32(ad));
  }
}

// reorder auto (the default): the degree order on a skewed graph with entries enough a column, A's
// own order on a wide matrix with one entry a column (its gather could not pay), each equal to the
// reference, and the plan says which and what the order cost on the host.
TEST_CASE("SpmvReorderAutoOrdersOnlyWhereTheGatherCanPay") {
  auto params = config_to_json(SpmvConfig{});
  params["reorder_min_cols"] = 0;  // the test graphs are small
  const Config cfg{"spmv", params, ConfigSource::Explicit, "test"};
  struct Case {
    const char* name;
    CsrMatrix<double> a;
    bool ordered;
  };
  const Case cases[] = {{"scrambled rmat", generate("rmat:scale=14,ef=16,scramble=1"), true},
                        {"one full row of 120000", one_full_row(1000, 120000, 500), false}};
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const auto a = c.a.cast<float>();
    auto plan = plan_spmv(ctx(), a, cfg);
    CHECK(plan.columns_reordered() == c.ordered);
    CHECK((plan.reorder_ms() > 0) == c.ordered);
    CHECK(plan.explain().find(c.ordered ? "columns in degree order" : "entries a column (degree from 4): none") !=
          std::string::npos);
    const auto x = dbs_test::random_vector<float>(a.cols, 21);
    DeviceBuffer<float> dx{std::span<const float>(x)}, dy(static_cast<size_t>(a.rows));
    Stream s(ctx());
    plan.run(dx, dy, s);
    s.synchronize();
    const auto ref = reference::spmv(a, std::span<const float>(x));
    CHECK(reference::relative_error(std::span<const double>(ref), std::span<const float>(dy.download())) <=
          tol_f32(c.a));
  }
}

// SpmvOptions: the caller's reorder on top of the looked-up config; degree on a small A (auto would
// leave it: x fits L1), none where the caller needs a plan it can share between streams.
TEST_CASE("SpmvOptionsReorderOverridesTheLookedUpConfigMatchesReference") {
  const auto a64 = generate("rmat:scale=14,ef=16,scramble=1");
  const auto a = a64.cast<float>();
  const auto x = dbs_test::random_vector<float>(a.cols, 23);
  const auto ref = reference::spmv(a, std::span<const float>(x));
  (void)ctx();  // first: the buffers below need a current context (alone, nothing else made one)
  DeviceBuffer<float> dx{std::span<const float>(x)}, dy(static_cast<size_t>(a.rows));
  Stream s(ctx());
  const auto plain = plan_spmv(ctx(), a);
  const auto same = plan_spmv(ctx(), a, SpmvOptions{});
  CHECK(same.config().params == plain.config().params);
  CHECK(same.config_source() == plain.config_source());
  CHECK(same.columns_reordered() == plain.columns_reordered());
  for (const char* r : {"degree", "none", "auto"}) {
    CAPTURE(r);
    SpmvOptions o;
    o.reorder = r;
    const auto plan = plan_spmv(ctx(), a, o);
    CHECK(plan.typed_config().reorder == r);
    CHECK(plan.config_source() == plain.config_source());
    // auto's choice depends on the looked-up thresholds (SpmvReorderAutoOrdersOnlyWhereTheGatherCanPay).
    if (std::string(r) != "auto") CHECK(plan.columns_reordered() == (std::string(r) == "degree"));
    if (plan.columns_reordered()) CHECK(plan.shares_call_state());  // the plan's copy of x
    CHECK(plan.explain().find(std::string("reorder ") + r + " from the caller") != std::string::npos);
    plan.run(dx, dy, s);
    s.synchronize();
    CHECK(reference::relative_error(std::span<const double>(ref), std::span<const float>(dy.download())) <=
          tol_f32(a64));
  }
  SpmvOptions bad;
  bad.reorder = "rcm";
  CHECK_THROWS_AS(plan_spmv(ctx(), a, bad), UsageError);
}

// A small matrix takes one vector kernel as wide as the device's resident threads allow; the same
// matrix past them (fill_threads below its rows x 2) and a matrix with rows past the widest
// vector bin are classified. Each matches the reference.
TEST_CASE("SpmvSmallMatrixPathMatchesReferenceAndGivesWayWherePastTheDevice") {
  const auto small = generate("stencil2d:n=64");  // 4096 rows of at most 5 entries
  auto plan = plan_spmv(ctx(), small.cast<float>());
  CHECK(plan.launches() == 1);
  CHECK(plan.kernel().key == "spmv.vector.f32.b256.l4");  // no more lanes than the longest row
  CHECK(spmv_error<float>(small, 1.5, 0.5) <= kTolF32);
  CHECK(spmv_error<double>(small, 1.5, 0.5) <= kTolF64);
  auto params = config_to_json(SpmvConfig{});
  params["fill_threads"] = 4096;  // 2 lanes a row would need 8192
  auto past = plan_spmv(ctx(), small.cast<float>(), Config{"spmv", params, ConfigSource::Explicit, "test"});
  CHECK(past.explain().find("small matrix") == std::string::npos);
  CHECK(spmv_error<float>(small, 1.5, 0.5, false, params) <= kTolF32);
  const auto mixed = mixed_rows();  // rows past the block bin
  CHECK(plan_spmv(ctx(), mixed.cast<float>()).explain().find("small matrix") == std::string::npos);
}

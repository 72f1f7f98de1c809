// SpMV on the GPU against the CPU reference: generated matrices (up to 20M nonzeros), every real
// matrix in ../shared/matrices, and the edge cases of alpha/beta.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "dbsparse/dbsparse.hpp"
#include "test_support.hpp"

using namespace dbsparse;

namespace {

Context& ctx() {
  static Context c;
  return c;
}

template <class T>
double spmv_error(const CsrMatrix<double>& ad, double alpha, double beta, bool nan_y = false) {
  CsrMatrix<T> a = ad.cast<T>();
  auto x = dbs_test::random_vector<T>(a.cols, 7);
  auto y0 = dbs_test::random_vector<T>(a.rows, 8);
  if (nan_y)
    for (auto& v : y0) v = std::numeric_limits<T>::quiet_NaN();
  auto ref = reference::spmv(a, std::span<const T>(x), alpha, beta, std::span<const T>(y0));
  auto plan = ctx().plan_spmv(a);
  Stream s(ctx());
  DeviceBuffer<T> dx{std::span<const T>(x)}, dy{std::span<const T>(y0)};
  plan.run(dx, dy, s, static_cast<T>(alpha), static_cast<T>(beta));
  s.synchronize();
  auto got = dy.download();
  return reference::relative_error(std::span<const double>(ref), std::span<const T>(got));
}

constexpr double kTolF32 = 1e-5, kTolF64 = 1e-12;

}  // namespace

TEST_CASE("SpmvMatchesReferenceOnGeneratedMatrices") {
  for (const char* spec :
       {"stencil2d:n=300", "stencil3d:n=40,points=27", "banded:n=200000,bw=8",
        "fem:nodes=60000,k=3,blocks=9", "uniform:n=100000,d=16", "rmat:scale=15,ef=8",
        "powerlaw:n=50000,avg=8,alpha=1.5,max=20000"}) {
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
  CHECK(spmv_error<double>(a, 0, 1.5) <= kTolF64);           // alpha = 0: y scaled only
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
  auto plan = ctx().plan_spmv(none);
  Stream s(ctx());
  DeviceBuffer<float> x(4), y(0);
  CHECK_NOTHROW(plan.run(x, y, s));
  s.synchronize();
}

TEST_CASE("SpmvRunRejectsWrongSizes") {
  auto a = generate("stencil2d:n=10").cast<float>();
  auto plan = ctx().plan_spmv(a);
  Stream s(ctx());
  DeviceBuffer<float> x(a.cols + 1), y(a.rows);
  CHECK_THROWS_AS(plan.run(x, y, s), UsageError);
}

TEST_CASE("SpmvPlanRecordsWhereItsConfigAndKernelCameFrom") {
  auto a = generate("stencil2d:n=64").cast<float>();
  auto plan = ctx().plan_spmv(a);
  CHECK(plan.kernel().key == "spmv.scalar.f32.b256");
  CHECK(plan.config_source() == ConfigSource::Default);
  auto again = ctx().plan_spmv(a);
  CHECK(again.kernel().origin == "loaded");  // same context: module already resident
  CHECK(plan.explain().find("spmv.scalar.f32.b256") != std::string::npos);
}

TEST_CASE("SpmvStrategiesMatchReference") {
  // Vector (every width), block per row and the uniform choice, on short, medium and long rows.
  std::vector<nlohmann::json> configs = {{{"strategy", "block"}}, {{"strategy", "auto"}}};
  for (int l : {2, 4, 8, 16, 32}) configs.push_back({{"strategy", "vector"}, {"lanes", l}});
  for (const char* spec : {"stencil2d:n=300", "fem:nodes=60000,k=3,blocks=9", "rmat:scale=14,ef=8",
                           "powerlaw:n=20000,avg=40,alpha=1.5,max=15000"}) {
    auto ad = generate(spec);
    for (const auto& params : configs) {
      CAPTURE(spec);
      CAPTURE(params.dump());
      Config cfg{"spmv", params, ConfigSource::Explicit, "test"};
      for (double beta : {0.0, 0.5}) {
        auto a = ad.cast<float>();
        auto x = dbs_test::random_vector<float>(a.cols, 7);
        auto y0 = dbs_test::random_vector<float>(a.rows, 8);
        auto ref = reference::spmv(a, std::span<const float>(x), 1.5, beta, std::span<const float>(y0));
        auto plan = ctx().plan_spmv(a, cfg);
        Stream s(ctx());
        DeviceBuffer<float> dx{std::span<const float>(x)}, dy{std::span<const float>(y0)};
        plan.run(dx, dy, s, 1.5f, static_cast<float>(beta));
        s.synchronize();
        auto got = dy.download();
        CHECK(reference::relative_error(std::span<const double>(ref), std::span<const float>(got)) <= kTolF32);
      }
    }
  }
}

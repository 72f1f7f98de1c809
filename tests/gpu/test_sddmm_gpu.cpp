// SDDMM (include/dbsparse/sddmm.hpp) against reference::sddmm on a generated pattern with empty
// rows and a hub row, in f32 and bf16, at k that take the scalar and the 4-value kernels and
// several group widths, scaled by A's values and not, aligned and one value off.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "dbsparse/half.hpp"
#include "dbsparse/reference.hpp"
#include "dbsparse/sddmm.hpp"
#include "gpu/gpu_support.hpp"
#include "tools/ops/registry.hpp"

namespace {

// rows x cols: every 5th row empty, row 3 with half of the columns (a hub: many tiles), the
// others 1..12 sorted distinct columns; values in [-1, 1).
CsrMatrix<float> sddmm_pattern(int32_t rows, int32_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> val(-1.0f, 1.0f);
  CsrMatrix<float> a;
  a.rows = rows;
  a.cols = cols;
  for (int32_t r = 0; r < rows; ++r) {
    const int len = r % 5 == 0 ? 0 : r == 3 ? cols / 2 : 1 + static_cast<int>(rng() % 12);
    std::vector<char> used(static_cast<size_t>(cols), 0);
    for (int placed = 0; placed < len;) {
      const auto c = static_cast<size_t>(rng() % static_cast<uint64_t>(cols));
      if (!used[c]) used[c] = 1, ++placed;
    }
    for (int32_t c = 0; c < cols; ++c)
      if (used[static_cast<size_t>(c)]) {
        a.col_idx.push_back(c);
        a.values.push_back(val(rng));
      }
    a.row_ptr.push_back(static_cast<int32_t>(a.col_idx.size()));
  }
  return a;
}

// The largest |out - ref| over alpha * sum_j |x_j y_j| (times |a_e| when scaled): the error
// relative to what the dot's terms could cancel.
double sddmm_error(const CsrMatrix<float>& a, const std::vector<float>& x, const std::vector<float>& y, int k,
                   bool scale, float alpha, const std::vector<float>& got) {
  const std::vector<double> ref = reference::sddmm(a, std::span<const float>(x), std::span<const float>(y), k, scale);
  double worst = 0;
  for (int32_t i = 0; i < a.rows; ++i)
    for (int32_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
      double mag = 0;
      for (int j = 0; j < k; ++j)
        mag += std::abs(double(x[static_cast<size_t>(i) * k + j]) * y[static_cast<size_t>(a.col_idx[e]) * k + j]);
      if (scale) mag *= std::abs(a.values[e]);
      const double err = std::abs(double(got[e]) - alpha * ref[e]) / (std::abs(alpha) * mag + 1e-30);
      if (!(err <= worst)) worst = std::isnan(err) ? INFINITY : err;
    }
  return worst;
}

// One run with X and Y `offset` values past an aligned start; out as floats.
std::vector<float> run_sddmm(const SddmmPlan& plan, const std::vector<float>& x, const std::vector<float>& y,
                             float alpha, int offset) {
  Stream s(ctx());
  const size_t nnz = static_cast<size_t>(plan.nnz());
  if (plan.dtype() == SpmmDtype::F32) {
    std::vector<float> xp(offset, 0.0f), yp(offset, 0.0f);
    xp.insert(xp.end(), x.begin(), x.end());
    yp.insert(yp.end(), y.begin(), y.end());
    DeviceBuffer<float> xd{std::span<const float>(xp)}, yd{std::span<const float>(yp)}, out(nnz);
    plan.run(xd.ptr() + 4 * offset, yd.ptr() + 4 * offset, out.ptr(), s.handle(), alpha);
    s.synchronize();
    return out.download();
  }
  std::vector<uint16_t> xp(offset, 0), yp(offset, 0);
  const auto xb = floats_to_bf16(x), yb = floats_to_bf16(y);
  xp.insert(xp.end(), xb.begin(), xb.end());
  yp.insert(yp.end(), yb.begin(), yb.end());
  DeviceBuffer<uint16_t> xd{std::span<const uint16_t>(xp)}, yd{std::span<const uint16_t>(yp)}, out(nnz);
  plan.run(xd.ptr() + 2 * offset, yd.ptr() + 2 * offset, out.ptr(), s.handle(), alpha);
  s.synchronize();
  return bf16_to_floats(out.download());
}

}  // namespace

TEST_CASE("SddmmMatchesReference") {
  const CsrMatrix<float> a = sddmm_pattern(500, 400, 9);
  for (SpmmDtype d : {SpmmDtype::F32, SpmmDtype::BF16}) {
    CAPTURE(to_string(d));
    for (int k : {1, 16, 33, 128, 512}) {
      CAPTURE(k);
      std::vector<float> x = dbs_test::random_vector<float>(static_cast<size_t>(a.rows) * k, 3 + k);
      std::vector<float> y = dbs_test::random_vector<float>(static_cast<size_t>(a.cols) * k, 5 + k);
      if (d == SpmmDtype::BF16) {  // the reference sees the values the device gets
        x = bf16_to_floats(floats_to_bf16(x));
        y = bf16_to_floats(floats_to_bf16(y));
      }
      for (bool scale : {false, true}) {
        CAPTURE(scale);
        SddmmOptions o;
        o.dtype = d;
        o.scale_by_values = scale;
        const SddmmPlan plan = plan_sddmm(ctx(), a, k, o);
        CAPTURE(plan.explain());
        CHECK(plan.nnz() == a.nnz());
        for (int offset : {0, 1}) {  // one value off: the scalar kernel
          CAPTURE(offset);
          const std::vector<float> got = run_sddmm(plan, x, y, 0.5f, offset);
          CHECK(sddmm_error(a, x, y, k, scale, 0.5f, got) <= (d == SpmmDtype::F32 ? 1e-5 : 1e-2));
        }
      }
    }
  }
  // Small tiles: a row's entries spread over many groups, each loading X's row again.
  const Config tiny{"sddmm", {{"tile", 3}, {"warps", 2}}, ConfigSource::Explicit, "test"};
  SddmmOptions o;
  o.config = &tiny;
  const std::vector<float> x = dbs_test::random_vector<float>(static_cast<size_t>(a.rows) * 64, 1);
  const std::vector<float> y = dbs_test::random_vector<float>(static_cast<size_t>(a.cols) * 64, 2);
  const SddmmPlan plan = plan_sddmm(ctx(), a, 64, o);
  CHECK(sddmm_error(a, x, y, 64, false, 1.0f, run_sddmm(plan, x, y, 1.0f, 0)) <= 1e-5);
}

TEST_CASE("SddmmPlansRefuseWrongSizesAndTypes") {
  const CsrMatrix<float> a = sddmm_pattern(50, 40, 1);
  CHECK_THROWS_AS(plan_sddmm(ctx(), a, 0), UsageError);
  CHECK_THROWS_AS(plan_sddmm(ctx(), a, 513), UsageError);
  CHECK_THROWS_AS(plan_sddmm(ctx(), a.cast<double>(), 8), UsageError);
  const SddmmPlan plan = plan_sddmm(ctx(), a, 8);
  Stream s(ctx());
  DeviceBuffer<float> x(static_cast<size_t>(a.rows) * 8), y(static_cast<size_t>(a.cols) * 8),
      out(static_cast<size_t>(a.nnz()));
  DeviceBuffer<float> short_y(static_cast<size_t>(a.cols) * 7);
  CHECK_NOTHROW(plan.run(x, y, out, s));
  CHECK_THROWS_AS(plan.run(x, short_y, out, s), UsageError);
  DeviceBuffer<uint16_t> x16(x.size()), y16(y.size()), out16(out.size());
  CHECK_THROWS_AS(plan.run(x16, y16, out16, s), UsageError);
  s.synchronize();
}

// `dbsparse bench sddmm`: dbsparse's and cuSPARSE's rows, each checked by the bench against the
// reference, in f32 and bf16 at a k of each kernel shape (float4 and scalars).
TEST_CASE("BenchSddmmChecksDbsparseAndCusparseRows") {
  Stream s(ctx());
  tools::BenchRequest req;
  req.specs = {"powerlaw:n=3000,avg=8,alpha=1.5,max=1500,seed=3", "stencil2d:n=40"};
  req.n_cols = {32, 33};
  req.precisions = {"f32", "bf16"};
  req.timing.samples = 2;
  req.timing.batch = 1;
  req.timing.warmup = 1;
  const nlohmann::json out = tools::find_op("sddmm").bench(ctx(), s, req);
  REQUIRE(out["results"].size() == 8);
  for (const auto& rec : out["results"]) {
    CAPTURE(rec.dump());
    REQUIRE(rec["impls"].size() >= 1);
    CHECK(rec["impls"][0]["impl"] == "dbsparse");
    CHECK(rec["impls"][0]["correct"].get<bool>());
    if (rec["precision"] == "f32") {  // cuSPARSE's SDDMM takes f32 everywhere
      REQUIRE(rec["impls"].size() == 2);
      CHECK(rec["impls"][1]["correct"].get<bool>());
    }
  }
  CHECK(out["summary"].contains("f32 32"));
}

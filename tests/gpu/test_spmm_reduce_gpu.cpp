// SpMM's reductions (SpmmOptions::reduce: sum, mean, max, min) and the max / min plans' arg array,
// against a CPU reference on a generated graph with empty rows, a long row and many ties (small
// integer values, whose products are exact in f32 and bf16), in f32 and bf16, at widths that take
// the float4 and scalar kernels and several rows a warp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "dbsparse/half.hpp"
#include "dbsparse/spmm.hpp"
#include "gpu/gpu_support.hpp"
#include "tools/ops/registry.hpp"

namespace {

// rows x cols, every 7th row empty, row 5 with 150 entries (or all of a narrower graph), the others 1..20 sorted distinct
// columns; values in {-1, 1, 2}.
CsrMatrix<float> reduce_graph(int32_t rows, int32_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  CsrMatrix<float> a;
  a.rows = rows;
  a.cols = cols;
  const float vals[] = {-1.0f, 1.0f, 2.0f};
  for (int32_t r = 0; r < rows; ++r) {
    // At most `cols` distinct columns: a longer row would never be placed (the loop below).
    const int len = std::min(cols, r % 7 == 0 ? 0 : r == 5 ? 150 : 1 + static_cast<int>(rng() % 20));
    std::vector<char> used(static_cast<size_t>(cols), 0);
    int placed = 0;
    while (placed < len) {
      const auto c = static_cast<size_t>(rng() % static_cast<uint64_t>(cols));
      if (!used[c]) used[c] = 1, ++placed;
    }
    for (int32_t c = 0; c < cols; ++c)
      if (used[static_cast<size_t>(c)]) {
        a.col_idx.push_back(c);
        a.values.push_back(vals[rng() % 3]);
      }
    a.row_ptr.push_back(static_cast<int32_t>(a.col_idx.size()));
  }
  return a;
}

struct ReduceRef {
  std::vector<double> c;
  std::vector<int32_t> arg;
};

// C = alpha * reduce + beta * C0 in double; arg: the lowest winning entry, -1 for an empty row.
ReduceRef reduce_reference(const CsrMatrix<float>& a, const std::vector<float>& b, int n, SpmmReduce op, float alpha,
                           float beta, const std::vector<float>& c0) {
  ReduceRef out;
  out.c.assign(static_cast<size_t>(a.rows) * n, 0.0);
  out.arg.assign(static_cast<size_t>(a.rows) * n, -1);
  for (int32_t i = 0; i < a.rows; ++i)
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      int32_t win = -1;
      for (int32_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
        const double p = double(a.values[e]) * b[static_cast<size_t>(a.col_idx[e]) * n + j];
        if (op == SpmmReduce::Sum || op == SpmmReduce::Mean)
          acc += p;
        else if (win < 0 || (op == SpmmReduce::Max ? p > acc : p < acc))
          acc = p, win = e;
      }
      const int32_t len = a.row_ptr[i + 1] - a.row_ptr[i];
      if (op == SpmmReduce::Mean && len > 0) acc /= len;
      const size_t k = static_cast<size_t>(i) * n + j;
      out.c[k] = alpha * acc + (beta != 0.0f ? beta * double(c0[k]) : 0.0);
      out.arg[k] = win;
    }
  return out;
}

std::vector<float> small_ints(size_t count, int lo, int hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(count);
  for (float& x : v) x = static_cast<float>(lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1)));
  return v;
}

// One plan's run (run_arg for max / min) on B and C0; returns C as floats and fills `arg`.
std::vector<float> run_plan(const SpmmPlan& plan, SpmmDtype d, const std::vector<float>& b,
                            const std::vector<float>& c0, float alpha, float beta, std::vector<int32_t>& arg) {
  Stream s(ctx());
  const bool with_arg = plan.reduce() == SpmmReduce::Max || plan.reduce() == SpmmReduce::Min;
  DeviceBuffer<int32_t> arg_d(with_arg ? c0.size() : 0);
  std::vector<float> c;
  if (d == SpmmDtype::F32) {
    DeviceBuffer<float> bd{std::span<const float>(b)}, cd{std::span<const float>(c0)};
    plan.run_arg(bd.ptr(), cd.ptr(), with_arg ? arg_d.ptr() : 0, s.handle(), alpha, beta);
    s.synchronize();
    c = cd.download();
  } else {
    const std::vector<uint16_t> b16 = floats_to_bf16(b), c16 = floats_to_bf16(c0);
    DeviceBuffer<uint16_t> bd{std::span<const uint16_t>(b16)}, cd{std::span<const uint16_t>(c16)};
    plan.run_arg(bd.ptr(), cd.ptr(), with_arg ? arg_d.ptr() : 0, s.handle(), alpha, beta);
    s.synchronize();
    c = bf16_to_floats(cd.download());
  }
  if (with_arg) arg = arg_d.download();
  return c;
}

}  // namespace

TEST_CASE("SpmmReduceMatchesReference") {
  const CsrMatrix<float> a = reduce_graph(700, 300, 5);
  for (SpmmDtype d : {SpmmDtype::F32, SpmmDtype::BF16}) {
    CAPTURE(to_string(d));
    for (int n : {1, 8, 32, 33, 128}) {
      CAPTURE(n);
      const std::vector<float> b = small_ints(static_cast<size_t>(a.cols) * n, -2, 2, 11 + n);
      const std::vector<float> c0 = small_ints(static_cast<size_t>(a.rows) * n, -3, 3, 13 + n);
      for (SpmmReduce op : {SpmmReduce::Sum, SpmmReduce::Mean, SpmmReduce::Max, SpmmReduce::Min}) {
        CAPTURE(to_string(op));
        SpmmOptions o;
        o.dtype = d;
        o.reduce = op;
        const SpmmPlan plan = plan_spmm(ctx(), a, n, o);
        CAPTURE(plan.explain());
        CHECK(plan.reduce() == op);
        CHECK(plan.path() == SpmmPath::CsrCudaCore);
        for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{0.5f, -0.25f}}) {
          CAPTURE(alpha);
          CAPTURE(beta);
          const ReduceRef ref = reduce_reference(a, b, n, op, alpha, beta, c0);
          std::vector<int32_t> arg;
          const std::vector<float> c = run_plan(plan, d, b, c0, alpha, beta, arg);
          // Max / min of exact products with alpha 1, beta 0: exact in both types; otherwise the
          // f32 sums' order, and bf16's one rounding of C (2^-8 relative, plus the mean's quotient).
          const bool exact = (op == SpmmReduce::Max || op == SpmmReduce::Min) && beta == 0.0f;
          const double rel = d == SpmmDtype::F32 ? 1e-5 : 1e-2;
          size_t bad = 0;
          for (size_t k = 0; k < c.size(); ++k) {
            const double err = std::abs(double(c[k]) - ref.c[k]);
            if (exact ? err != 0.0 : err > rel * (1.0 + std::abs(ref.c[k]))) {
              if (bad++ < 5) MESSAGE("C[" << k << "] = " << c[k] << ", reference " << ref.c[k]);
            }
          }
          CHECK(bad == 0);
          if (op == SpmmReduce::Max || op == SpmmReduce::Min) {
            REQUIRE(arg.size() == ref.arg.size());
            size_t wrong = 0;
            for (size_t k = 0; k < arg.size(); ++k)
              if (arg[k] != ref.arg[k] && wrong++ < 5)
                MESSAGE("arg[" << k << "] = " << arg[k] << ", reference " << ref.arg[k]);
            CHECK(wrong == 0);
          }
        }
      }
    }
  }
}

// A NaN product wins a max or min (it propagates, as torch's amax / amin), the lowest NaN entry
// its arg; the other columns are untouched by it.
TEST_CASE("SpmmMaxAndMinPropagateNaN") {
  CsrMatrix<float> a;  // row 0: entries 0, 1, 2 at columns 0, 1, 2; row 1: entry 3 at column 1
  a.rows = 2;
  a.cols = 3;
  a.row_ptr = {0, 3, 4};
  a.col_idx = {0, 1, 2, 1};
  a.values = {1.0f, 1.0f, 1.0f, 2.0f};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // B (3 x 2): column 0 holds a NaN at B[1][0] and B[2][0]; column 1 is finite.
  const std::vector<float> b = {5.0f, 1.0f, nan, 7.0f, nan, -3.0f};
  const std::vector<float> c0(4, 0.0f);
  for (SpmmReduce op : {SpmmReduce::Max, SpmmReduce::Min}) {
    CAPTURE(to_string(op));
    SpmmOptions o;
    o.reduce = op;
    const SpmmPlan plan = plan_spmm(ctx(), a, 2, o);
    std::vector<int32_t> arg;
    const std::vector<float> c = run_plan(plan, SpmmDtype::F32, b, c0, 1.0f, 0.0f, arg);
    CHECK(std::isnan(c[0]));
    CHECK(arg[0] == 1);  // the lowest NaN entry
    CHECK(c[1] == (op == SpmmReduce::Max ? 7.0f : -3.0f));
    CHECK(arg[1] == (op == SpmmReduce::Max ? 1 : 2));
    CHECK(std::isnan(c[2]));  // row 1: 2 * NaN
    CHECK(arg[2] == 3);
    CHECK(c[3] == 14.0f);
  }
}

TEST_CASE("SpmmReducePlansRefuseWhatTheyCannotDo") {
  const CsrMatrix<float> a = reduce_graph(64, 64, 3);
  SpmmOptions o;
  o.reduce = SpmmReduce::Max;
  o.path = SpmmPath::Brp;
  CHECK_THROWS_AS(plan_spmm(ctx(), a, 32, o), UsageError);
  o.path = SpmmPath::Condensed;
  CHECK_THROWS_AS(plan_spmm(ctx(), a, 32, o), UsageError);
  // A sum or mean plan has no arg to write.
  SpmmOptions mean;
  mean.reduce = SpmmReduce::Mean;
  const SpmmPlan plan = plan_spmm(ctx(), a, 32, mean);
  DeviceBuffer<float> b(static_cast<size_t>(a.cols) * 32), c(static_cast<size_t>(a.rows) * 32);
  DeviceBuffer<int32_t> arg(static_cast<size_t>(a.rows) * 32);
  Stream s(ctx());
  CHECK_THROWS_AS(plan.run_arg(b.ptr(), c.ptr(), arg.ptr(), s.handle()), UsageError);
}

// `dbsparse bench spmm --reduce mean,max,min`: a record per reduction in each case, each checked by
// the bench against its CPU reference.
TEST_CASE("BenchSpmmReduceChecksEveryReduction") {
  Stream s(ctx());
  tools::BenchRequest req;
  req.specs = {"powerlaw:n=3000,avg=8,alpha=1.5,max=1500,seed=3"};
  req.n_cols = {32, 33};
  req.precisions = {"f32", "bf16"};
  req.reduces = {"mean", "max", "min"};
  req.baselines = false;
  req.timing.samples = 2;
  req.timing.batch = 1;
  req.timing.warmup = 1;
  const nlohmann::json out = tools::find_op("spmm").bench(ctx(), s, req);
  REQUIRE(out["results"].size() == 4);
  for (const auto& rec : out["results"]) {
    REQUIRE(rec.contains("reductions"));
    REQUIRE(rec["reductions"].size() == 3);
    for (const auto& red : rec["reductions"]) {
      CAPTURE(red.dump());
      CHECK(red["correct"].get<bool>());
      CHECK(red["us"].get<double>() > 0);
    }
  }
}

// What `dbsparse bench spgemm` does on the CPU: its suites generate, and its check of another
// implementation's C against dbsparse's catches what it should (no GPU: C from hash_spgemm_cpu).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "dbsparse/generators.hpp"
#include "dbsparse/spgemm.hpp"
#include "tools/common/bench_spgemm.hpp"
#include "tools/common/suites.hpp"
#include "tools/ops/registry.hpp"

using namespace dbsparse;

TEST_CASE("SpgemmSuitesParseAndTheQuickOneGeneratesSquareMatricesWithinInt32") {
  for (const auto& spec : tools::spgemm_suite("full")) {
    CAPTURE(spec);
    CHECK_NOTHROW(parse_generator_spec(spec));  // the full sizes are only parsed: too big for this tier
  }
  const auto quick = tools::spgemm_suite("quick");
  CHECK(quick.size() == 5);
  for (const auto& spec : quick) {
    CAPTURE(spec);
    const CsrMatrix<double> a = generate(spec);
    CHECK(a.rows == a.cols);
    CHECK(a.rows >= 10000);
    CHECK(a.nnz() > 0);
    const auto ips = intermediate_products(a, a);
    CHECK(spgemm_flops(ips) > 0);
    CHECK(spgemm_nnz_upper_bound(ips, a.cols) < (int64_t{1} << 31));
  }
  CHECK_THROWS_AS(tools::spgemm_suite("medium"), UsageError);
}

TEST_CASE("SpgemmIsABenchOpThatDbtuneLeavesOutByDefault") {
  const auto& op = tools::find_op("spgemm");
  CHECK(op.bench_suite("quick") == tools::spgemm_suite("quick"));
  CHECK_FALSE(op.tuned_by_default);
  const auto tuned = tools::default_tuned_op_names();
  CHECK(std::find(tuned.begin(), tuned.end(), "spgemm") == tuned.end());
  CHECK(std::find(tuned.begin(), tuned.end(), "spmv") != tuned.end());
}

TEST_CASE("SpgemmCheckAcceptsTheSameProductAndNamesEachKindOfDifference") {
  const CsrMatrix<float> a = generate("rmat:scale=9,ef=4,seed=3").cast<float>();
  const CsrMatrix<float> ours = hash_spgemm_cpu(a, a).c;
  CsrMatrix<float> abs_a = a;
  for (auto& v : abs_a.values) v = std::fabs(v);
  const CsrMatrix<float> scale = hash_spgemm_cpu(abs_a, abs_a).c;
  const double tol = tools::spgemm_tolerance("f32");
  CHECK(tol == 1e-5);
  CHECK(tools::spgemm_tolerance("f64") == 1e-12);

  const auto same = tools::compare_spgemm(ours, ours, scale, tol);
  CHECK(same.ok);
  CHECK(same.max_error == 0);

  // cuSPARSE may leave a row's columns in another order: the same product still passes.
  CsrMatrix<float> shuffled = ours;
  int32_t row = -1;
  for (int32_t i = 0; i < shuffled.rows && row < 0; ++i)
    if (shuffled.row_ptr[i + 1] - shuffled.row_ptr[i] >= 3) row = i;
  REQUIRE(row >= 0);
  std::reverse(shuffled.col_idx.begin() + shuffled.row_ptr[row], shuffled.col_idx.begin() + shuffled.row_ptr[row + 1]);
  std::reverse(shuffled.values.begin() + shuffled.row_ptr[row], shuffled.values.begin() + shuffled.row_ptr[row + 1]);
  CHECK(tools::compare_spgemm(ours, shuffled, scale, tol).ok);

  // A value off by more than the tolerance of its sum |a||b|.
  CsrMatrix<float> off = ours;
  const int32_t p = off.row_ptr[row];
  off.values[p] += static_cast<float>(1e-3 * scale.values[p]);
  const auto bad = tools::compare_spgemm(ours, off, scale, tol);
  CHECK_FALSE(bad.ok);
  CHECK(bad.max_error > 1e-4);
  CHECK(bad.note.find("error") != std::string::npos);

  // A NaN is never within tolerance.
  off = ours;
  off.values[p] = std::nanf("");
  CHECK_FALSE(tools::compare_spgemm(ours, off, scale, tol).ok);

  // Another structure: an entry moved to another column, or one fewer entry.
  CsrMatrix<float> moved = ours;
  moved.col_idx[p] = moved.col_idx[p] == 0 ? moved.cols - 1 : 0;
  const auto m = tools::compare_spgemm(ours, moved, scale, tol);
  CHECK_FALSE(m.ok);
  CHECK(m.note.find("column") != std::string::npos);
  CsrMatrix<float> shorter = ours;
  shorter.col_idx.pop_back();
  shorter.values.pop_back();
  shorter.row_ptr.back() -= 1;
  const auto s = tools::compare_spgemm(ours, shorter, scale, tol);
  CHECK_FALSE(s.ok);
  CHECK(s.note.find("nnz") != std::string::npos);
}

TEST_CASE("SpgemmCheckOfANonSquareProductAATransposed") {
  // A non-square A is benched as A·Aᵀ; the check is the same on its (square) C.
  const CsrMatrix<double> a = generate("uniform:n=300,d=5,seed=2");
  CsrMatrix<double> wide;  // 300 x 600: A's columns doubled
  wide.rows = a.rows;
  wide.cols = 2 * a.cols;
  wide.row_ptr = {0};
  for (int32_t i = 0; i < a.rows; ++i) {
    for (int32_t q = a.row_ptr[i]; q < a.row_ptr[i + 1]; ++q) {
      wide.col_idx.push_back(2 * a.col_idx[q] + 1);
      wide.values.push_back(a.values[q]);
    }
    wide.row_ptr.push_back(static_cast<int32_t>(wide.col_idx.size()));
  }
  const CsrMatrix<double> wt = transpose(wide);
  const auto c = hash_spgemm_cpu(wide, wt).c;
  CHECK(c.rows == 300);
  CHECK(c.cols == 300);
  CsrMatrix<double> abs_w = wide, abs_wt = wt;
  for (auto& v : abs_w.values) v = std::fabs(v);
  for (auto& v : abs_wt.values) v = std::fabs(v);
  const auto scale = hash_spgemm_cpu(abs_w, abs_wt).c;
  CHECK(tools::compare_spgemm(c, c, scale, tools::spgemm_tolerance("f64")).ok);
}

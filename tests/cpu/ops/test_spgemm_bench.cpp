// What `dbsparse bench spgemm` does on the CPU: its suites generate, and its check of another
// implementation's C against dbsparse's catches what it should (no GPU: C from hash_spgemm_cpu).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <vector>

#include "dbsparse/generators.hpp"
#include "dbsparse/reference.hpp"
#include "dbsparse/spgemm.hpp"
#include "dbsparse/spgemm_apps.hpp"
#include "tools/bench/bench_spgemm.hpp"
#include "tools/bench/suites.hpp"
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

TEST_CASE("SpgemmIsABenchOpThatDbtuneTunesByDefault") {
  const auto& op = tools::find_op("spgemm");
  CHECK(op.bench_suite("quick") == tools::spgemm_suite("quick"));
  CHECK(op.tuned_by_default);
  const auto tuned = tools::default_tuned_op_names();
  CHECK(std::find(tuned.begin(), tuned.end(), "spgemm") != tuned.end());
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

TEST_CASE("SpgemmAppsBenchPiecesOnTheHost") {
  // k: the request, else rows / 64, at least 1.
  CHECK(tools::contract_k_for(6400, 0) == 100);
  CHECK(tools::contract_k_for(10, 0) == 1);
  CHECK(tools::contract_k_for(10, 7) == 7);
  CHECK_THROWS_AS(tools::contract_k_for(10, -1), UsageError);
  // Labels: in [0, k), the same for the same seed, every class used on a large enough graph.
  const auto l1 = tools::contract_labels(10000, 100), l2 = tools::contract_labels(10000, 100);
  CHECK(l1 == l2);
  CHECK(tools::contract_labels(10000, 100, 2) != l1);
  std::vector<int> used(100, 0);
  for (int32_t l : l1) {
    REQUIRE(l >= 0);
    REQUIRE(l < 100);
    used[l] = 1;
  }
  CHECK(std::count(used.begin(), used.end(), 1) == 100);
  CHECK_THROWS_AS(tools::contract_labels(10, 0), UsageError);
  // MCL: fixed iterations (tolerance 0), otherwise the defaults, and valid.
  const MclOptions o = tools::bench_mcl_options(5);
  CHECK(o.max_iterations == 5);
  CHECK(o.tolerance == 0);
  CHECK(o.keep_top_k == MclOptions{}.keep_top_k);
  CHECK_NOTHROW(o.check());
  CHECK_THROWS_AS(tools::bench_mcl_options(0), UsageError);
}

TEST_CASE("ContractionFactorsAreTransposesAndGiveContractCpusC") {
  const CsrMatrix<double> g = generate("stencil2d:n=20");
  const int32_t k = 7;
  const auto labels = tools::contract_labels(g.rows, k);
  const auto [s, st] = contraction_factors<double>(g.rows, labels, k);
  CHECK(s.rows == k);
  CHECK(s.cols == g.rows);
  CHECK(st.rows == g.rows);
  CHECK(st.cols == k);
  const CsrMatrix<double> t = transpose(s);
  CHECK(t.row_ptr == st.row_ptr);
  CHECK(t.col_idx == st.col_idx);
  CHECK(t.values == st.values);
  for (int32_t j = 0; j < g.rows; ++j) CHECK(st.col_idx[j] == labels[j]);
  // S·G·Sᵀ by the CPU reference on these factors is contract_cpu's C.
  const CsrMatrix<double> c = reference::spgemm(reference::spgemm(s, g), st);
  const CsrMatrix<double> want = contract_cpu(g, std::span<const int32_t>(labels), k);
  CHECK(c.row_ptr == want.row_ptr);
  CHECK(c.col_idx == want.col_idx);
  for (size_t e = 0; e < c.values.size() && e < want.values.size(); ++e)
    CHECK(c.values[e] == doctest::Approx(want.values[e]));
  const std::vector<int32_t> bad = {0, 1, 9};
  CHECK_THROWS_AS(contraction_factors<double>(3, bad, 3), UsageError);
  CHECK_THROWS_AS(contraction_factors<double>(4, bad, 3), UsageError);
}

TEST_CASE("SpgemmAppSummaryCountsOnlyAgreeingRecordsOfItsApp") {
  auto rec = [](const char* app, const char* m, double speedup, bool ok) {
    return nlohmann::json{{"app", app}, {"matrix", m}, {"precision", "f32"}, {"speedup", speedup}, {"check_ok", ok}};
  };
  std::vector<nlohmann::json> rs = {rec("contract", "a", 2.0, true), rec("contract", "b", 8.0, true),
                                    rec("contract", "c", 100.0, false), rec("mcl", "a", 0.5, true)};
  nlohmann::json failed = {
      {"app", "contract"}, {"matrix", "d"}, {"precision", "f32"}, {"cusparse_error", "x"}, {"check_ok", false}};
  rs.push_back(failed);
  const nlohmann::json s = tools::spgemm_app_summary(rs, "contract");
  REQUIRE(s.contains("f32"));
  CHECK(s["f32"]["matrices"] == 4);
  CHECK(s["f32"]["compared"] == 2);
  CHECK(s["f32"]["geomean_speedup"].get<double>() == doctest::Approx(4.0));
  CHECK(s["f32"]["worst_speedup"].get<double>() == doctest::Approx(2.0));
  CHECK(s["f32"]["worst_matrix"] == "a");
  CHECK(s["f32"]["mismatches"] == 1);
  CHECK(s["f32"]["cusparse_failed"] == 1);
  const nlohmann::json m = tools::spgemm_app_summary(rs, "mcl");
  CHECK(m["f32"]["compared"] == 1);
  CHECK(m["f32"]["worst_matrix"] == "a");
}

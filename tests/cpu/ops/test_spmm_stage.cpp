// The host half of SpMM's staged windows (runtime/spmm/spmm_stage.hpp): csr_spmm_staged trusts
// that every row is in exactly one window or in the plain list, that a window's slots name its
// own columns, and that its columns fit the shared memory it was sized for. Checked here, and the
// product the windows describe (staged rows read B through their slots, plain rows as CSR)
// against the CPU reference.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "dbsparse/generators.hpp"
#include "dbsparse/reference.hpp"
#include "dbsparse/reorder.hpp"
#include "runtime/spmm/spmm_stage.hpp"

using namespace dbsparse;

namespace {

// The windows' invariants, and C = A B computed the way the two kernels split it.
void check_windows(const std::string& name, const CsrMatrix<float>& a, const std::vector<int32_t>& order,
                   double min_reuse, int32_t max_rows, int32_t max_len, int32_t max_cols) {
  CAPTURE(name);
  CAPTURE(min_reuse);
  CAPTURE(max_cols);
  const SpmmStageWindows w = spmm_stage_windows(a, order, min_reuse, max_rows, max_len, max_cols);
  std::vector<int> seen(static_cast<size_t>(a.rows), 0);
  for (const int32_t r : w.rows) ++seen[static_cast<size_t>(r)];
  for (const int32_t r : w.plain) ++seen[static_cast<size_t>(r)];
  CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
  REQUIRE(w.ptr.size() == w.rows.size() + 1);
  REQUIRE(w.win_col.size() == w.win_row.size());
  CHECK(w.slot.size() == w.vals.size());
  for (int32_t k = 0; k < w.windows(); ++k) {
    const int32_t r0 = w.win_row[k], r1 = w.win_row[k + 1], c0 = w.win_col[k], c1 = w.win_col[k + 1];
    CHECK(r1 - r0 >= 2);
    CHECK(r1 - r0 <= max_rows);
    CHECK(c1 - c0 <= max_cols);
    std::vector<int32_t> distinct(w.cols.begin() + c0, w.cols.begin() + c1);
    std::sort(distinct.begin(), distinct.end());
    CHECK(std::adjacent_find(distinct.begin(), distinct.end()) == distinct.end());  // each column once
    const int64_t entries = w.ptr[static_cast<size_t>(r1)] - w.ptr[static_cast<size_t>(r0)];
    CHECK(static_cast<double>(entries) >= min_reuse * static_cast<double>(c1 - c0));
    for (int32_t i = r0; i < r1; ++i) {
      const int32_t r = w.rows[static_cast<size_t>(i)];
      REQUIRE(w.ptr[static_cast<size_t>(i) + 1] - w.ptr[static_cast<size_t>(i)] == a.row_ptr[r + 1] - a.row_ptr[r]);
      CHECK(a.row_ptr[r + 1] - a.row_ptr[r] <= max_len);
      for (int32_t q = 0; q < a.row_ptr[r + 1] - a.row_ptr[r]; ++q) {
        const size_t e = static_cast<size_t>(w.ptr[static_cast<size_t>(i)] + q);
        REQUIRE(w.slot[e] < c1 - c0);
        CHECK(w.cols[static_cast<size_t>(c0 + w.slot[e])] == a.col_idx[static_cast<size_t>(a.row_ptr[r] + q)]);
        CHECK(w.vals[e] == a.values[static_cast<size_t>(a.row_ptr[r] + q)]);
      }
    }
  }
  // C = A B as the kernels split it, against the reference.
  const int n = 8;
  std::vector<float> b(static_cast<size_t>(a.cols) * n);
  std::mt19937 rng(5);
  for (auto& v : b) v = static_cast<float>(static_cast<int>(rng() % 17) - 8) * 0.125f;
  std::vector<double> c(static_cast<size_t>(a.rows) * n, 0.0);
  for (int32_t k = 0; k < w.windows(); ++k)
    for (int32_t i = w.win_row[k]; i < w.win_row[k + 1]; ++i)
      for (int32_t e = w.ptr[static_cast<size_t>(i)]; e < w.ptr[static_cast<size_t>(i) + 1]; ++e)
        for (int j = 0; j < n; ++j)
          c[static_cast<size_t>(w.rows[static_cast<size_t>(i)]) * n + j] +=
              double(w.vals[static_cast<size_t>(e)]) *
              b[static_cast<size_t>(w.cols[static_cast<size_t>(w.win_col[k] + w.slot[static_cast<size_t>(e)])]) * n +
                j];
  for (const int32_t r : w.plain)
    for (int32_t q = a.row_ptr[r]; q < a.row_ptr[r + 1]; ++q)
      for (int j = 0; j < n; ++j)
        c[static_cast<size_t>(r) * n + j] += double(a.values[static_cast<size_t>(q)]) *
                                             b[static_cast<size_t>(a.col_idx[static_cast<size_t>(q)]) * n + j];
  const auto ref = reference::spmm(a, std::span<const float>(b), n);
  REQUIRE(ref.size() == c.size());
  for (size_t i = 0; i < c.size(); ++i) CHECK(c[i] == doctest::Approx(ref[i]).epsilon(1e-12));
}

}  // namespace

TEST_CASE("SpmmStageWindowsCoverEveryRowOnceAndTheirProductMatchesReference") {
  const CsrMatrix<float> grid = generate("stencil2d:n=120").cast<float>();
  const CsrMatrix<float> rmat = generate("rmat:scale=12,ef=8,seed=2").cast<float>();
  const CsrMatrix<float> pl = generate("powerlaw:n=5000,avg=8,alpha=1.5,max=400,seed=3").cast<float>();
  for (double reuse : {1.0, 1.5, 2.5})
    for (int32_t max_cols : {8, 96, 384}) {
      check_windows("stencil2d", grid, {}, reuse, 32, 64, max_cols);
      check_windows("rmat", rmat, {}, reuse, 32, 64, max_cols);
      check_windows("powerlaw", pl, {}, reuse, 16, 8, max_cols);
    }
  // In a given order (the plan's row order), e.g. the degree order of the graph.
  const Permutation p = reorder(rmat, Reorder::Degree);
  check_windows("rmat, degree order", rmat, p.old_of_new, 1.5, 32, 64, 384);
}

TEST_CASE("SpmmStageWindowsFormWhereRowsShareColumnsAndNotWhereTheyDoNot") {
  // A 5-point stencil's consecutive rows share most columns: at N = 32 (384 columns of B in
  // 48 KB) windows of 32 rows hold about 32 * 5 / 96 distinct columns, reuse about 1.6.
  const CsrMatrix<float> grid = generate("stencil2d:n=200").cast<float>();
  const SpmmStageWindows w = spmm_stage_windows(grid, {}, 1.5, 32, 64, 384);
  CHECK(w.windows() > 0);
  CHECK(w.staged_entries() > grid.nnz() / 2);
  // A uniform random graph's rows share almost nothing: no window reaches a reuse of 1.5.
  const CsrMatrix<float> uni = generate("uniform:n=50000,d=8,seed=1").cast<float>();
  const SpmmStageWindows u = spmm_stage_windows(uni, {}, 1.5, 32, 64, 384);
  CHECK(u.windows() == 0);
  CHECK(u.plain.size() == static_cast<size_t>(uni.rows));
}

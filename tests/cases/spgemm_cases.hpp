#pragma once
// SpGEMM problems shared by the cpu tests (hash_spgemm_cpu) and the gpu tests (the plan), so that
// both tiers check the same rows against the same groups, bounds and overflows.
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "dbsparse/graph.hpp"
#include "dbsparse/matrix.hpp"
#include "dbsparse/reference.hpp"
#include "dbsparse/spgemm.hpp"
#include "test_support.hpp"

namespace dbs_test {

struct SpgemmCase {
  dbsparse::CsrMatrix<double> a, b;
  dbsparse::SpgemmConfig cfg;
};

// Every row of A in group g of the default config: B's rows have d entries each and A's row i has
// len_i, so IP(i) = len_i * d. `rows`: how many rows A has (0: the group's usual count).
inline SpgemmCase one_group_case(int g, int32_t rows = 0) {
  struct Shape {
    int32_t rows, a_cols, b_cols, d, base, step, period;
    uint64_t seed;
  };
  // len_i = base + (period ? i % period : i) * step.
  static const Shape shapes[] = {{200, 400, 500, 3, 1, 1, 10, 10},     // IP 3..30
                                 {120, 300, 2000, 16, 2, 1, 30, 12},   // IP 32..496
                                 {40, 300, 6000, 64, 8, 3, 0, 14},     // IP 512..7999
                                 {12, 200, 5000, 256, 32, 1, 0, 16}};  // IP 8192..11008
  const Shape& s = shapes[g];
  std::vector<int32_t> len;
  for (int32_t i = 0; i < (rows ? rows : s.rows); ++i) len.push_back(s.base + (s.period ? i % s.period : i) * s.step);
  // Group 3 with B 5000 columns wide needs narrow_dense off (B would fit group 2's dense table).
  dbsparse::SpgemmConfig cfg;
  if (g == 3) cfg.narrow_dense = 0;
  return {csr_with_row_lengths<double>(s.a_cols, len, s.seed),
          csr_with_row_lengths<double>(s.b_cols, std::vector<int32_t>(static_cast<size_t>(s.a_cols), s.d), s.seed + 1),
          cfg};
}

// Group 2's merge path (SpgemmConfig::merge2 = 8): B 40000 columns wide (no dense table) with rows
// of 600-900 entries drawn from its first 3000 columns, so that B rows share about a quarter of
// their columns; A's row i takes 1 + i % 10 of B's rows: rows of 1-8 entries are merged (IP
// 600-7200, group 2), rows of 9 (group 2) and 10 (some in group 3) are hashed. Row 60 takes 4 B
// rows that share every column (runs of 4).
inline SpgemmCase merge_case() {
  SpgemmCase c;
  c.cfg.merge2 = 8;
  std::vector<int32_t> b_len;
  for (int32_t k = 0; k < 48; ++k) b_len.push_back(600 + (k * 37) % 300);
  c.b = csr_with_row_lengths<double>(3000, b_len, 31);
  for (int32_t k = 0; k < 4; ++k) {  // B rows 48..51: the same 700 columns, other values
    for (int32_t col = 0; col < 700; ++col) {
      c.b.col_idx.push_back(2 * col + 1);
      c.b.values.push_back(0.25 * (k + 1) - 0.001 * col);
    }
    c.b.row_ptr.push_back(static_cast<int32_t>(c.b.col_idx.size()));
  }
  c.b.rows = 52;
  c.b.cols = 40000;
  std::vector<Entry> e;
  for (int32_t i = 0; i < 60; ++i)
    for (int32_t j = 0; j < 1 + i % 10; ++j) e.emplace_back(i, (i * 7 + j * 5) % 48, 0.5 + 0.125 * j - 0.01 * i);
  for (int32_t k = 0; k < 4; ++k) e.emplace_back(60, 48 + k, 1.0 - 0.5 * k);
  c.a = csr_from_entries<double>(61, 52, e);
  return c;
}

// B's row k has the k-th of the lengths below; A's row i takes B's row i alone, then rows that add
// up to a bound from two B rows (31 + 1 = 32, 511 + 1 = 512, 8191 + 1 = 8192).
inline SpgemmCase bound_case() {
  SpgemmCase c;
  c.cfg.narrow_dense = 0;  // B's 9000 columns would put IP b2 in group 2
  const dbsparse::SpgemmConfig& cfg = c.cfg;
  c.b = csr_with_row_lengths<double>(9000, {cfg.b0 - 1, cfg.b0, cfg.b1 - 1, cfg.b1, cfg.b2 - 1, cfg.b2, 1}, 20);
  std::vector<Entry> e;
  for (int32_t k = 0; k < 6; ++k) e.emplace_back(k, k, 1.0 + k);
  for (int32_t k : {0, 2, 4}) {
    e.emplace_back(6 + k / 2, k, 0.5);
    e.emplace_back(6 + k / 2, 6, -1.5);
  }
  c.a = csr_from_entries<double>(9, 7, e);
  return c;
}

// Tables smaller than their groups' bounds (t0 = 8, t1 = 64): rows 1, 5, 6 and 8 overflow.
inline SpgemmCase overflow_case() {
  SpgemmCase c;
  c.cfg.t0 = 8;
  c.cfg.t1 = 64;
  // B rows 0..39 have one entry each, all distinct columns; B rows 40..79 all hold columns 0..29.
  std::vector<Entry> be;
  for (int32_t k = 0; k < 40; ++k) be.emplace_back(k, 100 + k, 1.0 + k);
  for (int32_t k = 40; k < 80; ++k)
    for (int32_t col = 0; col < 30; ++col) be.emplace_back(k, col, 0.25 * (k - 39) + col);
  c.b = csr_from_entries<double>(80, 200, be);
  std::vector<Entry> ae;
  auto row = [&](int32_t i, int32_t first, int32_t count) {
    for (int32_t k = first; k < first + count; ++k) ae.emplace_back(i, k, 0.5 + k);
  };
  row(0, 0, 8);    // group 0 (IP 8), 8 distinct: fills its 8 slots exactly, no overflow
  row(1, 0, 9);    // group 0 (IP 9), 9 distinct: overflows
  row(2, 40, 2);   // group 1 (IP 60), 30 distinct: fits 64
  row(3, 0, 34);   // group 1 (IP 34), 34 distinct: fits
  row(4, 40, 10);  // group 1 (IP 300), 30 distinct: fits
  row(5, 0, 40);   // group 1 (IP 40 + 60), 70 distinct: overflows
  row(5, 40, 2);
  row(6, 40, 1);  // group 0 (IP 30), 30 distinct: overflows 8
  row(7, 0, 34);  // group 1 (IP 64), 64 distinct: fills its 64 slots exactly
  row(7, 40, 1);
  row(8, 0, 35);  // group 1 (IP 65), 65 distinct: overflows
  row(8, 40, 1);
  c.a = csr_from_entries<double>(9, 80, ae);
  return c;
}

// Every group used and tables far below their bounds: many rows overflow.
inline dbsparse::SpgemmConfig tiny_tables_config() {
  dbsparse::SpgemmConfig small;
  small.b0 = 8;
  small.b1 = 64;
  small.b2 = 256;
  small.t0 = 4;
  small.t1 = 16;
  small.t2 = 64;
  small.global_scale = 1;
  return small;
}

// n vertices with an edge both ways between every pair of each clique (values 1), plus `extra`
// undirected edges.
inline dbsparse::CsrMatrix<double> cliques(int32_t n, const std::vector<std::vector<int32_t>>& groups,
                                           const std::vector<std::pair<int32_t, int32_t>>& extra) {
  std::vector<Entry> e;
  for (const auto& g : groups)
    for (int32_t u : g)
      for (int32_t v : g)
        if (u != v) e.emplace_back(u, v, 1.0);
  for (auto [u, v] : extra) {
    e.emplace_back(u, v, 1.0);
    e.emplace_back(v, u, 1.0);
  }
  return csr_from_entries<double>(n, n, e);
}

// The undirected graph of a generated matrix: the pattern of A + Aᵀ without loops, values 1.
inline dbsparse::CsrMatrix<double> undirected(const dbsparse::CsrMatrix<double>& a) {
  return dbsparse::ones_matrix<double>(dbsparse::symmetrize(dbsparse::pattern_of(a), true));
}

// L = tril(A, -1), values 1.
inline dbsparse::CsrMatrix<double> lower(const dbsparse::CsrMatrix<double>& a) {
  std::vector<Entry> e;
  for (int32_t i = 0; i < a.rows; ++i)
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] < i) e.emplace_back(i, a.col_idx[p], 1.0);
  return csr_from_entries<double>(a.rows, a.cols, e);
}

// The definition itself, sum over L of (L·L) by dbsparse::reference::spgemm: shares nothing with either count.
inline int64_t masked_product_sum(const dbsparse::CsrMatrix<double>& a) {
  const dbsparse::CsrMatrix<double> l = lower(a);
  const dbsparse::CsrMatrix<double> c = dbsparse::reference::spgemm(l, l);
  double s = 0;
  for (int32_t i = 0; i < l.rows; ++i)
    for (int32_t p = l.row_ptr[i]; p < l.row_ptr[i + 1]; ++p)
      for (int32_t q = c.row_ptr[i]; q < c.row_ptr[i + 1]; ++q)
        if (c.col_idx[q] == l.col_idx[p]) s += c.values[q];
  return static_cast<int64_t>(std::llround(s));
}

}  // namespace dbs_test

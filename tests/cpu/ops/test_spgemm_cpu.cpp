// Hash SpGEMM's CPU side (spgemm.hpp, spgemm_apps.hpp): hash_spgemm_cpu, the kernels' spec, against
// reference::spgemm (a dense accumulator); the analysis against brute force; the applications
// against results worked out by hand or by another route (std::map sums).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "cases/spgemm_cases.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/reference.hpp"
#include "dbsparse/spgemm.hpp"
#include "dbsparse/spgemm_apps.hpp"
#include "runtime/spgemm/spgemm_gpu_analysis.hpp"
#include "test_support.hpp"

using namespace dbsparse;

namespace {

using dbs_test::Entry;  // (row, col, value)

template <class T>
CsrMatrix<T> from_entries(int32_t rows, int32_t cols, const std::vector<Entry>& e) {
  return dbs_test::csr_from_entries<T>(rows, cols, e);
}

template <class T>
CsrMatrix<T> random_rows(int32_t cols, const std::vector<int32_t>& lengths, uint64_t seed) {
  return dbs_test::csr_with_row_lengths<T>(cols, lengths, seed);
}

template <class T>
CsrMatrix<T> map_values(const CsrMatrix<T>& m, double (*f)(double)) {
  CsrMatrix<T> out = m;
  for (auto& v : out.values) v = static_cast<T>(f(static_cast<double>(v)));
  return out;
}
double absolute(double v) { return std::fabs(v); }
double one(double) { return 1.0; }

// hash_spgemm_cpu(a, b, cfg) against reference::spgemm: the same structure exactly; values within
// 1e-12 of sum |a||b| per entry in double, and within terms * FLT_EPSILON of it in float (the spec
// accumulates in T; the bound is the textbook one for a sum of `terms` rounded products). Also the
// spec's own account of the rows: groups by IP, overflows only where a shared table can overflow.
template <class T>
HashSpgemmResult<T> check_matches_reference(const CsrMatrix<T>& a, const CsrMatrix<T>& b,
                                            const SpgemmConfig& cfg = {}) {
  const HashSpgemmResult<T> r = hash_spgemm_cpu(a, b, cfg);
  const CsrMatrix<double> ref = reference::spgemm(a, b);
  const CsrMatrix<double> bound = reference::spgemm(map_values(a, absolute), map_values(b, absolute));
  const CsrMatrix<double> terms = reference::spgemm(map_values(a, one), map_values(b, one));
  REQUIRE(r.c.rows == ref.rows);
  REQUIRE(r.c.cols == ref.cols);
  REQUIRE(r.c.row_ptr == ref.row_ptr);
  REQUIRE(r.c.col_idx == ref.col_idx);
  validate(r.c);
  int64_t bad = 0;
  for (size_t p = 0; p < ref.values.size(); ++p) {
    const double tol = sizeof(T) == 8 ? 1e-12 * bound.values[p] : terms.values[p] * FLT_EPSILON * bound.values[p];
    if (!(std::fabs(static_cast<double>(r.c.values[p]) - ref.values[p]) <= tol)) {
      if (bad++ == 0)
        MESSAGE(fmt::format("entry {}: got {}, want {}, tolerance {}", p, r.c.values[p], ref.values[p], tol));
    }
  }
  CHECK(bad == 0);

  REQUIRE(r.ip.size() == static_cast<size_t>(a.rows));
  std::vector<int32_t> global;
  int64_t slots = 0;
  const SpgemmConfig eff = spgemm_for_width(cfg, b.cols);  // the bounds the spec and the plan use
  for (int32_t i = 0; i < a.rows; ++i) {
    REQUIRE(r.group[i] == spgemm_group_of(r.ip[i], eff));
    if (r.overflowed[i]) REQUIRE(spgemm_row_may_overflow(r.ip[i], b.cols, eff));
    if (r.group[i] == 3 || r.overflowed[i]) {
      global.push_back(i);
      slots += spgemm_global_table_slots(r.ip[i], b.cols, eff);
    }
  }
  CHECK(r.global_rows == global);
  CHECK(r.global_slots == slots);
  return r;
}

std::string usage_error(const nlohmann::json& j) {
  try {
    config_from_json<SpgemmConfig>(j);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

using dbs_test::cliques;

const char* const kGenerated[] = {"rmat:scale=10,ef=8",
                                  "uniform:n=2000,d=8",
                                  "stencil2d:n=40",
                                  "stencil3d:n=10,points=27",
                                  "powerlaw:n=3000,avg=8,alpha=1.5,max=1500",
                                  "roadnet:n=6000,seed=3"};

}  // namespace

TEST_CASE("HashSpgemmCpuMatchesReferenceOnGeneratedMatrices") {
  std::array<int64_t, kSpgemmGroups> rows_in_group{};
  SpgemmConfig global;  // these graphs fit group 2's dense tables: group 3 needs narrow_dense off
  global.narrow_dense = 0;
  for (const char* spec : kGenerated) {
    CAPTURE(spec);
    const CsrMatrix<double> a = generate(spec);
    const CsrMatrix<double> at = transpose(a);
    const auto sq = check_matches_reference(a, a, global);  // A²
    check_matches_reference(a, a);
    check_matches_reference(a, at);  // A·Aᵀ
    check_matches_reference(a.cast<float>(), a.cast<float>());
    check_matches_reference(a.cast<float>(), at.cast<float>());
    CHECK(sq.overflow_rows() == 0);  // the article's tables hold their groups' rows
    for (int g = 0; g < kSpgemmGroups; ++g) rows_in_group[g] += sq.grouping.count(g);
  }
  for (int g = 0; g < kSpgemmGroups; ++g) CHECK_MESSAGE(rows_in_group[g] > 0, "group ", g, " seen");
}

TEST_CASE("HashSpgemmCpuMatchesReferenceOnRectangularProducts") {
  const auto a = random_rows<double>(300, std::vector<int32_t>(170, 6), 1);  // 170 x 300
  const auto b = random_rows<double>(90, std::vector<int32_t>(300, 4), 2);   // 300 x 90
  const auto r = check_matches_reference(a, b);
  CHECK(r.c.rows == 170);
  CHECK(r.c.cols == 90);
  check_matches_reference(b, random_rows<double>(7, std::vector<int32_t>(90, 3), 3));  // 300 x 90 x 7
  check_matches_reference(a.cast<float>(), b.cast<float>());
  // A 1 x n row times an n x 1 column, and the reverse: one entry, and a full n x n outer product.
  const auto row = random_rows<double>(50, {50}, 4);
  const auto col = transpose(row);
  CHECK(check_matches_reference(row, col).c.nnz() == 1);
  const auto outer = check_matches_reference(col, row);
  CHECK(outer.c.nnz() == 2500);
  CHECK(outer.grouping.count(1) == 50);  // IP 50 each
}

TEST_CASE("HashSpgemmCpuMatchesReferenceWithEmptyRowsAndColumns") {
  // A with empty rows; B with empty rows (an A entry that reaches nothing) and empty columns.
  const auto a = from_entries<double>(6, 5, {{0, 1, 1.5}, {0, 3, -2}, {2, 0, 0.25}, {2, 4, 1}, {5, 2, 3}});
  const auto b = from_entries<double>(5, 7, {{0, 6, 2}, {1, 0, 1}, {1, 6, -1}, {3, 0, 4}, {4, 6, 0.5}});
  const auto r = check_matches_reference(a, b);
  CHECK(r.grouping.idle_rows == 4);  // rows 1, 3, 4 empty in A; row 5 reaches B's empty row 2
  CHECK(r.ip == std::vector<int64_t>{3, 0, 2, 0, 0, 0});
  CHECK(r.group == std::vector<int8_t>{0, -1, 0, -1, -1, -1});
  CHECK(r.c.row_ptr == std::vector<int32_t>{0, 2, 2, 3, 3, 3, 3});  // row 2: 0.25*2 + 1*0.5 in one column
  // Empty shapes: 0 x 0, rows x 0, 0 x cols, and all-empty operands.
  check_matches_reference(CsrMatrix<double>{}, CsrMatrix<double>{});
  check_matches_reference(from_entries<double>(3, 4, {}), from_entries<double>(4, 0, {}));
  check_matches_reference(from_entries<double>(0, 4, {}), from_entries<double>(4, 5, {{1, 1, 1}}));
  const auto e = check_matches_reference(from_entries<float>(4, 4, {}), from_entries<float>(4, 4, {}));
  CHECK(e.c.nnz() == 0);
  CHECK(e.grouping.idle_rows == 4);
}

// B's rows have d entries each and A's row i has len_i: IP(i) = len_i * d, inside one group.
TEST_CASE("HashSpgemmCpuMatchesReferenceWhenEveryRowIsInGroup0") {
  const auto [a, b, cfg] = dbs_test::one_group_case(0);
  const auto r = check_matches_reference(a, b);
  CHECK(r.grouping.count(0) == 200);
  check_matches_reference(a.cast<float>(), b.cast<float>());
}

TEST_CASE("HashSpgemmCpuMatchesReferenceWhenEveryRowIsInGroup1") {
  const auto [a, b, cfg] = dbs_test::one_group_case(1);
  CHECK(check_matches_reference(a, b).grouping.count(1) == 120);
}

TEST_CASE("HashSpgemmCpuMatchesReferenceWhenEveryRowIsInGroup2") {
  const auto [a, b, cfg] = dbs_test::one_group_case(2);
  CHECK(check_matches_reference(a, b).grouping.count(2) == 40);
}

TEST_CASE("HashSpgemmCpuMatchesReferenceWhenEveryRowIsInGroup3") {
  const auto [a, b, cfg] = dbs_test::one_group_case(3);
  const auto r = check_matches_reference(a, b, cfg);
  CHECK(r.grouping.count(3) == 12);
  CHECK(r.global_rows.size() == 12);
  CHECK(r.overflow_rows() == 0);
  // Global tables of 2 * min(IP, 5000) rounded up to a power of two: 16384 slots for every row.
  CHECK(r.global_slots == 12 * 16384);
  check_matches_reference(a.cast<float>(), b.cast<float>());
}

// Group 2's rows of at most merge2 A entries merged by rank: the same C as the reference, with the
// hashed rows of the same group beside them; a row whose products fill more than half its table
// stays hashed.
TEST_CASE("HashSpgemmCpuMatchesReferenceWithGroup2RowsMerged") {
  const auto [a, b, cfg] = dbs_test::merge_case();
  const auto merged = check_matches_reference(a, b, cfg);
  int64_t want = 0;  // rows of 1-8 entries (every one in group 2) and row 60
  for (int32_t i = 0; i < a.rows; ++i) want += a.row_ptr[i + 1] - a.row_ptr[i] <= 8 ? 1 : 0;
  CHECK(merged.merged_rows == want);
  CHECK(merged.grouping.count(2) > want);         // rows of 9 entries hashed in group 2 beside them
  CHECK(hash_spgemm_cpu(a, b).merged_rows == 0);  // merge2 = 0: the default hashes every row
  check_matches_reference(a.cast<float>(), b.cast<float>(), cfg);
  SpgemmConfig small = cfg;  // 4096 slots: rows of more than 2048 products stay hashed
  small.t2 = 4096;
  small.fit_tables = 0;
  const auto r = check_matches_reference(a, b, small);
  CHECK(r.merged_rows > 0);
  CHECK(r.merged_rows < want);
  SpgemmConfig lanes = cfg;  // merge2 needs a block a row
  lanes.lanes2 = 32;
  CHECK_THROWS_AS(hash_spgemm_cpu(a, b, lanes), UsageError);
}

// B no wider than group 2's table (narrow_dense, the default): the same rows in group 2, dense,
// no global table; one table access a product.
TEST_CASE("HashSpgemmCpuMatchesReferenceWhenBFitsGroup2sDenseTable") {
  const auto [a, b, cfg] = dbs_test::one_group_case(3);
  const auto r = check_matches_reference(a, b);
  CHECK(r.grouping.count(2) == 12);
  CHECK(r.grouping.count(3) == 0);
  CHECK(r.global_rows.empty());
  int64_t ip = 0;
  for (int64_t v : r.ip) ip += v;
  CHECK(r.table_accesses == ip);
  // Wider than t2: group 3 as before.
  const auto wide = dbs_test::csr_with_row_lengths<double>(20000, std::vector<int32_t>(200, 256), 40);
  CHECK(check_matches_reference(a, wide).grouping.count(3) == 12);
  SpgemmConfig warp_rows;
  warp_rows.lanes2 = 32;  // group 2 not a block a row: not narrowed
  CHECK(spgemm_for_width(warp_rows, 5000).b2 == warp_rows.b2);
  CHECK(spgemm_for_width(SpgemmConfig{}, 16384).b2 == 1 << 30);
  CHECK(spgemm_for_width(SpgemmConfig{}, 16385).b2 == SpgemmConfig{}.b2);
}

// Table accesses as the kernels make them: a probe per slot read, one per product in a dense table.
TEST_CASE("HashSpgemmCpuCountsTableAccessesAsTheKernelsProbe") {
  // Columns 0 and 64 share a first slot in any table of at most 64 slots ((64 * 107) & (slots - 1)
  // = 0): the second product reads two slots.
  const auto a = from_entries<double>(1, 1, {{0, 0, 1}});
  const auto b = from_entries<double>(1, 100, {{0, 0, 1}, {0, 64, 2}});
  CHECK(check_matches_reference(a, b).table_accesses == 3);
  // Group 3's tables as wide as B (5000 columns, 16384 slots): slot = column, one access a product.
  const auto [a3, b3, cfg3] = dbs_test::one_group_case(3);
  const auto r3 = check_matches_reference(a3, b3, cfg3);
  int64_t ip3 = 0;
  for (int64_t v : r3.ip) ip3 += v;
  CHECK(r3.table_accesses == ip3);
  // Hashed tables at most half full: at least one access a product, and few more.
  const auto g = generate("powerlaw:n=3000,avg=8,alpha=1.5,max=1500");
  const auto rg = check_matches_reference(g, g);
  int64_t ip = 0;
  for (int64_t v : rg.ip) ip += v;
  CHECK(rg.table_accesses >= ip);
  CHECK(rg.table_accesses < 2 * ip);
}

TEST_CASE("HashSpgemmCpuMatchesReferenceWithIpExactlyOnEachBound") {
  const auto [a, b, cfg] = dbs_test::bound_case();
  const auto r = check_matches_reference(a, b, cfg);
  CHECK(r.ip == std::vector<int64_t>{31, 32, 511, 512, 8191, 8192, 32, 512, 8192});
  CHECK(r.group == std::vector<int8_t>{0, 1, 1, 2, 2, 3, 1, 2, 3});
  check_matches_reference(a.cast<float>(), b.cast<float>(), cfg);
}

TEST_CASE("HashSpgemmCpuMatchesReferenceWhenARowOverflowsToTheGlobalTable") {
  // Tables smaller than their groups' bounds: the fallback catches rows with too many columns.
  const auto [a, b, cfg] = dbs_test::overflow_case();
  const auto r = check_matches_reference(a, b, cfg);
  CHECK(r.ip == std::vector<int64_t>{8, 9, 60, 34, 300, 100, 30, 64, 65});
  CHECK(r.group == std::vector<int8_t>{0, 0, 1, 1, 1, 1, 0, 1, 1});
  CHECK(r.overflowed == std::vector<uint8_t>{0, 1, 0, 0, 0, 1, 1, 0, 1});
  CHECK(r.overflow_rows() == 4);
  CHECK(r.global_rows == std::vector<int32_t>{1, 5, 6, 8});
  CHECK(r.c.row_ptr[1] - r.c.row_ptr[0] == 8);
  CHECK(r.c.row_ptr[6] - r.c.row_ptr[5] == 70);
  CHECK(r.c.row_ptr[8] - r.c.row_ptr[7] == 64);
  check_matches_reference(a.cast<float>(), b.cast<float>(), cfg);
  // The same rows with the article's tables: none overflows.
  CHECK(check_matches_reference(a, b).overflow_rows() == 0);
}

TEST_CASE("HashSpgemmCpuMatchesReferenceWithStagedBRanges") {
  SpgemmConfig staged;
  staged.stage_b_ranges = 1;
  for (const char* spec : {"rmat:scale=9,ef=8", "powerlaw:n=2000,avg=8,alpha=1.5,max=1500"}) {
    CAPTURE(spec);
    const auto a = generate(spec);
    const auto plain = hash_spgemm_cpu(a, a);
    const auto s = check_matches_reference(a, a, staged);
    // Same products in the same order: bit for bit the same result.
    CHECK(s.c.row_ptr == plain.c.row_ptr);
    CHECK(s.c.col_idx == plain.c.col_idx);
    CHECK(s.c.values == plain.c.values);
  }
}

TEST_CASE("HashSpgemmCpuMatchesReferenceUnderOtherConfigs") {
  const auto a = generate("rmat:scale=11,ef=8");
  const auto b = transpose(a);
  const SpgemmConfig small = dbs_test::tiny_tables_config();  // every group used, tables far below their bounds
  const auto r = check_matches_reference(a, b, small);
  CHECK(r.overflow_rows() > 0);
  for (int g = 0; g < kSpgemmGroups; ++g) CHECK(r.grouping.count(g) > 0);
  SpgemmConfig exact;  // no fallback: tables exactly their bounds
  exact.overflow_to_global = 0;
  exact.b0 = 16;
  exact.t0 = 16;
  exact.lanes0 = 8;
  exact.block0 = 256;
  CHECK(check_matches_reference(a, b, exact).overflow_rows() == 0);
  check_matches_reference(a.cast<float>(), b.cast<float>(), small);
}

// reference::spgemm splits rows over threads (about a million products a part): the same C as
// per-row sums in a std::map, on a matrix big enough to be split.
TEST_CASE("ReferenceSpgemmSplitOverThreadsMatchesPerRowMaps") {
  const CsrMatrix<double> a = generate("uniform:n=20000,d=16,seed=5");  // 5.1M products
  const CsrMatrix<double> c = reference::spgemm(a, a);
  REQUIRE(c.row_ptr.size() == 20001);
  for (int32_t i = 0; i < a.rows; i += 97) {
    std::map<int32_t, double> row;
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      for (int32_t q = a.row_ptr[a.col_idx[p]]; q < a.row_ptr[a.col_idx[p] + 1]; ++q)
        row[a.col_idx[q]] += a.values[p] * a.values[q];
    REQUIRE(c.row_ptr[i + 1] - c.row_ptr[i] == static_cast<int32_t>(row.size()));
    int32_t at = c.row_ptr[i];
    for (const auto& [col, v] : row) {
      CHECK(c.col_idx[at] == col);
      CHECK(c.values[at] == doctest::Approx(v).epsilon(1e-12));
      ++at;
    }
  }
  CHECK(c.row_ptr.back() == static_cast<int32_t>(c.col_idx.size()));
}

TEST_CASE("IntermediateProductsMatchBruteForce") {
  for (const char* spec : kGenerated) {
    CAPTURE(spec);
    const auto a = generate(spec);
    const auto b = transpose(a);
    const auto ip = intermediate_products(a, b);
    // IP(i) = the number of (k, j) with A(i,k) and B(k,j) stored: the sum of row i of pattern(A)·pattern(B).
    const auto terms = reference::spgemm(map_values(a, one), map_values(b, one));
    std::vector<int64_t> want(static_cast<size_t>(a.rows), 0);
    for (int32_t i = 0; i < a.rows; ++i)
      for (int32_t p = terms.row_ptr[i]; p < terms.row_ptr[i + 1]; ++p)
        want[i] += static_cast<int64_t>(terms.values[p]);
    CHECK(ip == want);
    int64_t bound = 0, sum = 0;
    for (int32_t i = 0; i < a.rows; ++i) {
      bound += std::min<int64_t>(want[i], b.cols);
      sum += want[i];
    }
    CHECK(spgemm_nnz_upper_bound(ip, b.cols) == bound);
    CHECK(spgemm_nnz_upper_bound(ip, b.cols) >= terms.nnz());
    CHECK(spgemm_flops(ip) == 2 * sum);
  }
  const auto a = from_entries<double>(3, 4, {{0, 0, 1}}), b = from_entries<double>(5, 6, {{0, 0, 1}});
  CHECK_THROWS_WITH_AS(intermediate_products(a, b), doctest::Contains("A is 3x4 but B is 5x6"), UsageError);
  CHECK_THROWS_WITH_AS(hash_spgemm_cpu(a, b), doctest::Contains("A is 3x4 but B is 5x6"), UsageError);
  // Malformed operands name the row and the column rather than read out of bounds.
  auto bad_a = from_entries<double>(2, 5, {{1, 2, 1}});
  bad_a.col_idx[0] = 7;
  CHECK_THROWS_WITH_AS(intermediate_products(bad_a, b), doctest::Contains("row 1 of A has column 7, outside [0, 5)"),
                       UsageError);
  auto bad_b = from_entries<double>(5, 6, {{3, 1, 1}});
  bad_b.col_idx[0] = -1;
  CHECK_THROWS_WITH_AS(hash_spgemm_cpu(from_entries<double>(1, 5, {{0, 3, 1}}), bad_b),
                       doctest::Contains("row 3 of B has column -1, outside [0, 6)"), UsageError);
}

TEST_CASE("GroupRowsPutsEveryRowWithWorkInExactlyOneGroup") {
  const SpgemmConfig cfg;
  std::mt19937_64 rng(5);
  std::vector<int64_t> ips = {0, 1, 31, 32, 511, 512, 8191, 8192, int64_t{1} << 40, 0};
  for (int i = 0; i < 5000; ++i) ips.push_back(static_cast<int64_t>(rng() % 20000) * (i % 4 == 0 ? 0 : 1));
  const SpgemmGrouping g = group_rows(ips, cfg);
  std::vector<int> seen(ips.size(), 0);
  int64_t rows = g.idle_rows;
  for (int grp = 0; grp < kSpgemmGroups; ++grp) {
    CHECK(std::is_sorted(g.rows[grp].begin(), g.rows[grp].end()));
    int64_t ip = 0;
    const int64_t lo = grp == 0 ? 1 : cfg.bound(grp - 1), hi = grp == 3 ? INT64_MAX : cfg.bound(grp) - 1;
    for (int32_t i : g.rows[grp]) {
      ++seen[i];
      ip += ips[i];
      REQUIRE((ips[i] >= lo && ips[i] <= hi));
    }
    CHECK(g.ip[grp] == ip);
    rows += g.count(grp);
  }
  CHECK(rows == static_cast<int64_t>(ips.size()));
  for (size_t i = 0; i < ips.size(); ++i) REQUIRE(seen[i] == (ips[i] > 0 ? 1 : 0));
  CHECK(g.rows[0].front() == 1);
  CHECK(g.rows[3].front() == 7);
  CHECK(g.rows[3][1] == 8);  // 2^40 products: still group 3
}

TEST_CASE("SpgemmNnzCheckNamesTheRowWhereTheCountPasses2To31") {
  const int32_t big = 1 << 30;
  // 2^30 + (2^30 - 1) = 2^31 - 1 fits exactly; one more nonzero does not.
  CHECK(check_nnz_fits(std::vector<int32_t>{big, big - 1}) == 2147483647);
  CHECK(check_nnz_fits(std::vector<int32_t>{}) == 0);
  CHECK_THROWS_WITH_AS(check_nnz_fits(std::vector<int32_t>{big, big - 1, 0, 1, 5}),
                       doctest::Contains("passes it at row 3, which has 1, for 2147483648 in rows 0..3"), UsageError);
  CHECK_THROWS_WITH_AS(check_nnz_fits(std::vector<int32_t>{3, INT32_MAX}), doctest::Contains("row 1"), UsageError);
  CHECK_THROWS_WITH_AS(check_nnz_fits(std::vector<int32_t>{3, -2}),
                       doctest::Contains("row 1 of C has a negative length"), UsageError);
}

TEST_CASE("SpgemmConfigRejectsBadConfigsNamingTheKey") {
  // The defaults differ from the article's in group 1's mapping (a warp per row, two a block),
  // group 2's table (twice its bound) and fitted tables.
  SpgemmConfig article = SpgemmConfig::paper();
  CHECK(article.lanes1 == 0);
  CHECK(article.t2 == 8192);
  CHECK(article.fit_tables == 0);
  CHECK(article.block1 == 256);
  article.lanes1 = SpgemmConfig{}.lanes1;
  article.block1 = SpgemmConfig{}.block1;
  article.t2 = SpgemmConfig{}.t2;
  article.fit_tables = SpgemmConfig{}.fit_tables;
  CHECK(config_to_json(article) == config_to_json(SpgemmConfig{}));
  CHECK(config_to_json(config_from_json<SpgemmConfig>(config_to_json(SpgemmConfig{}))) ==
        config_to_json(SpgemmConfig{}));
  CHECK(config_info<SpgemmConfig>().op == "spgemm");
  // The article's tables are as big as their bounds, so they pass without the fallback too.
  const nlohmann::json no_fallback = {{"overflow_to_global", 0}}, small_t1 = {{"t1", 64}};
  CHECK_NOTHROW(config_from_json<SpgemmConfig>(no_fallback));
  CHECK_NOTHROW(config_from_json<SpgemmConfig>(small_t1));  // smaller than b1: the fallback covers it
  struct Bad {
    nlohmann::json j;
    std::vector<std::string> mentions;
  };
  const std::vector<Bad> bad = {
      {{{"b1", 16}}, {"'b1'", "b0 < b1 < b2", "b0 = 32, b1 = 16"}},
      {{{"b2", 512}}, {"'b2'", "b1 = 512, b2 = 512"}},
      {{{"b0", 0}}, {"'b0'", "[1, "}},
      {{{"t1", 1000}}, {"'t1'", "power of two", "1000"}},
      {{{"t0", 48}}, {"'t0'", "power of two"}},
      {{{"lanes0", 3}}, {"'lanes0'", "power of two"}},
      {{{"lanes0", 64}}, {"'lanes0'", "[1, 32]"}},
      {{{"block1", 100}}, {"'block1'", "multiple of 32"}},
      {{{"block3", 2048}}, {"'block3'", "[32, 1024]"}},
      {{{"overflow_to_global", 0}, {"t1", 256}}, {"'t1'", "'b1' = 512", "overflow_to_global"}},
      {{{"t0", 4096}}, {"'t0'", "shared memory", "232448", "'block0'"}},
      {{{"t2", 65536}}, {"'t2'", "802816 bytes"}},  // 65536 12-byte slots + a chunk of 1024 A entries
      {{{"lanes1", 3}}, {"'lanes1'", "power of two", "0 (the whole block)"}},
      {{{"lanes2", 64}}, {"'lanes2'", "[0, 32]"}},
      {{{"lanes1", 1}, {"t1", 8192}}, {"'t1'", "shared memory", "'lanes1'"}},
      {{{"stage_b_ranges", 2}}, {"'stage_b_ranges'"}},
      {{{"global_scale", 0}}, {"'global_scale'"}},
      {{{"t3", 64}}, {"'t3'", "not a spgemm parameter"}},
  };
  for (const auto& b : bad) {
    CAPTURE(b.j.dump());
    const std::string what = usage_error(b.j);
    CHECK(what.find("spgemm config") != std::string::npos);
    for (const auto& m : b.mentions) CHECK_MESSAGE(what.find(m) != std::string::npos, what, " lacks ", m);
  }
  SpgemmConfig c;
  c.t1 = 100;
  CHECK_THROWS_WITH_AS(hash_spgemm_cpu(CsrMatrix<double>{}, CsrMatrix<double>{}, c), doctest::Contains("'t1'"),
                       UsageError);
  // Several rows a block: their tables a slot apart more than their size (bank conflicts).
  CHECK(spgemm_shared_bytes(SpgemmConfig{}, 0, 8) == 128 * (64 + 4) * 12);
  SpgemmConfig warp_rows;
  warp_rows.lanes1 = 32;
  warp_rows.block1 = 256;
  CHECK(warp_rows.rows_per_block(1) == 8);
  CHECK(spgemm_shared_bytes(warp_rows, 1, 4) == 8 * 1024 * 8);          // a warp a row: no two rows share a warp
  CHECK(spgemm_shared_bytes(SpgemmConfig::paper(), 1, 4) == 1024 * 8);  // a block per row: one table
  CHECK(spgemm_shared_bytes(SpgemmConfig{}, 2, 4) == 16384 * 8);
  CHECK(spgemm_shared_bytes(SpgemmConfig{}, 3, 8) == 0);
}

TEST_CASE("SpgemmHashSlotIsTheContractsFormula") {
  // (key * 107) mod slots: the kernels must probe from the same slot (abi/spgemm.h).
  CHECK(abi::kSpgemmHashMultiplier == 107u);
  CHECK(abi::kSpgemmEmptyKey == -1);
  CHECK(spgemm_first_slot(0, 64) == 0);
  CHECK(spgemm_first_slot(1, 64) == 43);  // 107 - 64
  CHECK(spgemm_first_slot(1000, 1024) == 1000u * 107u % 1024u);
  CHECK(spgemm_first_slot(INT32_MAX, 1u << 31) == (1u << 31) - 107u);  // the uint32 product wraps
  // Odd multiplier: any 64 consecutive keys take 64 different first slots of a 64-slot table.
  std::vector<int> used(64, 0);
  for (int32_t key = 640; key < 704; ++key) ++used[spgemm_first_slot(key, 64)];
  CHECK(std::count(used.begin(), used.end(), 1) == 64);
}

TEST_CASE("SpgemmFittedTablesStayAtMostHalfFullAndUnderTheConfigs") {
  // Twice the longest row's distinct-column bound, rounded up to a power of two, from 32 to t.
  CHECK(spgemm_fit_table(16384, 729, 27000) == 2048);      // a 27-point stencil's group 2
  CHECK(spgemm_fit_table(16384, 8191, 1000000) == 16384);  // a power-law graph's: the config's
  CHECK(spgemm_fit_table(8192, 8191, 1000000) == 8192);    // never above t (rows may overflow, as under t)
  CHECK(spgemm_fit_table(64, 5, 100) == 32);
  CHECK(spgemm_fit_table(64, 0, 100) == 32);
  CHECK(spgemm_fit_table(16, 31, 100) == 16);     // a t below 32 stays
  CHECK(spgemm_fit_table(1024, 511, 40) == 128);  // B's columns bound the distinct keys
  for (int64_t ip = 1; ip < 20000; ip += 37) {
    const int t = spgemm_fit_table(16384, ip, 1 << 30);
    CHECK((t & (t - 1)) == 0);
    CHECK((t >= 2 * ip || t == 16384));
  }
  // The CPU spec runs with fitted tables by default and without: the same C.
  const auto a = generate("powerlaw:n=3000,avg=6,alpha=1.5,max=600,seed=3");
  SpgemmConfig off;
  off.fit_tables = 0;
  const auto fitted = hash_spgemm_cpu(a, a, SpgemmConfig{}).c, plain = hash_spgemm_cpu(a, a, off).c;
  CHECK(fitted.row_ptr == plain.row_ptr);
  CHECK(fitted.col_idx == plain.col_idx);
  CHECK(fitted.values == plain.values);
}

TEST_CASE("SpgemmChunkLayoutKeepsEachChunkUnderItsBudget") {
  std::mt19937_64 rng(7);
  for (int64_t budget : {1, 100, 5000, 1 << 20}) {
    std::vector<int64_t> slots(300);
    for (auto& s : slots) s = int64_t{1} << std::uniform_int_distribution<int>(1, 13)(rng);
    const SpgemmChunkLayout l = spgemm_chunk_layout(slots, budget);
    REQUIRE(!l.first.empty());
    CHECK(l.first.front() == 0);
    int64_t widest = 0;
    for (size_t c = 0; c < l.first.size(); ++c) {
      const size_t end = c + 1 < l.first.size() ? static_cast<size_t>(l.first[c + 1]) : slots.size();
      REQUIRE(static_cast<size_t>(l.first[c]) < end);
      int64_t at = 0;
      for (size_t q = static_cast<size_t>(l.first[c]); q < end; ++q) {
        CHECK(l.offset[q] == at);  // packed from 0 in list order
        at += slots[q];
      }
      // Under the budget, or one table alone; and the next table would not have fitted.
      CHECK((at <= budget || end - static_cast<size_t>(l.first[c]) == 1));
      if (end < slots.size()) CHECK(at + slots[end] > budget);
      widest = std::max(widest, at);
    }
    CHECK(l.widest == widest);
  }
  CHECK(spgemm_chunk_layout(std::vector<int64_t>{}, 10).first.empty());
  const SpgemmChunkLayout all = spgemm_chunk_layout(std::vector<int64_t>{4, 4, 8}, 16);
  CHECK(all.first == std::vector<int32_t>{0});
  CHECK(all.widest == 16);
}

TEST_CASE("SpgemmGlobalTablesHoldTheirRows") {
  const SpgemmConfig cfg;
  CHECK(spgemm_global_table_slots(8192, 100000, cfg) == 16384);
  CHECK(spgemm_global_table_slots(9000, 100000, cfg) == 32768);
  CHECK(spgemm_global_table_slots(9000, 60000, cfg) == 60000);  // dense: at most twice the hashed table
  CHECK(spgemm_global_table_slots(9000, 3000, cfg) == 8192);    // no row is longer than B is wide
  CHECK(spgemm_global_table_slots(0, 10, cfg) == 2);
  CHECK(spgemm_global_table_slots(int64_t{1} << 40, INT32_MAX, cfg) == int64_t{1} << 31);
  SpgemmConfig one = cfg;
  one.global_scale = 1;
  CHECK(spgemm_global_table_slots(8192, 100000, one) == 8192);
  CHECK_FALSE(spgemm_row_may_overflow(8191, 100000, cfg));
  SpgemmConfig small = cfg;
  small.t2 = 4096;
  CHECK(spgemm_row_may_overflow(8191, 100000, small));
  CHECK_FALSE(spgemm_row_may_overflow(8191, 4000, small));    // B too narrow to fill 4096 slots
  CHECK_FALSE(spgemm_row_may_overflow(9000, 100000, small));  // group 3: global anyway
}

// The analysis kernel codes each row by abi::spgemm_row_code and sizes global tables by
// abi::spgemm_table_slots: they must say what the host's rules (the CPU spec's) say.
TEST_CASE("SpgemmAnalysisRowCodesAgreeWithTheHostRules") {
  const auto rule_of = detail::spgemm_group_rule;
  SpgemmConfig tiny = dbs_test::tiny_tables_config();
  SpgemmConfig strict;
  strict.overflow_to_global = 0;
  for (const SpgemmConfig& c : {SpgemmConfig{}, tiny, strict})
    for (int32_t b_cols : {1, 7, 64, 5000, 100000, INT32_MAX})
      for (int64_t ip :
           {int64_t{0},   int64_t{1},   int64_t{3},    int64_t{4},    int64_t{5},    int64_t{7},      int64_t{8},
            int64_t{31},  int64_t{32},  int64_t{63},   int64_t{64},   int64_t{65},   int64_t{255},    int64_t{256},
            int64_t{511}, int64_t{512}, int64_t{1025}, int64_t{8191}, int64_t{8192}, int64_t{1} << 33}) {
        CAPTURE(b_cols);
        CAPTURE(ip);
        const int code = abi::spgemm_row_code(ip, rule_of(c, b_cols));
        const int group = spgemm_group_of(ip, c);
        CHECK((code < 0 ? -1 : code & 3) == group);
        const bool may = code >= 0 && (code & abi::kSpgemmMayOverflow) != 0;
        CHECK(may == (c.overflow_to_global != 0 && spgemm_row_may_overflow(ip, b_cols, c)));
        CHECK(abi::spgemm_table_slots(ip, b_cols, c.global_scale) == spgemm_global_table_slots(ip, b_cols, c));
      }
  CHECK(abi::spgemm_row_code(0, rule_of(SpgemmConfig{}, 10)) == abi::kSpgemmIdleRow);
}

TEST_CASE("ContractCpuMatchesAHandMadeContraction") {
  // A path 0-1-2-3-4-5 (weights 1..5 both ways) and a self loop 0.5 at 0; pairs merged.
  const auto g = from_entries<double>(6, 6,
                                      {{0, 0, 0.5},
                                       {0, 1, 1},
                                       {1, 0, 1},
                                       {1, 2, 2},
                                       {2, 1, 2},
                                       {2, 3, 3},
                                       {3, 2, 3},
                                       {3, 4, 4},
                                       {4, 3, 4},
                                       {4, 5, 5},
                                       {5, 4, 5}});
  const std::vector<int32_t> labels = {0, 0, 1, 1, 2, 2};
  const auto c = contract_cpu(g, labels, 3);
  validate(c);
  const auto want =
      from_entries<double>(3, 3, {{0, 0, 2.5}, {0, 1, 2}, {1, 0, 2}, {1, 1, 6}, {1, 2, 4}, {2, 1, 4}, {2, 2, 10}});
  CHECK(c.row_ptr == want.row_ptr);
  CHECK(c.col_idx == want.col_idx);
  CHECK(c.values == want.values);
  // Labels out of order and an unused label: its row and column stay empty.
  const auto d = contract_cpu(g.cast<float>(), std::vector<int32_t>{3, 0, 0, 3, 3, 0}, 4);
  CHECK(d.row_ptr == std::vector<int32_t>{0, 2, 2, 2, 4});
  CHECK(d.col_idx == std::vector<int32_t>{0, 3, 0, 3});
  // Label 0 = {1, 2, 5}, label 3 = {0, 3, 4}.
  CHECK(d.values == std::vector<double>{2 + 2, 1 + 3 + 5, 1 + 3 + 5, 0.5 + 4 + 4});
  // Cancelling weights within a group leave an explicit zero: the pattern is the definition's.
  const auto z = contract_cpu(from_entries<double>(2, 2, {{0, 1, 1}, {1, 0, -1}}), std::vector<int32_t>{0, 0}, 1);
  CHECK(z.nnz() == 1);
  CHECK(z.values[0] == 0.0);
}

TEST_CASE("ContractCpuMatchesDirectSumsOnGeneratedGraphs") {
  for (const char* spec : {"rmat:scale=8,ef=8", "roadnet:n=3000"}) {
    CAPTURE(spec);
    const auto g = generate(spec);
    std::vector<int32_t> labels;
    for (int32_t v = 0; v < g.rows; ++v) labels.push_back((v * 7 + v / 13) % 11);
    std::map<std::pair<int32_t, int32_t>, std::pair<double, double>> want;  // (sum, sum of |G|)
    for (int32_t i = 0; i < g.rows; ++i)
      for (int32_t p = g.row_ptr[i]; p < g.row_ptr[i + 1]; ++p) {
        auto& w = want[{labels[i], labels[g.col_idx[p]]}];
        w.first += g.values[p];
        w.second += std::fabs(g.values[p]);
      }
    const auto c = contract_cpu(g, labels, 11);
    REQUIRE(c.nnz() == static_cast<int64_t>(want.size()));
    auto it = want.begin();
    for (int32_t a = 0; a < c.rows; ++a)
      for (int32_t p = c.row_ptr[a]; p < c.row_ptr[a + 1]; ++p, ++it) {
        REQUIRE(it->first == std::make_pair(a, c.col_idx[p]));
        CHECK(std::fabs(c.values[p] - it->second.first) <= 1e-12 * it->second.second);
      }
  }
}

TEST_CASE("ContractCpuRejectsBadLabelsNamingTheVertex") {
  const auto g = from_entries<double>(4, 4, {{0, 1, 1}, {1, 0, 1}});
  CHECK_THROWS_WITH_AS(contract_cpu(g, std::vector<int32_t>{0, 1, 5, 0}, 3),
                       doctest::Contains("vertex 2 has label 5, outside [0, 3)"), UsageError);
  CHECK_THROWS_WITH_AS(contract_cpu(g, std::vector<int32_t>{0, 1, 2, -1}, 3),
                       doctest::Contains("vertex 3 has label -1"), UsageError);
  CHECK_THROWS_WITH_AS(contract_cpu(g, std::vector<int32_t>{0, 1, 2}, 3),
                       doctest::Contains("3 labels for a graph of 4 vertices"), UsageError);
  CHECK_THROWS_WITH_AS(contract_cpu(from_entries<double>(2, 3, {}), std::vector<int32_t>{0, 0}, 1),
                       doctest::Contains("must be square, is 2x3"), UsageError);
}

TEST_CASE("MclCpuFindsTwoClustersInTwo5CliquesJoinedByOneEdge") {
  const auto g = cliques(10, {{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}}, {{4, 5}});
  const MclResult r = mcl_cpu(g);
  CHECK(r.converged);
  CHECK(r.iterations > 1);
  CHECK(r.clusters == 2);
  CHECK(r.labels == std::vector<int32_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1});
  MclOptions weighted;
  weighted.weighted = true;
  CHECK(mcl_cpu(g.cast<float>(), weighted).labels == r.labels);
}

TEST_CASE("MclCpuFindsThreeClustersInThreeCliques") {
  // Cliques of 4, 5 and 6 vertices in a ring of single edges, their vertices interleaved so that
  // the labels follow the smallest vertex of each cluster, not the order of the cliques.
  const std::vector<std::vector<int32_t>> groups = {{2, 5, 8, 11}, {0, 3, 6, 9, 12}, {1, 4, 7, 10, 13, 14}};
  const auto g = cliques(15, groups, {{11, 0}, {12, 1}, {14, 2}});
  const MclResult r = mcl_cpu(g);
  CHECK(r.converged);
  CHECK(r.clusters == 3);
  std::vector<int32_t> want(15);
  for (int32_t v : groups[0]) want[v] = 2;  // smallest vertex 2: the third cluster numbered
  for (int32_t v : groups[1]) want[v] = 0;
  for (int32_t v : groups[2]) want[v] = 1;
  CHECK(r.labels == want);
}

TEST_CASE("MclCpuKeepsIsolatedVerticesAndChecksItsOptions") {
  const auto g = cliques(8, {{0, 1, 2, 3, 4}}, {});  // 5, 6, 7 isolated
  const MclResult r = mcl_cpu(g);
  CHECK(r.labels == std::vector<int32_t>{0, 0, 0, 0, 0, 1, 2, 3});
  MclOptions no_loops;
  no_loops.add_self_loops = false;
  CHECK(mcl_cpu(g, no_loops).clusters == 4);  // isolated vertices have empty rows, and stay alone
  const auto start = mcl_start(g, MclOptions{});
  for (int32_t i = 0; i < start.rows; ++i) {
    double sum = 0;
    for (int32_t p = start.row_ptr[i]; p < start.row_ptr[i + 1]; ++p) sum += start.values[p];
    CHECK(sum == doctest::Approx(1.0));
  }
  MclOptions one;
  one.max_iterations = 1;
  // (A lone clique is a fixed point at once; two joined ones take several iterations.)
  const MclResult once = mcl_cpu(cliques(10, {{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}}, {{4, 5}}), one);
  CHECK(once.iterations == 1);
  CHECK_FALSE(once.converged);
  for (auto [field, set] : std::vector<std::pair<std::string, void (*)(MclOptions&)>>{
           {"inflation", [](MclOptions& o) { o.inflation = 0.5; }},
           {"prune_below", [](MclOptions& o) { o.prune_below = 1.0; }},
           {"keep_top_k", [](MclOptions& o) { o.keep_top_k = 0; }},
           {"max_iterations", [](MclOptions& o) { o.max_iterations = 0; }},
           {"tolerance", [](MclOptions& o) { o.tolerance = -1; }}}) {
    MclOptions o;
    set(o);
    const std::string quoted = "'" + field + "'";
    CHECK_THROWS_WITH_AS(mcl_cpu(g, o), doctest::Contains(quoted.c_str()), UsageError);
  }
  CHECK_THROWS_WITH_AS(mcl_cpu(from_entries<double>(2, 3, {})), doctest::Contains("square"), UsageError);
}

TEST_CASE("MclStepPrunesToTheTopKAndRenormalises") {
  // A star: vertex 0 linked to 1..9. After one step row 0 spreads over ten columns; keep_top_k = 3
  // leaves three, summing to 1, the largest among them (its own column, 0).
  std::vector<std::pair<int32_t, int32_t>> spokes;
  for (int32_t v = 1; v < 10; ++v) spokes.emplace_back(0, v);
  const auto g = cliques(10, {}, spokes);
  MclOptions o;
  o.keep_top_k = 3;
  const auto p = mcl_step(mcl_start(g, o), o);
  for (int32_t i = 0; i < p.rows; ++i) {
    REQUIRE(p.row_ptr[i + 1] - p.row_ptr[i] <= 3);
    double sum = 0;
    for (int32_t e = p.row_ptr[i]; e < p.row_ptr[i + 1]; ++e) sum += p.values[e];
    CHECK(sum == doctest::Approx(1.0));
  }
  CHECK(p.col_idx[p.row_ptr[0]] == 0);
  CHECK(mcl_change(p, p) == 0.0);
}

TEST_CASE("RoadnetGeneratorLooksLikeRoadNetTx") {
  const auto m = generate("roadnet:n=200000,seed=1");
  validate(m);
  REQUIRE(m.rows == 200000);
  const auto t = transpose(m);
  CHECK(t.row_ptr == m.row_ptr);  // symmetric, values too
  CHECK(t.col_idx == m.col_idx);
  CHECK(t.values == m.values);
  int32_t longest = 0, empty = 0;
  for (int32_t i = 0; i < m.rows; ++i) {
    const int32_t len = m.row_ptr[i + 1] - m.row_ptr[i];
    longest = std::max(longest, len);
    empty += len == 0;
    for (int32_t p = m.row_ptr[i]; p < m.row_ptr[i + 1]; ++p) REQUIRE(m.col_idx[p] != i);
  }
  const double mean = static_cast<double>(m.nnz()) / m.rows;
  CHECK(mean > 2.6);  // roadNet-TX: 2.76
  CHECK(mean < 3.0);
  CHECK(longest >= 9);  // roadNet-TX: 12
  CHECK(longest <= 16);
  CHECK(empty > 0);
  // A² as the article squares it: roadNet-TX has 8.7 products a row.
  const auto ip = intermediate_products(m, m);
  const double ip_mean = static_cast<double>(spgemm_flops(ip)) / 2 / m.rows;
  CHECK(ip_mean > 7);
  CHECK(ip_mean < 11);
  const auto again = generate("roadnet:seed=1,n=200000");
  CHECK(again.col_idx == m.col_idx);
  CHECK(generate("roadnet:n=200000,seed=2").col_idx != m.col_idx);
  CHECK(parse_generator_spec("roadnet").to_string() == "roadnet:n=100000,seed=1");
  CHECK(generator_help().find("roadnet:") != std::string::npos);
  CHECK_THROWS_AS(generate("roadnet:n=0"), InputError);
  CHECK(generate("roadnet:n=1").nnz() == 0);
}

// Triangle counting's CPU reference (the GPU version is checked against it in test_spgemm_apps_gpu)
// against cliques and the definition, the masked product summed.
TEST_CASE("TriangleCountCpuMatchesTheMaskedProductAndCliques") {
  // K_n has n(n-1)(n-2)/6 triangles; two cliques of 5 and 4 sharing nothing: 10 + 4.
  CHECK(triangle_count_cpu(dbs_test::undirected(dbs_test::cliques(9, {{0, 1, 2, 3, 4}, {5, 6, 7, 8}}, {}))) == 14);
  CHECK(triangle_count_cpu(dbs_test::undirected(dbs_test::cliques(30, {}, {{0, 1}, {1, 2}}))) == 0);
  CHECK(triangle_count_cpu(dbs_test::undirected(dbs_test::cliques(30, {}, {{0, 1}, {1, 2}, {2, 0}}))) == 1);
  for (const char* spec : {"roadnet:n=3000,seed=2", "rmat:scale=10,ef=8,seed=3", "uniform:n=2000,d=6,seed=4"}) {
    CAPTURE(spec);
    const CsrMatrix<double> g = dbs_test::undirected(generate(spec));
    CHECK(triangle_count_cpu(g) == dbs_test::masked_product_sum(g));
  }
}

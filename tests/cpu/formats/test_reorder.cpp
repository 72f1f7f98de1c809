// Vertex orderings (reorder.hpp): each a permutation; RCM brings a scrambled grid back to a narrow
// band; community keeps planted communities contiguous; degree sorts hubs first; P A P^T with P x
// gives P (A x), and the inverse undoes it.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <numeric>
#include <random>
#include <span>

#include "dbsparse/error.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/io.hpp"
#include "dbsparse/reference.hpp"
#include "dbsparse/reorder.hpp"
#include "test_support.hpp"

#include <nlohmann/json.hpp>

using namespace dbsparse;

namespace {

const Reorder kAll[] = {Reorder::None, Reorder::Degree, Reorder::Rcm, Reorder::Community};

Permutation shuffled(int32_t n, uint64_t seed) {
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  return permutation_from_order(order);
}

void check_bijection(const Permutation& p, int32_t n) {
  REQUIRE(p.size() == n);
  REQUIRE(p.old_of_new.size() == static_cast<size_t>(n));
  std::vector<int> seen(static_cast<size_t>(n), 0);
  for (int32_t v = 0; v < n; ++v) {
    const int32_t k = p.new_of_old[static_cast<size_t>(v)];
    REQUIRE(k >= 0);
    REQUIRE(k < n);
    CHECK(seen[static_cast<size_t>(k)]++ == 0);
    CHECK(p.old_of_new[static_cast<size_t>(k)] == v);
  }
}

}  // namespace

TEST_CASE("EveryReorderingIsAPermutationAndPermutedSpmvMatchesReference") {
  for (const char* spec : {"powerlaw:n=3000,avg=8,alpha=1.5,max=1500", "rmat:scale=11,ef=8,scramble=1",
                           "roadnet:n=4000,seed=2", "stencil3d:n=12,points=7", "uniform:n=2000,d=6"}) {
    CAPTURE(spec);
    const CsrMatrix<double> a = generate(spec);
    const auto x = dbs_test::random_vector<double>(static_cast<size_t>(a.cols), 5);
    const std::vector<double> y = reference::spmv(a, std::span<const double>(x));
    for (const Reorder how : kAll) {
      CAPTURE(to_string(how));
      const Permutation p = reorder(a, how);
      check_bijection(p, a.rows);
      if (how == Reorder::None) CHECK(p.identity());
      const CsrMatrix<double> b = permute_symmetric(a, p);
      CHECK(b.nnz() == a.nnz());
      // (P A P^T)(P x) = P (A x): inputs and outputs go through the permutation and back.
      const std::vector<double> yb = reference::spmv(b, std::span<const double>(permute_vector(x, p)));
      const std::vector<double> back = unpermute_vector(yb, p);
      CHECK(reference::relative_error(std::span<const double>(y), std::span<const double>(back)) < 1e-12);
      // The inverse permutation restores A exactly.
      const CsrMatrix<double> again = permute_symmetric(b, permutation_from_order(p.new_of_old));
      CHECK(again.row_ptr == a.row_ptr);
      CHECK(again.col_idx == a.col_idx);
      CHECK(again.values == a.values);
    }
  }
}

TEST_CASE("RcmBringsAScrambledGridBackToANarrowBand") {
  const int32_t side = 60;
  const CsrMatrix<double> grid = generate("stencil2d:n=60");
  const CsrMatrix<double> scrambled = permute_symmetric(grid, shuffled(grid.rows, 11));
  const LocalityStats before = locality(scrambled);
  const CsrMatrix<double> ordered = permute_symmetric(scrambled, reorder(scrambled, Reorder::Rcm));
  const LocalityStats after = locality(ordered);
  CHECK(before.bandwidth > 20 * side);
  CHECK(after.bandwidth <= 2 * side);  // RCM on a grid: about one diagonal's width
  // As few lines of x a row as the grid's own order (rows i - 60, i, i + 60: three) gives.
  CHECK(after.lines_per_row <= 1.05 * locality(grid).lines_per_row);
  CHECK(after.lines_per_row < 0.65 * before.lines_per_row);
  MESSAGE("grid 60x60 bandwidth ", before.bandwidth, " -> ", after.bandwidth, ", lines a row ", before.lines_per_row,
          " -> ", after.lines_per_row);
}

TEST_CASE("CommunityOrderKeepsPlantedCommunitiesContiguous") {
  // Eight cliques of 25 vertices, one edge between consecutive cliques, vertex ids shuffled.
  const int32_t k = 8, size = 25, n = k * size;
  std::vector<dbs_test::Entry> e;
  for (int32_t c = 0; c < k; ++c) {
    for (int32_t i = 0; i < size; ++i)
      for (int32_t j = 0; j < size; ++j)
        if (i != j) e.emplace_back(c * size + i, c * size + j, 1.0);
    if (c + 1 < k) {
      e.emplace_back(c * size, (c + 1) * size, 1.0);
      e.emplace_back((c + 1) * size, c * size, 1.0);
    }
  }
  const CsrMatrix<double> planted = dbs_test::csr_from_entries<double>(n, n, e);
  const Permutation scramble = shuffled(n, 3);
  const CsrMatrix<double> a = permute_symmetric(planted, scramble);
  const Permutation p = reorder(a, Reorder::Community);
  check_bijection(p, n);
  // Each planted clique's vertices occupy size consecutive positions of the new order.
  for (int32_t c = 0; c < k; ++c) {
    int32_t lo = n, hi = -1;
    for (int32_t i = 0; i < size; ++i) {
      const int32_t now = p.new_of_old[static_cast<size_t>(scramble.new_of_old[static_cast<size_t>(c * size + i)])];
      lo = std::min(lo, now);
      hi = std::max(hi, now);
    }
    CAPTURE(c);
    CHECK(hi - lo == size - 1);
  }
}

TEST_CASE("DegreeOrderPutsHubsFirstAndReorderRejectsBadInput") {
  const CsrMatrix<double> a = generate("powerlaw:n=3000,avg=8,alpha=1.5,max=1500");
  const PatternGraph g = symmetrize(pattern_of(a), true);
  const Permutation p = reorder(a, Reorder::Degree);
  for (int32_t k = 1; k < a.rows; ++k) {
    const int32_t u = p.old_of_new[static_cast<size_t>(k - 1)], v = p.old_of_new[static_cast<size_t>(k)];
    REQUIRE(g.row_ptr[u + 1] - g.row_ptr[u] >= g.row_ptr[v + 1] - g.row_ptr[v]);
  }
  CHECK(parse_reorder("rcm") == Reorder::Rcm);
  CHECK_THROWS_WITH_AS(parse_reorder("rabbit"), doctest::Contains("none, degree, rcm, community"), UsageError);
  const CsrMatrix<double> rect = dbs_test::csr_with_row_lengths<double>(10, std::vector<int32_t>(4, 2), 1);
  CHECK_THROWS_WITH_AS(reorder(rect, Reorder::Rcm), doctest::Contains("4x10"), UsageError);
  CHECK_THROWS_AS(permutation_from_order({0, 2, 2}), UsageError);
  CHECK_THROWS_AS(permute_symmetric(a, identity_permutation(5)), UsageError);
  // Empty graphs and isolated vertices.
  const CsrMatrix<double> empty = dbs_test::csr_from_entries<double>(5, 5, {});
  for (const Reorder how : kAll) check_bijection(reorder(empty, how), 5);
  check_bijection(reorder(CsrMatrix<double>{}, Reorder::Rcm), 0);
}

// P A alone (SpMM's reordered plans): row k of the result is A's row old_of_new[k], so (P A) x
// read back through the order is A x; a permutation of the wrong size is a UsageError.
TEST_CASE("PermutedRowsTimesXReadBackThroughTheOrderMatchReference") {
  const auto a = generate("powerlaw:n=3000,avg=6,alpha=1.6,max=400");
  const auto x = dbs_test::random_vector<double>(static_cast<size_t>(a.cols), 5);
  const auto want = reference::spmv(a, std::span<const double>(x));
  for (Reorder how : kAll) {
    CAPTURE(to_string(how));
    const Permutation p = reorder(a, how);
    const auto pa = permute_rows(a, p);
    CHECK(pa.nnz() == a.nnz());
    const auto got = reference::spmv(pa, std::span<const double>(x));
    for (int32_t k = 0; k < a.rows; ++k)
      CHECK(got[static_cast<size_t>(k)] == want[static_cast<size_t>(p.old_of_new[k])]);
  }
  CHECK_THROWS_AS(permute_rows(a, identity_permutation(a.rows - 1)), UsageError);
}

// A star of 3000 vertices (0 joined to every other, both ways): column 0 holds 2999 of the 5998
// entries and every other column one, so the k most frequent columns hold (2999 + k - 1) / 5998.
TEST_CASE("ReorderCliReportsTheShareOfEntriesInTheMostFrequentColumns") {
  const auto dir = dbs_test::temp_dir("reorder-cli");
  std::vector<dbs_test::Entry> e;
  for (int32_t v = 1; v < 3000; ++v) e.emplace_back(0, v, 1.0), e.emplace_back(v, 0, 1.0);
  const std::string mtx = (dir / "star.mtx").string(), json = (dir / "star.json").string();
  write_matrix_market(mtx, dbs_test::csr_from_entries<double>(3000, 3000, e));
  const auto [rc, out] = dbs_test::run_tool("dbsparse", "reorder '" + mtx + "' --methods none --json '" + json + "'");
  CAPTURE(out);
  REQUIRE(rc == 0);
  CHECK(out.find("top 1024 67.1%") != std::string::npos);
  std::ifstream in(json);
  const auto rec = nlohmann::json::parse(in);
  CHECK(rec["hub_share"]["top256"].get<double>() == doctest::Approx((2999.0 + 255) / 5998).epsilon(1e-12));
  CHECK(rec["hub_share"]["top1024"].get<double>() == doctest::Approx((2999.0 + 1023) / 5998).epsilon(1e-12));
  CHECK(rec["hub_share"]["top4096"].get<double>() == doctest::Approx(1.0).epsilon(1e-12));
  // The L1 model's shares, worked by hand. N = 32: blocks of 16 rows go to 132 SMs in turn. SM 0
  // takes row 0's 2999 distinct columns (all misses) and then column 0 once; each of the other 131
  // SMs misses column 0 once: 3131 of the 5998 gathers reach L2. With 160 KB of hub rows staged
  // (1280 rows: column 0, then columns 1..1279 by the tie to the smaller index) only row 0's
  // columns 1280..2999 do: 1720. SpMV: sectors of 8 columns, blocks of 64 rows: row 0 asks for its
  // 375 sectors, the other 46 SMs for column 0's once: 421 sectors of 32 bytes, the same in the
  // count order (it numbers the columns as they are).
  const auto& model = rec["orders"][0]["spmm_l2_share_model"];
  CHECK(model["n32"]["plain"].get<double>() == doctest::Approx(3131.0 / 5998).epsilon(1e-12));
  CHECK(model["n32"]["hubs_160k"].get<double>() == doctest::Approx(1720.0 / 5998).epsilon(1e-12));
  CHECK(rec["spmv_model"]["x_l2_bytes_own"].get<double>() == 421.0 * 32);
  CHECK(rec["spmv_model"]["x_l2_bytes_count_order"].get<double>() == 421.0 * 32);
}

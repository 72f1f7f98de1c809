// Generators, CPU references and matrix features. Expected results are computed here by a
// different route (dense matrices, brute force over the grid), never copied from the code under test.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dbsparse/error.hpp"
#include "dbsparse/features.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/reference.hpp"
#include "test_support.hpp"

using namespace dbsparse;

namespace {

using Dense = std::vector<std::vector<double>>;

// The invariants of CsrMatrix, checked independently of the library's own validate().
template <class T>
void check_csr(const CsrMatrix<T>& m) {
  REQUIRE(m.row_ptr.size() == static_cast<size_t>(m.rows) + 1);
  REQUIRE(m.row_ptr.front() == 0);
  REQUIRE(m.row_ptr.back() == m.nnz());
  REQUIRE(m.values.size() == m.col_idx.size());
  bool ok = true;
  for (int32_t i = 0; i < m.rows && ok; ++i) {
    ok = m.row_ptr[i] <= m.row_ptr[i + 1];
    for (int32_t p = m.row_ptr[i]; p < m.row_ptr[i + 1] && ok; ++p)
      ok = m.col_idx[p] >= 0 && m.col_idx[p] < m.cols && (p == m.row_ptr[i] || m.col_idx[p - 1] < m.col_idx[p]);
  }
  CHECK_MESSAGE(ok, "row_ptr monotone, columns in range, sorted and unique");
}

template <class T>
Dense to_dense(const CsrMatrix<T>& m) {
  Dense d(static_cast<size_t>(m.rows), std::vector<double>(static_cast<size_t>(m.cols), 0.0));
  for (int32_t i = 0; i < m.rows; ++i)
    for (int32_t p = m.row_ptr[i]; p < m.row_ptr[i + 1]; ++p) d[i][m.col_idx[p]] = m.values[p];
  return d;
}

// Pattern of m as a dense Boolean matrix (explicit zeros count as present).
template <class T>
std::vector<std::vector<bool>> pattern(const CsrMatrix<T>& m) {
  std::vector<std::vector<bool>> d(static_cast<size_t>(m.rows), std::vector<bool>(static_cast<size_t>(m.cols)));
  for (int32_t i = 0; i < m.rows; ++i)
    for (int32_t p = m.row_ptr[i]; p < m.row_ptr[i + 1]; ++p) d[i][m.col_idx[p]] = true;
  return d;
}

template <class T>
CsrMatrix<T> from_dense(const Dense& d) {
  CsrMatrix<T> m;
  m.rows = static_cast<int32_t>(d.size());
  m.cols = d.empty() ? 0 : static_cast<int32_t>(d[0].size());
  for (const auto& row : d) {
    for (size_t j = 0; j < row.size(); ++j) {
      if (row[j] == 0.0) continue;
      m.col_idx.push_back(static_cast<int32_t>(j));
      m.values.push_back(static_cast<T>(row[j]));
    }
    m.row_ptr.push_back(static_cast<int32_t>(m.col_idx.size()));
  }
  return m;
}

Dense random_dense(int rows, int cols, double density, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Dense d(static_cast<size_t>(rows), std::vector<double>(static_cast<size_t>(cols), 0.0));
  for (auto& row : d)
    for (auto& v : row)
      if (u(rng) < density) v = std::round(u(rng) * 16 - 8) + 0.5;  // never 0, exact in float
  return d;
}

Dense matmul(const Dense& a, const Dense& b) {
  Dense c(a.size(), std::vector<double>(b.empty() ? 0 : b[0].size(), 0.0));
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t k = 0; k < b.size(); ++k)
      for (size_t j = 0; j < c[i].size(); ++j) c[i][j] += a[i][k] * b[k][j];
  return c;
}

template <class T>
bool same(const CsrMatrix<T>& a, const CsrMatrix<T>& b) {
  return a.rows == b.rows && a.cols == b.cols && a.row_ptr == b.row_ptr && a.col_idx == b.col_idx &&
         a.values == b.values;
}

// BFS by repeated dense Boolean products: next = (frontier^T * A) restricted to unvisited.
std::vector<int32_t> dense_bfs_levels(const std::vector<std::vector<bool>>& adj, int32_t source) {
  const size_t n = adj.size();
  std::vector<int32_t> level(n, -1);
  std::vector<bool> frontier(n, false);
  frontier[source] = true;
  level[source] = 0;
  for (int32_t depth = 1;; ++depth) {
    std::vector<bool> next(n, false);
    bool any = false;
    for (size_t v = 0; v < n; ++v) {
      if (level[v] != -1) continue;
      for (size_t u = 0; u < n && !next[v]; ++u) next[v] = frontier[u] && adj[u][v];
      if (next[v]) {
        level[v] = depth;
        any = true;
      }
    }
    if (!any) return level;
    frontier = next;
  }
}

std::string input_error_text(const std::string& spec) {
  try {
    generate(spec);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

}  // namespace

TEST_CASE("every generator kind gives a valid CSR with the expected sizes") {
  for (const std::string spec :
       {"stencil2d:n=7", "stencil3d:n=5,points=7", "stencil3d:n=5,points=27", "fem:nodes=100,k=3,blocks=5",
        "banded:n=50,bw=3", "uniform:n=200,d=9", "rmat:scale=9,ef=4", "powerlaw:n=3000,avg=6", "roadnet:n=500"}) {
    CAPTURE(spec);
    const auto m = generate(spec);
    check_csr(m);
    CHECK(m.rows == m.cols);
    CHECK(m.nnz() > 0);
    for (double v : m.values) REQUIRE((std::isfinite(v) && v != 0.0 && std::fabs(v) <= 26.0));
  }
  CHECK(generate("stencil3d:n=5").rows == 125);
  CHECK(generate("rmat:scale=9").rows == 512);
  CHECK(generate("fem:nodes=100,k=3,blocks=5").rows == 100);
}

TEST_CASE("stencils match the Laplacian built point by point") {
  CHECK(generate("stencil2d:n=4").nnz() == 4 * 4 * 5 - 4 * 4);
  struct Case {
    std::string spec;
    int n, dims, points;
  };
  for (const auto& c : {Case{"stencil2d:n=6", 6, 2, 5}, Case{"stencil3d:n=4,points=7", 4, 3, 7},
                        Case{"stencil3d:n=4,points=27", 4, 3, 27}}) {
    CAPTURE(c.spec);
    const int nz = c.dims == 3 ? c.n : 1, total = c.n * c.n * nz;
    Dense want(static_cast<size_t>(total), std::vector<double>(static_cast<size_t>(total), 0.0));
    for (int i = 0; i < total; ++i)
      for (int j = 0; j < total; ++j) {
        const int dx = std::abs(i % c.n - j % c.n), dy = std::abs(i / c.n % c.n - j / c.n % c.n),
                  dz = std::abs(i / (c.n * c.n) - j / (c.n * c.n));
        const bool near = c.points == 27 ? std::max({dx, dy, dz}) <= 1 : dx + dy + dz <= 1;
        if (near) want[i][j] = i == j ? c.points - 1 : -1.0;
      }
    const auto m = generate(c.spec);
    check_csr(m);
    CHECK(to_dense(m) == want);
  }
}

TEST_CASE("banded, uniform and fem have their documented shape") {
  const auto b = generate("banded:n=40,bw=5");
  const auto pb = pattern(b);
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j < 40; ++j) REQUIRE(pb[i][j] == (std::abs(i - j) <= 5));

  const auto u = generate("uniform:n=300,d=12,seed=4");
  check_csr(u);
  for (int32_t i = 0; i < u.rows; ++i) REQUIRE(u.row_ptr[i + 1] - u.row_ptr[i] == 12);

  // fem: every row is a union of whole, aligned k-blocks including its own, `blocks` of them, and
  // the rows of one block row share their columns.
  const int k = 4, blocks = 6;
  const auto f = generate("fem:nodes=400,k=4,blocks=6,seed=3");
  check_csr(f);
  const auto pf = pattern(f);
  for (int i = 0; i < 400; ++i) {
    int count = 0;
    for (int bc = 0; bc < 100; ++bc) {
      int present = 0;
      for (int j = bc * k; j < bc * k + k; ++j) present += pf[i][j];
      REQUIRE((present == 0 || present == k));
      count += present == k;
    }
    CHECK(count == blocks);
    CHECK(pf[i][i]);
    CHECK(pf[i] == pf[i / k * k]);
  }
  // Nodes not divisible by k: the last block is cut short, not dropped.
  const auto g = generate("fem:nodes=10,k=3,blocks=2");
  check_csr(g);
  CHECK(pattern(g)[9][9]);
}

TEST_CASE("rmat is symmetric with no self loops; powerlaw rows stay within [1, max]") {
  const auto r = generate("rmat:scale=8,ef=8,seed=5");
  check_csr(r);
  const auto d = to_dense(r);
  const auto p = pattern(r);
  for (int i = 0; i < r.rows; ++i) {
    CHECK_FALSE(p[i][i]);
    for (int j = 0; j < r.cols; ++j) REQUIRE((p[i][j] == p[j][i] && d[i][j] == d[j][i]));
  }
  // Duplicates are merged: far fewer entries than 2 * ef * 2^scale.
  CHECK(r.nnz() < 2 * 8 * 256);

  const auto w = generate("powerlaw:n=20000,avg=8,alpha=1.5,max=3000,seed=2");
  check_csr(w);
  int32_t longest = 0;
  for (int32_t i = 0; i < w.rows; ++i) {
    const int32_t len = w.row_ptr[i + 1] - w.row_ptr[i];
    REQUIRE((len >= 1 && len <= 3000));
    longest = std::max(longest, len);
  }
  const double mean = static_cast<double>(w.nnz()) / w.rows;
  CHECK(mean > 4);
  CHECK(mean < 16);
  CHECK(longest > 200);  // a heavy tail, not a uniform spread
}

TEST_CASE("rmat scramble=1 relabels the vertices: same degrees, symmetric, hubs no longer in the low ids") {
  const auto plain = generate("rmat:scale=12,ef=8,seed=3"),
             scrambled = generate("rmat:scale=12,ef=8,seed=3,scramble=1");
  check_csr(scrambled);
  REQUIRE(scrambled.rows == plain.rows);
  CHECK(scrambled.nnz() == plain.nnz());  // a relabelling keeps every edge, merges none
  auto degrees = [](const CsrMatrix<double>& m) {
    std::vector<int32_t> d;
    for (int32_t i = 0; i < m.rows; ++i) d.push_back(m.row_ptr[i + 1] - m.row_ptr[i]);
    return d;
  };
  auto dp = degrees(plain), ds = degrees(scrambled);
  CHECK(dp != ds);  // relabelled
  // The same multiset of degrees, and the same graph up to the permutation.
  auto sp = dp, ss = ds;
  std::sort(sp.begin(), sp.end());
  std::sort(ss.begin(), ss.end());
  CHECK(sp == ss);
  // Unscrambled R-MAT puts its hubs in the low ids: the first 1/16 of the vertices hold far more
  // than 1/16 of the entries; scrambled, close to their share.
  auto head_share = [](const CsrMatrix<double>& m) {
    return static_cast<double>(m.row_ptr[m.rows / 16]) / static_cast<double>(m.nnz());
  };
  CHECK(head_share(plain) > 0.2);
  CHECK(head_share(scrambled) < 0.12);
  const auto p = pattern(generate("rmat:scale=8,ef=8,seed=5,scramble=1"));
  for (size_t i = 0; i < p.size(); ++i) {
    CHECK_FALSE(p[i][i]);
    for (size_t j = 0; j < p.size(); ++j) REQUIRE(p[i][j] == p[j][i]);
  }
}

TEST_CASE("generators are deterministic and the seed matters") {
  for (const std::string base : {"fem:nodes=300,k=3,blocks=5", "uniform:n=500,d=7", "rmat:scale=10,ef=4",
                                 "powerlaw:n=2000,avg=5", "roadnet:n=2000"}) {
    CAPTURE(base);
    const auto a = generate(base + ",seed=11");
    CHECK(same(a, generate(base + ",seed=11")));
    CHECK_FALSE(same(a, generate(base + ",seed=12")));
  }
  CHECK(same(generate("banded:n=300,bw=4"), generate(parse_generator_spec("banded:bw=4,n=300"))));
}

TEST_CASE("generator specs: canonical text, defaults and round trip") {
  CHECK(parse_generator_spec("stencil3d").to_string() == "stencil3d:n=64,points=7");
  CHECK(parse_generator_spec(" uniform : d = 4 , n=1e3").to_string() == "uniform:d=4,n=1000,seed=1");
  CHECK(parse_generator_spec("powerlaw:n=1000").params.at("max") == "250");
  CHECK(parse_generator_spec("powerlaw:alpha=2.50").params.at("alpha") == "2.5");
  for (const std::string text : {"stencil2d", "stencil3d:points=27", "fem:k=2", "banded:bw=0", "uniform",
                                 "rmat:scale=12,ef=16,seed=7", "powerlaw:avg=3.25,alpha=1.2"}) {
    CAPTURE(text);
    const auto s = parse_generator_spec(text);
    const auto again = parse_generator_spec(s.to_string());
    CHECK(again.kind == s.kind);
    CHECK(again.params == s.params);
    CHECK(again.to_string() == s.to_string());
  }
  CHECK(generator_help().find("rmat:") != std::string::npos);
}

TEST_CASE("bad generator specs throw InputError naming the spec and the problem") {
  struct Bad {
    std::string spec, mentions;
  };
  for (const auto& b :
       {Bad{"foo:n=1", "stencil3d"}, Bad{"stencil2d:m=3", "n"}, Bad{"stencil2d:n=abc", "abc"},
        Bad{"stencil3d:points=9", "27"}, Bad{"rmat:scale=31", "scale"}, Bad{"rmat:scale=30,ef=1", "2^31-1"},
        Bad{"stencil2d:n=0", "n"}, Bad{"uniform:n=10,d=11", "d"}, Bad{"banded:n=100000,bw=50000", "2^31-1"},
        Bad{"stencil2d:n=4,n=5", "once"}, Bad{"powerlaw:alpha=1", "alpha"}, Bad{"powerlaw:n=100,max=101", "max"},
        Bad{"uniform:n", "name=value"}, Bad{"fem:nodes=10,k=3,blocks=5", "blocks"},
        Bad{"stencil3d:n=2.5", "integer"}}) {
    CAPTURE(b.spec);
    const std::string what = input_error_text(b.spec);
    CHECK(what.find(b.spec) != std::string::npos);
    CHECK(what.find(b.mentions) != std::string::npos);
  }
  CHECK_THROWS_AS(parse_generator_spec("nope"), InputError);
}

TEST_CASE("reference spmv against a dense product, with alpha, beta and a NaN y0") {
  const Dense a = {{2, 0, -1}, {0, 3, 0}, {4, 1, 5}};
  const std::vector<double> x = {1, -2, 0.5}, y0 = {10, 20, 30};
  const auto csr = from_dense<double>(a);
  std::vector<double> want(3);
  for (int i = 0; i < 3; ++i) {
    double ax = 0;
    for (int j = 0; j < 3; ++j) ax += a[i][j] * x[j];
    want[i] = 2 * ax + 3 * y0[i];
  }
  CHECK(reference::spmv<double>(csr, x, 2.0, 3.0, y0) == want);
  CHECK(want[0] == doctest::Approx(2 * 1.5 + 30));  // the dense route itself, worked by hand

  const std::vector<double> nan_y0(3, std::numeric_limits<double>::quiet_NaN());
  const auto plain = reference::spmv<double>(csr, x, 1.0, 0.0, nan_y0);
  for (int i = 0; i < 3; ++i) CHECK(plain[i] == (want[i] - 3 * y0[i]) / 2);

  const auto csr_f = csr.cast<float>();
  const std::vector<float> xf(x.begin(), x.end());
  CHECK(reference::relative_error(plain, reference::spmv<float>(csr_f, xf)) < 1e-12);
  CHECK_THROWS_AS(reference::spmv<double>(csr, std::vector<double>(2)), UsageError);
}

TEST_CASE("spmspv equals spmv with x expanded to dense") {
  const auto a = from_dense<double>(random_dense(30, 40, 0.2, 9));
  const std::vector<int32_t> idx = {3, 17, 0, 39, 22};
  const auto vals = dbs_test::random_vector<double>(idx.size(), 4);
  std::vector<double> dense_x(40, 0.0);
  for (size_t k = 0; k < idx.size(); ++k) dense_x[idx[k]] = vals[k];
  const auto got = reference::spmspv<double>(a, idx, vals);
  const auto want = reference::spmv<double>(a, dense_x);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]));
}

TEST_CASE("bfs levels on a path and on an rmat graph, checked against a dense BFS") {
  // Path 0-1-2-3-4 plus an isolated vertex 5.
  Dense path(6, std::vector<double>(6, 0.0));
  for (int i = 0; i + 1 < 5; ++i) path[i][i + 1] = path[i + 1][i] = 1;
  const auto p = from_dense<double>(path);
  const auto r = reference::bfs(p, 2);
  CHECK(r.level == std::vector<int32_t>{2, 1, 0, 1, 2, -1});
  CHECK(r.parent[2] == 2);
  CHECK(r.parent[5] == -1);
  CHECK(reference::bfs_parents_valid<double>(p, 2, r.level, r.parent));

  const auto g = generate("rmat:scale=8,ef=4,seed=3");
  const auto want = dense_bfs_levels(pattern(g), 0);
  const auto got = reference::bfs(g, 0);
  CHECK(got.level == want);
  CHECK(reference::bfs_parents_valid<double>(g, 0, got.level, got.parent));

  // Point a level-2 vertex at a vertex that is not its neighbour one level up.
  auto bad = got.parent;
  int32_t v = -1;
  for (int32_t i = 0; i < g.rows && v < 0; ++i)
    if (got.level[i] == 2) v = i;
  REQUIRE(v >= 0);
  bad[v] = v;
  CHECK_FALSE(reference::bfs_parents_valid<double>(g, 0, got.level, bad));
  auto wrong_level = got.level;
  wrong_level[v] = 3;
  CHECK_FALSE(reference::bfs_parents_valid<double>(g, 0, wrong_level, got.parent));
}

TEST_CASE("spmm equals one spmv per column of B") {
  const auto a = from_dense<double>(random_dense(25, 18, 0.3, 2));
  const int32_t n = 5;
  const auto b = dbs_test::random_vector<double>(18 * n, 8);
  const auto c = reference::spmm<double>(a, b, n);
  REQUIRE(c.size() == static_cast<size_t>(25 * n));
  for (int32_t j = 0; j < n; ++j) {
    std::vector<double> col(18);
    for (int k = 0; k < 18; ++k) col[k] = b[k * n + j];
    const auto y = reference::spmv<double>(a, col);
    for (int i = 0; i < 25; ++i) CHECK(c[i * n + j] == doctest::Approx(y[i]));
  }
}

TEST_CASE("spgemm equals the dense product and keeps cancelled entries") {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const Dense a = random_dense(12, 9, 0.3, seed), b = random_dense(9, 14, 0.3, seed + 100);
    const auto c = reference::spgemm(from_dense<double>(a), from_dense<double>(b));
    check_csr(c);
    CHECK(to_dense(c) == matmul(a, b));  // small half-integers: exact in double
    const auto pc = pattern(c);
    for (int i = 0; i < 12; ++i)
      for (int j = 0; j < 14; ++j) {
        bool reach = false;
        for (int k = 0; k < 9; ++k) reach = reach || (a[i][k] != 0 && b[k][j] != 0);
        REQUIRE(pc[i][j] == reach);
      }
  }
  const auto c = reference::spgemm(from_dense<float>(Dense{{1, 1}}), from_dense<float>(Dense{{1}, {-1}}));
  CHECK(c.nnz() == 1);
  CHECK(c.values[0] == 0.0);
}

TEST_CASE("relative_error") {
  const std::vector<double> ref = {3, 4};
  CHECK(reference::relative_error(ref, std::vector<double>{3, 4.005}) == doctest::Approx(0.005 / 5));
  CHECK(reference::relative_error(std::vector<double>{0, 0}, std::vector<double>{3, 4}) == doctest::Approx(5));
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  CHECK(reference::relative_error(ref, std::vector<double>{3, nan}) == inf);
  CHECK(reference::relative_error(std::vector<double>{nan, 4}, std::vector<double>{3, 4}) == inf);
  CHECK(reference::relative_error<float>(ref, std::vector<float>{3, static_cast<float>(nan)}) == inf);
}

TEST_CASE("features of a small hand-made matrix match a brute-force count") {
  // 40 x 50, rows 5..9 empty; a dense 16x16 block at (0, 0), a few scattered entries.
  Dense d(40, std::vector<double>(50, 0.0));
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      if (i < 5 || i > 9) d[i][j] = 1;
  for (int i = 16; i < 40; ++i) d[i][(i * 7) % 50] = 2;
  d[39][0] = 3;
  d[20][49] = 4;
  const auto m = from_dense<double>(d);
  const auto f = compute_features(m);

  std::map<std::pair<int, int>, int> blocks;
  double sum = 0, sum2 = 0;
  int64_t empty = 0, row_max = 0, band = 0;
  for (int i = 0; i < 40; ++i) {
    int64_t len = 0;
    for (int j = 0; j < 50; ++j)
      if (d[i][j] != 0) {
        ++len;
        ++blocks[{i / 16, j / 16}];
        band = std::max<int64_t>(band, std::abs(i - j));
      }
    sum += len;
    sum2 += static_cast<double>(len * len);
    empty += len == 0;
    row_max = std::max(row_max, len);
  }
  std::array<int64_t, 9> hist{};
  for (const auto& [blk, count] : blocks) ++hist[std::min(8, static_cast<int>(std::floor(std::log2(count))))];

  CHECK(f.rows == 40);
  CHECK(f.cols == 50);
  CHECK(f.nnz == m.nnz());
  CHECK(f.row_mean == doctest::Approx(sum / 40));
  CHECK(f.row_std == doctest::Approx(std::sqrt(sum2 / 40 - (sum / 40) * (sum / 40))));
  CHECK(f.row_max == row_max);
  CHECK(f.empty_rows == 5);
  CHECK(f.empty_rows == empty);
  CHECK(f.bandwidth == band);
  CHECK(f.nonempty_blocks == static_cast<int64_t>(blocks.size()));
  CHECK(f.block_nnz_hist == hist);
  CHECK(f.block_nnz_hist[7] == 1);  // the 16x16 block less its 5 empty rows: 176 entries

  // stencil2d:n=16: each block row is one grid line, a tridiagonal block (16+15+15 = 46 entries) plus
  // identity blocks (16 entries) for the lines above and below.
  const auto grid = compute_features(generate("stencil2d:n=16"));
  CHECK(grid.block_nnz_hist[5] == 16);
  CHECK(grid.block_nnz_hist[4] == 2 * 15);
  CHECK(grid.nonempty_blocks == 16 + 2 * 15);
  CHECK(grid.bandwidth == 16);

  const auto back = MatrixFeatures::from_json(nlohmann::json::parse(f.to_json().dump()));
  CHECK(back.to_json() == f.to_json());
  CHECK(back.block_nnz_hist == f.block_nnz_hist);
  CHECK_THROWS_AS(MatrixFeatures::from_json(nlohmann::json{{"rows", 1}}), InputError);
  // Issue 36 (fuzz_tuning_db_rows): fields of the wrong kind or range in a stored row are named
  // errors, not undefined conversions (1e300 into an int64 was one).
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, nlohmann::json>>{{"rows", 1e300},
                                                           {"nnz", -3},
                                                           {"cols", 2.5},
                                                           {"row_mean", "x"},
                                                           {"row_std", nullptr},
                                                           {"block_nnz_hist", nlohmann::json::array({1, 2})},
                                                           {"bandwidth", 18446744073709551615ull}}) {
    CAPTURE(key);
    nlohmann::json j = f.to_json();
    j[key] = value;
    try {
      (void)MatrixFeatures::from_json(j);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find(key) != std::string::npos);
    }
  }
  CHECK_THROWS_AS(MatrixFeatures::from_json(nlohmann::json::array()), InputError);
}

TEST_CASE("a dense 16x16 block lands in the last histogram bin") {
  Dense d(16, std::vector<double>(16, 1.0));
  const auto f = compute_features(from_dense<double>(d));
  CHECK(f.block_nnz_hist[8] == 1);
  CHECK(f.nonempty_blocks == 1);
}

TEST_CASE("structure fingerprint follows the structure, not the values") {
  const auto a = generate("uniform:n=1000,d=5,seed=3");
  const std::string fa = structure_fingerprint(a);
  CHECK(fa.size() == 16);
  CHECK(fa.find_first_not_of("0123456789abcdef") == std::string::npos);
  auto b = a;
  for (auto& v : b.values) v = -2 * v;
  CHECK(structure_fingerprint(b) == fa);
  CHECK(structure_fingerprint(a.cast<float>()) == fa);
  auto c = a;
  c.col_idx[123] = c.col_idx[123] == 0 ? 1 : 0;  // may break sortedness; the hash does not care
  CHECK(structure_fingerprint(c) != fa);
  auto wider = a;
  wider.cols += 1;
  CHECK(structure_fingerprint(wider) != fa);
  CHECK(structure_fingerprint(generate("uniform:n=1000,d=5,seed=4")) != fa);
}

// Or-and is reachability: y_i = 1 exactly when row i has a stored nonzero in a column where x is
// nonzero; values and cancellation do not matter (plus-times would give 0 for row 0 here).
TEST_CASE("ReferenceSpmspvOrAndIsReachability") {
  CooMatrix<double> coo;
  coo.rows = 4;
  coo.cols = 3;
  coo.row = {0, 0, 1, 2, 3};
  coo.col = {0, 1, 2, 2, 1};
  coo.values = {1.0, -1.0, 5.0, 0.0, 2.0};  // A(2,2) is a stored zero: no edge
  const CsrMatrix<double> a = coo_to_csr(coo);
  const std::vector<int32_t> idx = {0, 1, 2};
  const std::vector<double> val = {1.0, 1.0, 3.0};
  const auto plus = reference::spmspv<double>(a, idx, val, Semiring::PlusTimes);
  const auto reach = reference::spmspv<double>(a, idx, val, Semiring::OrAnd);
  CHECK(plus[0] == 0.0);  // 1*1 + (-1)*1
  CHECK(reach == std::vector<double>{1.0, 1.0, 0.0, 1.0});
  const std::vector<int32_t> only2 = {2};
  const std::vector<double> v2 = {1.0};
  CHECK(reference::spmspv<double>(a, only2, v2, Semiring::OrAnd) == std::vector<double>{0.0, 1.0, 0.0, 0.0});
}

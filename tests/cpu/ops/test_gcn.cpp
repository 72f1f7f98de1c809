// `dbsparse gcn`'s host side (tools/apps/gcn.hpp): the normalised adjacency, the seeded inputs,
// the double reference against the definition in dense matrices, the check's error and tolerance;
// and the command without a GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "dbsparse/error.hpp"
#include "dbsparse/generators.hpp"
#include "test_support.hpp"
#include "tools/apps/gcn.hpp"

using namespace dbsparse;
using dbs_test::csr_from_entries;

namespace {

using Dense = std::vector<std::vector<double>>;

Dense to_dense(const CsrMatrix<float>& a) {
  Dense d(static_cast<size_t>(a.rows), std::vector<double>(static_cast<size_t>(a.cols), 0.0));
  for (int32_t i = 0; i < a.rows; ++i)
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) d[i][a.col_idx[p]] = a.values[p];
  return d;
}

Dense from_rows(const std::vector<float>& v, int rows, int cols) {
  Dense d(static_cast<size_t>(rows), std::vector<double>(static_cast<size_t>(cols)));
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) d[i][j] = v[static_cast<size_t>(i) * cols + j];
  return d;
}

Dense mul(const Dense& a, const Dense& b) {
  Dense c(a.size(), std::vector<double>(b[0].size(), 0.0));
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t k = 0; k < b.size(); ++k)
      for (size_t j = 0; j < b[0].size(); ++j) c[i][j] += a[i][k] * b[k][j];
  return c;
}

float at(const CsrMatrix<float>& a, int32_t i, int32_t j) {
  for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
    if (a.col_idx[p] == j) return a.values[p];
  return 0.0f;
}

}  // namespace

TEST_CASE("GcnAdjacencyOfAPathIsDInvSqrtOfAPlusIDInvSqrt") {
  // The path 0 - 1 - 2, both directions stored: A + I has degrees 2, 3, 2.
  const auto a = csr_from_entries<double>(3, 3, {{0, 1, 7.0}, {1, 0, -2.0}, {1, 2, 1.0}, {2, 1, 1.0}});
  const tools::GcnAdjacency adj = tools::gcn_normalized_adjacency(a);
  CHECK_FALSE(adj.symmetrised);
  CHECK(adj.self_loops == 0);
  const auto& h = adj.a_hat;
  validate(h);
  CHECK(h.row_ptr == std::vector<int32_t>{0, 2, 5, 7});
  CHECK(at(h, 0, 0) == doctest::Approx(0.5));
  CHECK(at(h, 0, 1) == doctest::Approx(1 / std::sqrt(6.0)));
  CHECK(at(h, 1, 1) == doctest::Approx(1 / 3.0));
  CHECK(at(h, 2, 1) == doctest::Approx(1 / std::sqrt(6.0)));
  CHECK(at(h, 2, 2) == doctest::Approx(0.5));
}

TEST_CASE("GcnAdjacencySymmetrisesReplacesSelfLoopsAndIgnoresValuesAndStoredZeros") {
  // 0 -> 1 only, a self loop on 1 (weight 5), a stored zero at (0, 2).
  const auto a = csr_from_entries<double>(3, 3, {{0, 1, 3.0}, {1, 1, 5.0}, {0, 2, 0.0}});
  const tools::GcnAdjacency adj = tools::gcn_normalized_adjacency(a);
  CHECK(adj.symmetrised);
  CHECK(adj.self_loops == 1);
  const auto& h = adj.a_hat;
  validate(h);
  // A + Aᵀ + I: rows {0, 1}, {0, 1}, {2}.
  CHECK(h.col_idx == std::vector<int32_t>{0, 1, 0, 1, 2});
  CHECK(at(h, 1, 1) == doctest::Approx(0.5));  // one loop: degree 2, not 3
  CHECK(at(h, 2, 2) == 1.0f);                  // the isolated vertex keeps its own loop
  CHECK_THROWS_AS(tools::gcn_normalized_adjacency(csr_from_entries<double>(2, 3, {{0, 1, 1.0}})), UsageError);
}

TEST_CASE("GcnAdjacencyIsSymmetricWithSqrtDegreesAsEigenvector") {
  // Â D^1/2 1 = D^-1/2 (A + I) 1 = D^1/2 1: the eigenvalue 1 of the normalised Laplacian's kernel.
  const tools::GcnAdjacency adj = tools::gcn_normalized_adjacency(generate("powerlaw:n=3000,avg=6,seed=2"));
  CHECK(adj.symmetrised);  // powerlaw rows pick columns at random: not symmetric
  const auto& h = adj.a_hat;
  validate(h);
  std::vector<double> sqrt_d(static_cast<size_t>(h.rows));
  for (int32_t i = 0; i < h.rows; ++i) sqrt_d[i] = std::sqrt(double(h.row_ptr[i + 1] - h.row_ptr[i]));
  for (int32_t i = 0; i < h.rows; ++i) {
    double y = 0;
    for (int32_t p = h.row_ptr[i]; p < h.row_ptr[i + 1]; ++p) {
      REQUIRE(at(h, h.col_idx[p], i) == h.values[p]);
      y += double(h.values[p]) * sqrt_d[h.col_idx[p]];
    }
    REQUIRE(y == doctest::Approx(sqrt_d[i]).epsilon(1e-6));
  }
}

TEST_CASE("GcnInputsAreSeededAndGlorotBounded") {
  const tools::GcnDims d{50, 12, 10, 3};
  const auto in = tools::gcn_inputs(d, 7);
  CHECK(in.x.size() == 600);
  CHECK(in.w1.size() == 120);
  CHECK(in.w2.size() == 30);
  CHECK(tools::gcn_inputs(d, 7).w1 == in.w1);
  CHECK(tools::gcn_inputs(d, 8).x != in.x);
  for (float v : in.w1) CHECK(std::fabs(v) <= std::sqrt(6.0 / 22) + 1e-6);
  for (float v : in.w2) CHECK(std::fabs(v) <= std::sqrt(6.0 / 13) + 1e-6);
  const auto abs_in = tools::gcn_abs_inputs(in);
  for (size_t i = 0; i < in.x.size(); ++i) CHECK(abs_in.x[i] == std::fabs(in.x[i]));
}

TEST_CASE("GcnReferenceEqualsTheDefinitionInDenseMatrices") {
  // H2 = Â · ReLU(Â · X · W1) · W2, multiplied in another order than the reference's.
  const tools::GcnAdjacency adj = tools::gcn_normalized_adjacency(generate("rmat:scale=6,ef=4,seed=3"));
  const tools::GcnDims d{adj.a_hat.rows, 9, 7, 4};
  const auto in = tools::gcn_inputs(d, 3);
  const Dense a = to_dense(adj.a_hat);
  Dense h1 = mul(mul(a, from_rows(in.x, d.nodes, d.features)), from_rows(in.w1, d.features, d.hidden));
  int negative = 0;
  for (auto& row : h1)
    for (auto& v : row) {
      negative += v < 0;
      v = std::max(v, 0.0);
    }
  CHECK(negative > 0);  // the ReLU did something
  const Dense want = mul(a, mul(h1, from_rows(in.w2, d.hidden, d.classes)));
  const auto got = tools::gcn_forward_reference(adj.a_hat, in, d);
  REQUIRE(got.size() == size_t(d.nodes) * d.classes);
  for (int i = 0; i < d.nodes; ++i)
    for (int j = 0; j < d.classes; ++j)
      REQUIRE(got[size_t(i) * d.classes + j] == doctest::Approx(want[i][j]).epsilon(1e-12));
  CHECK_THROWS_AS(tools::gcn_forward_reference(adj.a_hat, in, tools::GcnDims{d.nodes, 9, 8, 4}), UsageError);
}

TEST_CASE("GcnErrorAndTolerance") {
  const std::vector<float> want = {1, -2, 0, 4}, scale = {2, 4, 0, 8};
  CHECK(tools::gcn_max_error(want, want, scale) == 0);
  CHECK(tools::gcn_max_error(std::vector<float>{1, -2, 0, 4.08f}, want, scale) == doctest::Approx(0.01).epsilon(1e-4));
  CHECK(std::isinf(tools::gcn_max_error(std::vector<float>{1, -2, 1e-9f, 4}, want, scale)));
  CHECK(std::isnan(tools::gcn_max_error(std::vector<float>{NAN, -2, 0, 4}, want, scale)));
  CHECK_THROWS_AS(tools::gcn_max_error(std::vector<float>{1}, want, scale), UsageError);
  const auto a = generate("uniform:n=100,d=5").cast<float>();
  CHECK(tools::gcn_tolerance(a, true) == tools::kGcnTolTf32);
  CHECK(tools::gcn_tolerance(a, false) == tools::kGcnTolF32);
  // A row of 40000 entries: f32 drift past 1e-5 (4 * 2^-24 * 200 = 4.8e-5).
  std::vector<dbs_test::Entry> edges;
  for (int32_t j = 1; j < 40000; ++j) edges.emplace_back(0, j, 1.0);
  const auto star = tools::gcn_normalized_adjacency(csr_from_entries<double>(40000, 40000, edges)).a_hat;
  CHECK(star.row_ptr[1] == 40000);
  CHECK(tools::gcn_tolerance(star, false) == doctest::Approx(4 * 0x1p-24 * 200).epsilon(1e-3));
}

TEST_CASE("GcnCommandChecksItsInputAndSaysSoWithoutAGpu") {
  REQUIRE_MESSAGE(!dbs_test::sibling_binary("dbsparse").empty(), "dbsparse binary not found beside the test binary");
  {
    auto [code, out] = dbs_test::run_tool("dbsparse", "gcn pruned:rows=8,cols=16,density=0.5");
    CAPTURE(out);
    CHECK(code == 1);
    CHECK(out.find("square") != std::string::npos);
  }
  {
    auto [code, out] = dbs_test::run_tool("dbsparse", "gcn stencil2d:n=10 --hidden 0");
    CHECK(code != 0);
    CHECK(out.find("--hidden") != std::string::npos);
  }
  {
    auto [code, out] = dbs_test::run_tool("dbsparse", "gcn stencil2d:n=10 --path fast");
    CHECK(code != 0);
    CHECK(out.find("--path") != std::string::npos);
  }
  auto [code, out] = dbs_test::run_tool("dbsparse", "gcn stencil2d:n=10 --reps 2");
  CAPTURE(out);
  if (out.find("no CUDA device") == std::string::npos) return;  // a GPU is here: that is the gpu tier's
  CHECK(code == 3);
}

TEST_CASE("BenchSetPicksPartOfTheSuiteAndIsCheckedBeforeAnyGpuWork") {
  REQUIRE(!dbs_test::sibling_binary("dbsparse").empty());
  struct Bad {
    std::string args, mentions;
  };
  for (const auto& b : {Bad{"bench spgemm --set graphs", "--set does not apply to bench spgemm"},
                        Bad{"bench spmm --set weights", "--set 'weights'"},
                        Bad{"bench spmm stencil2d:n=10 --set graphs", "matrices are named"}}) {
    CAPTURE(b.args);
    auto [code, out] = dbs_test::run_tool("dbsparse", b.args);
    CHECK(code == 1);
    CHECK(out.find(b.mentions) != std::string::npos);
  }
  auto [code, out] = dbs_test::run_tool("dbsparse", "bench spmm --suite quick --set moderate --no-shared");
  CAPTURE(out);
  if (out.find("no CUDA device") == std::string::npos) return;
  CHECK(code == 3);
}

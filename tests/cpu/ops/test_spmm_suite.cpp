// The SpMM suite (issue 14) and the two generators it added: community (a stochastic block model)
// and pruned (magnitude-pruned normal weights, per row or in blocks). Shapes, determinism, bad
// parameters; the quick suite generated and the full one parsed, each set within its sparsity.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/matrix.hpp"
#include "dbsparse/spmm.hpp"
#include "tools/bench/suites.hpp"
#include "tools/ops/registry.hpp"

using namespace dbsparse;

namespace {

bool same(const CsrMatrix<double>& a, const CsrMatrix<double>& b) {
  return a.rows == b.rows && a.cols == b.cols && a.row_ptr == b.row_ptr && a.col_idx == b.col_idx &&
         a.values == b.values;
}

double at(const CsrMatrix<double>& a, int32_t i, int32_t j) {
  const auto b = a.col_idx.begin() + a.row_ptr[i], e = a.col_idx.begin() + a.row_ptr[i + 1];
  const auto it = std::lower_bound(b, e, j);
  return it != e && *it == j ? a.values[static_cast<size_t>(it - a.col_idx.begin())] : 0.0;
}

std::string input_error_text(const std::string& spec) {
  try {
    generate(spec);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

// Community of vertex v for n vertices in k communities (the generator's layout, unscrambled).
int64_t community_of(int64_t v, int64_t n, int64_t k) {
  const int64_t q = n / k, extra = n % k;
  const int64_t big = extra * (q + 1);  // the first `extra` communities have q + 1 vertices
  return v < big ? v / (q + 1) : extra + (v - big) / q;
}

}  // namespace

TEST_CASE("CommunityGraphsAreSymmetricBlockModelsWithTheRequestedDensities") {
  const int64_t n = 2000, k = 10;
  const double p_in = 0.2, p_out = 0.002;
  const auto a = generate("community:n=2000,k=10,p_in=0.2,p_out=0.002,seed=3");
  validate(a);
  REQUIRE(a.rows == n);
  REQUIRE(a.cols == n);
  int64_t inside = 0, outside = 0;
  for (int32_t i = 0; i < a.rows; ++i)
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const int32_t j = a.col_idx[p];
      REQUIRE(j != i);                      // no self loops
      REQUIRE(at(a, j, i) == a.values[p]);  // symmetric, values too
      REQUIRE((a.values[p] != 0.0 && std::fabs(a.values[p]) <= 1.0));
      (community_of(i, n, k) == community_of(j, n, k) ? inside : outside) += 1;
    }
  // Expected stored entries: both directions of each pair. 39800 pairs inside (sd ~180), 3600
  // outside (sd ~60): 10% is many standard deviations.
  const double want_in = 2 * p_in * 10 * (200.0 * 199 / 2);
  const double want_out = 2 * p_out * (n * (n - 1) / 2.0 - 10 * (200.0 * 199 / 2));
  CHECK(std::fabs(inside - want_in) < 0.1 * want_in);
  CHECK(std::fabs(outside - want_out) < 0.1 * want_out);
}

TEST_CASE("CommunityWithPInOneAndPOutZeroIsDisjointCliquesOfTheDocumentedSizes") {
  // n = 10, k = 3: sizes 4, 3, 3.
  const auto a = generate("community:n=10,k=3,p_in=1,p_out=0");
  const std::vector<std::vector<int32_t>> want_cols = {{1, 2, 3}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2}, {5, 6},
                                                       {4, 6},    {4, 5},    {8, 9},    {7, 9},    {7, 8}};
  for (int32_t i = 0; i < 10; ++i) {
    CAPTURE(i);
    const std::vector<int32_t> got(a.col_idx.begin() + a.row_ptr[i], a.col_idx.begin() + a.row_ptr[i + 1]);
    CHECK(got == want_cols[static_cast<size_t>(i)]);
  }
  CHECK(generate("community:n=50,k=5,p_in=0,p_out=0").nnz() == 0);
}

TEST_CASE("CommunityIsDeterministicAndItsSeedAndScrambleMatter") {
  const std::string base = "community:n=3000,k=30,p_in=0.1,p_out=0.001";
  const auto a = generate(base + ",seed=5");
  CHECK(same(a, generate(base + ",seed=5")));
  CHECK_FALSE(same(a, generate(base + ",seed=6")));
  const auto s = generate(base + ",seed=5,scramble=1");
  CHECK_FALSE(same(a, s));
  CHECK(s.nnz() == a.nnz());  // the same graph relabelled
  std::vector<int32_t> da, ds;
  for (int32_t i = 0; i < a.rows; ++i) {
    da.push_back(a.row_ptr[i + 1] - a.row_ptr[i]);
    ds.push_back(s.row_ptr[i + 1] - s.row_ptr[i]);
  }
  std::sort(da.begin(), da.end());
  std::sort(ds.begin(), ds.end());
  CHECK(da == ds);
}

TEST_CASE("PrunedKeepsTheLargestMagnitudesOfOneDenseMatrixPerRow") {
  // density=1 keeps every weight: the dense matrix every other density and block size prunes.
  const auto dense = generate("pruned:rows=40,cols=100,density=1,seed=9");
  REQUIRE(dense.nnz() == 4000);
  double sum_sq = 0;
  for (double v : dense.values) {
    REQUIRE(std::isfinite(v));
    REQUIRE(v != 0.0);
    sum_sq += v * v;
  }
  CHECK(std::sqrt(sum_sq / 4000) == doctest::Approx(1.0).epsilon(0.1));  // normal(0, 1)
  for (const double density : {0.3, 0.255, 0.01, 0.999}) {
    CAPTURE(density);
    const auto a = generate(fmt::format("pruned:rows=40,cols=100,density={},seed=9", density));
    validate(a);
    for (int32_t i = 0; i < a.rows; ++i) {
      const int32_t len = a.row_ptr[i + 1] - a.row_ptr[i];
      CHECK(std::fabs(len - density * 100) <= 1.0);
      CHECK(len >= 1);
      // The kept entries are the dense row's, and none dropped is larger in magnitude.
      double smallest_kept = INFINITY;
      for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        REQUIRE(a.values[p] == at(dense, i, a.col_idx[p]));
        smallest_kept = std::min(smallest_kept, std::fabs(a.values[p]));
      }
      for (int32_t j = 0; j < 100; ++j)
        if (at(a, i, j) == 0.0) REQUIRE(std::fabs(at(dense, i, j)) <= smallest_kept);
    }
  }
}

TEST_CASE("PrunedBlocksKeepWholeTilesOfLargestSumPerBlockRow") {
  const auto dense = generate("pruned:rows=32,cols=64,density=1,seed=4");
  const auto a = generate("pruned:rows=32,cols=64,density=0.25,block=4,seed=4");
  validate(a);
  for (int32_t br = 0; br < 8; ++br) {
    // Tile sums of the dense block row, the four largest kept.
    std::vector<double> sum(16, 0.0);
    for (int32_t r = 0; r < 4; ++r)
      for (int32_t j = 0; j < 64; ++j) sum[static_cast<size_t>(j / 4)] += std::fabs(at(dense, br * 4 + r, j));
    std::vector<int32_t> order(16);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return sum[x] > sum[y]; });
    std::vector<int32_t> want;
    for (int32_t t = 0; t < 4; ++t)
      for (int32_t c = 0; c < 4; ++c) want.push_back(order[static_cast<size_t>(t)] * 4 + c);
    std::sort(want.begin(), want.end());
    for (int32_t r = 0; r < 4; ++r) {
      const int32_t i = br * 4 + r;
      CAPTURE(i);
      const std::vector<int32_t> got(a.col_idx.begin() + a.row_ptr[i], a.col_idx.begin() + a.row_ptr[i + 1]);
      CHECK(got == want);
      for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) REQUIRE(a.values[p] == at(dense, i, a.col_idx[p]));
    }
  }
}

TEST_CASE("PrunedIsDeterministicAndItsSeedMatters") {
  const auto a = generate("pruned:rows=64,cols=64,density=0.5,block=2,seed=3");
  CHECK(same(a, generate("pruned:rows=64,cols=64,density=0.5,block=2,seed=3")));
  CHECK_FALSE(same(a, generate("pruned:rows=64,cols=64,density=0.5,block=2,seed=4")));
  CHECK(parse_generator_spec("pruned").to_string() == "pruned:block=1,cols=4096,density=0.3,rows=4096,seed=1");
}

TEST_CASE("BadCommunityAndPrunedParametersAreInputErrorsNamingTheParameter") {
  struct Bad {
    std::string spec, mentions;
  };
  for (const auto& b :
       {Bad{"community:k=0", "k"}, Bad{"community:n=10,k=11", "k"}, Bad{"community:p_in=1.5", "p_in"},
        Bad{"community:p_out=-0.1", "p_out"}, Bad{"community:scramble=2", "scramble"},
        Bad{"community:n=2000000000,k=1,p_in=0.5", "2^31-1"}, Bad{"community:q=3", "q"},
        Bad{"pruned:density=0", "density"}, Bad{"pruned:density=1.5", "density"}, Bad{"pruned:rows=0", "rows"},
        Bad{"pruned:cols=-3", "cols"}, Bad{"pruned:rows=100,cols=100,block=3", "block"}, Bad{"pruned:block=0", "block"},
        Bad{"pruned:rows=100000,cols=100000", "rows * cols"}, Bad{"pruned:seed=-1", "seed"}}) {
    CAPTURE(b.spec);
    const std::string what = input_error_text(b.spec);
    CHECK(what.find(b.spec) != std::string::npos);
    CHECK(what.find(b.mentions) != std::string::npos);
  }
}

namespace {

// Rows of a suite's spec without generating it.
int64_t spec_rows(const std::string& spec) {
  const GeneratorSpec s = parse_generator_spec(spec);
  if (s.kind == "rmat") return int64_t{1} << std::stoi(s.params.at("scale"));
  if (s.kind == "pruned") return std::stoll(s.params.at("rows"));
  return std::stoll(s.params.at("n"));
}

}  // namespace

TEST_CASE("SpmmSuiteSetsHaveTheIssuesSizesAndSparsity") {
  for (const std::string size : {"quick", "full"}) {
    CAPTURE(size);
    const auto graphs = tools::spmm_suite(size, "graphs"), moderate = tools::spmm_suite(size, "moderate");
    auto both = graphs;
    both.insert(both.end(), moderate.begin(), moderate.end());
    CHECK(tools::spmm_suite(size) == both);
    CHECK(tools::spmm_suite(size, "all") == both);
    std::map<std::string, int> kinds;
    for (const auto& spec : graphs) {
      CAPTURE(spec);
      kinds[parse_generator_spec(spec).kind] += 1;
      CHECK(spec_rows(spec) >= 20000);
      CHECK(spec_rows(spec) <= (size == "quick" ? 200000 : 2000000));
    }
    for (const char* kind : {"powerlaw", "rmat", "uniform", "community"}) CHECK(kinds[kind] >= 1);
    for (const auto& spec : moderate) {
      CAPTURE(spec);
      const double density = std::stod(parse_generator_spec(spec).params.at("density"));
      CHECK(density >= 0.1);
      CHECK(density <= 0.5);
    }
  }
  // The quick suite, generated: graphs over 99% sparse, weights 50-90% sparse.
  for (const auto& spec : tools::spmm_suite("quick", "graphs")) {
    CAPTURE(spec);
    const auto a = generate(spec);
    CHECK(double(a.nnz()) / (double(a.rows) * double(a.cols)) < 0.01);
  }
  for (const auto& spec : tools::spmm_suite("quick", "moderate")) {
    CAPTURE(spec);
    const auto a = generate(spec);
    const double density = double(a.nnz()) / (double(a.rows) * double(a.cols));
    CHECK(density >= 0.1 - 1e-3);
    CHECK(density <= 0.5 + 1e-3);
  }
  CHECK_THROWS_AS(tools::spmm_suite("medium"), UsageError);
  CHECK_THROWS_AS(tools::spmm_suite("quick", "weights"), UsageError);
}

TEST_CASE("SpmmGnnSetHasTheDatasetsSizesAndMeanDegrees") {
  // (vertices, mean entries a row) of PubMed, Amazon Computers, Coauthor Physics, Flickr, ogbn-arxiv.
  const std::vector<std::pair<int64_t, double>> want = {
      {19717, 4.5}, {13752, 35.8}, {34493, 14.4}, {89250, 10.1}, {169343, 13.7}};
  const auto quick = tools::spmm_suite("quick", "gnn");
  REQUIRE(quick.size() == want.size());
  for (size_t i = 0; i < quick.size(); ++i) {
    CAPTURE(quick[i]);
    const auto a = generate(quick[i]);
    CHECK(a.rows == want[i].first);
    const double mean = double(a.nnz()) / double(a.rows);
    CHECK(mean >= 0.8 * want[i].second);
    CHECK(mean <= 1.2 * want[i].second);
  }
  const auto full = tools::spmm_suite("full", "gnn");
  CHECK(full.size() == quick.size() + 2);  // Yelp and Reddit sizes: generated on the GPU machine only
  CHECK(std::equal(quick.begin(), quick.end(), full.begin()));
  const auto all = tools::spmm_suite("full");  // "all" leaves the gnn set out
  for (const auto& spec : full) CHECK(std::find(all.begin(), all.end(), spec) == all.end());
}

TEST_CASE("BenchSpmmRunsTheSpmmSuiteAndOnlyItHasSets") {
  const auto& op = tools::find_op("spmm");
  CHECK(op.bench_suite("quick") == tools::spmm_suite("quick"));
  CHECK(op.suite_sets == std::vector<std::string>{"graphs", "moderate", "gnn"});
  REQUIRE(op.bench_suite_set);
  CHECK(op.bench_suite_set("full", "moderate") == tools::spmm_suite("full", "moderate"));
  for (const auto& name : tools::op_names())
    if (name != "spmm") CHECK(tools::find_op(name).suite_sets.empty());
}

// dbtune stores SpMM configs per N class and plans read the class of their N: the op's buckets
// are exactly the classes spmm_tuning_bucket names, and every N maps to one of them.
TEST_CASE("SpmmTuningBucketsAreTheNClassesPlansLookUp") {
  const auto& spmm = tools::find_op("spmm");
  CHECK(spmm.buckets == std::vector<std::string>{"n32", "n128"});
  for (int n : {1, 16, 32, 64}) CHECK(spmm_tuning_bucket(n) == "n32");
  for (int n : {65, 128, 512, 4096}) CHECK(spmm_tuning_bucket(n) == "n128");
  for (const auto* op : tools::ops())  // one config per matrix, but decode's per activation density
    if (op->name != "spmm" && op->name != "decode") CHECK(op->buckets.empty());
}

// reorder is a CSR-path setting: with path brp or condensed the config is refused (so dbtune never
// times such a point), with auto or csr it parses, and an unknown order names the four.
TEST_CASE("SpmmConfigKeepsReorderToTheCsrPath") {
  for (const char* order : {"none", "degree", "rcm", "community"})
    for (const char* path : {"auto", "csr"}) {
      const auto c = config_from_json<SpmmConfig>({{"path", path}, {"reorder", order}});
      CHECK_NOTHROW(c.check());
      CHECK(parse_reorder(c.reorder) == parse_reorder(order));
    }
  CHECK(SpmmConfig{}.reorder == "auto");
  for (const char* path : {"brp", "condensed"}) {
    CHECK_NOTHROW(config_from_json<SpmmConfig>({{"path", path}}).check());
    CHECK_NOTHROW(config_from_json<SpmmConfig>({{"path", path}, {"reorder", "auto"}}).check());
    CHECK_THROWS_AS(config_from_json<SpmmConfig>({{"path", path}, {"reorder", "rcm"}}).check(), UsageError);
  }
  CHECK_THROWS_AS(config_from_json<SpmmConfig>({{"reorder", "rabbit"}}), UsageError);
}

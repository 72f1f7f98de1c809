// Pruning, activation thresholds, model shapes and synthetic weights. Expectations come from brute
// force (count, for each entry, how many in its row beat it) and from the numbers in the models'
// published configs, never from the functions under test.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "dbsparse/error.hpp"
#include "dbsparse/pruning.hpp"
#include "test_support.hpp"

using namespace dbsparse;

namespace {

// The set of kept columns of each row that the rule asks for, by brute force: entry c is kept when
// fewer than k entries of its row come before it (larger score, or equal score and lower column).
std::vector<std::set<int>> brute_force_keep(const std::vector<double>& score, int rows, int cols, int k) {
  std::vector<std::set<int>> keep(rows);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      int before = 0;
      for (int d = 0; d < cols; ++d) {
        const double a = score[r * cols + d], b = score[r * cols + c];
        before += a > b || (a == b && d < c);
      }
      if (before < k) keep[r].insert(c);
    }
  return keep;
}

std::vector<std::set<int>> kept(const CsrMatrix<float>& m) {
  std::vector<std::set<int>> out(m.rows);
  for (int r = 0; r < m.rows; ++r)
    for (int p = m.row_ptr[r]; p < m.row_ptr[r + 1]; ++p) out[r].insert(m.col_idx[p]);
  return out;
}

// Values equal to the dense weights at the kept positions.
bool values_match(const CsrMatrix<float>& m, const std::vector<float>& w) {
  for (int r = 0; r < m.rows; ++r)
    for (int p = m.row_ptr[r]; p < m.row_ptr[r + 1]; ++p)
      if (m.values[p] != w[static_cast<size_t>(r) * m.cols + m.col_idx[p]]) return false;
  return true;
}

}  // namespace

TEST_CASE("PruneMagnitudeKeepsTheRequestedCountOfLargestPerRow") {
  const int rows = 13, cols = 37;
  auto w = dbs_test::random_vector<float>(rows * cols, 5);
  // Ties, including between a positive and a negative entry, to exercise the column rule.
  w[3] = 0.5f, w[7] = -0.5f, w[9] = 0.5f, w[cols + 1] = 0.0f, w[cols + 2] = -0.0f;
  std::vector<double> score(w.size());
  for (size_t i = 0; i < w.size(); ++i) score[i] = std::fabs(w[i]);
  for (double sparsity : {0.0, 0.25, 0.5, 0.7, 0.9, 0.99}) {
    CAPTURE(sparsity);
    const int k = static_cast<int>(std::lround((1 - sparsity) * cols));  // 37, 28, 19 (18.5 up), 11, 4, 0
    const auto m = prune_magnitude(w, rows, cols, sparsity);
    CHECK_NOTHROW(validate(m));
    for (int r = 0; r < rows; ++r) CHECK(m.row_ptr[r + 1] - m.row_ptr[r] == k);
    CHECK(kept(m) == brute_force_keep(score, rows, cols, k));
    CHECK(values_match(m, w));
  }
}

TEST_CASE("PruneMagnitudeBreaksTiesTowardsTheLowerColumn") {
  const std::vector<float> w = {1, -1, 1, 1, 2, -2};  // keep 3 of 6
  const auto m = prune_magnitude(w, 1, 6, 0.5);
  CHECK(m.col_idx == std::vector<int32_t>{0, 4, 5});
  CHECK(m.values == std::vector<float>{1, 2, -2});
}

TEST_CASE("PruneRejectsBadSparsityAndSizes") {
  const std::vector<float> w(12, 1.0f);
  CHECK_THROWS_AS(prune_magnitude(w, 3, 4, 1.0), UsageError);
  CHECK_THROWS_AS(prune_magnitude(w, 3, 4, -0.1), UsageError);
  CHECK_THROWS_AS(prune_magnitude(w, 3, 4, std::nan("")), UsageError);
  CHECK_THROWS_AS(prune_magnitude(w, 3, 5, 0.5), UsageError);
  CHECK_THROWS_AS(prune_wanda(w, 3, 4, std::vector<float>(3, 1.0f), 0.5), UsageError);
  CHECK_THROWS_AS(prune_wanda(w, 3, 4, std::vector<float>{1, 1, -1, 1}, 0.5), UsageError);
  std::vector<float> nan_w = w;
  nan_w[5] = std::nanf("");
  CHECK_THROWS_AS(prune_magnitude(nan_w, 3, 4, 0.5), UsageError);
}

TEST_CASE("WandaRanksByWeightTimesActivationNorm") {
  const int rows = 9, cols = 24;
  const auto w = dbs_test::random_vector<float>(rows * cols, 8);
  auto norms = dbs_test::random_vector<float>(cols, 9);
  for (auto& n : norms) n = std::fabs(n) * 10.0f + 0.01f;
  std::vector<double> score(w.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) score[r * cols + c] = std::fabs(double(w[r * cols + c])) * norms[c];
  const auto wanda = prune_wanda(w, rows, cols, norms, 0.5);
  CHECK(kept(wanda) == brute_force_keep(score, rows, cols, 12));
  CHECK(values_match(wanda, w));
  // Norms spread over three decades change the choice somewhere.
  CHECK(kept(wanda) != kept(prune_magnitude(w, rows, cols, 0.5)));
}

TEST_CASE("WandaWithEqualNormsEqualsMagnitudePruning") {
  const int rows = 11, cols = 30;
  const auto w = dbs_test::random_vector<float>(rows * cols, 12);
  for (double sparsity : {0.3, 0.5, 0.8}) {
    const auto a = prune_wanda(w, rows, cols, std::vector<float>(cols, 3.7f), sparsity);
    const auto b = prune_magnitude(w, rows, cols, sparsity);
    CHECK(a.row_ptr == b.row_ptr);
    CHECK(a.col_idx == b.col_idx);
    CHECK(a.values == b.values);
  }
}

TEST_CASE("ThresholdKeepsExactlyTheEntriesAtOrAboveTau") {
  const std::vector<float> x = {0.5f, -0.5f, 0.49f, -2.0f, 0.0f, 1e-3f, -0.51f, std::nanf("")};
  const auto y = threshold_activations(x, 0.5f);
  const std::vector<float> want = {0.5f, -0.5f, 0, -2.0f, 0, 0, -0.51f, 0};
  REQUIRE(y.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(y[i] == want[i]);
  const auto r = dbs_test::random_vector<float>(1000, 4);
  const auto z = threshold_activations(r, 0.3f);
  for (size_t i = 0; i < r.size(); ++i) CHECK(z[i] == (std::fabs(r[i]) >= 0.3f ? r[i] : 0.0f));
}

TEST_CASE("TopkThresholdKeepsTheRequestedShareOfDistinctValues") {
  auto x = dbs_test::random_vector<float>(1000, 21);
  std::set<float> mags;
  for (float v : x) mags.insert(std::fabs(v));
  REQUIRE(mags.size() == x.size());  // distinct magnitudes: the share is exact
  for (double keep : {0.001, 0.1, 0.3, 0.5, 0.1234, 1.0}) {
    CAPTURE(keep);
    const float tau = topk_threshold(x, keep);
    size_t nonzero = 0;
    for (float v : threshold_activations(x, tau)) nonzero += v != 0.0f;
    CHECK(nonzero == static_cast<size_t>(std::ceil(keep * 1000 - 1e-9)));
  }
  // 0.3 * 10 is 3.0000000000000004 in double: three, not four.
  const std::vector<float> ten = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  CHECK(topk_threshold(ten, 0.3) == 8.0f);
  CHECK(topk_threshold(ten, 0.25) == 8.0f);  // ceil(2.5) = 3
  // With ties everything equal to tau is kept.
  const std::vector<float> tied = {1, -1, 1, 0.5f};
  CHECK(topk_threshold(tied, 0.25) == 1.0f);
  CHECK_THROWS_AS(topk_threshold(ten, 0.0), UsageError);
  CHECK_THROWS_AS(topk_threshold(ten, 1.5), UsageError);
  CHECK_THROWS_AS(topk_threshold(std::vector<float>{}, 0.5), UsageError);
}

TEST_CASE("ModelShapesMatchThePublishedConfigs") {
  struct Want {
    std::string name;
    int layers;
    std::vector<std::vector<int>> shapes;  // (out, in) of q, k, v, o, gate, up, down
  };
  const std::vector<Want> wants = {
      {"llama-3.2-1b",
       16,
       {{2048, 2048}, {512, 2048}, {512, 2048}, {2048, 2048}, {8192, 2048}, {8192, 2048}, {2048, 8192}}},
      {"qwen2.5-1.5b",
       28,
       {{1536, 1536}, {256, 1536}, {256, 1536}, {1536, 1536}, {8960, 1536}, {8960, 1536}, {1536, 8960}}},
      {"qwen3-0.6b",
       28,
       {{2048, 1024}, {1024, 1024}, {1024, 1024}, {1024, 2048}, {3072, 1024}, {3072, 1024}, {1024, 3072}}},
      // Llama-3.1-8B: hidden 4096, intermediate 14336, 32 heads, 8 KV heads of 128.
      {"llama-3.1-8b",
       32,
       {{4096, 4096}, {1024, 4096}, {1024, 4096}, {4096, 4096}, {14336, 4096}, {14336, 4096}, {4096, 14336}}},
      // Qwen2.5-7B: hidden 3584, intermediate 18944, 28 heads, 4 KV heads of 128.
      {"qwen2.5-7b",
       28,
       {{3584, 3584}, {512, 3584}, {512, 3584}, {3584, 3584}, {18944, 3584}, {18944, 3584}, {3584, 18944}}},
  };
  const std::vector<std::string> kinds = {"q", "k", "v", "o", "gate", "up", "down"};
  std::vector<std::string> names;
  for (const auto& want : wants) {
    CAPTURE(want.name);
    names.push_back(want.name);
    const auto m = model_shapes(want.name);
    CHECK(m.name == want.name);
    CHECK(m.layers == want.layers);
    REQUIRE(m.linear.size() == 7);
    for (size_t i = 0; i < 7; ++i) {
      CHECK(m.linear[i].kind == kinds[i]);
      CHECK(m.linear[i].out == want.shapes[i][0]);
      CHECK(m.linear[i].in == want.shapes[i][1]);
    }
  }
  CHECK(known_models() == names);
  try {
    model_shapes("llama-70b");
    FAIL("no UsageError");
  } catch (const UsageError& e) {
    const std::string what = e.what();
    CHECK(what.find("llama-70b") != std::string::npos);
    for (const auto& n : names) CHECK(what.find(n) != std::string::npos);
  }
}

TEST_CASE("ModelSyntheticWeightsAreDeterministicWithMeanZeroAndStd002") {
  const int rows = 301, cols = 333;  // odd count: the last Box-Muller pair is cut in half
  const auto a = synthetic_weights(rows, cols, 42);
  CHECK(a == synthetic_weights(rows, cols, 42));
  CHECK(a != synthetic_weights(rows, cols, 43));
  REQUIRE(a.size() == static_cast<size_t>(rows) * cols);
  double sum = 0, sq = 0;
  size_t within_one_sigma = 0;
  for (float v : a) {
    sum += v;
    sq += double(v) * v;
    within_one_sigma += std::fabs(v) <= 0.02f;
  }
  const double n = double(a.size()), mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  CHECK(std::fabs(mean) < 5 * 0.02 / std::sqrt(n));  // five standard errors
  CHECK(sd == doctest::Approx(0.02).epsilon(0.01));
  CHECK(within_one_sigma / n == doctest::Approx(0.6827).epsilon(0.01));  // normal, not uniform
  CHECK(synthetic_weights(0, 5, 1).empty());
  CHECK_THROWS_AS(synthetic_weights(-1, 5, 1), UsageError);
}

TEST_CASE("StackRowsPutsTheLayersRowsOneAfterTheOther") {
  const auto wa = dbs_test::random_vector<float>(5 * 11, 21), wb = dbs_test::random_vector<float>(3 * 11, 22);
  const CsrMatrix<float> a = prune_magnitude(wa, 5, 11, 0.5), b = prune_magnitude(wb, 3, 11, 0.7);
  const std::vector<CsrMatrix<float>> parts{a, b};
  const CsrMatrix<float> s = stack_rows(parts);
  REQUIRE(s.rows == 8);
  REQUIRE(s.cols == 11);
  CHECK(s.nnz() == a.nnz() + b.nnz());
  // Row r of the stack is row r of a, then row r - 5 of b, entry for entry.
  for (int r = 0; r < 8; ++r) {
    const CsrMatrix<float>& src = r < 5 ? a : b;
    const int sr = r < 5 ? r : r - 5;
    CAPTURE(r);
    REQUIRE(s.row_ptr[r + 1] - s.row_ptr[r] == src.row_ptr[sr + 1] - src.row_ptr[sr]);
    for (int k = 0; k < s.row_ptr[r + 1] - s.row_ptr[r]; ++k) {
      CHECK(s.col_idx[s.row_ptr[r] + k] == src.col_idx[src.row_ptr[sr] + k]);
      CHECK(s.values[s.row_ptr[r] + k] == src.values[src.row_ptr[sr] + k]);
    }
  }
  const CsrMatrix<float> narrow = prune_magnitude(dbs_test::random_vector<float>(2 * 10, 23), 2, 10, 0.5);
  const std::vector<CsrMatrix<float>> bad{a, narrow};
  CHECK_THROWS_AS(stack_rows(bad), UsageError);
  CHECK(stack_rows(std::vector<CsrMatrix<float>>{}).rows == 0);
}

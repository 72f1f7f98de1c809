// Calibration math (include/dbsparse/calibration.hpp): input norms and activation thresholds
// against plain reference computations (loops in double; a full sort), and the quantile's
// definition checked by counting, never by the functions under test.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "dbsparse/calibration.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/pruning.hpp"
#include "test_support.hpp"

using namespace dbsparse;

namespace {

std::vector<float> reference_norms(const std::vector<float>& x, int64_t tokens, int32_t cols) {
  std::vector<float> out(static_cast<size_t>(cols));
  for (int32_t c = 0; c < cols; ++c) {
    double s = 0;
    for (int64_t t = 0; t < tokens; ++t) {
      const double v = x[static_cast<size_t>(t * cols + c)];
      s += v * v;
    }
    out[static_cast<size_t>(c)] = static_cast<float>(std::sqrt(s));
  }
  return out;
}

// The k-th largest |x| by a full sort.
float reference_threshold(const std::vector<float>& x, size_t k) {
  std::vector<float> a;
  for (float v : x) a.push_back(std::fabs(v));
  std::sort(a.begin(), a.end(), std::greater<>());
  return a[k - 1];
}

// Random values in [-1, 1) rounded to multiples of 1/32: many ties, and zeros.
std::vector<float> tied_values(size_t n, uint64_t seed) {
  auto x = dbs_test::random_vector<float>(n, seed);
  for (auto& v : x) v = std::round(v * 32.0f) / 32.0f;
  return x;
}

size_t count_at_least(const std::vector<float>& x, float tau) {
  return static_cast<size_t>(std::count_if(x.begin(), x.end(), [&](float v) { return std::fabs(v) >= tau; }));
}
size_t count_above(const std::vector<float>& x, float tau) {
  return static_cast<size_t>(std::count_if(x.begin(), x.end(), [&](float v) { return std::fabs(v) > tau; }));
}

}  // namespace

TEST_CASE("KeptCountIsTheCeilingOfDensityTimesNWithoutRoundingNoise") {
  CHECK(kept_count(0.3, 10) == 3);  // 0.3 * 10 = 3.0000000000000004
  CHECK(kept_count(0.25, 10) == 3);
  CHECK(kept_count(0.5, 7) == 4);
  CHECK(kept_count(1.0, 7) == 7);
  CHECK(kept_count(1e-9, 10) == 1);  // at least one
  CHECK(kept_count(0.7, 1000000) == 700000);
  CHECK_THROWS_AS(kept_count(0.0, 10), UsageError);
  CHECK_THROWS_AS(kept_count(1.01, 10), UsageError);
  CHECK_THROWS_AS(kept_count(std::nan(""), 10), UsageError);
  CHECK_THROWS_AS(kept_count(0.5, 0), UsageError);
}

TEST_CASE("InputNormsMatchReference") {
  for (auto [tokens, cols] : {std::pair<int64_t, int32_t>{1, 1}, {37, 53}, {128, 7}, {0, 5}}) {
    CAPTURE(tokens);
    CAPTURE(cols);
    const auto x = dbs_test::random_vector<float>(static_cast<size_t>(tokens * cols), 31 + tokens);
    const auto want = reference_norms(x, tokens, cols);
    CHECK(input_norms(x, tokens, cols) == want);
    if (tokens == 0) continue;
    // The same rows added in three pieces (one empty) give the same norms.
    ActivationCalibration cal(cols);
    const size_t cut = static_cast<size_t>(tokens / 3 * cols);
    cal.add(std::span<const float>(x).first(cut));
    cal.add(std::span<const float>{});
    cal.add(std::span<const float>(x).subspan(cut));
    CHECK(cal.tokens() == tokens);
    CHECK(cal.input_norms() == want);
  }
}

TEST_CASE("MagnitudeThresholdMatchesReference") {
  for (uint64_t seed : {1u, 2u, 3u}) {
    const auto x = tied_values(1000 + 37 * seed, seed);
    const size_t n = x.size();
    for (double density : {1e-6, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.999, 1.0}) {
      CAPTURE(seed);
      CAPTURE(density);
      const float tau = magnitude_threshold(x, density);
      const auto k = static_cast<size_t>(std::max(1.0, std::ceil(density * static_cast<double>(n) - 1e-9)));
      CHECK(tau == reference_threshold(x, k));
      // The quantile's definition: tau keeps at least the share, and any larger tau (the next larger
      // magnitude present) keeps less.
      CHECK(count_at_least(x, tau) >= k);
      CHECK(count_above(x, tau) < k);
      CHECK(static_cast<double>(count_at_least(x, tau)) >= density * static_cast<double>(n) - 1e-9);
    }
  }
  // Distinct magnitudes: exactly k kept, and the same tau as topk_threshold.
  const auto d = dbs_test::random_vector<float>(999, 77);
  for (double density : {0.1, 0.3, 0.5}) {
    const float tau = magnitude_threshold(d, density);
    CHECK(count_at_least(d, tau) == static_cast<size_t>(kept_count(density, 999)));
    CHECK(tau == topk_threshold(d, density));
  }
}

TEST_CASE("CalibrationThresholdsAtSeveralDensitiesMatchOneAtATime") {
  const int32_t cols = 24;
  const auto x = tied_values(50 * cols, 9);
  ActivationCalibration cal(cols);
  cal.add(std::span<const float>(x).first(20 * cols));
  cal.add(std::span<const float>(x).subspan(20 * cols));
  const std::vector<double> densities = {0.3, 1.0, 0.05, 0.5, 0.999};  // not sorted: results in this order
  const auto taus = cal.thresholds(densities);
  REQUIRE(taus.size() == densities.size());
  for (size_t i = 0; i < densities.size(); ++i) {
    CAPTURE(densities[i]);
    CHECK(taus[i] == magnitude_threshold(x, densities[i]));
  }
  CHECK(cal.thresholds(densities) == taus);  // again, after the magnitudes were reordered
  CHECK(cal.input_norms() == reference_norms(x, 50, cols));
}

TEST_CASE("CalibrationRejectsNonFiniteActivationsAndBadRequests") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> x(12, 0.5f);
  x[7] = nan;  // token 1, column 3 of 4
  ActivationCalibration cal(4);
  CHECK_THROWS_WITH_AS(cal.add(x), doctest::Contains("token 1, column 3 is nan"), UsageError);
  CHECK(cal.tokens() == 0);  // nothing added
  CHECK_THROWS_AS(cal.input_norms(), UsageError);
  CHECK_THROWS_AS(cal.thresholds(std::vector<double>{0.5}), UsageError);
  cal.add(std::vector<float>(8, 1.0f));
  x[7] = -inf;
  CHECK_THROWS_WITH_AS(cal.add(x), doctest::Contains("token 1, column 3 is -inf"), UsageError);  // within x
  CHECK_THROWS_AS(cal.add(std::vector<float>(5, 1.0f)), UsageError);                             // not whole tokens
  CHECK_THROWS_AS(cal.thresholds(std::vector<double>{0.5, 0.0}), UsageError);
  CHECK_THROWS_AS(ActivationCalibration(0), UsageError);

  CHECK_THROWS_WITH_AS(input_norms(x, 3, 4), doctest::Contains("token 1, column 3"), UsageError);
  CHECK_THROWS_AS(input_norms(x, 2, 4), UsageError);
  CHECK_THROWS_WITH_AS(magnitude_threshold(x, 0.5), doctest::Contains("values[7] is -inf"), UsageError);
  const std::vector<float> ok = {1, 2, 3};
  CHECK_THROWS_AS(magnitude_threshold(ok, 0.0), UsageError);
  CHECK_THROWS_AS(magnitude_threshold(ok, 1.5), UsageError);
  CHECK_THROWS_AS(magnitude_threshold(std::vector<float>{}, 0.5), UsageError);
}

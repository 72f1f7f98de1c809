#include "dbsparse/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include <fmt/format.h>

#include "dbsparse/error.hpp"

namespace dbsparse {
namespace {

// The index of the first NaN or infinite entry, or x.size().
size_t first_non_finite(std::span<const float> x) {
  return static_cast<size_t>(std::find_if(x.begin(), x.end(), [](float v) { return !std::isfinite(v); }) - x.begin());
}

void check_density(const char* fn, double density) {
  if (!(density > 0.0 && density <= 1.0)) throw UsageError(fmt::format("{}: density {} outside (0, 1]", fn, density));
}

void add_squares(std::span<const float> x, int32_t in_features, std::vector<double>& sums) {
  for (size_t i = 0; i < x.size(); i += static_cast<size_t>(in_features))
    for (int32_t c = 0; c < in_features; ++c) {
      const double v = x[i + static_cast<size_t>(c)];
      sums[static_cast<size_t>(c)] += v * v;
    }
}

std::vector<float> roots(const std::vector<double>& sums) {
  std::vector<float> out(sums.size());
  for (size_t c = 0; c < sums.size(); ++c) out[c] = static_cast<float>(std::sqrt(sums[c]));
  return out;
}

// The k-th largest of a for each k (1 <= k <= a.size()), in the order given. Each selection after the
// first runs over what the smaller ones left: after nth_element at k - 1 every entry before it is
// >= every entry from it on, so a larger k's entry lies from k - 1 on.
std::vector<float> kth_largest(std::vector<float>& a, std::span<const int64_t> ks) {
  std::vector<size_t> order(ks.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return ks[x] < ks[y]; });
  std::vector<float> out(ks.size());
  auto from = a.begin();
  for (size_t i : order) {
    const auto nth = a.begin() + (ks[i] - 1);
    std::nth_element(from, nth, a.end(), std::greater<>());
    out[i] = *nth;
    from = nth;
  }
  return out;
}

}  // namespace

int64_t kept_count(double density, int64_t n) {
  check_density("kept_count", density);
  if (n < 1) throw UsageError(fmt::format("kept_count: {} entries; at least one is needed", n));
  const double want = density * static_cast<double>(n);
  const double nearest = std::round(want);
  const double k = std::fabs(want - nearest) <= 1e-9 * std::max(1.0, want) ? nearest : std::ceil(want);
  return static_cast<int64_t>(std::clamp<double>(k, 1, static_cast<double>(n)));
}

std::vector<float> input_norms(std::span<const float> x, int64_t tokens, int32_t in_features) {
  if (tokens < 0 || in_features < 0 || x.size() != static_cast<size_t>(tokens) * static_cast<size_t>(in_features))
    throw UsageError(
        fmt::format("input_norms: {} values for {} tokens x {} in_features", x.size(), tokens, in_features));
  if (const size_t i = first_non_finite(x); i < x.size())
    throw UsageError(fmt::format("input_norms: token {}, column {} is {}", i / static_cast<size_t>(in_features),
                                 i % static_cast<size_t>(in_features), x[i]));
  std::vector<double> sums(static_cast<size_t>(in_features), 0.0);
  add_squares(x, in_features, sums);
  return roots(sums);
}

float magnitude_threshold(std::span<const float> values, double density) {
  check_density("magnitude_threshold", density);
  if (values.empty()) throw UsageError("magnitude_threshold: no values");
  if (const size_t i = first_non_finite(values); i < values.size())
    throw UsageError(fmt::format("magnitude_threshold: values[{}] is {}", i, values[i]));
  std::vector<float> a(values.size());
  std::transform(values.begin(), values.end(), a.begin(), [](float v) { return std::fabs(v); });
  const int64_t k = kept_count(density, static_cast<int64_t>(a.size()));
  return kth_largest(a, std::span<const int64_t>(&k, 1))[0];
}

ActivationCalibration::ActivationCalibration(int32_t in_features) : in_features_(in_features) {
  if (in_features < 1) throw UsageError(fmt::format("ActivationCalibration: in_features {}; at least 1", in_features));
  sum_squares_.assign(static_cast<size_t>(in_features), 0.0);
}

void ActivationCalibration::add(std::span<const float> x) {
  const auto n = static_cast<size_t>(in_features_);
  if (x.size() % n != 0)
    throw UsageError(fmt::format("ActivationCalibration::add: {} values are not whole tokens of {} in_features",
                                 x.size(), in_features_));
  if (const size_t i = first_non_finite(x); i < x.size())
    throw UsageError(fmt::format("token {}, column {} is {}", i / n, i % n, x[i]));
  add_squares(x, in_features_, sum_squares_);
  magnitudes_.reserve(magnitudes_.size() + x.size());
  for (float v : x) magnitudes_.push_back(std::fabs(v));
  tokens_ += static_cast<int64_t>(x.size() / n);
}

std::vector<float> ActivationCalibration::input_norms() const {
  if (tokens_ == 0) throw UsageError("ActivationCalibration::input_norms: no token was added");
  return roots(sum_squares_);
}

std::vector<float> ActivationCalibration::thresholds(std::span<const double> densities) {
  if (tokens_ == 0) throw UsageError("ActivationCalibration::thresholds: no token was added");
  std::vector<int64_t> ks;
  for (double d : densities) ks.push_back(kept_count(d, static_cast<int64_t>(magnitudes_.size())));
  return kth_largest(magnitudes_, ks);
}

}  // namespace dbsparse

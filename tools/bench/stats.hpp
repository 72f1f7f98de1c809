#pragma once
// Small statistics shared by the benches and the tuner.
#include <algorithm>
#include <cmath>
#include <vector>

namespace dbsparse::tools {

// Geometric mean of positive values; 0 for none.
inline double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

// The middle value (the upper one of an even count); 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace dbsparse::tools

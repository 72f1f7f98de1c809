#pragma once
// Small statistics shared by the benches and the tuner.
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

}  // namespace dbsparse::tools

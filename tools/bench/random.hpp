#pragma once
// The one seeded random source of the tests, the benches and the tuner: a fixed 64-bit LCG, so
// every run, impl and machine draws the same x for the same seed.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace dbsparse::tools {

struct Lcg {
  uint64_t s;
  uint64_t next() { return s = s * 6364136223846793005ULL + 1442695040888963407ULL; }
  // An LCG's high bits are its good ones: scale them rather than taking a remainder.
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(((next() >> 32) * n) >> 32); }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

// n values in [-1, 1).
template <class T>
std::vector<T> random_values(size_t n, uint64_t seed) {
  Lcg rng{seed};
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(rng.unit() * 2.0 - 1.0);
  return v;
}

// k distinct indices in [0, n), sorted: the nonzero positions of a sparse x. Draws k numbers
// from rng, which callers may go on drawing values from.
inline std::vector<int32_t> sample_indices(int32_t n, int64_t k, Lcg& rng) {
  k = std::clamp<int64_t>(k, 0, n);
  std::vector<int32_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = 0; i < k; ++i)  // partial Fisher-Yates
    std::swap(perm[i], perm[i + rng.below(static_cast<uint32_t>(n - i))]);
  std::vector<int32_t> out(perm.begin(), perm.begin() + k);
  std::sort(out.begin(), out.end());
  return out;
}

// round(density * n) of them, at least one when density > 0.
inline std::vector<int32_t> sample_indices(int32_t n, double density, uint64_t seed) {
  if (!(density > 0) || n <= 0) return {};
  Lcg rng{seed};
  return sample_indices(n, std::clamp<int64_t>(static_cast<int64_t>(density * n + 0.5), 1, n), rng);
}

}  // namespace dbsparse::tools

#pragma once
// The benches' random numbers: a fixed 64-bit LCG, so every run, impl and machine draws the same x.
#include <cstdint>

namespace dbsparse::tools {

struct Lcg {
  uint64_t s;
  uint64_t next() { return s = s * 6364136223846793005ULL + 1442695040888963407ULL; }
  // An LCG's high bits are its good ones: scale them rather than taking a remainder.
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(((next() >> 32) * n) >> 32); }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

}  // namespace dbsparse::tools

// Host fp16 and bf16 conversions. The expected values come from a different route: the value a bit
// pattern stands for computed with ldexp in double, and the nearest representable value found by
// searching that table, never from the conversion functions themselves.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "dbsparse/half.hpp"

using namespace dbsparse;

namespace {

// The value of a finite binary16 pattern, from the format's definition.
double half_value(uint16_t h) {
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  return (h & 0x8000) ? -magnitude : magnitude;
}

bool half_is_nan(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0; }

// The nearest half to x by search over all non-negative finite halves (their patterns are sorted
// by value); ties to the even pattern; 65520 and beyond become infinity.
uint16_t nearest_half(float x) {
  static const std::vector<double> table = [] {
    std::vector<double> t;
    for (uint16_t h = 0; h <= 0x7BFF; ++h) t.push_back(half_value(h));
    return t;
  }();
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= 65520.0) return sign | 0x7C00;
  const auto it = std::lower_bound(table.begin(), table.end(), a);
  if (it == table.end()) return sign | 0x7BFF;  // (65504, 65520): nearer the largest half than 2^16
  const auto hi = static_cast<uint16_t>(it - table.begin());
  if (*it == a || hi == 0) return sign | hi;
  const uint16_t lo = hi - 1;
  const double d_lo = a - table[lo], d_hi = table[hi] - a;
  if (d_lo < d_hi) return sign | lo;
  if (d_hi < d_lo) return sign | hi;
  return sign | ((lo & 1) == 0 ? lo : hi);
}

// The value of a bf16 pattern; exponent 255 is taken as 2^128 so that the distance to the
// "overflow neighbour" of the largest finite bf16 can be measured.
double bf16_value(uint16_t b) {
  const int exponent = (b >> 7) & 0xFF;
  const int mantissa = b & 0x7F;
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, -133) : std::ldexp(128 + mantissa, exponent - 134);
  return (b & 0x8000) ? -magnitude : magnitude;
}

// The nearest bf16 to a finite float: its two neighbours are the truncation and the next pattern up
// in magnitude; ties to the even pattern.
uint16_t nearest_bf16(float x) {
  const auto lo = static_cast<uint16_t>(std::bit_cast<uint32_t>(x) >> 16);
  const auto hi = static_cast<uint16_t>(lo + 1);
  const double a = std::fabs(static_cast<double>(x));
  const double d_lo = a - std::fabs(bf16_value(lo)), d_hi = std::fabs(bf16_value(hi)) - a;
  if (d_lo < d_hi) return lo;
  if (d_hi < d_lo) return hi;
  return (lo & 1) == 0 ? lo : hi;
}

float from_bits(uint32_t bits) { return std::bit_cast<float>(bits); }

}  // namespace

TEST_CASE("HalfToFloatGivesTheValueOfEveryFinitePatternAndInfinityAndNan") {
  int checked = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float f = half_to_float(h);
    if (half_is_nan(h)) {
      CHECK(std::isnan(f));
    } else if ((h & 0x7FFF) == 0x7C00) {
      CHECK((std::isinf(f) && std::signbit(f) == ((h & 0x8000) != 0)));
    } else {
      if (static_cast<double>(f) != half_value(h)) FAIL_CHECK("pattern " << i << " gave " << f);
      CHECK(std::signbit(f) == ((h & 0x8000) != 0));  // -0 stays -0
      ++checked;
    }
  }
  CHECK(checked == 2 * 0x7C00);
}

TEST_CASE("HalfRoundTripsEveryBitPatternThroughFloat") {
  int mismatches = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const uint16_t back = float_to_half(half_to_float(h));
    if (half_is_nan(h) ? !half_is_nan(back) : back != h) ++mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("HalfKnownValuesLimitsAndTiesToEven") {
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(float_to_half(-2.0f) == 0xC000);
  CHECK(float_to_half(0.0f) == 0x0000);
  CHECK(float_to_half(-0.0f) == 0x8000);
  CHECK(float_to_half(65504.0f) == 0x7BFF);
  CHECK(half_to_float(0x7BFF) == 65504.0f);
  CHECK(float_to_half(65519.99f) == 0x7BFF);
  CHECK(float_to_half(65520.0f) == 0x7C00);  // the tie goes to even: past the largest, infinity
  CHECK(float_to_half(1e10f) == 0x7C00);
  CHECK(float_to_half(-std::numeric_limits<float>::infinity()) == 0xFC00);
  CHECK(float_to_half(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(float_to_half(std::ldexp(1.0f, -14)) == 0x0400);  // smallest normal
  CHECK(float_to_half(std::ldexp(1.0f, -25)) == 0x0000);  // half of the smallest subnormal: tie to 0
  CHECK(float_to_half(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) == 0x0001);
  CHECK(float_to_half(std::ldexp(3.0f, -25)) == 0x0002);  // 1.5 units: tie to even 2
  CHECK(float_to_half(std::ldexp(5.0f, -25)) == 0x0002);  // 2.5 units: tie to even 2
  // Between 1 and the next half (1 + 2^-10), the midpoint goes to the even 1; between 1 + 2^-10
  // and 1 + 2^-9 it goes up to the even 1 + 2^-9.
  CHECK(float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);
  CHECK(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);
  CHECK(float_to_half(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)) == 0x3C01);
  // Largest subnormal rounding up carries into the smallest normal.
  CHECK(float_to_half(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)) == 0x0400);
  CHECK(float_to_half(std::numeric_limits<float>::denorm_min()) == 0x0000);
}

TEST_CASE("HalfNanStaysNanForEveryPayload") {
  for (uint32_t bits : {0x7FC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, 0x7F802000u, 0xFFC00000u}) {
    CAPTURE(bits);
    const uint16_t h = float_to_half(from_bits(bits));
    CHECK(half_is_nan(h));
    CHECK(((h & 0x8000) != 0) == ((bits & 0x80000000u) != 0));
    CHECK(std::isnan(half_to_float(h)));
  }
}

TEST_CASE("HalfFromRandomFloatsIsTheNearestHalf") {
  std::mt19937_64 gen(7);
  // Random bit patterns with exponents around the half range, so that subnormals, normals and
  // overflow are all drawn, plus uniformly random patterns over all floats.
  std::uniform_int_distribution<uint32_t> mantissa(0, 0x7FFFFF), exponent(127 - 30, 127 + 17), any;
  int mismatches = 0, n = 0;
  for (int i = 0; i < 300000; ++i) {
    uint32_t bits = i % 4 == 3 ? any(gen) : (gen() & 0x80000000u) | (exponent(gen) << 23) | mantissa(gen);
    const float x = from_bits(bits);
    if (std::isnan(x)) continue;
    ++n;
    if (float_to_half(x) != nearest_half(x)) {
      if (++mismatches < 5) FAIL_CHECK("x = " << x << " (bits " << bits << ")");
    }
  }
  CHECK(n > 290000);
  CHECK(mismatches == 0);
}

TEST_CASE("Bf16KnownValuesTiesAndOverflow") {
  CHECK(float_to_bf16(1.0f) == 0x3F80);
  CHECK(bf16_to_float(0x3F80) == 1.0f);
  CHECK(float_to_bf16(-2.0f) == 0xC000);
  CHECK(float_to_bf16(-0.0f) == 0x8000);
  CHECK(float_to_bf16(from_bits(0x3F808000u)) == 0x3F80);             // tie, even stays
  CHECK(float_to_bf16(from_bits(0x3F818000u)) == 0x3F82);             // tie, odd goes up to even
  CHECK(float_to_bf16(from_bits(0x3F808001u)) == 0x3F81);             // past the midpoint
  CHECK(float_to_bf16(std::numeric_limits<float>::max()) == 0x7F80);  // rounds past the largest bf16
  CHECK(float_to_bf16(from_bits(0x7F7F7FFFu)) == 0x7F7F);
  CHECK(float_to_bf16(std::numeric_limits<float>::infinity()) == 0x7F80);
  CHECK(float_to_bf16(std::numeric_limits<float>::denorm_min()) == 0x0000);
  for (uint32_t bits : {0x7FC00000u, 0x7F800001u, 0xFF800001u, 0x7F80FFFFu}) {
    CAPTURE(bits);
    CHECK(std::isnan(bf16_to_float(float_to_bf16(from_bits(bits)))));
  }
}

TEST_CASE("Bf16RoundTripsEveryBitPatternThroughFloat") {
  int mismatches = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto b = static_cast<uint16_t>(i);
    const float f = bf16_to_float(b);
    const bool nan = (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0;
    if (nan ? !std::isnan(f) || !std::isnan(bf16_to_float(float_to_bf16(f)))
            : float_to_bf16(f) != b || (!std::isinf(f) && static_cast<double>(f) != bf16_value(b)))
      ++mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("Bf16FromRandomFloatsIsTheNearestBf16") {
  std::mt19937_64 gen(11);
  int mismatches = 0, n = 0;
  for (int i = 0; i < 500000; ++i) {
    uint32_t bits = static_cast<uint32_t>(gen());
    if (i % 8 == 0) bits = (bits & 0xFFFF0000u) | 0x8000u;  // exact ties are rare at random: add them
    const float x = from_bits(bits);
    if (std::isnan(x) || std::isinf(x)) continue;
    ++n;
    const uint16_t b = float_to_bf16(x);
    if (b != nearest_bf16(x)) {
      if (++mismatches < 5) FAIL_CHECK("x bits " << bits);
    }
  }
  CHECK(n > 490000);
  CHECK(mismatches == 0);
}

TEST_CASE("HalfAndBf16VectorHelpersConvertElementwise") {
  const std::vector<float> x = {0.1f, -3.5f, 1e-6f, 70000.0f, 0.0f};
  const auto h = floats_to_half(x);
  const auto b = floats_to_bf16(x);
  REQUIRE(h.size() == x.size());
  REQUIRE(b.size() == x.size());
  const auto hf = half_to_floats(h);
  const auto bf = bf16_to_floats(b);
  for (size_t i = 0; i < x.size(); ++i) {
    CAPTURE(i);
    CHECK(h[i] == nearest_half(x[i]));
    CHECK(b[i] == nearest_bf16(x[i]));
    if (!std::isinf(hf[i])) CHECK(static_cast<double>(hf[i]) == half_value(h[i]));
    CHECK(static_cast<double>(bf[i]) == bf16_value(b[i]));
  }
}

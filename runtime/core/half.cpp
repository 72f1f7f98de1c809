#include "dbsparse/half.hpp"

#include <algorithm>
#include <bit>

namespace dbsparse {
namespace {

constexpr uint32_t kAbsMask = 0x7FFFFFFFu;
constexpr uint32_t kFloatInf = 0x7F800000u;

}  // namespace

uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & kAbsMask;
  if (abs > kFloatInf) {
    const uint32_t payload = (abs >> 13) & 0x3FFu;
    return static_cast<uint16_t>(sign | 0x7C00u | (payload != 0 ? payload : 0x200u));
  }
  // 65520 is halfway between the largest half (65504) and 2^16; the tie goes to the even
  // neighbour, 2^16, which does not exist: infinity.
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
  if (abs >= 0x38800000u) {  // normal half (>= 2^-14): rebias the exponent, round away 13 bits
    const uint32_t rebased = abs - 0x38000000u;
    uint32_t h = rebased >> 13;
    const uint32_t rest = rebased & 0x1FFFu;
    // A carry out of the mantissa lands in the exponent, which is the correct next value.
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  // Subnormal half: units of 2^-24. At or below 2^-25 (half a unit, ties to even 0) it is zero;
  // this also covers float subnormals, whose missing implicit bit the code below would assume.
  if (abs <= 0x33000000u) return sign;
  const uint32_t exponent = abs >> 23;  // 102..112 here
  const uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - exponent;  // value = mantissa * 2^-shift units
  uint32_t h = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1u);
  const uint32_t half_unit = 1u << (shift - 1u);
  // Rounding 0x3FF up gives 0x400, the smallest normal: the encoding carries over by itself.
  if (rest > half_unit || (rest == half_unit && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1Fu) return std::bit_cast<float>(sign | kFloatInf | (mantissa << 13));
  if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  // Subnormal (or zero): mantissa * 2^-24 is exact in float.
  const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
  return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
}

uint16_t float_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & kAbsMask) > kFloatInf) {
    auto b = static_cast<uint16_t>(x >> 16);
    return (b & 0x7Fu) != 0 ? b : static_cast<uint16_t>(b | 0x40u);
  }
  // Adding 0x7FFF (+1 when the kept part is odd) carries exactly when the dropped half is past
  // the midpoint, or at it with an odd kept part. Near FLT_MAX the carry reaches infinity, as it should.
  const uint32_t bias = 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + bias) >> 16);
}

float bf16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

namespace {
template <class To, class From>
std::vector<To> convert_each(std::span<const From> in, To (*convert)(From)) {
  std::vector<To> out(in.size());
  std::transform(in.begin(), in.end(), out.begin(), convert);
  return out;
}
}  // namespace

std::vector<uint16_t> floats_to_half(std::span<const float> x) { return convert_each(x, float_to_half); }
std::vector<float> half_to_floats(std::span<const uint16_t> h) { return convert_each(h, half_to_float); }
std::vector<uint16_t> floats_to_bf16(std::span<const float> x) { return convert_each(x, float_to_bf16); }
std::vector<float> bf16_to_floats(std::span<const uint16_t> b) { return convert_each(b, bf16_to_float); }

}  // namespace dbsparse

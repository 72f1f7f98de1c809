#pragma once
// Host conversions between float and the 16-bit float formats that LLM checkpoints are stored in.
// Written out bit by bit rather than through _Float16 or F16C so the results are the same on every
// compiler and CPU, and a file written on one machine reads back identically on another.
#include <cstdint>
#include <span>
#include <vector>

namespace dbsparse {

// IEEE binary16. Round to nearest, ties to even; too large for 65504 rounds to infinity; values
// below 2^-14 become subnormals (down to 2^-24). A NaN stays a NaN: its upper payload bits are kept,
// and a payload that would vanish in 10 bits is made quiet so it cannot turn into an infinity.
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);  // exact: every half is a float

// bfloat16: the upper 16 bits of a float, rounded to nearest, ties to even (overflow to infinity).
// A NaN stays a NaN, for the same reason as above.
uint16_t float_to_bf16(float f);
float bf16_to_float(uint16_t b);  // exact

std::vector<uint16_t> floats_to_half(std::span<const float> x);
std::vector<float> half_to_floats(std::span<const uint16_t> h);
std::vector<uint16_t> floats_to_bf16(std::span<const float> x);
std::vector<float> bf16_to_floats(std::span<const uint16_t> b);

}  // namespace dbsparse

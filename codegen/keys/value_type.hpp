#pragma once
#include <string>
#include <string_view>

#include "dbsparse/error.hpp"

namespace dbsparse::codegen {

enum class ValueType { F32, F64 };

inline const char* to_string(ValueType v) { return v == ValueType::F32 ? "f32" : "f64"; }
inline const char* cuda_type(ValueType v) { return v == ValueType::F32 ? "float" : "double"; }
inline ValueType value_type_from_string(std::string_view s) {
  if (s == "f32") return ValueType::F32;
  if (s == "f64") return ValueType::F64;
  throw UsageError("unknown value type '" + std::string(s) + "' (expected f32 or f64)");
}
template <class T>
constexpr ValueType value_type_of();
template <>
constexpr ValueType value_type_of<float>() {
  return ValueType::F32;
}
template <>
constexpr ValueType value_type_of<double>() {
  return ValueType::F64;
}

}  // namespace dbsparse::codegen

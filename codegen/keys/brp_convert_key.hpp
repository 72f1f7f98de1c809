#pragma once
// The GPU conversion CSR -> BRP (templates/formats/brp_convert.cuh), one module per key, e.g.
// "brpconv.f32.f1.g4": the value type copied and BRP's f and g, compile-time so that the slot and
// group arithmetic (divisions by f and 8g) are shifts. The input's shape is a kernel argument.
#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_source.hpp"
#include "codegen/keys/value_type.hpp"

namespace dbsparse::codegen {

struct BrpConvertKey {
  ValueType value = ValueType::F32;
  int f = 1, g = 4;  // 1, 2, 4 or 8 each (brp.hpp)
  std::string to_string() const;
  static BrpConvertKey parse(std::string_view text);  // throws UsageError naming the bad part
  auto operator<=>(const BrpConvertKey&) const = default;
};

// Entry points by role (KernelSource::add_entry), in the order runtime/formats/brp_device.cpp
// launches them: "slots" brp_conv_slots<F, G>, "groups" brp_conv_groups<F, G>, "classify"
// brp_conv_classify<F, G>, "fill" brp_conv_fill<T, F, G>, "row_heads" brp_conv_row_heads<B>,
// "fill_rows" brp_conv_fill_rows<B>, "scan_reduce" brp_scan_reduce<B>, "scan_apply"
// brp_scan_apply<B> (B = abi::kBrpConvertBlock). Throws UsageError for a key parse would refuse.
KernelSource make_source(const BrpConvertKey& key);

// Every (f, g) in {1, 2, 4, 8}^2 for each value type in `values`.
std::vector<BrpConvertKey> brp_convert_keys(const std::vector<ValueType>& values);

}  // namespace dbsparse::codegen

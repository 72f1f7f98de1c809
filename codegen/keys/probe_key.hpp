#pragma once
// The device profile's probe kernels (templates/common/device_probe.cuh): one module, key
// "device_probe".
#include <compare>
#include <string>
#include <string_view>

#include "codegen/kernel_source.hpp"

namespace dbsparse::codegen {

struct ProbeKey {
  std::string to_string() const;
  static ProbeKey parse(std::string_view text);  // throws UsageError
  auto operator<=>(const ProbeKey&) const = default;
};

// Entry points by role: "copy", "read", "empty", "atomic_chain", "grid_barrier".
KernelSource make_source(const ProbeKey& key);

}  // namespace dbsparse::codegen

#pragma once
// The kernels over a caller's device CSR (templates/common/csr_view.cuh): its check and its rows'
// degree order, one module per offset width: "csr_view.o32" or "csr_view.o64" (DeviceCsrView64,
// DeviceGraphView64).
#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_source.hpp"

namespace dbsparse::codegen {

struct CsrViewKey {
  bool offsets64 = false;
  std::string to_string() const;
  static CsrViewKey parse(std::string_view text);  // throws UsageError
  auto operator<=>(const CsrViewKey&) const = default;
};

// Entry points by role, each <int> or <long long>: "check" (csr_check), "length_histogram"
// (csr_length_histogram), "degree_scatter" (csr_degree_scatter).
KernelSource make_source(const CsrViewKey& key);
// Both widths.
std::vector<CsrViewKey> csr_view_space();

}  // namespace dbsparse::codegen

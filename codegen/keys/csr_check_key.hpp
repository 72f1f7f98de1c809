#pragma once
// The check of a caller's device CSR (templates/common/csr_check.cuh), one module per offset
// width: "csr_check.o32" (DeviceCsrView) or "csr_check.o64" (DeviceCsrView64, DeviceGraphView64).
#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_source.hpp"

namespace dbsparse::codegen {

struct CsrCheckKey {
  bool offsets64 = false;
  std::string to_string() const;
  static CsrCheckKey parse(std::string_view text);  // throws UsageError
  auto operator<=>(const CsrCheckKey&) const = default;
};

// One entry point: dbs::csr_check<int> or dbs::csr_check<long long>.
KernelSource make_source(const CsrCheckKey& key);
// Both widths.
std::vector<CsrCheckKey> csr_check_space();

}  // namespace dbsparse::codegen

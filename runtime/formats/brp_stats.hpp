#pragma once
// BrpStats from the counts of a BRP matrix's arrays (internal to the runtime): the host matrix
// (brp.cpp) and the device one (brp_device.cpp) report the same figures from the same formulas.
#include <cstdint>

#include "dbsparse/brp.hpp"

namespace dbsparse::detail {

struct BrpCounts {
  int32_t rows = 0;
  int f = 1, g = 4;
  int32_t value_stride = 0, local_stride = 0;
  int value_bytes = 4;
  int64_t groups = 0, residual_nnz = 0, residual_rows = 0;
  int64_t tc_windows = 0;  // windows with at least one group
};
BrpStats brp_stats_of(const BrpCounts& c);

}  // namespace dbsparse::detail

// The kernels over a CSR matrix the caller keeps on the device (a plan that reads DeviceCsrView64
// or DeviceGraphView64 in place): its check and its rows' degree order. Compiled by the host
// (runtime/gpu/device_csr_view.cpp) and by NVRTC with templates/common/csr_view.cuh.
#pragma once
#include "dbsparse/abi/abi_types.h"

namespace dbsparse::abi {

// What one pass of csr_check finds (the lowest row or entry of each kind: atomicMin, ~0 for none).
struct CsrCheck {
  uint64_t
      bad_rows;  // pass 0: rows whose offsets decrease or leave [0, nnz] (row 0 starting at 0, the last ending at nnz)
  uint64_t bad_cols;  // pass 1: entries outside [0, cols)
  uint64_t unsorted;  // pass 2: entries not above the one before them in their row
  uint64_t first_bad_row;
  uint64_t first_bad_entry;
  uint64_t first_unsorted;  // a row
  uint64_t pad[2];
};
static_assert(sizeof(CsrCheck) == 64, "CsrCheck is 64 bytes on both sides");

// The degree order on the device: rows by decreasing length, lengths past kDegreeCap together
// (they come first in any order; such rows are hubs whatever their exact length). Bucket
// kDegreeCap - min(length, kDegreeCap), so bucket 0 holds the longest.
constexpr int kDegreeCap = 1023;
constexpr int kDegreeBuckets = kDegreeCap + 1;

// What csr_length_histogram adds up besides the buckets: the lengths' sum and sum of squares (the
// rows' length CV, which reorder auto weighs).
struct CsrLengthMoments {
  double sum;
  double sum_sq;
};
static_assert(sizeof(CsrLengthMoments) == 16, "CsrLengthMoments is 16 bytes on both sides");

}  // namespace dbsparse::abi

// A CSR matrix the caller keeps on the device is checked before a plan trusts it (one pass each,
// a few ms even past 2^31 entries; runtime/gpu/device_csr_check.cpp launches them):
//   pass 0, a thread a row: offsets in [0, nnz] and not decreasing, row 0 starting at 0 and the
//     last row ending at nnz;
//   pass 1, grid-stride over the entries: columns in [0, cols);
//   pass 2 (where the plan needs it), a warp a row: each entry above the one before it (columns
//     sorted and unique). Passes 1 and 2 run only after pass 0 found the offsets sound.
// Off: the row offsets' type, int or long long (key csr_check.o32 / .o64).
#pragma once
#include "dbs_common.cuh"
#include "dbsparse/abi/csr_check.h"

namespace dbs {

__device__ __forceinline__ unsigned long long check_warp_sum(unsigned long long v) {
#pragma unroll
  for (int d = 16; d >= 1; d >>= 1) v += __shfl_xor_sync(kFull, v, d);
  return v;
}

template <typename Off>
__global__ void __launch_bounds__(256) csr_check(const Off* ptr, const int32_t* idx, int rows, long long nnz, int cols,
                                                 int pass, dbsparse::abi::CsrCheck* out) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long nt = (long long)gridDim.x * blockDim.x;
  const unsigned lane = threadIdx.x & 31u;
  unsigned long long bad = 0;
  if (pass == 0) {
    for (long long i = tid; i < rows; i += nt) {
      const long long b = (long long)ptr[i], e = (long long)ptr[i + 1];
      if (!(b >= 0 && b <= e && e <= nnz && (i != 0 || b == 0) && (i != rows - 1 || e == nnz))) {
        ++bad;
        atomicMin(&out->first_bad_row, (unsigned long long)i);
      }
    }
    if (rows == 0 && tid == 0 && (long long)ptr[0] != nnz) {
      ++bad;
      atomicMin(&out->first_bad_row, 0ull);
    }
    bad = check_warp_sum(bad);
    if (lane == 0 && bad) atomicAdd(&out->bad_rows, bad);
  } else if (pass == 1) {
    for (long long k = tid; k < nnz; k += nt) {
      const int j = idx[k];
      if (j < 0 || j >= cols) {
        ++bad;
        atomicMin(&out->first_bad_entry, (unsigned long long)k);
      }
    }
    bad = check_warp_sum(bad);
    if (lane == 0 && bad) atomicAdd(&out->bad_cols, bad);
  } else {
    for (long long i = tid >> 5; i < rows; i += nt >> 5) {
      const Off begin = ptr[i], end = ptr[i + 1];
      for (Off k = begin + (Off)lane; k < end; k += 32)
        if (k > begin && idx[k - 1] >= idx[k]) {
          ++bad;
          atomicMin(&out->first_unsorted, (unsigned long long)i);
        }
    }
    bad = check_warp_sum(bad);
    if (lane == 0 && bad) atomicAdd(&out->unsorted, bad);
  }
}

}  // namespace dbs

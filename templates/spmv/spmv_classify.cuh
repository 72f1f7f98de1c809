// The GPU row classifier of classified SpMV plans: rows by length into the bins of
// abi::SpmvClassifyBounds. One kernel for every value type and every plan (key spmv.classify.b<N>).
#pragma once
#include "dbsparse/abi/spmv.h"

namespace dbs {
namespace abi = dbsparse::abi;

__device__ __forceinline__ int bin_of(const abi::SpmvClassifyBounds& b, int len) {
  int k = 0;
  while (k + 1 < b.nbins && len > b.max_len[k]) ++k;
  return k;
}

// Pass 1 (cursor == nullptr): rows and nonzeros per bin into counts. Pass 2: each row appended to
// its bin's list at cursor[bin] (cursors start at the bins' offsets). Shared-memory counters
// first, then one global atomic per bin per thread block.
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    spmv_classify(int rows, const int* __restrict__ row_ptr, abi::SpmvClassifyBounds bounds,
                  abi::SpmvBinCount* __restrict__ counts, int* __restrict__ cursor, int* __restrict__ lists) {
  constexpr int kBins = abi::kSpmvClassifyMaxBins;
  static_assert(BLOCK >= kBins, "one thread per bin clears and flushes the counters");
  __shared__ unsigned s_rows[kBins];
  __shared__ unsigned long long s_nnz[kBins];
  __shared__ int s_base[kBins];
  if (threadIdx.x < kBins) {
    s_rows[threadIdx.x] = 0;
    s_nnz[threadIdx.x] = 0;
  }
  __syncthreads();
  const int row = blockIdx.x * BLOCK + threadIdx.x;
  int bin = -1, len = 0;
  unsigned slot = 0;
  if (row < rows) {
    len = row_ptr[row + 1] - row_ptr[row];
    bin = bin_of(bounds, len);
    slot = atomicAdd(&s_rows[bin], 1u);
    if (!cursor) atomicAdd(&s_nnz[bin], (unsigned long long)len);
  }
  __syncthreads();
  if (threadIdx.x < bounds.nbins && s_rows[threadIdx.x]) {
    if (cursor)
      s_base[threadIdx.x] = atomicAdd(&cursor[threadIdx.x], (int)s_rows[threadIdx.x]);
    else {
      atomicAdd(&counts[threadIdx.x].rows, (unsigned long long)s_rows[threadIdx.x]);
      atomicAdd(&counts[threadIdx.x].nnz, s_nnz[threadIdx.x]);
    }
  }
  __syncthreads();
  if (cursor && bin >= 0) lists[s_base[bin] + slot] = row;
}

}  // namespace dbs

// CSR SpMV, one thread per row: for very short rows, where any reduction costs more than the row.
// Also holds the GPU row classifier of the classified mode, which every classified plan loads.
#pragma once
#include "dbs_common.cuh"

namespace dbs {

// row_list == nullptr: rows 0 .. rows-1; otherwise the rows listed (a classified bin).
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
spmv_csr_scalar(int rows, const int* __restrict__ row_list, const int* __restrict__ row_ptr,
                const int* __restrict__ col_idx, const T* __restrict__ vals, const T* __restrict__ x,
                T* __restrict__ y, T alpha, T beta) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= rows) return;
  const int row = row_list ? row_list[i] : i;
  const T acc = strided_dot<T, 1>(row_ptr[row], row_ptr[row + 1], col_idx, vals, x);
  axpby_store(y + row, acc, alpha, beta);
}

constexpr int kMaxBins = 8;
struct BinBounds {
  int max_len[kMaxBins];  // bin b takes rows with max_len[b-1] < length <= max_len[b]
  int nbins;
};

__device__ __forceinline__ int bin_of(const BinBounds& b, int len) {
  int k = 0;
  while (k + 1 < b.nbins && len > b.max_len[k]) ++k;
  return k;
}

// Pass 1 (cursor == nullptr): rows and nonzeros per bin. Pass 2: each row appended to its bin's
// list at cursor[bin] (cursors start at the bins' offsets). Shared-memory counters first, then one
// global atomic per bin per thread block.
__global__ void __launch_bounds__(256)
spmv_classify(int rows, const int* __restrict__ row_ptr, BinBounds bounds,
              unsigned long long* __restrict__ counts, int* __restrict__ cursor, int* __restrict__ lists) {
  __shared__ unsigned s_rows[kMaxBins];
  __shared__ unsigned long long s_nnz[kMaxBins];
  __shared__ int s_base[kMaxBins];
  if (threadIdx.x < kMaxBins) { s_rows[threadIdx.x] = 0; s_nnz[threadIdx.x] = 0; }
  __syncthreads();
  const int row = blockIdx.x * 256 + threadIdx.x;
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
    if (cursor) s_base[threadIdx.x] = atomicAdd(&cursor[threadIdx.x], (int)s_rows[threadIdx.x]);
    else {
      atomicAdd(&counts[2 * threadIdx.x], (unsigned long long)s_rows[threadIdx.x]);
      atomicAdd(&counts[2 * threadIdx.x + 1], s_nnz[threadIdx.x]);
    }
  }
  __syncthreads();
  if (cursor && bin >= 0) lists[s_base[bin] + slot] = row;
}

}  // namespace dbs

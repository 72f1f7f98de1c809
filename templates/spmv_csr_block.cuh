// CSR SpMV, one thread block per row ("workgroup rows"): long rows, reduced through shared memory.
#pragma once
#include "dbs_common.cuh"

namespace dbs {

template <typename T, int BLOCK>
__device__ __forceinline__ T block_sum(T v, T* shared_warps) {
#pragma unroll
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) shared_warps[warp] = v;
  __syncthreads();
  v = threadIdx.x < BLOCK / 32 ? shared_warps[threadIdx.x] : T(0);
  if (warp == 0) {
#pragma unroll
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  }
  return v;  // valid in thread 0
}

// row_list == nullptr: rows 0 .. rows-1; otherwise the rows listed (a classified bin).
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
spmv_csr_block(int rows, const int* __restrict__ row_list, const int* __restrict__ row_ptr,
               const int* __restrict__ col_idx, const T* __restrict__ vals, const T* __restrict__ x,
               T* __restrict__ y, T alpha, T beta) {
  __shared__ T warps[BLOCK / 32];
  if ((int)blockIdx.x >= rows) return;  // uniform across the block
  const int row = row_list ? row_list[blockIdx.x] : (int)blockIdx.x;
  T acc = strided_dot<T, BLOCK>(row_ptr[row] + threadIdx.x, row_ptr[row + 1], col_idx, vals, x);
  acc = block_sum<T, BLOCK>(acc, warps);
  if (threadIdx.x == 0) axpby_store(y + row, acc, alpha, beta);
}

}  // namespace dbs

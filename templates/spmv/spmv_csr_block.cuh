// CSR SpMV, one thread block per row ("workgroup rows"): long rows, reduced through shared memory.
#pragma once
#include "dbs_common.cuh"
#include "spmv_rows.cuh"

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

// Entries [first, end) times x, summed over the thread block (valid in thread 0): a block row
// here, a long-row chunk in spmv_csr_longrow.cuh.
template <typename T, int BLOCK, typename O>
__device__ __forceinline__ T block_dot(O first, O end, const int* col_idx, const T* vals, const T* x, T* shared_warps) {
  const T acc = strided_dot<T, BLOCK>(first + (O)threadIdx.x, end, col_idx, vals, x);
  return block_sum<T, BLOCK>(acc, shared_warps);
}

// The thread block's row: the body of this kernel and of the classified kernel's block bin. A:
// see spmv_rows.cuh.
template <typename T, int BLOCK, class A>
__device__ __forceinline__ void block_row(int row, const A& a, T* shared_warps) {
  const T acc = block_dot<T, BLOCK>(a.row_ptr[row], a.row_ptr[row + 1], a.col_idx, a.vals, a.x, shared_warps);
  if (threadIdx.x == 0) axpby_store(a.y + row, acc, a.alpha, a.beta);
}

// row_list == nullptr: rows 0 .. rows-1; otherwise the rows listed (a classified bin).
template <typename T, int BLOCK, typename O = int>
__global__ void __launch_bounds__(BLOCK)
    spmv_csr_block(int rows, const int* __restrict__ row_list, const O* __restrict__ row_ptr,
                   const int* __restrict__ col_idx, const T* __restrict__ vals, const T* __restrict__ x,
                   T* __restrict__ y, T alpha, T beta) {
  __shared__ T warps[BLOCK / 32];
  if ((int)blockIdx.x >= rows) return;  // uniform across the block
  const int row = row_list ? row_list[blockIdx.x] : (int)blockIdx.x;
  block_row<T, BLOCK>(row, CsrRows<T, O>{row_ptr, col_idx, vals, x, y, alpha, beta}, warps);
}

}  // namespace dbs

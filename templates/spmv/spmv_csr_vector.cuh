// CSR SpMV, LANES lanes per row (2..32, a power of two), reduced with shuffles: for rows too long
// for one thread and too short for a block (the adaptive CSR SpMV note, "subgroup rows").
#pragma once
#include "dbs_common.cuh"
#include "spmv_rows.cuh"

namespace dbs {

// LANES lanes' row: the body of this kernel and of the classified kernel's vector bins. Every
// lane of the warp calls it, valid or not: all of them must reach the shuffles. A: see
// spmv_rows.cuh.
template <typename T, int LANES, class A>
__device__ __forceinline__ void vector_row(bool valid, int row, int lane, const A& a) {
  static_assert(LANES >= 2 && LANES <= 32 && (LANES & (LANES - 1)) == 0, "lanes: power of two");
  T acc = T(0);
  if (valid) acc = strided_dot<T, LANES>(a.row_ptr[row] + lane, a.row_ptr[row + 1] + 0, a.col_idx, a.vals, a.x);
#pragma unroll
  for (int o = LANES / 2; o; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o, LANES);
  if (valid && lane == 0) axpby_store(a.y + row, acc, a.alpha, a.beta);
}

// row_list == nullptr: rows 0 .. rows-1; otherwise the rows listed (a classified bin).
template <typename T, int BLOCK, int LANES, typename O = int>
__global__ void __launch_bounds__(BLOCK)
    spmv_csr_vector(int rows, const int* __restrict__ row_list, const O* __restrict__ row_ptr,
                    const int* __restrict__ col_idx, const T* __restrict__ vals, const T* __restrict__ x,
                    T* __restrict__ y, T alpha, T beta) {
  const long long gid = (long long)blockIdx.x * BLOCK + threadIdx.x;
  const int i = (int)(gid / LANES), lane = (int)(gid % LANES);
  // No early return: every lane of the warp must reach the shuffles.
  const bool valid = i < rows;
  const int row = valid ? (row_list ? row_list[i] : i) : 0;
  vector_row<T, LANES>(valid, row, lane, CsrRows<T, O>{row_ptr, col_idx, vals, x, y, alpha, beta});
}

}  // namespace dbs

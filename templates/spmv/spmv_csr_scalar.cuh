// CSR SpMV, one thread per row: for very short rows, where any reduction costs more than the row.
#pragma once
#include "dbs_common.cuh"
#include "spmv_rows.cuh"

namespace dbs {

// One thread's row: the body of this kernel and of the classified kernel's scalar bin. A: see
// spmv_rows.cuh.
template <typename T, class A>
__device__ __forceinline__ void scalar_row(int row, const A& a) {
  axpby_store(a.y + row, strided_dot<T, 1>(a.row_ptr[row], a.row_ptr[row + 1], a.col_idx, a.vals, a.x), a.alpha,
              a.beta);
}

// row_list == nullptr: rows 0 .. rows-1; otherwise the rows listed (a classified bin).
template <typename T, int BLOCK, typename O = int>
__global__ void __launch_bounds__(BLOCK)
    spmv_csr_scalar(int rows, const int* __restrict__ row_list, const O* __restrict__ row_ptr,
                    const int* __restrict__ col_idx, const T* __restrict__ vals, const T* __restrict__ x,
                    T* __restrict__ y, T alpha, T beta) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= rows) return;
  scalar_row<T>(row_list ? row_list[i] : i, CsrRows<T, O>{row_ptr, col_idx, vals, x, y, alpha, beta});
}

}  // namespace dbs

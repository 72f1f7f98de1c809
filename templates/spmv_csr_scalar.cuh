// CSR SpMV, one thread per row: the simplest correct kernel and the baseline the adaptive
// strategies are measured against.
#pragma once
#include "dbs_common.cuh"

namespace dbs {

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
spmv_csr_scalar(int rows, const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                const T* __restrict__ vals, const T* __restrict__ x, T* __restrict__ y, T alpha,
                T beta) {
  const int row = blockIdx.x * BLOCK + threadIdx.x;
  if (row >= rows) return;
  const int end = row_ptr[row + 1];
  T acc = T(0);
  for (int j = row_ptr[row]; j < end; ++j) acc += vals[j] * load_ro(x + col_idx[j]);
  axpby_store(y + row, acc, alpha, beta);
}

}  // namespace dbs

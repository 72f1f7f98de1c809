// x in a plan's column order (SpmvConfig::reorder): xp[j] = x[order[j]], one thread a column,
// before the row kernels read xp. The row kernels' gathers then land on the columns A touches most
// (the degree order puts them first), which share cache lines; this pass reads x once, in full.
#pragma once
#include "dbs_common.cuh"

namespace dbs {

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    spmv_gather(int n, const int* __restrict__ order, const T* __restrict__ x, T* __restrict__ xp) {
  const int j = blockIdx.x * BLOCK + threadIdx.x;
  if (j < n) xp[j] = x[order[j]];
}

}  // namespace dbs

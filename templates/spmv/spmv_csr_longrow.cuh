// CSR SpMV for very long rows ("long-row split"): each thread block sums one chunk of a row into
// a partial, then a finalize pass adds a row's partials and applies alpha/beta (the classified
// kernel finishes its long rows itself). The chunk list and the partial buffer belong to the plan.
#pragma once
#include "dbsparse/abi/spmv.h"
#include "spmv_csr_block.cuh"

namespace dbs {
namespace abi = dbsparse::abi;

// One chunk's sum (valid in thread 0): the body of the partial kernel and of the classified
// kernel's long-row bin.
template <typename T, int BLOCK>
__device__ __forceinline__ T longrow_chunk(const abi::SpmvChunk& ch, const int* col_idx, const T* vals, const T* x,
                                           T* shared_warps) {
  return block_dot<T, BLOCK>(ch.first, ch.end, col_idx, vals, x, shared_warps);
}

// partial[c] = the sum of chunk c.
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    spmv_longrow_partial(int nchunks, const abi::SpmvChunk* __restrict__ chunks, const int* __restrict__ col_idx,
                         const T* __restrict__ vals, const T* __restrict__ x, T* __restrict__ partial) {
  __shared__ T warps[BLOCK / 32];
  const int c = blockIdx.x;
  if (c >= nchunks) return;
  const abi::SpmvChunk ch = chunks[c];
  const T acc = longrow_chunk<T, BLOCK>(ch, col_idx, vals, x, warps);
  if (threadIdx.x == 0) partial[c] = acc;
}

// rows_list[i] is a long row whose chunks are chunk_ptr[i] .. chunk_ptr[i + 1].
template <typename T>
__global__ void spmv_longrow_finalize(int nrows, const int* __restrict__ rows_list, const int* __restrict__ chunk_ptr,
                                      const T* __restrict__ partial, T* __restrict__ y, T alpha, T beta) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nrows) return;
  T acc = T(0);
  for (int c = chunk_ptr[i]; c < chunk_ptr[i + 1]; ++c) acc += partial[c];
  axpby_store(y + rows_list[i], acc, alpha, beta);
}

}  // namespace dbs

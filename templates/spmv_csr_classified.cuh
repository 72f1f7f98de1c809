// CSR SpMV, classified mode in one launch: the plan's GPU classifier put each row in a bin by
// length; thread blocks [end[k-1], end[k]) of this kernel serve bin k with that bin's strategy.
// One launch instead of one per bin: no gap and no tail between bins. Heavy bins come first in the
// grid (long-row chunks, block rows), so they start early and the light ones fill in behind.
// Long rows finish in the kernel: the last chunk of a row to arrive sums the row's partials in
// chunk order (deterministic) and writes y.
#pragma once
#include "spmv_csr_block.cuh"

namespace dbs {

constexpr int kClassBins = 7;  // scalar, vector L1 .. L4, block, long-row chunks

template <typename T>
struct ClassifiedArgs {
  const int* row_ptr;
  const int* col_idx;
  const T* vals;
  const T* x;
  T* y;
  const int* lists;         // rows of bins 0-5, bin after bin
  const int4* chunks;       // bin 6: {row, first, end, long-row slot}
  const int* chunk_ptr;     // chunks of long-row slot s: chunk_ptr[s] .. chunk_ptr[s + 1]
  T* partial;               // one per chunk
  unsigned* arrivals;       // per long-row slot; zero between runs
  int list_off[kClassBins]; // first entry of bin k in lists
  int count[kClassBins];    // rows of bin k (bin 6: chunks)
  int block_end[kClassBins];  // grid order: bin 6, 5, ..., 0; cumulative thread blocks
  T alpha, beta;
};

template <typename T, int BLOCK, int LANES>
__device__ __forceinline__ void classified_vector(const ClassifiedArgs<T>& a, int bin, int lb) {
  const int gid = lb * BLOCK + threadIdx.x;
  const int i = gid / LANES, lane = gid % LANES;
  const bool valid = i < a.count[bin];
  const int row = valid ? a.lists[a.list_off[bin] + i] : 0;
  T acc = T(0);
  if (valid) acc = strided_dot<T, LANES>(a.row_ptr[row] + lane, a.row_ptr[row + 1], a.col_idx, a.vals, a.x);
#pragma unroll
  for (int o = LANES / 2; o; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o, LANES);
  if (valid && lane == 0) axpby_store(a.y + row, acc, a.alpha, a.beta);
}

template <typename T, int BLOCK, int L1, int L2, int L3, int L4>
__global__ void __launch_bounds__(BLOCK) spmv_csr_classified(ClassifiedArgs<T> a) {
  __shared__ T warps[BLOCK / 32];
  __shared__ bool last;
  const int b = blockIdx.x;
  int slot = 0;  // position in grid order: 0 = bin 6 ... 6 = bin 0
  while (b >= a.block_end[slot]) ++slot;
  const int bin = kClassBins - 1 - slot;
  const int lb = b - (slot ? a.block_end[slot - 1] : 0);
  switch (bin) {
    case 0: {
      const int i = lb * BLOCK + threadIdx.x;
      if (i < a.count[0]) {
        const int row = a.lists[a.list_off[0] + i];
        axpby_store(a.y + row, strided_dot<T, 1>(a.row_ptr[row], a.row_ptr[row + 1], a.col_idx, a.vals, a.x),
                    a.alpha, a.beta);
      }
      return;
    }
    case 1: classified_vector<T, BLOCK, L1>(a, 1, lb); return;
    case 2: classified_vector<T, BLOCK, L2>(a, 2, lb); return;
    case 3: classified_vector<T, BLOCK, L3>(a, 3, lb); return;
    case 4: classified_vector<T, BLOCK, L4>(a, 4, lb); return;
    case 5: {
      const int row = a.lists[a.list_off[5] + lb];
      T acc = strided_dot<T, BLOCK>(a.row_ptr[row] + threadIdx.x, a.row_ptr[row + 1], a.col_idx, a.vals, a.x);
      acc = block_sum<T, BLOCK>(acc, warps);
      if (threadIdx.x == 0) axpby_store(a.y + row, acc, a.alpha, a.beta);
      return;
    }
    default: {
      const int4 ch = a.chunks[lb];
      T acc = strided_dot<T, BLOCK>(ch.y + threadIdx.x, ch.z, a.col_idx, a.vals, a.x);
      acc = block_sum<T, BLOCK>(acc, warps);
      if (threadIdx.x == 0) {
        a.partial[lb] = acc;
        __threadfence();  // the partial is visible before this chunk counts as arrived
        const int first = a.chunk_ptr[ch.w], n = a.chunk_ptr[ch.w + 1] - first;
        last = atomicAdd(&a.arrivals[ch.w], 1u) == (unsigned)(n - 1);
      }
      __syncthreads();
      if (last && threadIdx.x < 32) {  // one warp adds the row's partials, in a fixed order
        __threadfence();
        const int first = a.chunk_ptr[ch.w], end = a.chunk_ptr[ch.w + 1];
        T sum = T(0);
        for (int c = first + (int)threadIdx.x; c < end; c += 32) sum += __ldcg(&a.partial[c]);  // L2: coherent
#pragma unroll
        for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        if (threadIdx.x == 0) {
          axpby_store(a.y + ch.x, sum, a.alpha, a.beta);
          a.arrivals[ch.w] = 0;  // every chunk of this row has arrived: ready for the next run
        }
      }
      return;
    }
  }
}

}  // namespace dbs

// CSR SpMV, classified mode in one launch: the plan's GPU classifier (spmv_classify.cuh) put each
// row in a bin by length; thread blocks [end[k-1], end[k]) of this kernel serve bin k with that
// bin's strategy, through the same row bodies as the strategies' own kernels. One launch instead
// of one per bin: no gap and no tail between bins. Heavy bins come first in the grid (long-row
// chunks, block rows), so they start early and the light ones fill in behind. Long rows finish in
// the kernel (classified_chunk), with no finalize pass.
#pragma once
#include "dbsparse/abi/spmv.h"
#include "spmv_csr_block.cuh"
#include "spmv_csr_longrow.cuh"
#include "spmv_csr_scalar.cuh"
#include "spmv_csr_vector.cuh"

namespace dbs {
namespace abi = dbsparse::abi;

template <typename T, int BLOCK, int LANES>
__device__ __forceinline__ void classified_vector(const abi::SpmvClassifiedArgs<T>& a, int bin, int lb) {
  const int gid = lb * BLOCK + threadIdx.x;
  const int i = gid / LANES, lane = gid % LANES;
  const bool valid = i < a.count[bin];
  const int row = valid ? a.lists[a.list_off[bin] + i] : 0;
  vector_row<T, LANES>(valid, row, lane, a);
}

// A long-row chunk, finished without a finalize pass; every thread of the block calls it. The
// chunk stores its partial; the row's last chunk to arrive adds the row's partials in chunk order
// (deterministic), writes y and re-arms the row's arrival counter for the next run.
template <typename T, int BLOCK>
__device__ __forceinline__ void classified_chunk(const abi::SpmvClassifiedArgs<T>& a, int lb, T* warps, bool& last) {
  const abi::SpmvChunk ch = a.chunks[lb];
  const T acc = longrow_chunk<T, BLOCK>(ch, a.col_idx, a.vals, a.x, warps);
  if (threadIdx.x == 0) {
    a.partial[lb] = acc;
    __threadfence();  // the partial is visible before this chunk counts as arrived
    const int first = a.chunk_ptr[ch.slot], n = a.chunk_ptr[ch.slot + 1] - first;
    last = atomicAdd(&a.arrivals[ch.slot], 1u) == (unsigned)(n - 1);
  }
  __syncthreads();
  if (last && threadIdx.x < 32) {  // one warp adds the row's partials, in a fixed order
    __threadfence();
    const int first = a.chunk_ptr[ch.slot], end = a.chunk_ptr[ch.slot + 1];
    T sum = T(0);
    for (int c = first + (int)threadIdx.x; c < end; c += 32) sum += __ldcg(&a.partial[c]);  // L2: coherent
#pragma unroll
    for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (threadIdx.x == 0) {
      axpby_store(a.y + ch.row, sum, a.alpha, a.beta);
      a.arrivals[ch.slot] = 0;  // every chunk of this row has arrived: ready for the next run
    }
  }
}

// W > 0 (key ".w<W>"): the scalar bin's thread blocks take every row of length <= W in memory
// order instead, 32 rows a warp; the plan lists only the longer rows. The binned bodies read a
// short row's entries in the order of its bin, and a 32-byte sector of col/val that holds rows of
// several bins is fetched from DRAM once per bin (docs/decisions/spmv-short-row-window.md). Here a warp streams its rows' entries as one
// run, 32 consecutive entries a step (a long row's entries skipped), and a segmented warp sum gives
// each row its share of the step, so each sector is read once, by one warp.
template <typename T, int BLOCK, int W>
__device__ __forceinline__ void classified_window(const abi::SpmvClassifiedArgs<T>& a, int lb) {
  constexpr unsigned kAll = 0xffffffffu;
  constexpr int kSteps = sizeof(T) == 4 ? 4 : 2;  // steps whose loads are in flight at once
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int r = (lb * (BLOCK / 32) + static_cast<int>(threadIdx.x >> 5)) * 32 + lane;
  const int rows = a.count[abi::kSpmvScalarBin];
  int begin = 0, len = 0;
  if (r < rows) {
    begin = a.row_ptr[r];
    len = a.row_ptr[r + 1] - begin;
  }
  const bool mine = r < rows && len <= W;
  const int n = mine ? len : 0;
  int incl = n;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int v = __shfl_up_sync(kAll, incl, o);
    if (lane >= o) incl += v;
  }
  const int total = __shfl_sync(kAll, incl, 31);  // warp-uniform: every lane runs every step
  const int start = incl - n;                     // this row's first position in the warp's run
  T acc = T(0);
  for (int base = 0; base < total; base += 32 * kSteps) {
    int head[kSteps], c[kSteps];  // head: the lane where this lane's row begins in its step
    T v[kSteps];
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
      const int p = base + u * 32 + lane;
      // The row holding run position p: the last lane whose start is <= p (an empty row shares
      // its start with the next row and loses to it).
      int lo = 0;
#pragma unroll
      for (int step = 16; step; step >>= 1)
        if (__shfl_sync(kAll, start, lo + step) <= p) lo += step;
      const int row_start = __shfl_sync(kAll, start, lo);
      const int e = __shfl_sync(kAll, begin, lo) + (p - row_start);
      head[u] = max(row_start - (base + u * 32), 0);
      c[u] = p < total ? a.col_idx[e] : 0;
      v[u] = p < total ? a.vals[e] : T(0);
    }
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
      T s = base + u * 32 + lane < total ? v[u] * load_ro(a.x + c[u]) : T(0);
      // Inclusive sum over the lanes of the same row: a row's positions are consecutive lanes
      // from its head on (a lane past the run may add anything: no row reads it).
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const T t = __shfl_up_sync(kAll, s, o);
        if (lane - o >= head[u]) s += t;
      }
      // Row `lane` takes the sum at the last lane of its positions in this step, if it has any.
      const int q0 = base + u * 32;
      const int first = max(start, q0), last = min(start + n, q0 + 32);
      const T got = __shfl_sync(kAll, s, first < last ? last - 1 - q0 : lane);
      if (first < last) acc += got;
    }
  }
  if (mine) axpby_store(a.y + r, acc, a.alpha, a.beta);
}

template <typename T, int BLOCK, int L1, int L2, int L3, int L4, int W = 0>
__global__ void __launch_bounds__(BLOCK) spmv_csr_classified(abi::SpmvClassifiedArgs<T> a) {
  __shared__ T warps[BLOCK / 32];
  __shared__ bool last;
  const int b = blockIdx.x;
  int slot = 0;  // position in grid order: 0 = the long-row bin ... 6 = the scalar bin
  while (b >= a.block_end[slot]) ++slot;
  const int bin = abi::kSpmvClassBins - 1 - slot;
  const int lb = b - (slot ? a.block_end[slot - 1] : 0);
  switch (bin) {
    case abi::kSpmvScalarBin: {
      if constexpr (W > 0) {
        classified_window<T, BLOCK, W>(a, lb);
        return;
      }
      const int i = lb * BLOCK + threadIdx.x;
      if (i < a.count[0]) scalar_row<T>(a.lists[a.list_off[0] + i], a);
      return;
    }
    case 1:
      classified_vector<T, BLOCK, L1>(a, 1, lb);
      return;
    case 2:
      classified_vector<T, BLOCK, L2>(a, 2, lb);
      return;
    case 3:
      classified_vector<T, BLOCK, L3>(a, 3, lb);
      return;
    case 4:
      classified_vector<T, BLOCK, L4>(a, 4, lb);
      return;
    case abi::kSpmvBlockBin:
      block_row<T, BLOCK>(a.lists[a.list_off[abi::kSpmvBlockBin] + lb], a, warps);
      return;
    default:  // abi::kSpmvLongRowBin: lb is a chunk
      classified_chunk<T, BLOCK>(a, lb, warps, last);
      return;
  }
}

}  // namespace dbs

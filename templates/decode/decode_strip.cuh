// What the decoding kernels that list kept columns and share rows across blocks have in common
// (decode_bitmap.cuh, decode_lanes_ring.cuh, decode_dense.cuh, decode_dense_cols.cuh): the list of
// kept columns, partial sums into an fp32 accumulator, and the last block of a row range (by
// ticket) rounding it into y.
#pragma once
#include "dbs_common.cuh"

namespace dbs {

// The kept columns of [c0, c1) listed in shared memory by the whole block (ballot, then one
// atomic a warp): probe(c, entry) fills column c's entry and says whether it is kept. Returns the
// count; list order follows the warps' arrival. Every thread of the block calls it.
template <int WARPS, typename E, typename Probe>
__device__ __forceinline__ int list_kept(int c0, int c1, E* list, unsigned* nl, Probe probe) {
  const unsigned lane = threadIdx.x & 31u;
  if (threadIdx.x == 0) *nl = 0;
  __syncthreads();
  for (int c = c0 + (int)threadIdx.x; c - (int)lane < c1; c += WARPS * 32) {
    E en;
    const bool keep = c < c1 && probe(c, en);
    const unsigned ballot = __ballot_sync(kFull, keep);
    unsigned at = 0;
    if (lane == 0 && ballot) at = atomicAdd(nl, (unsigned)__popc(ballot));
    at = __shfl_sync(kFull, at, 0) + (unsigned)__popc(ballot & ((1u << lane) - 1u));
    if (keep) list[at] = en;
  }
  __syncthreads();
  return (int)*nl;
}

// The lanes kernels' end of a block: a[p] holds row 32p + lane of the strip; the warps' sums meet in
// shared memory (sums: WARPS * 1024 floats) and each row takes one red into the fp32 accumulator.
template <int WARPS>
__device__ __forceinline__ void red_strip_sums(const float (&a)[32], float* sums, float* acc, int row0, int n,
                                               unsigned lane, unsigned warp) {
#pragma unroll
  for (int p = 0; p < 32; ++p) sums[warp * 1024 + p * 32 + lane] = a[p];
  __syncthreads();
  for (int r = threadIdx.x; r < n; r += WARPS * 32) {
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) sum += sums[w * 1024 + r];
    if (sum != 0.0f) atomicAdd(&acc[row0 + r], sum);
  }
  __threadfence();
}

// The strip's last block to finish (by ticket) rounds the accumulator into y and zeroes it (and the
// ticket) for the next call. Every thread of the block calls it.
template <typename V, int THREADS>
__device__ __forceinline__ void finish_strip(float* acc, unsigned* tickets, typename V::S* y, int t, int row0, int n,
                                             int splits, bool* last) {
  __syncthreads();
  if (threadIdx.x == 0) *last = atomicAdd(&tickets[t], 1u) == (unsigned)splits - 1;
  __syncthreads();
  if (!*last) return;
  __threadfence();
  for (int r = threadIdx.x; r < n; r += THREADS) {
    y[row0 + r] = V::st(__ldcg(&acc[row0 + r]));
    acc[row0 + r] = 0.0f;
  }
  if (threadIdx.x == 0) tickets[t] = 0;
}

}  // namespace dbs

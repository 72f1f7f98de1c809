// Warp and block reductions and prefixes of the SpGEMM kernels (templates/spgemm/spgemm_analysis.cuh,
// templates/spgemm/spgemm.cuh), in 64 bits: products and table slots pass 2^31.
#pragma once
#include "dbs_common.cuh"

namespace dbs {

__device__ __forceinline__ long long spgemm_warp_sum(long long v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}
__device__ __forceinline__ long long spgemm_warp_max(long long v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const long long t = __shfl_xor_sync(kFull, v, o);
    v = t > v ? t : v;
  }
  return v;
}
// Inclusive prefix over the lanes.
__device__ __forceinline__ long long spgemm_warp_scan(long long v, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const long long t = __shfl_up_sync(kFull, v, o);
    if (lane >= o) v += t;
  }
  return v;
}

// Exclusive prefix of v over the block's threads; *total: the block's sum. Every thread calls it.
template <int BLOCK>
__device__ __forceinline__ long long spgemm_block_scan(long long v, long long* total) {
  constexpr int W = BLOCK / 32;
  __shared__ long long warp_total[W];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const long long incl = spgemm_warp_scan(v, lane);
  if (lane == 31) warp_total[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    const long long w = spgemm_warp_scan(lane < W ? warp_total[lane] : 0, lane);
    if (lane < W) warp_total[lane] = w;
  }
  __syncthreads();
  const long long out = (warp ? warp_total[warp - 1] : 0) + incl - v;
  *total = warp_total[W - 1];
  __syncthreads();  // warp_total is reused by the next call
  return out;
}

}  // namespace dbs

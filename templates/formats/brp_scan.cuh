// The in-place exclusive scan of int32 that the GPU conversion CSR -> BRP chains over its arrays
// of nonzeros (runtime/formats/brp_device.cpp): no CUB under NVRTC, and a tile-sum / scan-the-sums /
// rescan-the-tiles scheme needs only a few ints of scratch per tile.
#pragma once
#include "dbs_common.cuh"
#include "dbsparse/abi/brp_convert.h"

namespace dbs {

using dbsparse::abi::kBrpScanItems;

// The block's exclusive prefix of v over its threads (one call per kernel: the shared array is
// not reused).
template <int B>
__device__ __forceinline__ int brp_block_exclusive(int v) {
  __shared__ int warp_pre[B / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int warp_total;
  const int pre = warp_exclusive_prefix(v, lane, warp_total);
  if (lane == 0) warp_pre[warp] = warp_total;
  __syncthreads();
  if (warp == 0) {
    const int t = lane < B / 32 ? warp_pre[lane] : 0;
    int all;
    const int tp = warp_exclusive_prefix(t, lane, all);
    if (lane < B / 32) warp_pre[lane] = tp;
  }
  __syncthreads();
  return warp_pre[warp] + pre;
}

// An in-place exclusive scan of len ints in tiles of B * kBrpScanItems, in three steps that the
// host chains: brp_scan_reduce (each tile's sum into partials), the partials scanned the same way,
// brp_scan_apply (each tile scanned from its partial; offsets null for a single tile).
template <int B>
__global__ void __launch_bounds__(B) brp_scan_reduce(const int* data, int len, int* partials) {
  const long long base = (long long)blockIdx.x * B * kBrpScanItems + threadIdx.x;
  int sum = 0;
#pragma unroll
  for (int i = 0; i < kBrpScanItems; ++i) {
    const long long at = base + (long long)i * B;
    if (at < len) sum += data[at];
  }
  const int pre = brp_block_exclusive<B>(sum);
  if (threadIdx.x == B - 1) partials[blockIdx.x] = pre + sum;
}

template <int B>
__global__ void __launch_bounds__(B) brp_scan_apply(int* data, int len, const int* offsets) {
  const long long base = ((long long)blockIdx.x * B + threadIdx.x) * kBrpScanItems;
  int v[kBrpScanItems];
  int sum = 0;
#pragma unroll
  for (int i = 0; i < kBrpScanItems; ++i) {
    v[i] = base + i < len ? data[base + i] : 0;
    sum += v[i];
  }
  int pre = brp_block_exclusive<B>(sum) + (offsets ? offsets[blockIdx.x] : 0);
#pragma unroll
  for (int i = 0; i < kBrpScanItems; ++i) {
    if (base + i < len) data[base + i] = pre;
    pre += v[i];
  }
}

}  // namespace dbs

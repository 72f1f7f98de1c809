// y = W · x for a layer held dense (row-major, f16 or bf16): the decoding plan's dense path, for the
// layers where the sparse kernels would be slower (DecodeMapping::Dense). The library links no
// cuBLAS, and a batch-1 GEMV is one kernel: this one.
#pragma once
#include "decode_strip.cuh"
#include "mma16.cuh"

namespace dbs {

// Block (tile, split) sums rows 16 * tile .. + 16 over its share of the 32-column steps; its warps
// take the steps in turn, U at a time (all loads of the U steps, then their mma). Lane (g, t) =
// (lane / 4, lane % 4) loads 8 consecutive columns 32s + 8t .. + 8 of rows g and g + 8 (16 bytes
// each) and the same 8 of x; the first four are k slots 2t, 2t + 1, 2t + 8, 2t + 9 of one
// m16n8k16, the last four of a second: any one-to-one map of columns to k slots gives the same
// sum, provided A and B use the same. Every column of B is x, so every column of C is y.
// Why mma: a lane converting and multiplying each half in fp32 spends ~17 instructions a 16 bytes,
// four times the issue rate the bandwidth allows; here it is 3 loads and 2 mma a 1 KB of W a warp.
template <typename V, int WARPS, int U>
__global__ void __launch_bounds__(WARPS * 32)
    decode_dense(const typename V::S* __restrict__ w, const typename V::S* __restrict__ x, int rows, int cols,
                 float tau, const float* __restrict__ tau_dev, int splits, float* acc, unsigned* tickets,
                 typename V::S* y) {
  static_assert(sizeof(typename V::S) == 2, "the dense path takes 16-bit values");
  __shared__ float red[WARPS][16];
  __shared__ bool last;
  const int tiles = (rows + 15) / 16;
  const int tile = blockIdx.x % tiles, split = blockIdx.x / tiles;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const int g = (int)(lane >> 2), t4 = (int)(lane & 3u);
  const int r0 = tile * 16 + g, r1 = r0 + 8;
  const int steps = (cols + 31) / 32, per = (steps + splits - 1) / splits;
  const int s0 = split * per, s1 = min(steps, s0 + per);
  const uint4* w0 = reinterpret_cast<const uint4*>(w + (size_t)min(r0, rows - 1) * cols);
  const uint4* w1 = reinterpret_cast<const uint4*>(w + (size_t)min(r1, rows - 1) * cols);
  const uint4* xv = reinterpret_cast<const uint4*>(x);
  const uint4 zero = make_uint4(0, 0, 0, 0);
  // x thresholded as the sparse mappings do (|x_i| >= tau kept), so a plan's y does not depend on
  // its mapping; two 16-bit values a word.
  const float th = tau_dev ? *tau_dev : tau;
  const auto keep2 = [th](unsigned v) {
    const float lo = V::ld((typename V::S)(v & 0xFFFFu)), hi = V::ld((typename V::S)(v >> 16));
    return v & ((fabsf(lo) >= th ? 0xFFFFu : 0u) | (fabsf(hi) >= th ? 0xFFFF0000u : 0u));
  };
  const int last_chunk = (cols - 1) / 8;
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int s = s0 + (int)warp; s < s1; s += WARPS * U) {
    // Loads from clamped addresses, all issued before any mma; a step past the share gets x = 0
    // (its W is finite, so its products are 0).
    uint4 a[U], b[U], xx[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int step = s + u * WARPS, chunk = min(step * 4 + t4, last_chunk);  // 16-byte chunk of a row
      a[u] = __ldg(w0 + chunk);
      b[u] = __ldg(w1 + chunk);
      xx[u] = __ldg(xv + chunk);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int step = s + u * WARPS;
      if (!(step < s1 && (step * 4 + t4) * 8 < cols))
        xx[u] = zero;
      else if (th > 0.0f)
        xx[u] = make_uint4(keep2(xx[u].x), keep2(xx[u].y), keep2(xx[u].z), keep2(xx[u].w));
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      MmaK16<V>::run(d, make_uint4(a[u].x, b[u].x, a[u].y, b[u].y), xx[u].x, xx[u].y);
      MmaK16<V>::run(d, make_uint4(a[u].z, b[u].z, a[u].w, b[u].w), xx[u].z, xx[u].w);
    }
  }
  if (t4 == 0) {
    red[warp][g] = d[0];
    red[warp][g + 8] = d[2];
  }
  __syncthreads();
  const int row0 = tile * 16, n = min(16, rows - row0);
  if ((int)threadIdx.x < n) {
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < WARPS; ++k) sum += red[k][threadIdx.x];
    if (splits == 1)
      y[row0 + threadIdx.x] = V::st(sum);
    else if (sum != 0.0f)
      atomicAdd(&acc[row0 + threadIdx.x], sum);
  }
  if (splits == 1) return;
  __threadfence();
  finish_strip<V, WARPS * 32>(acc, tickets, y, tile, row0, n, splits, &last);
}

}  // namespace dbs

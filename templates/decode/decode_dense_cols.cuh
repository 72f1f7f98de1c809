// y = W · x for a layer held dense and column-major (W^T row-major, each column padded to whole
// slabs): the decoding plan's dense-columns path (DecodeMapping::DenseColumns), which reads only
// the columns of kept activations, each one contiguous, as TEAL does.
#pragma once
#include "decode_strip.cuh"
#include "value_types.cuh"

namespace dbs {

// Block (slab, split) owns the SLAB = 32 * (16 / sizeof(S)) * R rows of its slab and a chunk of the
// columns; it lists the chunk's kept columns (|x_j| >= tau), and its warps take them in turn, U at
// a time: all U * R loads (16 bytes a lane, 512 consecutive bytes a warp) before their sums. Lane l
// owns rows (32 r + l) * per .. + per of the slab in fp32 registers.
// Why: the column bitmap kernels spend ~7.5 instructions a mask word rebuilding each value's row,
// which holds them well below the copy bandwidth (docs/decisions/decode-kernel-design.md); a dense
// column costs ~17 instructions a 512 bytes a warp, so with half the activations kept the layer
// reads half of W at the bandwidth instead of a quarter of it at a third of the bandwidth.
template <typename V, int WARPS, int R, int U>
__global__ void __launch_bounds__(WARPS * 32)
    decode_dense_cols(const typename V::S* __restrict__ wt, const typename V::S* __restrict__ x, int rows, int rows_pad,
                      int cols, float tau, const float* __restrict__ tau_dev, int splits, float* acc, unsigned* tickets,
                      typename V::S* y) {
  typedef typename V::S S;
  constexpr int kPer = 16 / (int)sizeof(S);
  constexpr int kSlab = 32 * kPer * R;
  constexpr int kList = dbsparse::abi::kDecodeLanesMaxChunk;
  constexpr int kSumBytes = WARPS * kSlab * 4, kListBytes = kList * 8;
  // The list while summing, then the warps' sums.
  __shared__ __align__(16) uint4 raw[(kSumBytes > kListBytes ? kSumBytes : kListBytes) / 16];
  __shared__ unsigned nl;
  __shared__ bool last;
  const int slabs = rows_pad / kSlab;
  const int slab = blockIdx.x % slabs, split = blockIdx.x / slabs;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const float th = tau_dev ? *tau_dev : tau;
  const int chunk = (cols + splits - 1) / splits;
  const int c0 = split * chunk, c1 = min(cols, c0 + chunk);
  int2* list = reinterpret_cast<int2*>(raw);  // (column, x bits)
  const int n_kept = list_kept<WARPS>(c0, c1, list, &nl, [&](int c, int2& en) {
    const float xf = V::ld(x[c]);
    en = make_int2(c, __float_as_int(xf));
    return fabsf(xf) >= th && xf != 0.0f;
  });
  float a[R * kPer];
#pragma unroll
  for (int i = 0; i < R * kPer; ++i) a[i] = 0.0f;
  const size_t base = (size_t)slab * kSlab / kPer + lane;  // 16-byte chunk of the lane's first rows
  // Software-pipelined by hand: the next U columns' loads are issued before this U's sums. Left to
  // itself, ptxas issued two loads and summed them before the next two, so a warp had 1 KB in
  // flight (SASS); here it has U * R * 512 bytes.
  uint4 v[U][R];
  float xv[U];
  const auto fetch = [&](int k, uint4(&d)[U][R], float(&xs)[U]) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int kk = k + u * WARPS;
      const int2 en = list[min(kk, n_kept - 1)];
      xs[u] = kk < n_kept ? __int_as_float(en.y) : 0.0f;  // a step past the list adds 0 * a finite W
      const uint4* col = reinterpret_cast<const uint4*>(wt + (size_t)en.x * rows_pad) + base;
#pragma unroll
      for (int r = 0; r < R; ++r) d[u][r] = __ldcs(col + r * 32);
    }
  };
  if ((int)warp < n_kept) fetch((int)warp, v, xv);
  for (int k = (int)warp; k < n_kept; k += WARPS * U) {
    uint4 nv[U][R];
    float nx[U];
    if (k + WARPS * U < n_kept) fetch(k + WARPS * U, nv, nx);
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const unsigned wd[4] = {v[u][r].x, v[u][r].y, v[u][r].z, v[u][r].w};
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          if constexpr (sizeof(S) == 2) {
            a[r * kPer + 2 * q] += V::ld((S)(wd[q] & 0xFFFFu)) * xv[u];
            a[r * kPer + 2 * q + 1] += V::ld((S)(wd[q] >> 16)) * xv[u];
          } else {
            a[r * kPer + q] += __uint_as_float(wd[q]) * xv[u];
          }
        }
      }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      xv[u] = nx[u];
#pragma unroll
      for (int r = 0; r < R; ++r) v[u][r] = nv[u][r];
    }
  }
  __syncthreads();  // the list is dead: the sums take its place
  float* sums = reinterpret_cast<float*>(raw);
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < kPer; i += 4)
      *reinterpret_cast<float4*>(&sums[warp * kSlab + (r * 32 + (int)lane) * kPer + i]) =
          make_float4(a[r * kPer + i], a[r * kPer + i + 1], a[r * kPer + i + 2], a[r * kPer + i + 3]);
  __syncthreads();
  const int row0 = slab * kSlab, n = max(0, min(kSlab, rows - row0));
  for (int r = (int)threadIdx.x; r < n; r += WARPS * 32) {
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) sum += sums[w * kSlab + r];
    if (splits == 1)
      y[row0 + r] = V::st(sum);
    else if (sum != 0.0f)
      atomicAdd(&acc[row0 + r], sum);
  }
  if (splits == 1) return;
  __threadfence();
  finish_strip<V, WARPS * 32>(acc, tickets, y, slab, row0, n, splits, &last);
}

}  // namespace dbs

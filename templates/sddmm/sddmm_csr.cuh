// SDDMM on A's CSR pattern: out[e] = alpha * dot(X[row(e), :], Y[col(e), :]) (times a_e with
// SCALE), abi::SddmmArgs. A group of LANES lanes takes a tile of consecutive entries,
// kSddmmUnroll at a time; each entry's row comes from entry_row, so the entries in flight are
// independent: their (row, column) loads, then their rows of X and Y, CH chunks of LANES x VEC
// values (VEC = 4: one 16- or 8-byte load a lane, k % 4 == 0 and X, Y aligned to 4 values; the
// plan checks). Why not X's row once per row: finding the next row by walking row_ptr put every
// row, empty ones included, on one dependent chain, and graphs of short rows ran at a fraction of
// cuSPARSE. The group's partial dots meet by masked xor shuffles, and lane u % LANES stores entry
// u's value. f32 sums whatever the value type; out is rounded once.
#pragma once
#include "dbs_common.cuh"
#include "dbsparse/abi/sddmm.h"
#include "value_types.cuh"

namespace dbs {

template <int G>
__device__ __forceinline__ unsigned sddmm_group_mask(unsigned lane) {
  if constexpr (G == 32)
    return kFull;
  else
    return ((1u << G) - 1u) << (lane & ~(unsigned)(G - 1));
}

// VEC values of row `src` at column i (i < k: the whole VEC exists, as k % VEC == 0), else zeros.
template <typename V, int VEC>
__device__ __forceinline__ void sddmm_load(const typename V::S* src, int i, int k, float (&v)[VEC]) {
  if (i < k) {
    if constexpr (VEC == 4)
      load4<V>(src + i, v);
    else
      v[0] = V::ld(__ldg(src + i));
  } else {
#pragma unroll
    for (int j = 0; j < VEC; ++j) v[j] = 0.0f;
  }
}

template <typename V, int WARPS, int VEC, int LANES, int CH, bool SCALE>
__global__ void __launch_bounds__(WARPS * 32) sddmm_csr(const dbsparse::abi::SddmmArgs a) {
  typedef typename V::S T;
  constexpr int U = dbsparse::abi::kSddmmUnroll;
  const unsigned lane = threadIdx.x & 31u;
  const int gl = (int)lane % LANES;
  const unsigned mask = sddmm_group_mask<LANES>(lane);
  const long long group =
      ((long long)blockIdx.x * WARPS + (threadIdx.x >> 5)) * (32 / LANES) + (long long)(lane / LANES);
  const long long e0 = group * a.tile;
  if (e0 >= a.nnz) return;  // the whole group (its shuffles are masked to it)
  const long long e1 = min(e0 + (long long)a.tile, a.nnz);
  const T* xm = reinterpret_cast<const T*>(a.x);
  const T* ym = reinterpret_cast<const T*>(a.y);
  T* out = reinterpret_cast<T*>(a.out);
  for (long long e = e0; e < e1; e += U) {
    int row[U], col[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const bool on = e + u < e1;
      row[u] = on ? __ldg(a.entry_row + e + u) : 0;
      col[u] = on ? __ldg(a.col_idx + e + u) : 0;
    }
    float dot[U];
#pragma unroll
    for (int u = 0; u < U; ++u) dot[u] = 0.0f;
#pragma unroll
    for (int c = 0; c < CH; ++c) {
      float xv[U][VEC], yv[U][VEC];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        // Past the tile: loads from column k (zeros), so no lane reads past X or Y.
        const int i = e + u < e1 ? (c * LANES + gl) * VEC : a.k;
        sddmm_load<V, VEC>(xm + (size_t)row[u] * a.k, i, a.k, xv[u]);
        sddmm_load<V, VEC>(ym + (size_t)col[u] * a.k, i, a.k, yv[u]);
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < VEC; ++j) dot[u] += xv[u][j] * yv[u][j];
    }
#pragma unroll
    for (int off = LANES / 2; off > 0; off >>= 1)
#pragma unroll
      for (int u = 0; u < U; ++u) dot[u] += __shfl_xor_sync(mask, dot[u], off);
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (u % LANES == gl && e + u < e1) {
        float v = a.alpha * dot[u];
        if constexpr (SCALE) v *= __ldg(a.vals + e + u);
        out[e + u] = V::st(v);
      }
  }
}

}  // namespace dbs

// SpMM's max and min over each row's entries (SpmmOptions::reduce), on the CUDA-core CSR path:
// C[i, j] = alpha * reduce_e(a_e * B[col(e), j]) + beta * C[i, j]. (The mean is the sum's kernels
// over values divided by the row's length at plan time: runtime/spmm/spmm_spec.hpp.)
//  - OP 2 (max), 3 (min): the largest (smallest) product (NaN when any product is); 0 for an
//    empty row. `arg`, when not null (rows x n int32, row-major as C), gets the CSR entry index e
//    that won, the lowest e on ties, -1 for an empty row: what the gradient of a max / min needs.
// The warp's layout is csr_spmm_rows' (R groups of G = 32 / R lanes a warp, LANES lanes across N
// with VEC columns each, G / LANES subgroups over the row's entries). A long row is cut whole into
// parts as the f32 sum's split (SpmmArgs::parts, units [0, n_parts) of the launch): each part's
// extremes and entries go to part_sum (values in its first n_parts * n floats, entries as int32
// bits in the next), and the row's last part to finish merges them; every C entry has one writer,
// no atomic max / min. The epilogue (SpmmArgs::relu) applies in the store, as in csr_spmm_rows.
#pragma once
#include "spmm_rows.cuh"

namespace dbs {

// v is a better extreme than best: larger (max) or smaller (min), or NaN where best is not, so
// that a NaN product propagates to C (as torch's amax / amin) instead of depending on the order.
template <bool MAX>
__device__ __forceinline__ bool reduce_better(float v, float best) {
  return (MAX ? v > best : v < best) || (v != v && best == best);
}

// A candidate (value, entry) beats the best so far when it is better, or equal (both NaN
// included) with a lower entry index; entry -1 is "none yet".
template <bool MAX>
__device__ __forceinline__ bool reduce_beats(float v, int e, float best, int best_e) {
  if (e < 0) return false;
  if (best_e < 0 || reduce_better<MAX>(v, best)) return true;
  return (v == best || (v != v && best != best)) && e < best_e;
}

// The group's max (min) over entries [p0, p1) at the lane's VEC columns from n, with the winning
// entry; subgroup s takes entries p0 + s, p0 + s + S, ... in ascending order (so a strict
// comparison keeps its lowest e), then the subgroups' winners meet by shuffles. Afterwards the
// group's lanes below LANES hold the row's.
template <typename V, int VEC, int LANES, int G, bool MAX>
__device__ __forceinline__ void row_extreme(const dbsparse::abi::SpmmArgs& a, int p0, int p1, int n, bool live,
                                            unsigned lane, float (&best)[VEC], int (&arg)[VEC]) {
  typedef typename V::S T;
  constexpr int S = G / LANES;
  const unsigned mask = group_mask<G>(lane);
  const int sub = ((int)lane % G) / LANES;
  const T* vals = reinterpret_cast<const T*>(a.vals);
  const T* bm = reinterpret_cast<const T*>(a.b);
#pragma unroll
  for (int v = 0; v < VEC; ++v) {
    best[v] = 0.0f;
    arg[v] = -1;
  }
  if (live) {
#pragma unroll 4
    for (int e = p0 + sub; e < p1; e += S) {
      const int col = __ldg(a.col_idx + e);
      const float val = V::ld(vals[e]);
      float bv[VEC];
      const T* src = bm + (size_t)col * a.n + n;
      if constexpr (VEC == 4)
        load4<V>(src, bv);
      else
        bv[0] = V::ld(__ldg(src));
#pragma unroll
      for (int v = 0; v < VEC; ++v) {
        const float prod = val * bv[v];
        if (arg[v] < 0 || reduce_better<MAX>(prod, best[v])) {
          best[v] = prod;
          arg[v] = e;
        }
      }
    }
  }
#pragma unroll
  for (int off = LANES; off < G; off <<= 1)
#pragma unroll
    for (int v = 0; v < VEC; ++v) {
      const float ov = __shfl_xor_sync(mask, best[v], off);
      const int oe = __shfl_xor_sync(mask, arg[v], off);
      if (reduce_beats<MAX>(ov, oe, best[v], arg[v])) {
        best[v] = ov;
        arg[v] = oe;
      }
    }
}

// Part q of a split row: its extremes to the workspace, and the row's last part to arrive merges
// every part's (the lower entry on ties, whatever the parts' order of arrival) and writes C and
// arg. Fences and __ldcg as csr_part's.
template <typename V, int VEC, int LANES, bool MAX>
__device__ __forceinline__ void csr_part_extreme(const dbsparse::abi::SpmmArgs& a, int q, unsigned lane, int* arg_out) {
  typedef typename V::S T;
  const int r = a.parts[4 * q], p0 = a.parts[4 * q + 1], p1 = a.parts[4 * q + 2], s = a.parts[4 * q + 3];
  const size_t stride = (size_t)a.n_parts * a.n;  // the entries' half starts here
  float* mine = a.part_sum + (size_t)q * a.n;
  int* mine_e = reinterpret_cast<int*>(a.part_sum + stride) + (size_t)q * a.n;
  for (int n0 = 0; n0 < a.n; n0 += LANES * VEC) {
    float best[VEC];
    int win[VEC];
    const int n = n0 + ((int)lane % LANES) * VEC;
    row_extreme<V, VEC, LANES, 32, MAX>(a, p0, p1, n, n < a.n, lane, best, win);
    if (n < a.n && (int)lane < LANES) {
#pragma unroll
      for (int v = 0; v < VEC; ++v) mine[n + v] = best[v], mine_e[n + v] = win[v];
    }
  }
  const int first = a.part_first[s], count = a.part_first[s + 1] - first;
  if (!last_row_part(a, s, count, lane)) return;
  T* crow = reinterpret_cast<T*>(a.c) + (size_t)r * a.n;
  const int* part_e = reinterpret_cast<const int*>(a.part_sum + stride);
  for (int n = (int)lane; n < a.n; n += 32) {
    float best = 0.0f;
    int win = -1;
    for (int k = 0; k < count; ++k) {
      const size_t at = (size_t)(first + k) * a.n + n;
      const float v = __ldcg(a.part_sum + at);
      const int e = __ldcg(part_e + at);
      if (reduce_beats<MAX>(v, e, best, win)) best = v, win = e;
    }
    crow[n] = V::st(epilogue(a, a.beta == 0.0f ? a.alpha * best : a.alpha * best + a.beta * V::ld(crow[n])));
    if (arg_out) arg_out[(size_t)r * a.n + n] = win;
  }
  if (lane == 0) a.part_count[s] = 0;  // ready for the next call (the stream orders calls)
}

// OP: 2 max, 3 min (codegen's SpmmReduceOp order). One argument more than csr_spmm_rows: arg
// (may be null).
template <typename V, int WARPS, int VEC, int LANES, int R, int OP>
__global__ void __launch_bounds__(WARPS * 32) csr_spmm_reduce(const dbsparse::abi::SpmmArgs a, int* arg_out) {
  static_assert(OP == 2 || OP == 3, "OP: 2 max, 3 min");
  typedef typename V::S T;
  constexpr int G = 32 / R;
  const unsigned lane = threadIdx.x & 31u;
  const int parts = a.n_parts;  // the split rows' parts first, so that the longest work starts first
  const int units = parts + (a.rows + R - 1) / R;
  const bool writer = (int)lane % G < LANES;
  // warp-uniform bounds; a spare group past the last row leaves (its shuffles are masked to it)
  for (int u = (int)blockIdx.x * WARPS + (int)(threadIdx.x >> 5); u < units; u += (int)gridDim.x * WARPS) {
    if (u < parts) {
      csr_part_extreme<V, VEC, LANES, OP == 2>(a, u, lane, arg_out);
      continue;
    }
    const int k = (u - parts) * R + (int)lane / G;
    if (k >= a.rows) continue;
    const int r = a.row_id ? a.row_id[k] : k;
    const int p0 = a.row_ptr[r], p1 = a.row_ptr[r + 1];
    if (parts && p1 - p0 > a.max_run) continue;  // split: its parts take it
    T* crow = reinterpret_cast<T*>(a.c) + (size_t)r * a.n;
    for (int n0 = 0; n0 < a.n; n0 += LANES * VEC) {
      float acc[VEC];
      int win[VEC];
      const int n = n0 + ((int)lane % LANES) * VEC;
      row_extreme<V, VEC, LANES, G, OP == 2>(a, p0, p1, n, n < a.n, lane, acc, win);
      if (n >= a.n || !writer) continue;
      if (arg_out) {
#pragma unroll
        for (int v = 0; v < VEC; ++v) arg_out[(size_t)r * a.n + n + v] = win[v];
      }
      store_c<V, VEC>(a, crow + n, acc);
    }
  }
}

}  // namespace dbs

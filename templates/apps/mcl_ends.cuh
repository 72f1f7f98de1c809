// The two ends of Markov clustering on the GPU (runtime/apps/mcl_gpu.cpp), compiled into the MCL module
// (codegen/keys/mcl_key.hpp) beside templates/apps/mcl.cuh's iteration. Their specs are mcl_start and
// mcl_labels in runtime/apps/mcl_cpu.cpp; these run on the device because on the host they cost
// more than the iterations they feed (docs/decisions/spgemm-apps-on-device.md).
//  Start: P = Mᵀ, row j of P the column j of G with weights (|g| or 1, zeros dropped), the loop
//  (j, j) replaced by the column's largest weight (1 for an empty column), normalised:
//   mcl_start_count    a warp per row of G: entries per column of G, the columns' largest weights,
//                      the loop slots; check[0] = the longest row of P (merge passes)
//   (P's row pointers by the SpGEMM analysis module's scan)
//   mcl_start_scatter  a warp per row of G: its entries into P's rows (atomic order) and loops
//   mcl_rows_merge     one merge pass inside every row of P (as contract_merge, with values)
//   mcl_start_scale    a warp per row of P: divided by its sum (in double, as the CPU)
//  Labels: the connected components of P's positive entries (undirected), a component numbered by
//  its smallest vertex in ascending order:
//   mcl_cc_init        every vertex its own root
//   mcl_cc_hook        for each positive entry, the larger root of its ends hooked under the smaller
//                      (atomicMin); *changed set when any was
//   mcl_cc_compress    every vertex pointed at its root
//   (after no change: the roots' ranks by the scan; mcl_cc_label each vertex its root's rank)
#pragma once
#include "dbs_common.cuh"
#include "row_merge.cuh"

namespace dbs {

template <typename T>
struct MclWeightBits;
template <>
struct MclWeightBits<float> {
  typedef unsigned int U;
  static __device__ __forceinline__ U of(float v) { return __float_as_uint(v); }
  static __device__ __forceinline__ float value(U u) { return __uint_as_float(u); }
};
template <>
struct MclWeightBits<double> {
  typedef unsigned long long U;
  static __device__ __forceinline__ U of(double v) { return (unsigned long long)__double_as_longlong(v); }
  static __device__ __forceinline__ double value(U u) { return __longlong_as_double((long long)u); }
};

template <typename T>
__device__ __forceinline__ T mcl_weight(T v, int weighted) {
  return weighted ? (v < T(0) ? -v : v) : T(1);
}

// counts, colmax: n zeros on entry; check[0] zero.
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    mcl_start_count(int n, const int32_t* __restrict__ g_ptr, const int32_t* __restrict__ g_col,
                    const T* __restrict__ g_val, int weighted, int loops, int* __restrict__ counts,
                    typename MclWeightBits<T>::U* __restrict__ colmax, unsigned* __restrict__ check) {
  const long long i = ((long long)blockIdx.x * BLOCK + threadIdx.x) >> 5;
  if (i >= n) return;  // whole warps
  const int lane = threadIdx.x & 31;
  unsigned seen = 0;
  if (loops && lane == 0) seen = (unsigned)atomicAdd(&counts[i], 1) + 1u;
  for (int e = g_ptr[i] + lane; e < g_ptr[i + 1]; e += 32) {
    const int c = g_col[e];
    const T w = mcl_weight(g_val[e], weighted);
    if (!(w > T(0))) continue;  // a zero weight is no edge
    if (loops) atomicMax(&colmax[c], MclWeightBits<T>::of(w));
    if (!(loops && c == i)) seen = max(seen, (unsigned)atomicAdd(&counts[c], 1) + 1u);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) seen = max(seen, __shfl_xor_sync(kFull, seen, o));
  if (lane == 0 && seen > *(volatile unsigned*)&check[0]) atomicMax(&check[0], seen);
}

// cursor: n zeros on entry. row_of[pos]: the row of P the position belongs to (for the merge).
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    mcl_start_scatter(int n, const int32_t* __restrict__ g_ptr, const int32_t* __restrict__ g_col,
                      const T* __restrict__ g_val, int weighted, int loops, const int32_t* __restrict__ p_ptr,
                      int* __restrict__ cursor, const typename MclWeightBits<T>::U* __restrict__ colmax,
                      int32_t* __restrict__ p_col, T* __restrict__ p_val, int32_t* __restrict__ row_of) {
  const long long i = ((long long)blockIdx.x * BLOCK + threadIdx.x) >> 5;
  if (i >= n) return;
  const int lane = threadIdx.x & 31;
  if (loops && lane == 0) {
    const T m = MclWeightBits<T>::value(colmax[i]);
    const int at = p_ptr[i] + atomicAdd(&cursor[i], 1);
    p_col[at] = (int)i;
    p_val[at] = m > T(0) ? m : T(1);
    row_of[at] = (int)i;
  }
  for (int e = g_ptr[i] + lane; e < g_ptr[i + 1]; e += 32) {
    const int c = g_col[e];
    const T w = mcl_weight(g_val[e], weighted);
    if (!(w > T(0)) || (loops && c == i)) continue;
    const int at = p_ptr[c] + atomicAdd(&cursor[c], 1);
    p_col[at] = (int)i;
    p_val[at] = w;
    row_of[at] = c;
  }
}

// Runs of w sorted entries become runs of 2w (templates/apps/row_merge.cuh); columns are unique in a row.
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    mcl_rows_merge(int nnz, const int32_t* __restrict__ row_of, const int32_t* __restrict__ ptr,
                   const int32_t* __restrict__ in_col, const T* __restrict__ in_val, int32_t* __restrict__ out_col,
                   T* __restrict__ out_val, int w) {
  const int e = blockIdx.x * BLOCK + threadIdx.x;
  if (e >= nnz) return;
  const int x = in_col[e], r = row_of[e], rs = ptr[r];
  const int to = rs + row_merge_target(in_col + rs, ptr[r + 1] - rs, e - rs, w, x);
  out_col[to] = x;
  out_val[to] = in_val[e];
}

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    mcl_start_scale(int n, const int32_t* __restrict__ p_ptr, T* __restrict__ p_val) {
  const long long i = ((long long)blockIdx.x * BLOCK + threadIdx.x) >> 5;
  if (i >= n) return;
  const int lane = threadIdx.x & 31, b = p_ptr[i], e = p_ptr[i + 1];
  double s = 0.0;
  for (int q = b + lane; q < e; q += 32) s += (double)p_val[q];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(kFull, s, o);
  if (s > 0.0)
    for (int q = b + lane; q < e; q += 32) p_val[q] = (T)((double)p_val[q] / s);
}

__device__ __forceinline__ int mcl_root(const int* parent, int v) {
  int p = ((const volatile int*)parent)[v];
  while (p != v) {
    v = p;
    p = ((const volatile int*)parent)[v];
  }
  return v;
}

// A warp per row of P.
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    mcl_cc_hook(int n, const int32_t* __restrict__ p_ptr, const int32_t* __restrict__ p_col,
                const T* __restrict__ p_val, int* parent, int* changed) {
  const long long j = ((long long)blockIdx.x * BLOCK + threadIdx.x) >> 5;
  if (j >= n) return;
  const int lane = threadIdx.x & 31;
  bool hooked = false;
  for (int e = p_ptr[j] + lane; e < p_ptr[j + 1]; e += 32) {
    if (!(p_val[e] > T(0))) continue;
    const int a = mcl_root(parent, (int)j), b = mcl_root(parent, p_col[e]);
    if (a != b) {
      atomicMin(&parent[max(a, b)], min(a, b));
      hooked = true;
    }
  }
  if (__any_sync(kFull, hooked) && lane == 0) *changed = 1;
}

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) mcl_cc_init(int n, int* parent) {
  const int v = blockIdx.x * BLOCK + threadIdx.x;
  if (v < n) parent[v] = v;
}

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) mcl_cc_compress(int n, int* parent, int* is_root) {
  const int v = blockIdx.x * BLOCK + threadIdx.x;
  if (v >= n) return;
  const int r = mcl_root(parent, v);
  parent[v] = r;
  is_root[v] = r == v;
}

// rank: the exclusive prefix of is_root (n + 1); labels[v] = its root's rank.
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    mcl_cc_label(int n, const int* __restrict__ parent, const int* __restrict__ rank, int* __restrict__ labels) {
  const int v = blockIdx.x * BLOCK + threadIdx.x;
  if (v < n) labels[v] = rank[parent[v]];
}

}  // namespace dbs

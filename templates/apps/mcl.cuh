// Markov clustering's elementwise steps on the GPU (include/dbsparse/spgemm_apps.hpp; the host loop
// is runtime/apps/mcl_gpu.cpp, the CPU spec mcl_step in runtime/apps/mcl_cpu.cpp). An iteration holds P = Mᵀ
// in CSR, so every column operation of MCL is a row operation here. Hash SpGEMM leaves Q = P·P
// (the expansion) in CSR with each row sorted by column; then
//  - mcl_prune, a block per row of Q, in place: inflation (q^r, row normalised), pruning (the m
//    largest kept, m = min(top_k, max(1, #{w >= prune_below})), ties to the smaller column), the
//    kept entries moved to the front of the row in column order and normalised again;
//  - mcl_gather, a warp per row: the kept entries into the next P (row pointers from the host's
//    prefix sum of the kept counts);
//  - mcl_change, a warp per row: the largest |difference| between the old and the new P over the
//    union of their patterns (the convergence measure).
#pragma once
#include "dbs_common.cuh"
#include "dbsparse/abi/abi_types.h"

namespace dbs {

// Non-negative floats order as their bit patterns read as unsigned integers: the select works on
// those, a byte at a time.
template <typename T>
struct MclBits;
template <>
struct MclBits<float> {
  typedef unsigned int U;
  static __device__ __forceinline__ U of(float v) { return __float_as_uint(v); }
};
template <>
struct MclBits<double> {
  typedef unsigned long long U;
  static __device__ __forceinline__ U of(double v) { return (unsigned long long)__double_as_longlong(v); }
};

// q^r. r == 2, MCL's usual inflation, as q·q: correctly rounded, where pow() may be off by an ulp or two.
__device__ __forceinline__ float mcl_power(float q, float r) { return r == 2.0f ? q * q : powf(q, r); }
__device__ __forceinline__ double mcl_power(double q, double r) { return r == 2.0 ? q * q : pow(q, r); }

// The block's sum, the same value in every thread (warp butterflies, then the warps' sums added in
// warp order by each thread): the row's decisions that depend on it are the same in all threads.
// `sh` holds BLOCK / 32 values; every thread of the block calls it.
template <typename V, int BLOCK>
__device__ __forceinline__ V mcl_block_sum(V v, V* sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  V t = V(0);
#pragma unroll
  for (int w = 0; w < BLOCK / 32; ++w) t += sh[w];
  __syncthreads();  // sh is reused by the next call
  return t;
}

// How many threads before this one (in thread order) have `flag` set; *total: how many in the block.
// Every thread of the block calls it.
template <int BLOCK>
__device__ __forceinline__ int mcl_block_rank(bool flag, int* sh, int* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned ballot = __ballot_sync(kFull, flag);
  if (lane == 0) sh[warp] = __popc(ballot);
  __syncthreads();
  int before = 0, all = 0;
#pragma unroll
  for (int w = 0; w < BLOCK / 32; ++w) {
    const int c = sh[w];
    before += w < warp ? c : 0;
    all += c;
  }
  __syncthreads();
  *total = all;
  return before + __popc(ballot & ((1u << lane) - 1u));
}

// The bit pattern of the m-th largest of w[0..len) (non-negative, 1 <= m <= len); *ties: how many
// of the m largest equal it (m minus those above it). Radix select from the top byte: each pass
// histograms the byte among the entries that match the bytes chosen so far, and warp 0 finds the
// bin where the count from the top reaches the rank still wanted. sizeof(T) passes over the row;
// exact, whatever the ties.
template <typename T, int BLOCK>
__device__ typename MclBits<T>::U mcl_select(const T* w, int len, int m, unsigned* hist, int* pick, int* ties) {
  typedef typename MclBits<T>::U U;
  U prefix = 0, mask = 0;
  int want = m;
  for (int shift = int(sizeof(U)) * 8 - 8; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < 256; b += BLOCK) hist[b] = 0;
    __syncthreads();
    for (int e = threadIdx.x; e < len; e += BLOCK) {
      const U u = MclBits<T>::of(w[e]);
      if ((u & mask) == prefix) atomicAdd(hist + (unsigned)((u >> shift) & 255u), 1u);
    }
    __syncthreads();
    if (threadIdx.x < 32) {
      // Lane l holds bins 8l .. 8l+7; `above`: the entries in the bins of the lanes above it.
      const int lane = threadIdx.x;
      unsigned c[8], mine = 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        c[j] = hist[8 * lane + j];
        mine += c[j];
      }
      unsigned above = mine;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const unsigned t = __shfl_down_sync(kFull, above, o);
        if (lane + o < 32) above += t;
      }
      above -= mine;
      const unsigned wanted = (unsigned)want;
      if (above < wanted && wanted <= above + mine) {  // exactly one lane
        unsigned acc = above;
        for (int j = 7; j >= 0; --j) {
          if (wanted <= acc + c[j]) {
            pick[0] = 8 * lane + j;
            pick[1] = (int)(wanted - acc);
            break;
          }
          acc += c[j];
        }
      }
    }
    __syncthreads();
    prefix |= U(pick[0]) << shift;
    mask |= U(255) << shift;
    want = pick[1];
    __syncthreads();  // pick and hist are rewritten by the next pass
  }
  *ties = want;
  return prefix;
}

// One row of Q = P·P per block, in place (see the top of the file). On return q_col/q_val hold
// the row's kept entries at its front, in column order, normalised, and kept_len[i] their count.
// The rest of the row is left as scratch. prune_below must be >= +0 (not -0: the comparison is on
// bit patterns).
//
// What is kept, as mcl_step: sorted by (w descending, column ascending), the first m. When
// 1 <= #{w >= prune_below} <= top_k that is exactly {w >= prune_below}, no select needed. Else
// (more than top_k pass, or none: then m = 1, the largest alone) mcl_select finds the m-th
// largest value t; every entry above t is kept, and the entries equal to t in column order until
// m are kept. The choice is exact for the values this kernel computed; they differ from the CPU's
// in the last bits (sums in another order), so a tie on the CPU may not be one here.
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    mcl_prune(int rows, const int32_t* __restrict__ q_ptr, int32_t* q_col, T* q_val, T inflation, T prune_below,
              int top_k, int32_t* __restrict__ kept_len) {
  typedef typename MclBits<T>::U U;
  __shared__ T sh_sum[BLOCK / 32];
  __shared__ int sh_cnt[BLOCK / 32];
  __shared__ unsigned hist[256];
  __shared__ int pick[2];
  const int i = blockIdx.x;
  if (i >= rows) return;  // the whole block
  const int begin = q_ptr[i], len = q_ptr[i + 1] - begin;
  int32_t* col = q_col + begin;
  T* val = q_val + begin;

  // Inflation: q^r, then the row normalised (left as it is when it sums to 0, as on the CPU).
  T part = T(0);
  for (int e = threadIdx.x; e < len; e += BLOCK) {
    const T v = mcl_power(val[e], inflation);
    val[e] = v;
    part += v;
  }
  const T sum = mcl_block_sum<T, BLOCK>(part, sh_sum);
  int passing_part = 0;
  for (int e = threadIdx.x; e < len; e += BLOCK) {
    T w = val[e];
    if (sum > T(0)) {
      w = w / sum;
      val[e] = w;
    }
    passing_part += w >= prune_below ? 1 : 0;
  }
  const int passing = mcl_block_sum<int, BLOCK>(passing_part, sh_cnt);

  // Keep an entry when its bits exceed `cut`, or equal it and fewer than `ties` equal ones came before it.
  U cut = 0;
  int ties = len;  // with cut 0: everything
  if (passing >= 1 && passing <= top_k) {
    cut = MclBits<T>::of(prune_below);  // exactly w >= prune_below
  } else if (len > 0) {
    const int m = passing == 0 ? 1 : top_k;
    if (m < len) cut = mcl_select<T, BLOCK>(val, len, m, hist, pick, &ties);
  }

  // The kept entries to the row's front, in order. Each chunk is read before the barriers of the
  // two ranks and written after them, to positions <= its own: no entry is overwritten unread.
  int kept = 0, equal_before = 0;
  T kept_part = T(0);
  for (int base = 0; base < len; base += BLOCK) {
    const int e = base + threadIdx.x;
    const bool in = e < len;
    int32_t c = 0;
    T w = T(0);
    U u = 0;
    if (in) {
      c = col[e];
      w = val[e];
      u = MclBits<T>::of(w);
    }
    int n = 0;
    const bool equal = in && u == cut;
    const int equal_rank = equal_before + mcl_block_rank<BLOCK>(equal, sh_cnt, &n);
    equal_before += n;
    const bool keep = in && (u > cut || (equal && equal_rank < ties));
    const int at = kept + mcl_block_rank<BLOCK>(keep, sh_cnt, &n);
    kept += n;
    if (keep) {
      col[at] = c;
      val[at] = w;
      kept_part += w;
    }
  }
  // Normalised again (the barriers in the sum also make the moved entries visible to every thread).
  const T kept_sum = mcl_block_sum<T, BLOCK>(kept_part, sh_sum);
  if (kept_sum > T(0))
    for (int e = threadIdx.x; e < kept; e += BLOCK) val[e] = val[e] / kept_sum;
  if (threadIdx.x == 0) kept_len[i] = kept;
}

// P's row i = the first p_ptr[i+1] - p_ptr[i] entries of Q's row i (mcl_prune put them there).
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    mcl_gather(int rows, const int32_t* __restrict__ q_ptr, const int32_t* __restrict__ q_col,
               const T* __restrict__ q_val, const int32_t* __restrict__ p_ptr, int32_t* __restrict__ p_col,
               T* __restrict__ p_val) {
  const long long i = ((long long)blockIdx.x * BLOCK + threadIdx.x) >> 5;
  if (i >= rows) return;
  const int lane = threadIdx.x & 31;
  const int from = q_ptr[i], to = p_ptr[i], n = p_ptr[i + 1] - to;
  for (int j = lane; j < n; j += 32) {
    p_col[to + j] = q_col[from + j];
    p_val[to + j] = q_val[from + j];
  }
}

// Where `key` is in col[0..n) (sorted), or -1.
__device__ __forceinline__ int mcl_find(const int32_t* __restrict__ col, int n, int key) {
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (col[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && col[lo] == key ? lo : -1;
}

// The largest |a - b| over the union of the two patterns (an entry missing from one side counts as
// 0 there), as mcl_change: a warp per row, each entry of one row looked up in the other by binary
// search (both sorted by column). The warp's largest, a non-negative double, is atomicMax'ed into
// *out as its bit pattern (which orders as the value); the caller zeroes *out.
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    mcl_change(int rows, const int32_t* __restrict__ a_ptr, const int32_t* __restrict__ a_col,
               const T* __restrict__ a_val, const int32_t* __restrict__ b_ptr, const int32_t* __restrict__ b_col,
               const T* __restrict__ b_val, unsigned long long* out) {
  const long long i = ((long long)blockIdx.x * BLOCK + threadIdx.x) >> 5;
  if (i >= rows) return;  // whole warps: BLOCK is a multiple of 32
  const int lane = threadIdx.x & 31;
  const int ab = a_ptr[i], na = a_ptr[i + 1] - ab, bb = b_ptr[i], nb = b_ptr[i + 1] - bb;
  double d = 0.0;
  for (int j = lane; j < na; j += 32) {
    const int f = mcl_find(b_col + bb, nb, a_col[ab + j]);
    const double x = (double)a_val[ab + j];
    d = fmax(d, fabs(f >= 0 ? x - (double)b_val[bb + f] : x));
  }
  for (int j = lane; j < nb; j += 32)
    if (mcl_find(a_col + ab, na, b_col[bb + j]) < 0) d = fmax(d, fabs((double)b_val[bb + j]));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) d = fmax(d, __shfl_xor_sync(kFull, d, o));
  if (lane == 0 && d > 0.0) atomicMax(out, (unsigned long long)__double_as_longlong(d));
}

}  // namespace dbs

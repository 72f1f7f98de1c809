// Batch-1 decoding on the column bitmap layout (include/dbsparse/column_bitmap.hpp) in fp16, bf16
// or f32, x thresholded (|x_i| >= tau) inside the kernel that reads it: decode_fused (lanes across
// mask words), decode_rows (a block per row block) and decode_topk_list (a per-call top-k
// threshold). The lanes-across-rows kernel is decode_lanes_ring.cuh.
#pragma once
#include "dbs_common.cuh"
#include "dbsparse/abi/abi_types.h"
#include "dbsparse/abi/decode.h"
#include "decode_strip.cuh"
#include "value_types.cuh"

namespace dbs {

// y = W · x in the column bitmap layout, x thresholded in the same kernel (no list pass, no count
// to reset). Block (strip t, split s) owns strip t's 1024 rows and the columns [s, s + 1) * chunk;
// a warp reads WINDOW of x at a time, ballots the kept ones, and walks up to four kept columns together,
// a lane per mask word: lane l owns rows l * 32 + b of the strip in 32 registers, so the hot loop has
// no shared-memory atomics (lane * 32 + b put every lane of a warp on one bank). The first version
// walked one column at a time with a dependent value load per set bit, a round trip per bit
// (docs/decisions/decode-kernel-design.md). Here a column costs a mask round trip and
// a value round trip, and four columns' round trips overlap (values prefetched to L1 first).
// A warp's walk of one column is ~300 dependent instructions: with 32-column windows, 4 warps a
// block and one block per 128 columns, a 2048x1024 layer ran too few warps to hide them
// (docs/decisions/decode-kernel-design.md). 8-column windows and
// 8 warps a block put ~one kept column on each warp: 4x the warps on 2x the SMs.
// Block partials go to an fp32 accumulator in global memory (one red per row); the last block of a
// strip rounds it into y and zeroes it for the next call.
template <typename V, int WARPS, int WINDOW>
__global__ void __launch_bounds__(WARPS * 32)
    decode_fused(const uint32_t* __restrict__ masks, const int32_t* __restrict__ seg_ptr,
                 const typename V::S* __restrict__ vals, const typename V::S* __restrict__ x, int cols, float tau,
                 const float* __restrict__ tau_dev, float* acc, unsigned* tickets, typename V::S* y, int rows,
                 int strips, int splits) {
  typedef typename V::S S;
  __shared__ float red[WARPS][32 * 33];  // [b][lane] padded: conflict-free both ways
  __shared__ bool last;
  const int t = blockIdx.x % strips, split = blockIdx.x / strips;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const float th = tau_dev ? *tau_dev : tau;
  const int chunk = (cols + splits - 1) / splits;
  const int c0 = split * chunk, c1 = min(cols, c0 + chunk);
  float a[32];
#pragma unroll
  for (int b = 0; b < 32; ++b) a[b] = 0.0f;
  bool any = false;
  for (int base = c0 + (int)warp * WINDOW; base < c1; base += WARPS * WINDOW) {
    const int c = base + (int)lane;
    const float xf = lane < (unsigned)WINDOW && c < c1 ? V::ld(x[c]) : 0.0f;
    unsigned act = __ballot_sync(kFull, fabsf(xf) >= th && xf != 0.0f);
    any |= act != 0;
    while (act) {
      uint32_t m[4];
      int off[4];
      float xv[4];
      const int batch = min(__popc(act), 4);  // warp-uniform: empty slots cost a branch, not 32 steps
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        m[q] = 0;
        off[q] = 0;
        xv[q] = 0.0f;
        if (q < batch) {
          const int b = __ffs(act) - 1;
          act &= act - 1;
          xv[q] = __shfl_sync(kFull, xf, b);
          const size_t seg = (size_t)(base + b) * strips + t;
          m[q] = masks[seg * 32 + lane];
          off[q] = seg_ptr[seg];
        }
      }
      const S* v[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if (q >= batch) break;
        int total;
        const int pre = warp_exclusive_prefix(__popc(m[q]), (int)lane, total);
        v[q] = vals + off[q] + pre;
        if (m[q]) {
          asm volatile("prefetch.global.L1 [%0];" ::"l"(v[q]));
          asm volatile("prefetch.global.L1 [%0];" ::"l"(v[q] + (__popc(m[q]) - 1)));
        }
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if (q >= batch) break;
#pragma unroll
        for (int b = 0; b < 32; ++b)
          if ((m[q] >> b) & 1u) a[b] += V::ld(v[q][__popc(m[q] & ((1u << b) - 1u))]) * xv[q];
      }
    }
  }
  const bool block_any = __syncthreads_or(any);
  const int row0 = t * 1024, n = min(1024, rows - row0);
  if (block_any) {
#pragma unroll
    for (int b = 0; b < 32; ++b) red[warp][b * 33 + lane] = a[b];
    __syncthreads();
    for (int r = threadIdx.x; r < n; r += WARPS * 32) {
      float sum = 0.0f;
#pragma unroll
      for (int w = 0; w < WARPS; ++w) sum += red[w][(r & 31) * 33 + (r >> 5)];
      if (sum != 0.0f) atomicAdd(&acc[row0 + r], sum);
    }
    __threadfence();
  }
  finish_strip<V, WARPS * 32>(acc, tickets, y, t, row0, n, splits, &last);
}

// One step of a warp transpose-reduce: lanes differing in bit S swap halves of a[0..2S) and add,
// so a[0..S) keeps the half named by the lane's bit S. A template per step keeps every index a
// constant (a loop over S left a[] in local memory: a 128-byte stack frame).
template <int S, int R>
__device__ __forceinline__ void transpose_reduce_step(float (&a)[32], unsigned lane) {
  if constexpr (S >= R) {
    const bool upper = (lane & (unsigned)S) != 0;
#pragma unroll
    for (int q = 0; q < S; ++q) {
      const float send = upper ? a[q] : a[q + S];
      const float keep = upper ? a[q + S] : a[q];
      a[q] = keep + __shfl_xor_sync(kFull, send, S);
    }
  }
}

// y = W · x with a block per 32·R rows (R mask words of a strip), the row-block mapping: no
// cross-block sums, so no accumulator, no tickets and no second pass; each y row is written once.
// The block lists x's kept columns in shared memory (4096 columns a pass, one load of 16 per thread
// in flight), then a thread takes (kept column, one of the R words): it reads the word, the
// segment's start and the word's offset in one round trip, then its <= 32 values, into 32
// register sums. Lanes with the same word are summed by a transpose-reduce over the lane bits
// above R (31 shuffles at R = 1), then across warps in shared memory. Why: the column mapping
// (decode_fused) costs most of a layer's time in a chain of round trips
// (x, words, values, reds, ticket, the last block's pass); here the chain is x, words, values.
template <typename V, int WARPS, int R>
__global__ void __launch_bounds__(WARPS * 32)
    decode_rows(const uint32_t* __restrict__ masks, const int32_t* __restrict__ seg_ptr,
                const uint16_t* __restrict__ word_off, const typename V::S* __restrict__ vals,
                const typename V::S* __restrict__ x, int cols, float tau, const float* __restrict__ tau_dev,
                typename V::S* y, int rows, int strips) {
  typedef typename V::S S;
  constexpr int kThreads = WARPS * 32, kPer = 16, kChunk = kThreads * kPer;
  static_assert(kThreads % R == 0 && 32 % R == 0, "a thread keeps one word: R divides the warp");
  __shared__ int lj[kChunk];
  __shared__ float lx[kChunk];
  __shared__ unsigned nl;
  __shared__ float red[WARPS][R * 32];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const float th = tau_dev ? *tau_dev : tau;
  const int r = (int)threadIdx.x % R;
  const int gw = (int)blockIdx.x * R + r;  // this thread's word: rows gw * 32 .. + 32
  const int strip = gw >> 5, wd = gw & 31;
  const bool live = gw * 32 < rows;
  float a[32];
#pragma unroll
  for (int b = 0; b < 32; ++b) a[b] = 0.0f;
  for (int c0 = 0; c0 < cols; c0 += kChunk) {
    if (threadIdx.x == 0) nl = 0;
    float xf[kPer];
#pragma unroll
    for (int e = 0; e < kPer; ++e) {
      const int c = c0 + e * kThreads + (int)threadIdx.x;
      xf[e] = c < cols ? V::ld(x[c]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int e = 0; e < kPer; ++e) {
      const bool keep = fabsf(xf[e]) >= th && xf[e] != 0.0f;
      const unsigned ballot = __ballot_sync(kFull, keep);
      unsigned at = 0;
      if (lane == 0 && ballot) at = atomicAdd(&nl, (unsigned)__popc(ballot));
      at = __shfl_sync(kFull, at, 0) + (unsigned)__popc(ballot & ((1u << lane) - 1u));
      if (keep) {
        lj[at] = c0 + e * kThreads + (int)threadIdx.x;
        lx[at] = xf[e];
      }
    }
    __syncthreads();
    const int items = (int)nl * R;
    if (live)
      for (int i = (int)threadIdx.x; i < items; i += kThreads) {
        const int k = i / R;  // i % R == r: kThreads is a multiple of R
        const size_t seg = (size_t)lj[k] * strips + strip;
        const uint32_t m = masks[seg * 32 + wd];
        const S* v = vals + seg_ptr[seg] + word_off[seg * 32 + wd];
        const float xv = lx[k];
#pragma unroll
        for (int b = 0; b < 32; ++b)
          if ((m >> b) & 1u) a[b] += V::ld(v[__popc(m & ((1u << b) - 1u))]) * xv;
      }
    __syncthreads();  // lj, lx and nl are rewritten by the next pass
  }
  // Transpose-reduce over lane bits >= R: afterwards lane l holds, in a[0..R), its warp's sums of
  // rows (l & ~(R - 1)) + q of word r = l % R.
  transpose_reduce_step<16, R>(a, lane);
  transpose_reduce_step<8, R>(a, lane);
  transpose_reduce_step<4, R>(a, lane);
  transpose_reduce_step<2, R>(a, lane);
  transpose_reduce_step<1, R>(a, lane);
  const int base = (int)(lane & ~(unsigned)(R - 1));
#pragma unroll
  for (int q = 0; q < R; ++q) red[warp][r * 32 + base + q] = a[q];
  __syncthreads();
  for (int t = (int)threadIdx.x; t < R * 32; t += kThreads) {
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) sum += red[w][t];
    const int row = ((int)blockIdx.x * R + t / 32) * 32 + t % 32;
    if (row < rows) y[row] = V::st(sum);
  }
}

// Top-k activations without a host round trip: one block of 1024 threads finds the k-th largest
// |x_i| exactly (radix select over the bits of |x| in its own width: 16-bit keys take 2 passes of
// 8 bits, f32 4), then lists every x_i with |x_i| at least that (ties are all kept, as
// topk_threshold on the CPU does). A decoding activation has at most a few thousand entries:
// n <= 16 * 1024 here. Two costs set this kernel's time (27 us for 14336 values before): activations
// cluster in a few exponent bins, so histogram atomics collide (a warp adds once per distinct bin,
// via match_any), and the bin search is one warp's scan, not a thread's walk over 256 bins.
template <typename V>
__device__ __forceinline__ unsigned topk_abs_key(typename V::S v) {
  if constexpr (sizeof(typename V::S) == 2)
    return (unsigned)v & 0x7fffu;
  else
    return __float_as_uint(v) & 0x7fffffffu;
}
template <typename V>
__global__ void __launch_bounds__(1024)
    decode_topk_list(const typename V::S* __restrict__ x, int n, int k, int* __restrict__ act_idx,
                     typename V::S* __restrict__ act_val, unsigned* count, float* tau_out) {
  constexpr int kPer = 16;
  constexpr int kBits = sizeof(typename V::S) * 8;
  __shared__ unsigned hist[256];
  __shared__ unsigned prefix, want;
  const unsigned lane = threadIdx.x & 31u;
  unsigned key[kPer];
#pragma unroll
  for (int e = 0; e < kPer; ++e) {
    const int i = threadIdx.x + e * 1024;
    key[e] = i < n ? topk_abs_key<V>(x[i]) : 0u;
  }
  if (threadIdx.x == 0) {
    prefix = 0;
    want = (unsigned)(k < 1 ? 1 : k);
  }
#pragma unroll 1  // unrolled, f32's four passes spill under the 64 registers 1024 threads allow
  for (int shift = kBits - 8; shift >= 0; shift -= 8) {
    if (threadIdx.x < 256) hist[threadIdx.x] = 0;
    __syncthreads();
    const unsigned mask_hi = shift == kBits - 8 ? 0u : (0xffffffffu << (shift + 8));
    const unsigned pre = prefix;
#pragma unroll
    for (int e = 0; e < kPer; ++e) {
      const bool in = threadIdx.x + e * 1024 < n && (key[e] & mask_hi) == pre;
      const int bin = in ? (int)((key[e] >> shift) & 255u) : -1;
      const unsigned peers = __match_any_sync(0xffffffffu, bin);
      if (in && (unsigned)(__ffs(peers) - 1) == lane) atomicAdd(&hist[bin], (unsigned)__popc(peers));
    }
    __syncthreads();
    if (threadIdx.x < 32) {
      // Lane l holds bins 255-8l down to 248-8l; the lane whose descending prefix count reaches
      // `want` walks its eight bins.
      unsigned c[8], sum = 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) sum += c[j] = hist[255 - 8 * (int)lane - j];
      unsigned incl = sum;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const unsigned t = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= (unsigned)d) incl += t;
      }
      const unsigned w = want;
      const unsigned hit = __ballot_sync(0xffffffffu, incl >= w);
      // No lane reaches it only when fewer than k keys carry the prefix (k > n): take bin 0.
      const unsigned owner = hit ? (unsigned)(__ffs(hit) - 1) : 31u;
      if (lane == owner) {
        unsigned left = w - (incl - sum);
        int j = 0;
        for (; j < 7 && c[j] < left; ++j) left -= c[j];
        prefix = pre | ((unsigned)(255 - 8 * (int)lane - j) << shift);
        want = left;
      }
    }
    __syncthreads();
  }
  float tau;
  if constexpr (sizeof(typename V::S) == 2)
    tau = V::ld((typename V::S)prefix);
  else
    tau = __uint_as_float(prefix);
  if (threadIdx.x == 0 && tau_out) *tau_out = tau;
  const unsigned cut = prefix;
  if (!act_idx) return;  // threshold only: the consuming kernel applies it
#pragma unroll
  for (int e = 0; e < kPer; ++e) {
    const int i = threadIdx.x + e * 1024;
    const bool keep = i < n && key[e] >= cut && key[e] != 0u;
    const unsigned ballot = __ballot_sync(0xffffffffu, keep);
    unsigned at = 0;
    if (lane == 0 && ballot) at = atomicAdd(count, (unsigned)__popc(ballot));
    at = __shfl_sync(0xffffffffu, at, 0) + (unsigned)__popc(ballot & ((1u << lane) - 1u));
    if (keep) {
      act_idx[at] = i;
      act_val[at] = x[i];
    }
  }
}

}  // namespace dbs

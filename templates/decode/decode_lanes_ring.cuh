// decode_lanes_ring: lanes across rows on the column bitmap layout, each warp's segments brought into
// shared memory by cp.async through a ring of STAGES stages, so a warp has STAGES - 1 segments in
// flight while it sums one, and no registers hold loads in flight. It replaced decode_lanes (one
// segment in flight a warp, in registers), which it beat on every layer measured.
#pragma once
#include "decode_bitmap.cuh"

namespace dbs {

template <typename S>
__device__ __forceinline__ S lds_at(unsigned addr);
template <>
__device__ __forceinline__ unsigned short lds_at<unsigned short>(unsigned addr) {
  unsigned short v;
  asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(addr));
  return v;
}
template <>
__device__ __forceinline__ float lds_at<float>(unsigned addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr));
  return v;
}

// y = W · x, lanes across rows: block (strip t, split s) lists its chunk's kept
// columns with their segments' bounds (one round trip: x and seg_ptr are read together), then each
// warp takes every WARPS-th kept column. A column's 32 mask words and its values (whole 16-byte
// chunks) go by cp.async into one of the warp's STAGES stages; the warp sums column k from its stage
// while columns k + WARPS .. k + (STAGES - 1) * WARPS are in flight. Lane l sums row 32p + l of the
// strip in a[p]; its value is at the word's byte address plus the set bits below bit l.
// Why: decode_lanes held one segment in flight a warp in registers (80 registers, three blocks an
// SM) held too few bytes in flight: Little's law at ~4 TB/s wants ~48 KB in flight a SM, twice
// what it had (docs/decisions/decode-kernel-design.md).
// Dynamic shared memory: the list (16 bytes a column of the chunk), then WARPS * STAGES stages of
// 128 + 16 * stage_chunks bytes; at the end the warps' sums (WARPS * 4 KB) reuse it. stage_chunks is
// the plan's largest segment in 16-byte chunks (from an unaligned start).
template <typename V, int WARPS, int STAGES>
__global__ void __launch_bounds__(WARPS * 32, 4)
    decode_lanes_ring(const uint32_t* __restrict__ masks, const int32_t* __restrict__ seg_ptr,
                      const typename V::S* __restrict__ vals, const typename V::S* __restrict__ x, int cols, float tau,
                      const float* __restrict__ tau_dev, float* acc, unsigned* tickets, typename V::S* y, int rows,
                      int strips, int splits, int stage_chunks) {
  typedef typename V::S S;
  constexpr int kPer = 16 / (int)sizeof(S);  // values in a 16-byte chunk
  extern __shared__ __align__(16) uint4 dyn[];
  __shared__ __align__(16) uint2 words[WARPS][32];  // per warp: (mask word, byte address before its values)
  __shared__ unsigned nl;
  __shared__ bool last;
  const int t = blockIdx.x % strips, split = blockIdx.x / strips;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const float th = tau_dev ? *tau_dev : tau;
  const int chunk = (cols + splits - 1) / splits;
  const int c0 = split * chunk, c1 = min(cols, c0 + chunk);
  int4* list = reinterpret_cast<int4*>(dyn);  // (column, segment start, segment end, x bits)
  const int stage_bytes = 128 + 16 * stage_chunks;
  const unsigned ring =
      (unsigned)__cvta_generic_to_shared(dyn) + (unsigned)(chunk * 16) + warp * (unsigned)(STAGES * stage_bytes);
  const int n_kept = list_kept<WARPS>(c0, c1, list, &nl, [&](int c, int4& en) {
    const size_t seg = (size_t)c * strips + t;
    const float xf = V::ld(x[c]);
    const int o = seg_ptr[seg], e = seg_ptr[seg + 1];
    en = make_int4(c, o, e, __float_as_int(xf));
    return fabsf(xf) >= th && xf != 0.0f && e > o;  // an empty segment adds nothing
  });
  const unsigned shift = 31u - lane;  // bit l of a word to the sign bit, the bits below it kept
  float a[32];
#pragma unroll
  for (int p = 0; p < 32; ++p) a[p] = 0.0f;
  // Column kk into stage slot: lane l copies mask word l and every 32nd 16-byte chunk of the values.
  // One commit group a call, empty past the list, so the waits below count columns.
  auto issue = [&](int kk, int slot) {
    if (kk < n_kept) {
      const int4 en = list[kk];
      const unsigned dst = ring + (unsigned)(slot * stage_bytes);
      const uint32_t* msrc = masks + ((size_t)en.x * strips + t) * 32 + lane;
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst + lane * 4u), "l"(msrc));
      const int first = en.y & ~(kPer - 1), nch = (en.z - first + kPer - 1) / kPer;
      const uint4* src = reinterpret_cast<const uint4*>(vals + first);
      for (int ch = (int)lane; ch < nch; ch += 32)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst + 128u + (unsigned)ch * 16u), "l"(src + ch));
    }
    asm volatile("cp.async.commit_group;");
  };
  int k = (int)warp, slot = 0;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) issue(k + s * WARPS, s);
  for (; k < n_kept; k += WARPS) {
    issue(k + (STAGES - 1) * WARPS, slot == 0 ? STAGES - 1 : slot - 1);    // the stage summed last time
    asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 1) : "memory");  // column k's group is in
    __syncwarp();
    const int4 en = list[k];
    const float xv = __int_as_float(en.w);
    const unsigned st = ring + (unsigned)(slot * stage_bytes);
    uint32_t m;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(m) : "r"(st + lane * 4u));
    int total;
    const int pre = warp_exclusive_prefix(__popc(m), (int)lane, total);
    const int first = en.y & ~(kPer - 1);
    // - 1: the rank below counts the lane's own bit.
    words[warp][lane] = make_uint2(m, st + 128u + (unsigned)((en.y - first + pre - 1) * (int)sizeof(S)));
    __syncwarp();
    const uint4* wp = reinterpret_cast<const uint4*>(words[warp]);
#pragma unroll
    for (int q = 0; q < 16; ++q) {
      const uint4 w = wp[q];
      unsigned tt = w.x << shift;
      if ((int)tt < 0) a[2 * q] += V::ld(lds_at<S>(w.y + (unsigned)__popc(tt) * (unsigned)sizeof(S))) * xv;
      tt = w.z << shift;
      if ((int)tt < 0) a[2 * q + 1] += V::ld(lds_at<S>(w.w + (unsigned)__popc(tt) * (unsigned)sizeof(S))) * xv;
    }
    __syncwarp();  // the stage and words are rewritten next
    slot = slot + 1 == STAGES ? 0 : slot + 1;
  }
  asm volatile("cp.async.wait_all;" ::: "memory");
  __syncthreads();  // the list and stages are dead: the sums take their place
  const int row0 = t * 1024, n = min(1024, rows - row0);
  if (n_kept > 0) red_strip_sums<WARPS>(a, reinterpret_cast<float*>(dyn), acc, row0, n, lane, warp);
  finish_strip<V, WARPS * 32>(acc, tickets, y, t, row0, n, splits, &last);
}

}  // namespace dbs

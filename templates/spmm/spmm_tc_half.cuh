// BRP-SpMM's tensor core kernel in f16 and bf16: brp_tc_windows (spmm_tc.cuh) with
// mma.m16n8k16.row.col.f32.{f16,bf16} in place of m16n8k8 TF32. The work split, the reduction
// across warps, the long windows' second pass and the expanded operands are the same; what
// differs is that one mma takes two of a group's 16 x 8 blocks (k 0..7 and 8..15, g = 1 padded
// with zeros: abi/spmm.h, brp_afrag16_index), so a group is ceil(g / 2) mma, and A needs no
// conversion (the format's values are already 16-bit), and windows cut into pieces are summed in
// an f32 workspace (abi::SpmmAcc) rather than added into C. Sums are f32; C is rounded once per
// store (a residual row's entries, which brp_residual adds to later, twice).
// Needs sm_80 or later (bf16 mma and cvt.rn.bf16.f32).
#pragma once
#include "dbs_common.cuh"
#include "dbsparse/abi/spmm.h"
#include "mma16.cuh"
#include "value_types.cuh"

namespace dbs {

// Group q's ceil(g / 2) A operands, 16-bit in fragment order (zeros where no entry), into the
// warp's `afrag` (ceil(g / 2) * 32 uint4): entries come four at a time (8 bytes of values, four
// local ids in a word: 8gf is a multiple of 8, the value runs are 128-byte aligned and the id runs
// 32-byte aligned). Ends with a warp barrier.
template <int F, int G>
__device__ __forceinline__ void build_group_tile16(const dbsparse::abi::SpmmArgs& a, int q, int lane, uint4* afrag) {
  using namespace dbsparse::abi;
  constexpr int kNnz = kSpmmBlockSlots * G * F, kPairs = (G + 1) / 2;
  static_assert(kNnz % 4 == 0, "entries are read four at a time");
  unsigned short* tile = reinterpret_cast<unsigned short*>(afrag);
  for (int i = lane; i < kPairs * 32; i += 32) afrag[i] = make_uint4(0u, 0u, 0u, 0u);
  __syncwarp();
  const uint2* vals = reinterpret_cast<const uint2*>(reinterpret_cast<const unsigned short*>(a.group_vals) +
                                                     (size_t)q * a.value_stride);
  const unsigned* ids = reinterpret_cast<const unsigned*>(a.local_id + (size_t)q * a.local_stride);
  for (int c = lane; c < kNnz / 4; c += 32) {
    const uint2 v4 = vals[c];
    const unsigned id4 = ids[c];
    const unsigned short v[4] = {(unsigned short)(v4.x & 0xFFFFu), (unsigned short)(v4.x >> 16),
                                 (unsigned short)(v4.y & 0xFFFFu), (unsigned short)(v4.y >> 16)};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int lid = (int)((id4 >> (8 * j)) & 0xFFu);
      if (lid != kSpmmPadLocalId) tile[brp_afrag16_index(lid, 4 * c + j, F)] = v[j];
    }
  }
  __syncwarp();
}

// out[(q * ceil(g / 2) + p) * 32 + lane] = group q's pair p operand for `lane`, every group: a
// warp per group, built in shared memory as brp_tc_windows16<.., FRAGS = false> builds it.
template <typename V, int F, int G, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
    brp_expand_frags16(const dbsparse::abi::SpmmArgs a, uint4* out, int groups) {
  constexpr int kPairs = (G + 1) / 2;
  __shared__ uint4 afrag_all[WARPS][kPairs * 32];
  const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5);
  const int q = (int)blockIdx.x * WARPS + warp;
  if (q >= groups) return;
  build_group_tile16<F, G>(a, q, lane, afrag_all[warp]);
  for (int i = lane; i < kPairs * 32; i += 32) out[(size_t)q * kPairs * 32 + i] = afrag_all[warp][i];
}

// Two 16-bit values in one register, the lower-numbered in the low half (the ISA's packing).
__device__ __forceinline__ unsigned pack16(unsigned short lo, unsigned short hi) {
  return (unsigned)lo | ((unsigned)hi << 16);
}

// brp_tc_windows (spmm_tc.cuh) for 16-bit A, B and C; see there for the block's work, the
// reduction and PIECES / FRAGS. Per pair p, lane (gid, tig) reads B rows old_col_id of slots
// 2 tig and 2 tig + 1 of blocks 2p and 2p + 1 (b0..b3 of abi/spmm.h's mma16_b_row) at column
// 8t + gid. With g = 1 the second block does not exist: b1 stays 0 and A's k 8..15 are zero, so
// the padding adds exactly 0 (a B that is not loaded cannot bring an Inf or NaN into it).
// Windows cut into pieces (acc.slot[w] >= 0) are summed in f32 in acc.w, not in C: the first pass
// stores its partial there, PIECES adds with f32 atomics, spmm_finalize16 rounds C once.
template <typename V, int F, int G, int WARPS, bool PIECES, bool FRAGS>
__global__ void __launch_bounds__(WARPS * 32)
    brp_tc_windows16(const dbsparse::abi::SpmmArgs a, const dbsparse::abi::SpmmAcc acc) {
  using namespace dbsparse::abi;
  typedef typename V::S T;
  constexpr int kSlots = kSpmmBlockSlots * G, kChunk = 8, kPairs = (G + 1) / 2;
  __shared__ uint4 afrag_all[WARPS][FRAGS ? 1 : kPairs * 32];
  const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5);
  uint4* afrag = afrag_all[warp];
  const T* bm = reinterpret_cast<const T*>(a.b);
  const int tiles = (a.n + kSpmmTileCols - 1) / kSpmmTileCols, chunks = (tiles + kChunk - 1) / kChunk;
  const int windows = (a.m + kSpmmWindowRows - 1) / kSpmmWindowRows;
  const long long item = blockIdx.x;
  // block-uniform: the barrier of the reduction below sees every warp
  if (item >= (long long)(PIECES ? a.n_pieces : windows) * chunks) return;
  const int unit = (int)(item / chunks), t0 = (int)(item % chunks) * kChunk, nt = min(kChunk, tiles - t0);
  const int w = PIECES ? a.pieces[3 * unit] : unit;
  const int qb = PIECES ? a.pieces[3 * unit + 1] : a.win_group[w];
  const int q1 = PIECES ? a.pieces[3 * unit + 2] : min(a.win_group[w + 1], qb + a.max_run);
  const int slot = acc.slot ? acc.slot[w] : -1;  // block-uniform; >= 0 for every piece
  float d[kChunk][4];
#pragma unroll
  for (int t = 0; t < kChunk; ++t) d[t][0] = d[t][1] = d[t][2] = d[t][3] = 0.0f;
  for (int q = qb + warp; q < q1; q += WARPS) {
    if constexpr (!FRAGS) build_group_tile16<F, G>(a, q, lane, afrag);
    const int* cols = a.old_col + (size_t)q * kSlots;
#pragma unroll
    for (int p = 0; p < kPairs; ++p) {
      const uint4 af = FRAGS ? __ldg(reinterpret_cast<const uint4*>(a.afrag) + ((size_t)q * kPairs + p) * 32 + lane)
                             : afrag[p * 32 + lane];
      // k row r of the pair is slot r % 8 of block 2p + r / 8.
      const T* r0 = bm + (size_t)cols[2 * p * kSpmmBlockSlots + mma16_b_row(lane, 0)] * a.n;
      const T* r1 = bm + (size_t)cols[2 * p * kSpmmBlockSlots + mma16_b_row(lane, 1)] * a.n;
      constexpr bool kSecond = G > 1;  // block 2p + 1 exists (G is 1 or even)
      const T* r2 = kSecond ? bm + (size_t)cols[2 * p * kSpmmBlockSlots + mma16_b_row(lane, 2)] * a.n : bm;
      const T* r3 = kSecond ? bm + (size_t)cols[2 * p * kSpmmBlockSlots + mma16_b_row(lane, 3)] * a.n : bm;
#pragma unroll
      for (int t = 0; t < kChunk; ++t) {
        if (t >= nt) break;  // warp-uniform: every lane reaches each mma
        const int n = (t0 + t) * kSpmmTileCols + mma16_b_col(lane);
        const bool live = n < a.n;  // the last tile of an n that is not a multiple of 8
        const unsigned b0 = live ? pack16(__ldg(r0 + n), __ldg(r1 + n)) : 0u;
        const unsigned b1 = (kSecond && live) ? pack16(__ldg(r2 + n), __ldg(r3 + n)) : 0u;
        MmaK16<V>::run(d[t], af, b0, b1);
      }
    }
    if constexpr (!FRAGS) __syncwarp();  // the next group rewrites the tile
  }
  if constexpr (WARPS > 1) {
    // As in brp_tc_windows: warps 1.. hand their sums to warp 0 one at a time, lane-major.
    __shared__ float part[kChunk * 4][32];
    for (int o = 1; o < WARPS; ++o) {
      if (warp == o) {
#pragma unroll
        for (int t = 0; t < kChunk; ++t)
#pragma unroll
          for (int i = 0; i < 4; ++i) part[t * 4 + i][lane] = d[t][i];
      }
      __syncthreads();
      if (warp == 0) {
#pragma unroll
        for (int t = 0; t < kChunk; ++t)
#pragma unroll
          for (int i = 0; i < 4; ++i) d[t][i] += part[t * 4 + i][lane];
      }
      __syncthreads();
    }
    if (warp > 0) return;
  }
  T* cm = reinterpret_cast<T*>(a.c);
  const int row0 = w * kSpmmWindowRows;
#pragma unroll
  for (int t = 0; t < kChunk; ++t) {
    if (t >= nt) break;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = row0 + mma_c_row(lane, i), col = (t0 + t) * kSpmmTileCols + mma_c_col(lane, i);
      if (row < a.m && col < a.n) {
        T* out = cm + (size_t)row * a.n + col;
        if (slot >= 0) {
          float* wout = acc.w + ((size_t)slot * kSpmmWindowRows + mma_c_row(lane, i)) * a.n + col;
          if (!PIECES)
            *wout = d[t][i];  // every entry of the window: w needs no zeroing
          else if (d[t][i] != 0.0f)
            atomicAdd(wout, d[t][i]);
        } else if (!PIECES) {
          // beta == 0 never reads C, so NaNs there do not survive.
          *out = V::st(a.beta == 0.0f ? a.alpha * d[t][i] : a.alpha * d[t][i] + a.beta * V::ld(*out));
        }
      }
    }
  }
}

}  // namespace dbs

// BRP-SpMM's tensor core kernel (IPDPS 2025, slides 20-21): a warp per row window and up to
// 64 columns of B and C, g mma.m16n8k8 in TF32 per group, all the window's groups summed in the
// same registers, then one plain store per C entry. Fragment layouts:
// include/dbsparse/abi/spmm.h. Needs sm_80 or later.
#pragma once
#include "dbs_common.cuh"
#include "dbsparse/abi/spmm.h"

namespace dbs {

// f32 to tf32 (round to nearest, ties away), the bits as mma expects them.
__device__ __forceinline__ unsigned to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// d += A * B for one m16n8k8 tile: A (16 x 8) and B (8 x 8) as tf32 fragments, d in f32.
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint4& a, unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}

// Group q's g A operands, tf32 in fragment order (zeros where no entry), into the warp's `afrag`
// (g * 32 uint4): entries come four at a time (a float4 of values, four local ids in a word: 8gf
// is a multiple of 4 and the runs are 128- and 32-byte aligned). Ends with a warp barrier.
template <int F, int G>
__device__ __forceinline__ void build_group_tile(const dbsparse::abi::SpmmArgs& a, int q, int lane, uint4* afrag) {
  using namespace dbsparse::abi;
  constexpr int kNnz = kSpmmBlockSlots * G * F;
  static_assert(kNnz % 4 == 0, "entries are read four at a time");
  unsigned* tile = reinterpret_cast<unsigned*>(afrag);
  for (int i = lane; i < G * 32; i += 32) afrag[i] = make_uint4(0u, 0u, 0u, 0u);
  __syncwarp();
  const float4* vals = reinterpret_cast<const float4*>(a.group_vals + (size_t)q * a.value_stride);
  const unsigned* ids = reinterpret_cast<const unsigned*>(a.local_id + (size_t)q * a.local_stride);
  for (int c = lane; c < kNnz / 4; c += 32) {
    const float4 v4 = vals[c];
    const unsigned id4 = ids[c];
    const float v[4] = {v4.x, v4.y, v4.z, v4.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int lid = (int)((id4 >> (8 * j)) & 0xFFu);
      if (lid != kSpmmPadLocalId) tile[brp_afrag_index(lid, 4 * c + j, F)] = to_tf32(v[j]);
    }
  }
  __syncwarp();
}

// out[(q * g + b) * 32 + lane] = group q's block b operand for `lane`, every group: a warp per group,
// built in shared memory as brp_tc_windows<.., FRAGS = false> builds it, then copied out.
template <int F, int G, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
    brp_expand_frags(const dbsparse::abi::SpmmArgs a, uint4* out, int groups) {
  __shared__ uint4 afrag_all[WARPS][G * 32];
  const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5);
  const int q = (int)blockIdx.x * WARPS + warp;
  if (q >= groups) return;
  build_group_tile<F, G>(a, q, lane, afrag_all[warp]);
  for (int i = lane; i < G * 32; i += 32) out[(size_t)q * G * 32 + i] = afrag_all[warp][i];
}

// C[window rows] = alpha * (the window's groups) * B + beta * C[window rows]: a block per (row
// window, chunk of up to 8 column tiles), every window (one without groups gets beta * C), so C is
// written once, with plain stores, and the residual kernel adds into it afterwards. The block's
// WARPS warps take every WARPS-th group and add their sums in shared memory at the end: a 4096-row
// matrix has only 256 windows, and a warp per window left most of the GPU idle
// (docs/decisions/spmm-kernel-design.md). Per group the
// warp puts the 8gf entries into its own 16 x 8g A tile in shared memory (zero elsewhere),
// converted to tf32 and in fragment order (brp_afrag_index, build_group_tile), so block b's A
// operand is one 16-byte load per lane. Per TC block, lane
// (gid, tig) reads B rows old_col_id[8b + tig] and [8b + tig + 4] at column 8t + gid for each tile
// t of the chunk, and the window's products accumulate in d across all its groups. Why: the first
// version ran a block per group and added every group's 16 x n tile into C with atomics (and
// scaled C by beta in a pass before), well behind cuSPARSE (docs/decisions/spmm-kernel-design.md).
// PIECES: the second pass over the long windows' remaining group runs (a.pieces), added into C
// with atomics after the first pass has stored every entry: one warp walking a hub window's
// thousands of groups outlasted the rest (docs/decisions/spmm-kernel-design.md).
// FRAGS: the A operands come ready from a.afrag (brp_expand_frags, once per plan): no tile build
// and no shared memory per group. The build is serial latency (zero, scatter, two warp barriers)
// that the window's groups pay one after another; at f >= 4 the expanded operands cost at most
// 4x the values' bytes (16 x 8 per block against 8f entries), at f = 1 16x.
template <int F, int G, int WARPS, bool PIECES, bool FRAGS>
__global__ void __launch_bounds__(WARPS * 32) brp_tc_windows(const dbsparse::abi::SpmmArgs a) {
  using namespace dbsparse::abi;
  constexpr int kSlots = kSpmmBlockSlots * G, kChunk = 8;
  __shared__ uint4 afrag_all[WARPS][FRAGS ? 1 : G * 32];
  const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5);
  uint4* afrag = afrag_all[warp];
  const int tiles = (a.n + kSpmmTileCols - 1) / kSpmmTileCols, chunks = (tiles + kChunk - 1) / kChunk;
  const int windows = (a.m + kSpmmWindowRows - 1) / kSpmmWindowRows;
  const long long item = blockIdx.x;
  // block-uniform: the barrier of the reduction below sees every warp
  if (item >= (long long)(PIECES ? a.n_pieces : windows) * chunks) return;
  const int unit = (int)(item / chunks), t0 = (int)(item % chunks) * kChunk, nt = min(kChunk, tiles - t0);
  const int w = PIECES ? a.pieces[3 * unit] : unit;
  const int qb = PIECES ? a.pieces[3 * unit + 1] : a.win_group[w];
  const int q1 = PIECES ? a.pieces[3 * unit + 2] : min(a.win_group[w + 1], qb + a.max_run);
  float d[kChunk][4];
#pragma unroll
  for (int t = 0; t < kChunk; ++t) d[t][0] = d[t][1] = d[t][2] = d[t][3] = 0.0f;
  for (int q = qb + warp; q < q1; q += WARPS) {
    if constexpr (!FRAGS) build_group_tile<F, G>(a, q, lane, afrag);
    const int* cols = a.old_col + (size_t)q * kSlots;
#pragma unroll
    for (int b = 0; b < G; ++b) {
      const uint4 af = FRAGS ? __ldg(reinterpret_cast<const uint4*>(a.afrag) + ((size_t)q * G + b) * 32 + lane)
                             : afrag[b * 32 + lane];
      const float* r0 = a.b + (size_t)cols[b * kSpmmBlockSlots + mma_b_row(lane, 0)] * a.n;
      const float* r1 = a.b + (size_t)cols[b * kSpmmBlockSlots + mma_b_row(lane, 1)] * a.n;
#pragma unroll
      for (int t = 0; t < kChunk; ++t) {
        if (t >= nt) break;  // warp-uniform: every lane reaches each mma
        const int n = (t0 + t) * kSpmmTileCols + mma_b_col(lane);
        const bool live = n < a.n;  // the last tile of an n that is not a multiple of 8
        const unsigned b0 = live ? to_tf32(__ldg(r0 + n)) : 0u;
        const unsigned b1 = live ? to_tf32(__ldg(r1 + n)) : 0u;
        mma_tf32(d[t], af, b0, b1);
      }
    }
    if constexpr (!FRAGS) __syncwarp();  // the next group rewrites the tile
  }
  if constexpr (WARPS > 1) {
    // Warps 1.. hand their sums to warp 0 one at a time through 4 KB of shared memory (all at
    // once would pass the 48 KB of static shared memory with the tiles at 8 warps, g = 8),
    // lane-major so the stores and loads are conflict-free; warp 0 writes C.
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
  const int row0 = w * kSpmmWindowRows;
#pragma unroll
  for (int t = 0; t < kChunk; ++t) {
    if (t >= nt) break;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = row0 + mma_c_row(lane, i), col = (t0 + t) * kSpmmTileCols + mma_c_col(lane, i);
      if (row < a.m && col < a.n) {
        float* out = a.c + (size_t)row * a.n + col;
        if (PIECES) {
          if (d[t][i] != 0.0f) atomicAdd(out, a.alpha * d[t][i]);
        } else {
          // beta == 0 never reads C, so NaNs there do not survive.
          *out = a.beta == 0.0f ? a.alpha * d[t][i] : a.alpha * d[t][i] + a.beta * *out;
        }
      }
    }
  }
}

}  // namespace dbs

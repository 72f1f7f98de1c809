// BRP-SpMM's tensor core kernel (brp-spmm-ipdps25-slides 20-21): a thread block per TC group, a
// warp per 8 columns of B and C, g mma.m16n8k8 in TF32 summed in the same registers, then one
// atomic add per C entry (a window's groups are in different blocks). Fragment layouts:
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

// C[window rows] += alpha * group * B[old_col_id rows] for group blockIdx.x. The block first puts
// the group's 8gf entries into its 16 x 8g A tile in shared memory, zero elsewhere, converted to
// tf32 once for all warps and stored in fragment order (brp_afrag_index), so that each warp reads
// block b's A operand as one 16-byte load per lane. Entries come four at a time (a float4 of
// values, four local ids in a word): 8gf is a multiple of 8 and the runs are 128- and 32-byte
// aligned. Then warp w takes column tiles w, w + WARPS, ...: per TC block, lane (gid, tig) reads
// B rows old_col_id[8b + tig] and [8b + tig + 4] at column 8t + gid (four rows, 32 bytes each, per
// load), and the g products accumulate in d before a single write.
template <int F, int G, int WARPS>
__global__ void __launch_bounds__(WARPS * 32) brp_tc_groups(const dbsparse::abi::SpmmArgs a) {
  using namespace dbsparse::abi;
  constexpr int kThreads = WARPS * 32, kSlots = kSpmmBlockSlots * G, kNnz = kSlots * F;
  static_assert(kNnz % 4 == 0, "entries are read four at a time");
  __shared__ uint4 afrag[G * 32];
  __shared__ int cols[kSlots];
  const int q = (int)blockIdx.x;
  for (int i = (int)threadIdx.x; i < G * 32; i += kThreads) afrag[i] = make_uint4(0u, 0u, 0u, 0u);
  for (int s = (int)threadIdx.x; s < kSlots; s += kThreads) cols[s] = a.old_col[q * kSlots + s];
  __syncthreads();
  unsigned* tile = reinterpret_cast<unsigned*>(afrag);
  const float4* vals = reinterpret_cast<const float4*>(a.group_vals + (size_t)q * a.value_stride);
  const unsigned* ids = reinterpret_cast<const unsigned*>(a.local_id + (size_t)q * a.local_stride);
  for (int c = (int)threadIdx.x; c < kNnz / 4; c += kThreads) {
    const float4 v4 = vals[c];
    const unsigned id4 = ids[c];
    const float v[4] = {v4.x, v4.y, v4.z, v4.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int lid = (int)((id4 >> (8 * j)) & 0xFFu);
      if (lid != kSpmmPadLocalId) tile[brp_afrag_index(lid, 4 * c + j, F)] = to_tf32(v[j]);
    }
  }
  __syncthreads();
  const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5);
  const int row0 = a.group_window[q] * kSpmmWindowRows;
  const int tiles = (a.n + kSpmmTileCols - 1) / kSpmmTileCols;
  for (int t = warp; t < tiles; t += WARPS) {  // warp-uniform: every lane reaches each mma
    const int n = t * kSpmmTileCols + mma_b_col(lane);
    const bool live = n < a.n;  // the last tile of an n that is not a multiple of 8
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int b = 0; b < G; ++b) {
      const int k0 = cols[b * kSpmmBlockSlots + mma_b_row(lane, 0)];
      const int k1 = cols[b * kSpmmBlockSlots + mma_b_row(lane, 1)];
      const unsigned b0 = live ? to_tf32(__ldg(a.b + (size_t)k0 * a.n + n)) : 0u;
      const unsigned b1 = live ? to_tf32(__ldg(a.b + (size_t)k1 * a.n + n)) : 0u;
      mma_tf32(d, afrag[b * 32 + lane], b0, b1);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = row0 + mma_c_row(lane, i), col = t * kSpmmTileCols + mma_c_col(lane, i);
      // Rows of the window without an entry in this group sum to exactly 0: no atomic for them.
      if (row < a.m && col < a.n && d[i] != 0.0f) atomicAdd(a.c + (size_t)row * a.n + col, a.alpha * d[i]);
    }
  }
}

}  // namespace dbs

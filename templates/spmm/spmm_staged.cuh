// SpMM's staged windows (f32, float4; abi::SpmmStageArgs): a block per window of short rows that
// share B's rows. The block first copies the rows of B of the window's distinct columns into
// shared memory with cp.async (16 bytes a copy, no registers held while they fly, each row of B
// read from L2 once for the window), then each warp takes rows of the window and reads B from
// shared memory through the entries' slots. Worth it where a window's entries reuse its columns
// (entries / distinct columns, SpmmConfig::csr_stage_reuse); the plan sends every other row to
// csr_spmm_rows. LANES lanes cover N four values at a time, 32 / LANES subgroups the entries.
#pragma once
#include "dbs_common.cuh"
#include "dbsparse/abi/spmm.h"

namespace dbs {

template <int LANES>
__global__ void __launch_bounds__(dbsparse::abi::kSpmmStageWarps * 32)
    csr_spmm_staged(const dbsparse::abi::SpmmStageArgs s) {
  extern __shared__ float4 stage[];
  constexpr int S = 32 / LANES;
  const int w = blockIdx.x;
  const int c0 = s.win_col[w], distinct = s.win_col[w + 1] - c0;
  const int n4 = s.n >> 2;
  for (int q = threadIdx.x; q < distinct * n4; q += blockDim.x) {
    const int k = q / n4, j = q - k * n4;
    const float4* src = reinterpret_cast<const float4*>(s.b + (size_t)s.cols[c0 + k] * s.n) + j;
    const unsigned dst = (unsigned)__cvta_generic_to_shared(stage + q);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src));
  }
  asm volatile("cp.async.commit_group;");
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  const unsigned lane = threadIdx.x & 31u;
  const int sub = (int)lane / LANES, l = (int)lane % LANES;
  // warp-uniform loops: the shuffles see whole warps
  for (int r = s.win_row[w] + (int)(threadIdx.x >> 5); r < s.win_row[w + 1]; r += dbsparse::abi::kSpmmStageWarps) {
    const int p0 = s.ptr[r], p1 = s.ptr[r + 1];
    float* crow = s.c + (size_t)s.rows[r] * s.n;
    for (int j0 = 0; j0 < n4; j0 += LANES) {
      const int j = j0 + l;
      float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (j < n4)
        for (int p = p0 + sub; p < p1; p += S) {
          const float v = s.vals[p];
          const float4 bv = stage[(int)s.slot[p] * n4 + j];
          acc.x += v * bv.x;
          acc.y += v * bv.y;
          acc.z += v * bv.z;
          acc.w += v * bv.w;
        }
#pragma unroll
      for (int off = LANES; off < 32; off <<= 1) {
        acc.x += __shfl_xor_sync(kFull, acc.x, off);
        acc.y += __shfl_xor_sync(kFull, acc.y, off);
        acc.z += __shfl_xor_sync(kFull, acc.z, off);
        acc.w += __shfl_xor_sync(kFull, acc.w, off);
      }
      if (sub == 0 && j < n4) {
        float4* out = reinterpret_cast<float4*>(crow) + j;
        float4 v = make_float4(s.alpha * acc.x, s.alpha * acc.y, s.alpha * acc.z, s.alpha * acc.w);
        if (s.beta != 0.0f) {  // beta == 0 never reads C, so NaNs there do not survive
          const float4 old = *out;
          v.x += s.beta * old.x;
          v.y += s.beta * old.y;
          v.z += s.beta * old.z;
          v.w += s.beta * old.w;
        }
        *out = v;
      }
    }
  }
}

}  // namespace dbs

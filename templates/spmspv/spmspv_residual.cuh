// DB-SpMSpV's residual paths (include/dbsparse/db_matrix.hpp): push over the listed pieces and
// small column blocks, pull over the residual row segments. Included by spmspv.cuh.
#pragma once
#include "spmspv_prep.cuh"

namespace dbs {

// Push over the residual, large column blocks: a warp per listed piece (kResidualChunk entries of
// one column block's residual column view); lanes take consecutive entries, keep those whose column
// is active, and add into y. Lane j < 16 holds x of the block's column j for the others to shuffle
// from.
template <typename T, typename SR>
__device__ __forceinline__ void residual_push(const SpmspvArgs<T>& a, unsigned ntasks, int lane, int warp) {
  constexpr int kRounds = kResidualChunk / 32;
  const int nwarps = gridDim.x * kWarps;
  for (unsigned t = blockIdx.x * kWarps + warp; t < ntasks; t += nwarps) {
    const uint2 task = reinterpret_cast<const uint2*>(a.residual_tasks)[t];  // ResidualTask
    const unsigned cb = task.x, xm = a.xmask[cb];
    const T xv = lane < 16 && ((xm >> lane) & 1u) ? a.x[cb * 16 + lane] : SR::zero();
    const int begin = a.res_col_ptr[cb] + (int)task.y * kResidualChunk;
    const int end = min(a.res_col_ptr[cb + 1], begin + kResidualChunk);
    unsigned e[kRounds];
#pragma unroll
    for (int r = 0; r < kRounds; ++r) {
      const int k = begin + r * 32 + lane;
      e[r] = k < end ? a.res_cr[k] : 0xffffffffu;
    }
#pragma unroll
    for (int r = 0; r < kRounds; ++r) {
      const int k = begin + r * 32 + lane;
      const unsigned j = e[r] >> kResidualLocalShift;
      const T xj = shfl(xv, (int)j);
      if (k < end && ((xm >> j) & 1u)) {
        SR::atomic_add(&a.y[e[r] & kResidualIndexMask], SR::mul(a.res_col_val[k], xj));
        touch(a, (e[r] & kResidualIndexMask) >> 4);
      }
    }
  }
}

// Push over the residual, small column blocks (at most kResidualSmall entries, as in a stencil's
// few stray entries per column block): lane l holds task l of the warp's 32, their entries are
// numbered through warp_exclusive_prefix and owner_lane, and lane e takes entries e, e + 32, ...:
// one pass over 32 column blocks instead of a warp round trip for each.
template <typename T, typename SR>
__device__ __forceinline__ void residual_push_small(const SpmspvArgs<T>& a, unsigned ntasks, int lane, int warp) {
  const int nwarps = gridDim.x * kWarps;
  for (unsigned t0 = (blockIdx.x * kWarps + warp) * 32u; t0 < ntasks; t0 += 32u * nwarps) {
    const unsigned t = t0 + lane;
    unsigned cb = 0, xm = 0;
    int begin = 0, n = 0;
    if (t < ntasks) {
      cb = a.small_tasks[t].col_block;
      xm = a.xmask[cb];
      begin = a.res_col_ptr[cb];
      n = a.res_col_ptr[cb + 1] - begin;
    }
    int total;
    const int pre = warp_exclusive_prefix(n, lane, total);
    for (int e0 = 0; e0 < total; e0 += 32) {
      const int e = e0 + lane;
      const int o = owner_lane(pre, e);
      const int first = __shfl_sync(kFull, pre, o);
      const int obegin = __shfl_sync(kFull, begin, o);
      const unsigned ocb = __shfl_sync(kFull, cb, o), oxm = __shfl_sync(kFull, xm, o);
      if (e < total) {
        const int k = obegin + (e - first);
        const unsigned ent = a.res_cr[k], j = ent >> kResidualLocalShift;
        if ((oxm >> j) & 1u) {
          SR::atomic_add(&a.y[ent & kResidualIndexMask], SR::mul(a.res_col_val[k], a.x[ocb * 16 + j]));
          touch(a, (ent & kResidualIndexMask) >> 4);
        }
      }
    }
  }
}

// Pull over the residual: a warp per segment (up to kResidualChunk entries of one row block's
// residual row view). Each entry's column is tested against the x block masks before x or the
// value is read; row sums meet in 16 shared slots, then one write per row.
template <typename T, typename SR>
__device__ __forceinline__ void residual_pull(const SpmspvArgs<T>& a, T* slots, int lane, int warp) {
  constexpr int kRounds = kResidualChunk / 32;
  const int nwarps = gridDim.x * kWarps;
  for (int s = a.nblock_segments + blockIdx.x * kWarps + warp; s < a.nsegments; s += nwarps) {
    const int4 seg = reinterpret_cast<const int4*>(a.segments)[s];  // {row_block, first, end, alone}
    if (lane < 16) slots[lane] = SR::zero();
    unsigned e[kRounds];
#pragma unroll
    for (int r = 0; r < kRounds; ++r) {
      const int k = seg.y + r * 32 + lane;
      e[r] = k < seg.z ? a.res_rc[k] : 0xffffffffu;
    }
    unsigned on = 0;  // bit r: entry of round r is active
#pragma unroll
    for (int r = 0; r < kRounds; ++r) {
      const unsigned c = e[r] & kResidualIndexMask;
      if (e[r] != 0xffffffffu && ((a.xmask[c >> 4] >> (c & 15u)) & 1u)) on |= 1u << r;
    }
    __syncwarp();
#pragma unroll
    for (int r = 0; r < kRounds; ++r)
      if ((on >> r) & 1u) {
        const int k = seg.y + r * 32 + lane;
        SR::atomic_add(&slots[e[r] >> kResidualLocalShift], SR::mul(a.res_row_val[k], a.x[e[r] & kResidualIndexMask]));
      }
    __syncwarp();
    const int row = seg.x * 16 + lane;
    if (lane < 16 && row < a.rows) {
      const T v = slots[lane];
      if (seg.w)
        a.y[row] = v;
      else if (v != SR::zero())
        SR::atomic_add(&a.y[row], v);
    }
    __syncwarp();
  }
}

}  // namespace dbs

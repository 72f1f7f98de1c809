// DB-SpMSpV's block paths: push over the listed block chunks, pull over the row-block segments.
// Included by spmspv.cuh (after spmspv_prep.cuh: touch, RunInfo).
#pragma once
#include "spmspv_prep.cuh"

namespace dbs {

#ifndef DBS_PULL_COO_WARP
#define DBS_PULL_COO_WARP 0  // generated sources always set it (codegen/keys/spmspv_key.cpp)
#endif

// Block metadata is fetched for up to 32 blocks at once, one per lane, then handed to the whole
// warp block by block with shuffles: one memory round trip per batch instead of one per block.
__device__ __forceinline__ BlockMeta shfl_meta(const BlockMeta& mine, int src) {
  // Field by field: taking the struct's address would put it in local memory.
  BlockMeta out;
  out.row = __shfl_sync(kFull, mine.row, src);
  out.col = __shfl_sync(kFull, mine.col, src);
  out.val_off = __shfl_sync(kFull, mine.val_off, src);
  out.aux_off = __shfl_sync(kFull, mine.aux_off, src);
  const unsigned packed = __shfl_sync(kFull, unsigned(mine.nnz) | (unsigned(mine.type) << 16), src);
  out.nnz = static_cast<unsigned short>(packed & 0xffffu);
  out.type = static_cast<unsigned char>(packed >> 16);
  out.pad = 0;
  return out;
}

// COO blocks are too small to keep a warp busy (a 27-point stencil's are mostly single entries),
// so each lane walks the COO block it holds by itself and all of them overlap in one memory round
// trip; the warp-wide microkernels take the other types one block at a time.
template <typename T, typename SR>
__device__ __forceinline__ void coo_by_lane(const SpmspvArgs<T>& a, const BlockMeta& m, unsigned xm, const T* sx,
                                            T* out) {
  const unsigned char* aux = a.aux + m.aux_off;
  const T* val = a.values + m.val_off;
  for (int k = 0; k < m.nnz; ++k) {
    const unsigned b = aux[k], c = b & 15u;
    if ((xm >> c) & 1u) SR::atomic_add(&out[b >> 4], SR::mul(val[k], sx[c]));
  }
}

// The pull path's COO blocks walked by the whole warp: lane l holds block l of the segment pair
// (xm = 0 when it is not an active COO block); the blocks' entries are numbered through an
// exclusive prefix over the lanes and lane e takes entries e, e + 32, ..., so consecutive lanes read
// consecutive bytes and values of the same block (coalesced) instead of one block each at 32
// places (per-lane walks: most global sectors requested were excess,
// docs/decisions/spmspv-kernel-design.md). Each entry finds its block with owner_lane. Row r of lane
// o's block adds into scratch[16 * (o / 16) + r].
template <typename T, typename SR>
__device__ __forceinline__ void coo_by_warp(const SpmspvArgs<T>& a, const BlockMeta& mine, unsigned xm_mine,
                                            const T (*sxs)[16], T* scratch, int lane) {
  int total;
  const int pre = warp_exclusive_prefix(xm_mine ? mine.nnz : 0, lane, total);
  for (int e0 = 0; e0 < total; e0 += 32) {
    const int e = e0 + lane;
    const int o = owner_lane(pre, e);
    const int first = __shfl_sync(kFull, pre, o);
    const unsigned val_off = __shfl_sync(kFull, mine.val_off, o);
    const unsigned aux_off = __shfl_sync(kFull, mine.aux_off, o);
    const unsigned xm = __shfl_sync(kFull, xm_mine, o);
    if (e < total) {
      const int k = e - first;
      const unsigned b = a.aux[aux_off + k], c = b & 15u;
      if ((xm >> c) & 1u) SR::atomic_add(&scratch[16 * (o >> 4) + (b >> 4)], SR::mul(a.values[val_off + k], sxs[o][c]));
    }
  }
}

// Push over the blocks: the mask pass listed every chunk (up to kPushChunk blocks of one column
// block) of every non-empty x block. Lane l of warp w looks at task w + l * nwarps of each round,
// so the tasks spread over all warps. A warp then takes its tasks four at a time, lanes 8g..8g+7
// holding the blocks of the g-th: one memory round trip per four tasks rather than per task.
template <typename T, typename SR>
__device__ __forceinline__ void push_path(const SpmspvArgs<T>& a, unsigned ntasks, T (*sxs)[16], int lane, int warp) {
  static_assert(kPushChunk == 8, "a lane group of 8 holds one task's blocks");
  const int gwarp = blockIdx.x * kWarps + warp, nwarps = gridDim.x * kWarps;
  const int g = lane >> 3, k = lane & 7;
  for (long long base = gwarp; base < ntasks; base += 32LL * nwarps) {
    const long long t = base + (long long)lane * nwarps;
    uint2 task = make_uint2(0, 0);
    unsigned xm_lane = 0;
    if (t < ntasks) {
      task = reinterpret_cast<const uint2*>(a.block_tasks)[t];  // PushTask, one 8-byte load
      xm_lane = a.xmask[task.x & ((1u << kTaskCountShift) - 1u)];
    }
    if (xm_lane) {  // stage this task's x block, zeros where x is zero (Dense reads every column)
      const int col = (int)(task.x & ((1u << kTaskCountShift) - 1u));
#pragma unroll 4
      for (int c = 0; c < 16; ++c) sxs[lane][c] = ((xm_lane >> c) & 1u) ? a.x[col * 16 + c] : SR::zero();
    }
    __syncwarp();
    for (unsigned act = __ballot_sync(kFull, xm_lane != 0); act;) {
      unsigned rem = act;  // my group's task: the g-th remaining active lane
      for (int i = 0; i < g && rem; ++i) rem &= rem - 1;
      const int j = rem ? __ffs(rem) - 1 : 0;
      for (int i = 0; i < 4 && act; ++i) act &= act - 1;
      const unsigned tx = __shfl_sync(kFull, task.x, j);
      const int first = (int)__shfl_sync(kFull, task.y, j);
      const unsigned xm = __shfl_sync(kFull, xm_lane, j);
      const int nb = rem ? (int)(tx >> kTaskCountShift) + 1 : 0;
      BlockMeta mine{};
      if (k < nb) mine = a.meta[a.csc2csr[first + k]];
      unsigned rest = __ballot_sync(kFull, k < nb);
#if DBS_HAS_COO
      if (k < nb && mine.type == kCoo) {
        touch(a, (unsigned)mine.row);
        coo_by_lane<T, SR>(a, mine, xm, sxs[j], a.y + mine.row * 16);
      }
      rest &= ~__ballot_sync(kFull, k < nb && mine.type == kCoo);
#endif
      for (; rest; rest &= rest - 1) {
        const int src = __ffs(rest) - 1;
        const BlockMeta m = shfl_meta(mine, src);
        const unsigned xms = __shfl_sync(kFull, xm, src);
        const int js = __shfl_sync(kFull, j, src);
        const T v = block_product<T, SR>(m, xms, sxs[js], a.values, a.aux, lane);
        if (lane == 0) touch(a, (unsigned)m.row);
        const int row = m.row * 16 + lane;
        if (lane < 16 && row < a.rows && v != SR::zero()) SR::atomic_add(&a.y[row], v);
      }
    }
    __syncwarp();  // sxs is restaged by the next round
  }
}

// Pull: a warp takes two row-block segments at once (segments hold at most 16 blocks): lanes 0-15
// scan the first, lanes 16-31 the second, and lane 16h + r accumulates row r of segment h. All of
// the pair's x masks, metadata and x blocks are fetched in one round, COO blocks are walked by
// their own lanes, and only the other types take the warp one block at a time.
template <typename T, typename SR>
__device__ __forceinline__ void pull_path(const SpmspvArgs<T>& a, T (*sxs)[16], T* scratch, int lane, int warp) {
  const int nwarps = gridDim.x * kWarps;
  const int npairs = (a.nblock_segments + 1) / 2;
  const int half = lane >> 4, li = lane & 15;
  for (int p = blockIdx.x * kWarps + warp; p < npairs; p += nwarps) {
    const int s = 2 * p + half;
    // Segment {row_block, first, end, alone}, one 16-byte load.
    const int4 seg = s < a.nblock_segments ? reinterpret_cast<const int4*>(a.segments)[s] : make_int4(0, 0, 0, 0);
    const int b = seg.y + li;
    const int col = b < seg.z ? a.blk_col_idx[b] : 0;
    const unsigned xm_lane = b < seg.z ? a.xmask[col] : 0u;
    BlockMeta mine{};
    if (xm_lane) {
      mine = a.meta[b];
      for (unsigned q = xm_lane; q; q &= q - 1) {
        const int c = __ffs(q) - 1;
        sxs[lane][c] = a.x[col * 16 + c];
      }
    }
    unsigned active = __ballot_sync(kFull, xm_lane != 0);
    scratch[lane] = SR::zero();
    __syncwarp();
#if DBS_HAS_COO && DBS_PULL_COO_WARP
    coo_by_warp<T, SR>(a, mine, xm_lane && mine.type == kCoo ? xm_lane : 0u, sxs, scratch, lane);
    active &= ~__ballot_sync(kFull, xm_lane && mine.type == kCoo);
    __syncwarp();
#elif DBS_HAS_COO
    if (xm_lane && mine.type == kCoo) coo_by_lane<T, SR>(a, mine, xm_lane, sxs[lane], scratch + 16 * half);
    active &= ~__ballot_sync(kFull, xm_lane && mine.type == kCoo);
    __syncwarp();
#endif
    T acc = scratch[lane];
    __syncwarp();
    // One block ahead: a row-walk block's per-row aux (2 bytes + 2 per lane) is loaded before the
    // block before it computes, so its chain is one round trip, not two. Only those two registers
    // stay live across the compute (the block's metadata is shuffled in when it is its turn).
    unsigned base_next = 0, rm_next = 0;
    auto prefetch_aux = [&](int jn) {
      const unsigned type = __shfl_sync(kFull, unsigned(mine.type), jn);
      const unsigned aux_off = __shfl_sync(kFull, mine.aux_off, jn);
      if (is_row_walk(type)) csr_rows_aux(a.aux + aux_off, lane, base_next, rm_next);
    };
    if (active) prefetch_aux(__ffs(active) - 1);
    while (active) {
      const int j = __ffs(active) - 1;
      active &= active - 1;
      const unsigned base = base_next, rm = rm_next;
      if (active) prefetch_aux(__ffs(active) - 1);  // warp-uniform
      const BlockMeta m = shfl_meta(mine, j);
      const unsigned xm = __shfl_sync(kFull, xm_lane, j);
      // Inactive entries must read as zero: the Dense microkernel multiplies every column.
      if (lane < 16 && !((xm >> lane) & 1u)) sxs[j][lane] = SR::zero();
      __syncwarp();
      T v = is_row_walk(m.type) ? csr_rows_from<T, SR>(xm, sxs[j], a.values + m.val_off, rm, base, lane)
                                : block_product<T, SR>(m, xm, sxs[j], a.values, a.aux, lane);
      v = __shfl_sync(kFull, v, li);  // row r's sum, now in lanes r and 16 + r
      if ((j >> 4) == half) acc = SR::add(acc, v);
      __syncwarp();
    }
    const int row = seg.x * 16 + li;
    if (s < a.nblock_segments && row < a.rows) {
      if (seg.w)
        a.y[row] = acc;  // the only segment of its row block: one plain write
      else if (acc != SR::zero())
        SR::atomic_add(&a.y[row], acc);
    }
  }
}

}  // namespace dbs

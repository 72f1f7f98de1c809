// DB-SpMSpV: the global half of the two-level adaptivity. spmspv_prep builds the x block masks on
// the GPU, lists the push work of the non-empty x blocks, zeroes y and, in its last block, picks
// the direction; spmspv_compute reads that device-side flag and runs push or pull, over the blocks
// and then over the residual (db_matrix.hpp). No host round trip between them, so plan.run()
// never synchronises.
//
// Macros from the generated source: DBS_DIR (0 auto, 1 push only, 2 pull only),
// DBS_SEMIRING (the device functor: PlusTimes), DBS_HAS_{COO,DENSE,CSR,CSC} (block types present;
// absent ones are compiled out), DBS_PULL_COO_WARP (pull walks COO blocks warp-wide: coo_by_warp).
// Structs and constants shared with the host: include/dbsparse/abi/spmspv.h.
#pragma once
#include "spmspv_blocks.cuh"

#ifndef DBS_PULL_COO_WARP
#define DBS_PULL_COO_WARP 0  // generated sources always set it (codegen/spmspv_key.cpp)
#endif

namespace dbs {

// What compute needs from the mask pass: each part's direction and the lengths of the push lists.
struct RunInfo {
  unsigned dir, res_dir, block_tasks, residual_tasks, small_tasks;
};

struct PrepShared {
  unsigned warp_count[kWarps][4];
  unsigned total[3];
  unsigned base[3];
  bool emit_blocks, emit_residual;
};

// The 16-bit mask of x block b. Where x is 16-byte aligned, as four (f32) or eight (f64) 16-byte
// loads; a value is zero when its bits shifted left once are (+0 and -0 both).
template <typename T>
__device__ __forceinline__ unsigned xblock_mask(const SpmspvArgs<T>& a, int b, bool vec) {
  const int c0 = b * 16;
  unsigned m = 0;
  if (vec && c0 + 16 <= a.cols) {
    const uint4* p = reinterpret_cast<const uint4*>(a.x + c0);
    constexpr int kVecs = 16 * (int)sizeof(T) / 16;
    uint4 v[kVecs];
#pragma unroll
    for (int i = 0; i < kVecs; ++i) v[i] = p[i];
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (sizeof(T) == 4) {
        m |= (unsigned((v[i].x << 1) != 0u) | unsigned((v[i].y << 1) != 0u) << 1 |
              unsigned((v[i].z << 1) != 0u) << 2 | unsigned((v[i].w << 1) != 0u) << 3) << (4 * i);
      } else {
        m |= (unsigned((v[i].x | (v[i].y << 1)) != 0u) | unsigned((v[i].z | (v[i].w << 1)) != 0u) << 1) << (2 * i);
      }
    }
    return m;
  }
  for (int c = 0; c < 16 && c0 + c < a.cols; ++c) m |= unsigned(a.x[c0 + c] != T(0)) << c;
  return m;
}

// Each part's direction, from the call's counts. The blocks push while few x blocks are non-empty
// (their work follows the blocks visited); the residual pushes while few x entries are (its push
// reads the active column blocks' entries in order and adds only the active ones, its pull reads
// every entry and looks its column up at random).
template <typename T>
__device__ __forceinline__ unsigned block_direction(const SpmspvArgs<T>& a, unsigned nonempty) {
#if DBS_DIR == 1
  return kDirPush;
#elif DBS_DIR == 2
  return kDirPull;
#else
  return (float)nonempty < a.xb_threshold * (float)a.block_cols ? kDirPush : kDirPull;
#endif
}
// Without the residual's row view (no residual segments) the residual always pushes, even in the
// pull-only variant. The plan sets res_threshold to 2 then, above any density.
template <typename T>
__device__ __forceinline__ unsigned residual_direction(const SpmspvArgs<T>& a, unsigned xnnz) {
#if DBS_DIR == 1
  return kDirPush;
#elif DBS_DIR == 2
  return a.nsegments > a.nblock_segments ? kDirPull : kDirPush;
#else
  return (float)xnnz < a.res_threshold * (float)a.cols ? kDirPush : kDirPull;
#endif
}

// Exclusive scan over the thread block of (v0, v1, v2); the totals land in sh.total (visible after
// the caller's next barrier).
__device__ __forceinline__ void block_scan3(PrepShared& sh, unsigned& v0, unsigned& v1, unsigned& v2) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned i0 = v0, i1 = v1, i2 = v2;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned t0 = __shfl_up_sync(0xffffffffu, i0, o), t1 = __shfl_up_sync(0xffffffffu, i1, o),
                   t2 = __shfl_up_sync(0xffffffffu, i2, o);
    if (lane >= o) i0 += t0, i1 += t1, i2 += t2;
  }
  if (lane == 31) sh.warp_count[warp][1] = i0, sh.warp_count[warp][2] = i1, sh.warp_count[warp][3] = i2;
  __syncthreads();
  unsigned off0 = 0, off1 = 0, off2 = 0, tot0 = 0, tot1 = 0, tot2 = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) off0 += sh.warp_count[w][1], off1 += sh.warp_count[w][2], off2 += sh.warp_count[w][3];
    tot0 += sh.warp_count[w][1], tot1 += sh.warp_count[w][2], tot2 += sh.warp_count[w][3];
  }
  v0 = off0 + i0 - v0;
  v1 = off1 + i1 - v1;
  v2 = off2 + i2 - v2;
  __syncthreads();
  if (threadIdx.x == 0) sh.total[0] = tot0, sh.total[1] = tot1, sh.total[2] = tot2;
}

// The mask pass: x block masks, y = 0, the counts of non-empty x blocks and of x nonzeros and,
// while push can still be taken, the push lists: for every non-empty x block, its column block's
// blocks in chunks of kPushChunk, and its residual column entries (one small task when there are at
// most kResidualSmall, else pieces of kResidualChunk). So push's work follows the active columns,
// not the matrix. A thread owns one x block (16 columns) per round.
//
// One round of atomics per thread block round: thread 0 adds the round's counts and its task
// counts together and gets every base back at once (each dependent round trip to L2 was about a
// microsecond of the pass at low density: Nsight Compute, H200, 2026-11-30). The round then writes
// its tasks only while its part can still push: a part pushes iff its final count stays below the
// limit, and every partial count is at most the final one, so whenever push is taken every round
// wrote its tasks and the lists are whole. Rounds that did not write still added their task counts,
// but then that part does not push and its list is never read; no round writes past the capacity,
// since each x block adds its tasks once.
template <typename T>
__device__ __forceinline__ void prep_body(const SpmspvArgs<T>& a, PrepShared& sh, SpmspvCounters* cnt) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  // y starts at zero: push adds into it and pull adds where a row block spans segments. Issued
  // first, so the stores drain while the x loads are in flight; 16-byte stores where y is aligned.
  {
    const int stride = gridDim.x * blockDim.x, first = blockIdx.x * blockDim.x + threadIdx.x;
    constexpr int kPer = 16 / (int)sizeof(T);
    int done = 0;
    if ((reinterpret_cast<unsigned long long>(a.y) & 15ull) == 0) {
      const int nvec = a.rows / kPer;
      for (int v = first; v < nvec; v += stride) reinterpret_cast<uint4*>(a.y)[v] = make_uint4(0u, 0u, 0u, 0u);
      done = nvec * kPer;
    }
    for (int r = done + first; r < a.rows; r += stride) a.y[r] = T(0);
  }
  const bool vec = (reinterpret_cast<unsigned long long>(a.x) & 15ull) == 0;
  for (int base = blockIdx.x * blockDim.x; base < a.block_cols; base += gridDim.x * blockDim.x) {
    const int b = base + threadIdx.x;
    const unsigned xm = b < a.block_cols ? xblock_mask(a, b, vec) : 0u;
    if (b < a.block_cols) a.xmask[b] = static_cast<unsigned short>(xm);
    if (!__syncthreads_or(xm != 0u)) continue;  // nothing to count or list in this round
    // This x block's push work, listed or not (see above).
    unsigned nb = 0, nr = 0, ns = 0, bfirst = 0, bend = 0;
    if (xm) {
#if DBS_DIR != 2
      bfirst = (unsigned)a.blk_col_ptr[b];
      bend = (unsigned)a.blk_col_ptr[b + 1];
      nb = (bend - bfirst + kPushChunk - 1) / kPushChunk;
#endif
      const unsigned rcount = (unsigned)(a.res_col_ptr[b + 1] - a.res_col_ptr[b]);
      ns = rcount != 0u && rcount <= (unsigned)kResidualSmall;
      nr = ns ? 0u : (rcount + kResidualChunk - 1) / kResidualChunk;
    }
    unsigned n = __popc(__ballot_sync(kFull, xm != 0u)), nx = __popc(xm);
#pragma unroll
    for (int o = 16; o; o >>= 1) nx += __shfl_xor_sync(kFull, nx, o);
    if (lane == 0) sh.warp_count[warp][0] = n;
    unsigned ob = nb, orr = nr, os = ns;
    block_scan3(sh, ob, orr, os);  // its barriers also publish warp_count[w][0]
    unsigned tn = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) tn += sh.warp_count[w][0];
    // x nonzeros, per warp then per block: a shuffle sum above, a shared atomic here.
    if (threadIdx.x == 0) sh.base[0] = 0;
    __syncthreads();
    if (lane == 0) atomicAdd(&sh.base[0], nx);
    __syncthreads();
    if (threadIdx.x == 0) {
      const unsigned tx = sh.base[0], tb = sh.total[0], tr = sh.total[1], ts = sh.total[2];
      const unsigned before_n = atomicAdd(&cnt->nonempty, tn);
      const unsigned before_x = atomicAdd(&cnt->xnnz, tx);
      sh.base[0] = tb ? atomicAdd(&cnt->block_tasks, tb) : 0u;
      sh.base[1] = tr ? atomicAdd(&cnt->residual_tasks, tr) : 0u;
      sh.base[2] = ts ? atomicAdd(&cnt->small_tasks, ts) : 0u;
      sh.emit_blocks = block_direction(a, before_n + tn) == kDirPush;
      sh.emit_residual = residual_direction(a, before_x + tx) == kDirPush;
    }
    __syncthreads();
    if (sh.emit_blocks)
      for (unsigned i = 0; i < nb; ++i) {
        const unsigned first = bfirst + i * kPushChunk, blocks = min(bend - first, (unsigned)kPushChunk);
        PushTask t;
        t.col_and_count = (unsigned)b | ((blocks - 1u) << kTaskCountShift);
        t.first = first;
        a.block_tasks[sh.base[0] + ob + i] = t;
      }
    if (sh.emit_residual) {
      for (unsigned i = 0; i < nr; ++i) {
        ResidualTask t;
        t.col_block = (unsigned)b;
        t.piece = i;
        a.residual_tasks[sh.base[1] + orr + i] = t;
      }
      if (ns) {
        ResidualTask t;
        t.col_block = (unsigned)b;
        t.piece = 0;
        a.small_tasks[sh.base[2] + os] = t;
      }
    }
    __syncthreads();  // sh is reused by the next round
  }
}

// The call's directions and list lengths from its counts (prep's last block, or every block of the
// fused kernel after its barrier).
template <typename T>
__device__ __forceinline__ RunInfo run_info(const SpmspvArgs<T>& a, const volatile SpmspvCounters* c) {
  return RunInfo{block_direction(a, c->nonempty), residual_direction(a, c->xnnz), c->block_tasks,
                 c->residual_tasks, c->small_tasks};
}

template <typename T>
__global__ void __launch_bounds__(kWarps * 32) spmspv_prep(SpmspvArgs<T> a) {
  __shared__ PrepShared sh;
  SpmspvState* st = a.state;
  prep_body(a, sh, &st->acc);
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&st->prep_ticket, 1u) == gridDim.x - 1) {  // last block: all counted
      __threadfence();
      const volatile SpmspvCounters* acc = &st->acc;
      const RunInfo r = run_info(a, acc);
      st->direction = r.dir;
      st->res_direction = r.res_dir;
      st->run.block_tasks = r.block_tasks;
      st->run.residual_tasks = r.residual_tasks;
      st->run.small_tasks = r.small_tasks;
      st->last_direction = r.dir;
      st->last_res_direction = r.res_dir;
      st->last_nonempty = acc->nonempty;
      // Every other block has finished its atomics (they precede its ticket): reset for next run.
      st->acc.nonempty = 0;
      st->acc.xnnz = 0;
      st->acc.block_tasks = 0;
      st->acc.residual_tasks = 0;
      st->acc.small_tasks = 0;
      st->prep_ticket = 0;
      __threadfence();
    }
  }
}

// run_sparse_out: the first add into a row block lists it, so the output pass visits only the
// row blocks push touched. A no-op for dense output (a.ytouched null).
template <typename T>
__device__ __forceinline__ void touch(const SpmspvArgs<T>& a, unsigned rb) {
  if (a.ytouched == nullptr) return;
  const unsigned bit = 1u << (rb & 31u);
  unsigned* w = a.ytouched + (rb >> 5);
  if ((*(volatile unsigned*)w & bit) == 0u && (atomicOr(w, bit) & bit) == 0u)
    a.ylist[atomicAdd(&a.state->ycount, 1u)] = (int)rb;
}

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
__device__ __forceinline__ void coo_by_lane(const SpmspvArgs<T>& a, const BlockMeta& m, unsigned xm,
                                            const T* sx, T* out) {
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
// places (Nsight Compute on the H200, 7-point stencil at x density 0.1, per-lane walks: 77% of the
// global sectors requested were excess). Each entry finds its block by a binary search over the
// prefix held in the lanes (5 shuffles). Row r of lane o's block adds into scratch[16 * (o / 16) + r].
template <typename T, typename SR>
__device__ __forceinline__ void coo_by_warp(const SpmspvArgs<T>& a, const BlockMeta& mine, unsigned xm_mine,
                                            const T (*sxs)[16], T* scratch, int lane) {
  const int n = xm_mine ? mine.nnz : 0;
  int pre = n;  // inclusive prefix, then exclusive
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int t = __shfl_up_sync(kFull, pre, o);
    if (lane >= o) pre += t;
  }
  const int total = __shfl_sync(kFull, pre, 31);
  pre -= n;
  for (int e0 = 0; e0 < total; e0 += 32) {
    const int e = e0 + lane;
    int o = 0;  // the last lane whose first entry is <= e: the owner (empty lanes never are)
#pragma unroll
    for (int step = 16; step; step >>= 1) {
      const int cand = __shfl_sync(kFull, pre, o + step);
      if (cand <= e) o += step;
    }
    const int first = __shfl_sync(kFull, pre, o);
    const unsigned val_off = __shfl_sync(kFull, mine.val_off, o);
    const unsigned aux_off = __shfl_sync(kFull, mine.aux_off, o);
    const unsigned xm = __shfl_sync(kFull, xm_mine, o);
    if (e < total) {
      const int k = e - first;
      const unsigned b = a.aux[aux_off + k], c = b & 15u;
      if ((xm >> c) & 1u)
        SR::atomic_add(&scratch[16 * (o >> 4) + (b >> 4)], SR::mul(a.values[val_off + k], sxs[o][c]));
    }
  }
}

// Push over the blocks: the mask pass listed every chunk (up to kPushChunk blocks of one column
// block) of every non-empty x block. Lane l of warp w looks at task w + l * nwarps of each round,
// so the tasks spread over all warps. A warp then takes its tasks four at a time, lanes 8g..8g+7
// holding the blocks of the g-th: one memory round trip per four tasks rather than per task.
template <typename T, typename SR>
__device__ __forceinline__ void push_path(const SpmspvArgs<T>& a, unsigned ntasks, T (*sxs)[16], int lane,
                                          int warp) {
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
__device__ __forceinline__ void pull_path(const SpmspvArgs<T>& a, T (*sxs)[16], T* scratch, int lane,
                                          int warp) {
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
      if (seg.w) a.y[row] = acc;  // the only segment of its row block: one plain write
      else if (acc != SR::zero()) SR::atomic_add(&a.y[row], acc);
    }
  }
}

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
// numbered through an exclusive prefix over the lanes, and lane e takes entries e, e + 32, ...: one
// pass over 32 column blocks instead of a warp round trip for each.
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
    int pre = n;  // inclusive prefix, then exclusive
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_up_sync(kFull, pre, o);
      if (lane >= o) pre += v;
    }
    const int total = __shfl_sync(kFull, pre, 31);
    pre -= n;
    for (int e0 = 0; e0 < total; e0 += 32) {
      const int e = e0 + lane;
      int o = 0;  // the last lane whose first entry is <= e: the owner (empty lanes never are)
#pragma unroll
      for (int step = 16; step; step >>= 1) {
        const int cand = __shfl_sync(kFull, pre, o + step);
        if (cand <= e) o += step;
      }
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
      if (seg.w) a.y[row] = v;
      else if (v != SR::zero()) SR::atomic_add(&a.y[row], v);
    }
    __syncwarp();
  }
}

// Both paths, after the direction is known. Shared memory lives in the kernels.
template <typename T>
struct ComputeShared {
  T sxs[kWarps][32][16];      // one staged x block per lane: its pull block or its push task
#if DBS_DIR != 1
  T scratch[kWarps][32];      // pull: COO partials of the warp's two segments; residual row sums
#endif
};

// Pull rows write y without atomics only where no other segment, and no residual entry, touches
// their row block (Segment::alone, from the plan), so the two parts may take different directions
// in one call.
template <typename T>
__device__ __forceinline__ void compute_body(const SpmspvArgs<T>& a, ComputeShared<T>& sh, const RunInfo& run) {
  using SR = DBS_SEMIRING<T>;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#if DBS_DIR != 2
  if (run.dir == kDirPush) push_path<T, SR>(a, run.block_tasks, sh.sxs[warp], lane, warp);
#endif
  if (run.res_dir == kDirPush) {
    residual_push_small<T, SR>(a, run.small_tasks, lane, warp);
    residual_push<T, SR>(a, run.residual_tasks, lane, warp);
  }
#if DBS_DIR != 1
  if (run.dir == kDirPull) pull_path<T, SR>(a, sh.sxs[warp], sh.scratch[warp], lane, warp);
  if (run.res_dir == kDirPull) residual_pull<T, SR>(a, sh.scratch[warp], lane, warp);
#endif
}

// One thread reads the call's state and shares it: every thread reading the same few words from
// L2 put tens of thousands of requests on one L2 slice, 20 us at density 1e-4 (Nsight Compute on
// the H200, 7-point stencil 100^3, 2026-11-30).
template <typename T>
__global__ void __launch_bounds__(kWarps * 32, kComputeBlocksPerSm) spmspv_compute(SpmspvArgs<T> a) {
  __shared__ ComputeShared<T> sh;
  __shared__ RunInfo run;
  if (threadIdx.x == 0) {
    const volatile SpmspvState* st = a.state;
    run = RunInfo{st->direction, st->res_direction, st->run.block_tasks, st->run.residual_tasks, st->run.small_tasks};
  }
  __syncthreads();
  compute_body(a, sh, run);
}

// All blocks co-resident (cooperative launch): wait until every block has arrived.
__device__ __forceinline__ void grid_barrier(unsigned* count, unsigned* gen) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned my_gen = *(volatile unsigned*)gen;  // read before arriving
    __threadfence();
    if (atomicAdd(count, 1u) == gridDim.x - 1) {
      *count = 0;
      __threadfence();
      atomicAdd(gen, 1u);
    } else {
      while (*(volatile unsigned*)gen == my_gen) {
      }
    }
    __threadfence();
  }
  __syncthreads();
}

// prep and compute in one cooperative launch: the paper's grid-level synchronisation. Meant to
// save a launch; on the H200 the cooperative launch plus the barrier cost more than the launch it
// saves (NOTES.md), so plans use it only when asked (SpmspvOptions::fused).
template <typename T>
__global__ void __launch_bounds__(kWarps * 32, kComputeBlocksPerSm) spmspv_fused(SpmspvArgs<T> a) {
  __shared__ PrepShared psh;
  __shared__ ComputeShared<T> csh;
  __shared__ unsigned gen;
  if (threadIdx.x == 0) gen = *(volatile unsigned*)&a.state->gen;
  __syncthreads();
  const unsigned g = gen;
  prep_body(a, psh, &a.state->slot[g]);
  grid_barrier(&a.state->bar_count, &a.state->bar_gen);
  __shared__ RunInfo run;  // read by one thread (see spmspv_compute)
  if (threadIdx.x == 0) {
    const volatile SpmspvCounters* c = &a.state->slot[g];
    run = run_info(a, c);
    if (blockIdx.x == 0) {
      a.state->last_direction = run.dir;
      a.state->last_res_direction = run.res_dir;
      a.state->last_nonempty = c->nonempty;
      // The next run's slot; no block of this run touches it.
      SpmspvCounters* next = &a.state->slot[g ^ 1u];
      next->nonempty = next->xnnz = next->block_tasks = next->residual_tasks = next->small_tasks = 0;
      a.state->gen = g ^ 1u;  // every block read gen before the barrier
    }
  }
  __syncthreads();
  compute_body(a, csh, run);
}

// run_sparse_out, first launch: x's (index, value) pairs into the workspace's dense x and x masks
// (both all-zero between such calls); the first index of each x block, found by the atomicOr that
// sets the first bit of the block, lists the block's push work. Both parts push: the cost follows
// x's nonzeros, with no pass over all columns. The last block publishes the counts (as spmspv_prep).
template <typename T>
__global__ void __launch_bounds__(kWarps * 32) spmspv_sparse_prep(SpmspvArgs<T> a, const int* idx, const T* val,
                                                                  int n) {
  SpmspvState* st = a.state;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int c = idx[i], b = c >> 4;
    const_cast<T*>(a.x)[c] = val[i];
    const unsigned shift = 16u * (unsigned)(b & 1);
    const unsigned old = atomicOr(reinterpret_cast<unsigned*>(a.xmask) + (b >> 1), 1u << ((c & 15) + shift));
    if (((old >> shift) & 0xffffu) != 0u) continue;
    atomicAdd(&st->acc.nonempty, 1u);
#if DBS_DIR != 2
    const unsigned bfirst = (unsigned)a.blk_col_ptr[b], bend = (unsigned)a.blk_col_ptr[b + 1];
    const unsigned nb = (bend - bfirst + kPushChunk - 1) / kPushChunk;
    const unsigned bbase = nb ? atomicAdd(&st->acc.block_tasks, nb) : 0u;
    for (unsigned k = 0; k < nb; ++k) {
      const unsigned first = bfirst + k * kPushChunk, blocks = min(bend - first, (unsigned)kPushChunk);
      PushTask t;
      t.col_and_count = (unsigned)b | ((blocks - 1u) << kTaskCountShift);
      t.first = first;
      a.block_tasks[bbase + k] = t;
    }
#endif
    const unsigned rcount = (unsigned)(a.res_col_ptr[b + 1] - a.res_col_ptr[b]);
    ResidualTask t;
    t.col_block = (unsigned)b;
    t.piece = 0;
    if (rcount != 0u && rcount <= (unsigned)kResidualSmall) {
      a.small_tasks[atomicAdd(&st->acc.small_tasks, 1u)] = t;
    } else if (rcount) {
      const unsigned nr = (rcount + kResidualChunk - 1) / kResidualChunk, rbase = atomicAdd(&st->acc.residual_tasks, nr);
      for (unsigned k = 0; k < nr; ++k) {
        t.piece = k;
        a.residual_tasks[rbase + k] = t;
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&st->prep_ticket, 1u) == gridDim.x - 1) {
      __threadfence();
      volatile SpmspvCounters* acc = &st->acc;
      st->direction = kDirPush;
      st->res_direction = kDirPush;
      st->run.block_tasks = acc->block_tasks;
      st->run.residual_tasks = acc->residual_tasks;
      st->run.small_tasks = acc->small_tasks;
      st->last_direction = kDirPush;
      st->last_res_direction = kDirPush;
      st->last_nonempty = acc->nonempty;
      acc->nonempty = acc->xnnz = acc->block_tasks = acc->residual_tasks = acc->small_tasks = 0;
      st->ycount = 0;
      st->pad[0] = 0;  // the output counter of spmspv_sparse_finish
      st->prep_ticket = 0;
      __threadfence();
    }
  }
}

// run_sparse_out, last launch: a warp per row block that push touched writes its nonzero rows as
// (index, value) pairs (in no particular order) and resets them in the dense accumulator; x, its
// masks and the touched bits go back to zero. The last block writes the count.
template <typename T>
__global__ void __launch_bounds__(kWarps * 32) spmspv_sparse_finish(SpmspvArgs<T> a, const int* xidx, int n,
                                                                    int* yidx, T* yval, int* ynnz) {
  SpmspvState* st = a.state;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int c = xidx[i];
    const_cast<T*>(a.x)[c] = T(0);
    reinterpret_cast<unsigned*>(a.xmask)[c >> 5] = 0u;  // every bit in the word is this call's
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned count = *(volatile unsigned*)&st->ycount;
  for (unsigned k = blockIdx.x * kWarps + warp; k < count; k += gridDim.x * kWarps) {
    const int rb = a.ylist[k];
    if (lane == 0) atomicAnd(a.ytouched + (rb >> 5), ~(1u << (rb & 31)));
    const int row = rb * 16 + lane;
    const T v = lane < 16 && row < a.rows ? a.y[row] : T(0);
    const unsigned nz = __ballot_sync(kFull, v != T(0));
    unsigned base = 0;
    if (lane == 0 && nz) base = atomicAdd(&st->pad[0], (unsigned)__popc(nz));
    base = __shfl_sync(kFull, base, 0);
    if (v != T(0)) {
      const unsigned at = base + __popc(nz & ((1u << lane) - 1u));
      yidx[at] = row;
      yval[at] = v;
      a.y[row] = T(0);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&st->prep_ticket, 1u) == gridDim.x - 1) {
      __threadfence();
      *ynnz = (int)*(volatile unsigned*)&st->pad[0];
      st->prep_ticket = 0;
      __threadfence();
    }
  }
}

// Scatter for x given as (index, value) pairs, into the plan's dense x (kept all-zero between
// runs); spmspv_unscatter restores the zeros afterwards.
template <typename T>
__global__ void spmspv_scatter(const int* idx, const T* val, int n, T* xd) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) xd[idx[i]] = val[i];
}
template <typename T>
__global__ void spmspv_unscatter(const int* idx, int n, T* xd) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) xd[idx[i]] = T(0);
}

}  // namespace dbs

// DB-SpMSpV's mask pass (spmspv_prep): x block masks, y reset, the counts that choose each part's
// direction, and the push lists of the non-empty x blocks. Included by spmspv.cuh.
#pragma once
#include "spmspv_blocks.cuh"

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
        m |= (unsigned((v[i].x << 1) != 0u) | unsigned((v[i].y << 1) != 0u) << 1 | unsigned((v[i].z << 1) != 0u) << 2 |
              unsigned((v[i].w << 1) != 0u) << 3)
             << (4 * i);
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

// Column block b's push tasks, from list position at: its blocks [bfirst, bend) in chunks of
// kPushChunk; its residual entries as pieces 0 .. pieces-1 (a small task is piece 0 of a list of
// its own). The mask pass and run_sparse_out's first launch list them alike.
template <typename T>
__device__ __forceinline__ void write_block_tasks(const SpmspvArgs<T>& a, int b, unsigned bfirst, unsigned bend,
                                                  unsigned at) {
  for (unsigned first = bfirst; first < bend; first += kPushChunk, ++at) {
    PushTask t;
    t.col_and_count = (unsigned)b | ((min(bend - first, (unsigned)kPushChunk) - 1u) << kTaskCountShift);
    t.first = first;
    a.block_tasks[at] = t;
  }
}
__device__ __forceinline__ void write_residual_tasks(ResidualTask* list, int b, unsigned pieces, unsigned at) {
  for (unsigned i = 0; i < pieces; ++i) {
    ResidualTask t;
    t.col_block = (unsigned)b;
    t.piece = i;
    list[at + i] = t;
  }
}

// Thread 0 of each block, once all of the block's work is done: true in the block that arrives
// last, after every other block's writes (their fences precede their tickets). It resets the ticket.
__device__ __forceinline__ bool last_block_to_arrive(unsigned* ticket) {
  __threadfence();
  if (atomicAdd(ticket, 1u) != gridDim.x - 1) return false;
  __threadfence();
  *ticket = 0;
  return true;
}

// The call's counts live in state->slot[gen]. A listing kernel (the mask pass, run_sparse_out's
// first launch) adds into slot[gen] and its block 0 clears slot[gen ^ 1], which the previous call
// used and the next call will use; the compute that follows reads both slots (one is all zero, so
// their sum is this call's counts) and flips gen. So no listing kernel needs a last-block ticket and
// no compute block reads gen: every step is ordered by the kernel boundaries (or, with PDL, by
// griddepcontrol.wait, which waits for the previous kernel to complete).
__device__ __forceinline__ void clear_next_slot(SpmspvState* st, unsigned g) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    SpmspvCounters* next = &st->slot[g ^ 1u];
    next->nonempty = next->xnnz = next->block_tasks = next->residual_tasks = next->small_tasks = 0;
  }
}
// This call's counts: both slots summed (thread 0 of a compute block, after the listing kernel).
__device__ __forceinline__ SpmspvCounters call_counts(const SpmspvState* state) {
  const volatile SpmspvCounters* s = state->slot;
  SpmspvCounters c{};
  c.nonempty = s[0].nonempty + s[1].nonempty;
  c.xnnz = s[0].xnnz + s[1].xnnz;
  c.block_tasks = s[0].block_tasks + s[1].block_tasks;
  c.residual_tasks = s[0].residual_tasks + s[1].residual_tasks;
  c.small_tasks = s[0].small_tasks + s[1].small_tasks;
  return c;
}

// The mask pass: x block masks, y = 0, the counts of non-empty x blocks and of x nonzeros and,
// while push can still be taken, the push lists: for every non-empty x block, its column block's
// blocks in chunks of kPushChunk, and its residual column entries (one small task when there are at
// most kResidualSmall, else pieces of kResidualChunk). So push's work follows the active columns,
// not the matrix. A thread owns one x block (16 columns) per round.
//
// One round of atomics per thread block round: thread 0 adds the round's counts and its task
// counts together and gets every base back at once (each dependent round trip to L2 was about a
// microsecond of the pass at low density: docs/decisions/spmspv-kernel-design.md). The round then writes
// its tasks only while its part can still push: a part pushes iff its final count stays below the
// limit, and every partial count is at most the final one, so whenever push is taken every round
// wrote its tasks and the lists are whole. Rounds that did not write still added their task counts,
// but then that part does not push and its list is never read; no round writes past the capacity,
// since each x block adds its tasks once.
// g is the call's slot, written to shared memory by thread 0 before the call: it is first read after
// a barrier of the first round (so its load overlaps y's stores and x's loads).
template <typename T>
__device__ __forceinline__ void prep_body(const SpmspvArgs<T>& a, PrepShared& sh, SpmspvCounters* slots,
                                          const unsigned& g) {
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
      SpmspvCounters* cnt = slots + g;
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
    if (sh.emit_blocks && nb) write_block_tasks(a, b, bfirst, bend, sh.base[0] + ob);
    if (sh.emit_residual) {
      write_residual_tasks(a.residual_tasks, b, nr, sh.base[1] + orr);
      write_residual_tasks(a.small_tasks, b, ns, sh.base[2] + os);
    }
    __syncthreads();  // sh is reused by the next round
  }
}

// The call's directions and list lengths from its counts.
template <typename T>
__device__ __forceinline__ RunInfo run_info(const SpmspvArgs<T>& a, const SpmspvCounters& c) {
  return RunInfo{block_direction(a, c.nonempty), residual_direction(a, c.xnnz), c.block_tasks, c.residual_tasks,
                 c.small_tasks};
}

template <typename T>
__global__ void __launch_bounds__(kWarps * 32) spmspv_prep(SpmspvArgs<T> a) {
  __shared__ PrepShared sh;
  __shared__ unsigned g;
  dbs_pdl_wait();
  dbs_pdl_trigger();
  SpmspvState* st = a.state;
  if (threadIdx.x == 0) g = *(volatile unsigned*)&st->gen;
  prep_body(a, sh, st->slot, g);
  __syncthreads();  // g, where the block had no round
  clear_next_slot(st, g);
}

// Thread 0 of each compute block: this call's run (run_sparse_out pushes both parts); block 0 keeps
// the figures the host reads back and flips gen for the next call (no compute block reads it).
template <typename T>
__device__ __forceinline__ RunInfo begin_compute(const SpmspvArgs<T>& a) {
  const SpmspvCounters c = call_counts(a.state);
  RunInfo r = run_info(a, c);
  if (a.ytouched != nullptr) r.dir = r.res_dir = kDirPush;
  if (blockIdx.x == 0) {
    SpmspvState* st = a.state;
    st->last_direction = r.dir;
    st->last_res_direction = r.res_dir;
    st->last_nonempty = c.nonempty;
    st->gen ^= 1u;
    if (a.feedback != nullptr) {  // posted writes over the bus: x's nonzeros, its non-empty blocks
      ((volatile unsigned*)a.feedback)[0] = c.xnnz;
      ((volatile unsigned*)a.feedback)[1] = c.nonempty;
    }
  }
  return r;
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

}  // namespace dbs

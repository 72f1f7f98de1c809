// DB-SpMSpV: the global half of the two-level adaptivity. spmspv_prep builds the x block masks on
// the GPU (ballot, one atomic per thread block), zeroes y and, in its last block, picks the
// direction; spmspv_compute reads that device-side flag and runs push or pull. No
// host round trip between them, so plan.run() never synchronises.
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

struct PrepShared {
  unsigned count[kWarps];
};

// x block masks and y = 0, counting the non-empty x blocks into *nonempty. Push work is not listed
// here: the push path scans the plan's static task list against the masks itself, so prep is the
// same cheap pass whichever direction wins. Shared by the two-launch path and the fused kernel.
template <typename T>
__device__ __forceinline__ void prep_body(const SpmspvArgs<T>& a, PrepShared& sh, unsigned* nonempty) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int gwarp = blockIdx.x * kWarps + warp, nwarps = gridDim.x * kWarps;
  const int pairs = (a.block_cols + 1) / 2;
  unsigned my_count = 0;
  for (int first = gwarp * kPairsPerWarp; first < pairs; first += nwarps * kPairsPerWarp) {
    // A warp owns kPairsPerWarp consecutive pairs; all their x loads are issued before any ballot,
    // so the round waits on one memory latency, not eight.
    bool nz[kPairsPerWarp];
#pragma unroll
    for (int s = 0; s < kPairsPerWarp; ++s) {
      const int i = (first + s) * 32 + lane;
      nz[s] = first + s < pairs && i < a.cols && a.x[i] != T(0);
    }
    unsigned my_bits = 0;  // lane s keeps pair first+s's 32 bits
#pragma unroll
    for (int s = 0; s < kPairsPerWarp; ++s) {
      const unsigned bits = __ballot_sync(kFull, nz[s]);
      if (lane == s) my_bits = bits;
    }
    const int pair = first + lane, b0 = 2 * pair;
    if (lane < kPairsPerWarp && pair < pairs) {
      a.xmask[b0] = my_bits & 0xffffu;
      if (b0 + 1 < a.block_cols) a.xmask[b0 + 1] = my_bits >> 16;
      my_count += ((my_bits & 0xffffu) != 0) + ((my_bits >> 16) != 0);
    }
  }
  // y starts at zero: push adds into it and pull adds where a row block spans segments.
  for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < a.rows; r += gridDim.x * blockDim.x)
    a.y[r] = T(0);

#pragma unroll
  for (int o = 16; o; o >>= 1) my_count += __shfl_xor_sync(kFull, my_count, o);
  if (lane == 0) sh.count[warp] = my_count;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned c = 0;
    for (int w = 0; w < kWarps; ++w) c += sh.count[w];
    if (c) atomicAdd(nonempty, c);
  }
}

template <typename T>
__device__ __forceinline__ unsigned choose_direction(const SpmspvArgs<T>& a, unsigned nonempty) {
#if DBS_DIR == 1
  return kDirPush;
#elif DBS_DIR == 2
  return kDirPull;
#else
  return (float)nonempty < a.xb_threshold * (float)a.block_cols ? kDirPush : kDirPull;
#endif
}

template <typename T>
__global__ void __launch_bounds__(kWarps * 32) spmspv_prep(SpmspvArgs<T> a) {
  __shared__ PrepShared sh;
  prep_body(a, sh, &a.state->nonempty);
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&a.state->prep_ticket, 1u) == gridDim.x - 1) {  // last block: all counted
      const unsigned ne = atomicAdd(&a.state->nonempty, 0u);
      const unsigned dir = choose_direction(a, ne);
      a.state->direction = dir;
      a.state->last_direction = dir;
      a.state->last_nonempty = ne;
      // Every other block has finished its atomics (they precede its ticket): reset for next run.
      a.state->nonempty = 0;
      a.state->prep_ticket = 0;
      __threadfence();
    }
  }
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

// Push: the plan lists every chunk (up to kPushChunk blocks of one column block) of every column
// block once. Lane l of warp w looks at task w + l * nwarps of each round, so the active tasks of
// any density spread over all warps. A warp then takes its active tasks four at a time, lanes
// 8g..8g+7 holding the blocks of the g-th: one memory round trip per four tasks rather than per
// task (processed one by one, the warps with the most active tasks set the kernel's time).
template <typename T, typename SR>
__device__ __forceinline__ void push_path(const SpmspvArgs<T>& a, T (*sxs)[16], int lane, int warp) {
  static_assert(kPushChunk == 8, "a lane group of 8 holds one task's blocks");
  const int gwarp = blockIdx.x * kWarps + warp, nwarps = gridDim.x * kWarps;
  const int g = lane >> 3, k = lane & 7;
  for (long long base = gwarp; base < a.ntasks; base += 32LL * nwarps) {
    const long long t = base + (long long)lane * nwarps;
    uint2 task = make_uint2(0, 0);
    unsigned xm_lane = 0;
    if (t < a.ntasks) {
      task = reinterpret_cast<const uint2*>(a.tasks)[t];  // PushTask, one 8-byte load
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
      if (k < nb && mine.type == kCoo) coo_by_lane<T, SR>(a, mine, xm, sxs[j], a.y + mine.row * 16);
      rest &= ~__ballot_sync(kFull, k < nb && mine.type == kCoo);
#endif
      for (; rest; rest &= rest - 1) {
        const int src = __ffs(rest) - 1;
        const BlockMeta m = shfl_meta(mine, src);
        const unsigned xms = __shfl_sync(kFull, xm, src);
        const int js = __shfl_sync(kFull, j, src);
        const T v = block_product<T, SR>(m, xms, sxs[js], a.values, a.aux, lane);
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
  const int npairs = (a.nsegments + 1) / 2;
  const int half = lane >> 4, li = lane & 15;
  for (int p = blockIdx.x * kWarps + warp; p < npairs; p += nwarps) {
    const int s = 2 * p + half;
    // Segment {row_block, first, end, alone}, one 16-byte load.
    const int4 seg = s < a.nsegments ? reinterpret_cast<const int4*>(a.segments)[s] : make_int4(0, 0, 0, 0);
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
    if (s < a.nsegments && row < a.rows) {
      if (seg.w) a.y[row] = acc;  // the only segment of its row block: one plain write
      else if (acc != SR::zero()) SR::atomic_add(&a.y[row], acc);
    }
  }
}

// Both paths, after the direction is known. Shared memory lives in the kernels.
template <typename T>
struct ComputeShared {
  T sxs[kWarps][32][16];      // one staged x block per lane: its pull block or its push task
#if DBS_DIR != 1
  T scratch[kWarps][32];      // pull: COO partials of the warp's two segments
#endif
};

template <typename T>
__device__ __forceinline__ void compute_body(const SpmspvArgs<T>& a, ComputeShared<T>& sh, unsigned dir) {
  using SR = DBS_SEMIRING<T>;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#if DBS_DIR != 2
  if (dir == kDirPush) push_path<T, SR>(a, sh.sxs[warp], lane, warp);
#endif
#if DBS_DIR != 1
  if (dir == kDirPull) pull_path<T, SR>(a, sh.sxs[warp], sh.scratch[warp], lane, warp);
#endif
}

template <typename T>
__global__ void __launch_bounds__(kWarps * 32, kComputeBlocksPerSm) spmspv_compute(SpmspvArgs<T> a) {
  __shared__ ComputeShared<T> sh;
  compute_body(a, sh, *(volatile unsigned*)&a.state->direction);
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
  const unsigned g = *(volatile unsigned*)&a.state->gen;
  prep_body(a, psh, &a.state->cnt_nonempty[g]);
  grid_barrier(&a.state->bar_count, &a.state->bar_gen);
  const unsigned ne = *(volatile unsigned*)&a.state->cnt_nonempty[g];
  const unsigned dir = choose_direction(a, ne);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    a.state->last_direction = dir;
    a.state->last_nonempty = ne;
    a.state->cnt_nonempty[g ^ 1u] = 0;  // the next run's slot; no block of this run touches it
    a.state->gen = g ^ 1u;  // every block read gen before the barrier
  }
  compute_body(a, csh, dir);
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

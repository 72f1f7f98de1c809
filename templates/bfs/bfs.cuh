// DB-BFS (the DB-SpMSpV paper §4.2, Alg. 5): each level is a Boolean (or, and) SpMSpV whose input is
// the frontier as 16-bit block masks and whose output is the next frontier's masks, filtered by the
// visited masks. Push expands the frontier's out-edges (listed as tasks when their vertices were
// discovered); pull walks, for each unvisited vertex of a block that has any, its in-edges and stops
// at the first one in the frontier. The direction is chosen on the GPU at the
// start of every level from the frontier's counts; the whole search is one cooperative launch with
// a grid barrier between levels (or one launch per step where the host asks for it).
//
// Macros from the key (codegen/keys/bfs_key.cpp): DBS_BFS_DIR 0 auto, 1 push only, 2 pull only;
// DBS_BFS_O64 1: the views' row offsets are 64-bit (graphs past 2^31 entries), else 32-bit.
// Structs and constants shared with the host: include/dbsparse/abi/bfs.h.
#pragma once
#include "dbs_common.cuh"
#include "dbsparse/abi/bfs.h"

#ifndef DBS_BFS_DIR
#define DBS_BFS_DIR 0
#endif
#ifndef DBS_BFS_O64
#define DBS_BFS_O64 0
#endif

namespace dbs {
using namespace dbsparse::abi;

#if DBS_BFS_O64
typedef long long bfs_off;
#else
typedef int bfs_off;
#endif
__device__ __forceinline__ const bfs_off* push_ptr(const BfsArgs& a) { return (const bfs_off*)a.push_ptr; }
__device__ __forceinline__ const bfs_off* pull_ptr(const BfsArgs& a) { return (const bfs_off*)a.pull_ptr; }

__device__ __forceinline__ unsigned bfs_lane() { return threadIdx.x & 31u; }

// Who shares a level's work: the whole grid, or (solo mode) one thread block.
struct Team {
  int thread, threads;
  __device__ __forceinline__ int warp() const { return thread >> 5; }
  __device__ __forceinline__ int warps() const { return threads >> 5; }
};
__device__ __forceinline__ Team grid_team() {
  return Team{(int)(blockIdx.x * blockDim.x + threadIdx.x), (int)(gridDim.x * blockDim.x)};
}
__device__ __forceinline__ Team block_team() { return Team{(int)threadIdx.x, (int)blockDim.x}; }

__device__ __forceinline__ uint16_t* masks16(uint32_t* words) { return reinterpret_cast<uint16_t*>(words); }

// The level's figures, identical in every thread that reads them after the barrier.
struct LevelChoice {
  int dir;
  bool done;
};

__device__ __forceinline__ LevelChoice choose_direction(const BfsArgs& a, const volatile BfsFrontierCounts* c) {
  LevelChoice r;
  const unsigned nf = c->vertices;
  r.done = nf == 0;
#if DBS_BFS_DIR == 1
  r.dir = kBfsPush;
#elif DBS_BFS_DIR == 2
  r.dir = kBfsPull;
#else
  // Beamer's direction-optimising rule: pull once the frontier's out-edges pass the unexplored
  // edges / alpha (or its active blocks pass th3 of all blocks: the paper's xb), push again once
  // the frontier shrinks below n / beta.
  const double edges = (double)c->edges;
  const double explored = (double)c->explored + edges;
  const double unexplored = (double)a.total_edges > explored ? (double)a.total_edges - explored : 0.0;
  const double xb = (double)c->blocks / (double)(a.blocks > 0 ? a.blocks : 1);
  if (c->prev_dir == kBfsPush)
    r.dir = (edges * (double)a.alpha > unexplored || xb > (double)a.th3) ? kBfsPull : kBfsPush;
  else
    r.dir = ((double)nf * (double)a.beta < (double)a.n && nf < c->prev_vertices && xb <= (double)a.th3) ? kBfsPush
                                                                                                        : kBfsPull;
#endif
  return r;
}

// Reserves n slots (n may be 0) of *counter for each lane with one atomic per warp, and returns the
// lane's first slot. Every lane calls it. One atomic per discovered vertex on the level's single
// task counter serialised at L2 (docs/decisions/spmspv-kernel-design.md).
__device__ __forceinline__ unsigned warp_reserve(unsigned* counter, unsigned n) {
  int total;
  const int pre = warp_exclusive_prefix((int)n, (int)bfs_lane(), total);
  unsigned base = 0;
  if (bfs_lane() == 0 && total) base = atomicAdd(counter, (unsigned)total);
  return __shfl_sync(kFull, base, 0) + (unsigned)pre;
}

// warp_reserve of blocks and tasks at once: one 64-bit atomic on the counts' first word (blocks in
// its low half, tasks in its high half; neither passes 2^32), so push pays one L2 round trip for
// both lists instead of two in a row.
struct BlockTaskSlots {
  unsigned block, task;
};
__device__ __forceinline__ BlockTaskSlots warp_reserve_pair(BfsFrontierCounts* c, unsigned nblocks, unsigned ntasks) {
  int tb, tt;
  const int pb = warp_exclusive_prefix((int)nblocks, (int)bfs_lane(), tb);
  const int pt = warp_exclusive_prefix((int)ntasks, (int)bfs_lane(), tt);
  unsigned long long base = 0;
  if (bfs_lane() == 0 && (tb | tt))
    base = atomicAdd(reinterpret_cast<unsigned long long*>(&c->blocks),
                     (unsigned long long)(unsigned)tb | ((unsigned long long)(unsigned)tt << 32));
  base = __shfl_sync(kFull, base, 0);
  return BlockTaskSlots{(unsigned)base + (unsigned)pb, (unsigned)(base >> 32) + (unsigned)pt};
}

// Piece i of vertex u's out-edges [first, first + deg).
__device__ __forceinline__ BfsTask piece_task(int u, bfs_off first, unsigned deg, unsigned i) {
  BfsTask t;
  t.vertex = u;
  t.count = (int)min((unsigned)kBfsPiece, deg - i * kBfsPiece);
  t.first = (long long)first + (long long)(i * kBfsPiece);
  return t;
}

__device__ __forceinline__ void write_tasks(BfsTask* list, unsigned at, int u, bfs_off first, unsigned deg) {
  for (unsigned i = 0; i * kBfsPiece < deg; ++i) list[at + i] = piece_task(u, first, deg, i);
}

__device__ __forceinline__ unsigned pieces_of(unsigned deg) { return (deg + kBfsPiece - 1) / kBfsPiece; }

template <typename U>
__device__ __forceinline__ U warp_sum(U v) {
#pragma unroll
  for (int d = 16; d >= 1; d >>= 1) v += __shfl_xor_sync(kFull, v, d);
  return v;
}

// Push: a warp takes a run of tasks and walks their edges together, a lane per edge and four edges
// per lane in flight, so short adjacency lists leave no lane idle (a hub's tasks are its 128-edge
// pieces). Few tasks are spread thin (down to one per warp), so a small frontier's level is one
// round of loads, not 32 tasks' worth on one warp.
__device__ __forceinline__ void push_level(const BfsArgs& a, int level, const BfsTask* tasks, unsigned ntasks,
                                           uint32_t* fnext, int32_t* qnext, BfsTask* tnext, BfsFrontierCounts* cn,
                                           Team team) {
  const unsigned lane = bfs_lane();
  const unsigned warps = (unsigned)team.warps();
  unsigned per_warp = 32;
  while (per_warp > 1 && (per_warp >> 1) * warps >= ntasks) per_warp >>= 1;
  unsigned found = 0;
  unsigned long long edges = 0;
  for (unsigned base = (unsigned)team.warp() * per_warp; base < ntasks; base += warps * per_warp) {
    BfsTask t{0, 0, 0};
    if (lane < per_warp && base + lane < ntasks) t = tasks[base + lane];
    const bfs_off tfirst = (bfs_off)t.first;
    int total;
    const int pre = warp_exclusive_prefix(t.count, (int)lane, total);
    for (int p0 = 0; p0 < total; p0 += 128) {
      int u[4], from[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int p = p0 + r * 32 + (int)lane;
        const int k = owner_lane(pre, p);
        const int excl = __shfl_sync(kFull, pre, k);
        const bfs_off first = __shfl_sync(kFull, tfirst, k);
        from[r] = __shfl_sync(kFull, t.vertex, k);
        u[r] = p < total ? a.push_idx[first + (p - excl)] : -1;
      }
      // A candidate not yet visited loads its out-edge range in the same round trip as the atomic
      // that decides whether it wins (the range is wasted on a loser: one more L2 hit).
      bool won[4];
      bfs_off first[4], last[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        won[r] = false;
        first[r] = last[r] = 0;
        if (u[r] < 0) continue;
        const uint32_t bit = 1u << (u[r] & 31);
        if (a.visited[u[r] >> 5] & bit) continue;  // may be stale: the atomic decides
        first[r] = push_ptr(a)[u[r]];
        last[r] = push_ptr(a)[u[r] + 1];
        won[r] = !(atomicOr(&a.visited[u[r] >> 5], bit) & bit);
      }
      // The winners join frontier L + 1; the block list and the task list are reserved warp-wide.
      unsigned new_blocks = 0, pieces = 0, deg[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        deg[r] = 0;
        if (!won[r]) continue;
        a.levels[u[r]] = level + 1;
        if (a.parents) a.parents[u[r]] = from[r];
        const uint32_t old = atomicOr(&fnext[u[r] >> 5], 1u << (u[r] & 31));
        if (((old >> (u[r] & 16)) & 0xffffu) == 0) new_blocks |= 1u << r;
        deg[r] = (unsigned)(last[r] - first[r]);
        pieces += pieces_of(deg[r]);
        ++found;
        edges += deg[r];
      }
      const BlockTaskSlots at = warp_reserve_pair(cn, __popc(new_blocks), pieces);
      const unsigned qat = at.block;
      unsigned tat = at.task;
      unsigned q = 0;
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        if (!won[r]) continue;
        if ((new_blocks >> r) & 1u) qnext[qat + q++] = u[r] >> 4;
        write_tasks(tnext, tat, u[r], first[r], deg[r]);
        tat += pieces_of(deg[r]);
      }
    }
  }
  found = warp_sum(found);
  edges = warp_sum(edges);
  if (lane == 0 && found) {
    atomicAdd(&cn->vertices, found);
    atomicAdd((unsigned long long*)&cn->edges, edges);
  }
}

// Pull (Alg. 5 by rows, a lane per vertex): a warp owns 32 vertices (two 16-vertex blocks, one
// visited word); each unvisited vertex walks its in-edges, four in flight, and stops at the first
// in-neighbour in the frontier. The warp owns its words, so the masks are written with plain stores.
__device__ __forceinline__ void pull_level(const BfsArgs& a, int level, const uint32_t* fcur, uint32_t* fnext,
                                           int32_t* qnext, BfsTask* tnext, BfsFrontierCounts* cn, Team team) {
  const unsigned lane = bfs_lane();
  unsigned found_total = 0;
  unsigned long long edges = 0;
  for (int w = team.warp(); w < a.words; w += team.warps()) {
    const uint32_t vis = a.visited[w];
    if (vis == kFull) continue;
    const int v = w * 32 + (int)lane;
    int parent = -1;
    if (!((vis >> lane) & 1u)) {
      const bfs_off end = pull_ptr(a)[v + 1];
      for (bfs_off i = pull_ptr(a)[v]; i < end && parent < 0; i += 4) {
        int j[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) j[r] = i + r < end ? a.pull_idx[i + r] : -1;
#pragma unroll
        for (int r = 0; r < 4; ++r)
          if (parent < 0 && j[r] >= 0 && ((fcur[j[r] >> 5] >> (j[r] & 31)) & 1u)) parent = j[r];
      }
    }
    const uint32_t found = __ballot_sync(kFull, parent >= 0);
    if (!found) continue;
    unsigned deg = 0;
    bfs_off first = 0;
    if (parent >= 0) {
      a.levels[v] = level + 1;
      if (a.parents) a.parents[v] = parent;
      first = push_ptr(a)[v];
      deg = (unsigned)(push_ptr(a)[v + 1] - first);
    }
    const unsigned tat = warp_reserve(&cn->tasks, pieces_of(deg));
    if (parent >= 0) write_tasks(tnext, tat, v, first, deg);
    if (lane == 0) {
      a.visited[w] = vis | found;
      fnext[w] = found;
      const unsigned halves = (found & 0xffffu ? 1u : 0u) + (found >> 16 ? 1u : 0u);
      unsigned at = atomicAdd(&cn->blocks, halves);
      if (found & 0xffffu) qnext[at++] = w * 2;
      if (found >> 16) qnext[at] = w * 2 + 1;
    }
    edges += deg;
    found_total += __popc(found);
  }
  edges = warp_sum(edges);
  if (lane == 0 && found_total) {
    atomicAdd(&cn->vertices, found_total);
    atomicAdd((unsigned long long*)&cn->edges, edges);
  }
}

// Step 0: every vertex unreached, visited and the three frontiers empty (vertices past n count as
// visited, so pull never opens them), the counts zeroed.
__device__ __forceinline__ void clear_search(const BfsArgs& a) {
  const int tid = blockIdx.x * blockDim.x + threadIdx.x, nt = gridDim.x * blockDim.x;
  for (int w = tid; w < a.words; w += nt) {
    const uint32_t pad = (w == a.words - 1 && (a.n & 31)) ? ~0u << (a.n & 31) : 0u;
    a.visited[w] = pad;
    a.frontier[w] = 0;
    a.frontier[a.words + w] = 0;
    a.frontier[2 * a.words + w] = 0;
  }
  for (int v = tid; v < a.n; v += nt) {
    a.levels[v] = -1;
    if (a.parents) a.parents[v] = -1;
  }
  if (tid < 4) {
    BfsFrontierCounts z = {0, 0, 0, kBfsPush, 0, 0, 0, 0};
    a.state->slot[tid] = z;
  }
  if (tid == 0) {
    a.state->done = 0;
    a.state->levels = 0;
    a.state->readers = 0;  // every block arrives at the barrier after this step before reading a level
  }
}

// Step 1 (block 0): the source is frontier 0, listed with its push tasks.
__device__ __forceinline__ void seed_search(const BfsArgs& a) {
  if (blockIdx.x != 0) return;
  const int s = a.source;
  const bfs_off first = push_ptr(a)[s];
  const unsigned deg = (unsigned)(push_ptr(a)[s + 1] - first);
  const unsigned pieces = pieces_of(deg);
  if (threadIdx.x == 0) {
    a.visited[s >> 5] |= 1u << (s & 31);
    a.frontier[s >> 5] |= 1u << (s & 31);
    a.levels[s] = 0;
    if (a.parents) a.parents[s] = s;
    a.queue[0] = s >> 4;
    BfsFrontierCounts* c = &a.state->slot[0];
    c->vertices = 1;
    c->blocks = 1;
    c->tasks = pieces;
    c->edges = deg;
  }
  for (unsigned i = threadIdx.x; i < pieces; i += blockDim.x) a.tasks[i] = piece_task(s, first, deg, i);
}

struct LevelInfo {
  LevelChoice choice;
  unsigned ntasks, old_blocks;
};

// The start of level L, in every block that calls it: thread 0 reads frontier L's counts and chooses
// the direction; in block 0 it also logs the level and books the counts of frontiers L + 1 and
// L + 2. Calling it twice for one level (solo mode hands a level back to the grid) writes the
// same values again.
// With count_reader (the grid-wide start of a level), thread 0 then adds one to state->readers: solo
// mode must not touch these counts before every block has read them.
__device__ __forceinline__ LevelInfo begin_level(const BfsArgs& a, int level, LevelInfo& sh, bool count_reader) {
  BfsState* st = a.state;
  if (threadIdx.x == 0) {
    const volatile BfsFrontierCounts* c = &st->slot[level & 3];
    sh.choice = choose_direction(a, c);
    sh.ntasks = c->tasks;
    sh.old_blocks = level > 0 ? ((volatile BfsFrontierCounts*)&st->slot[(level + 3) & 3])->blocks : 0u;
    if (count_reader) {
      __threadfence();
      atomicAdd(&st->readers, 1u);
    }
    if (blockIdx.x == 0) {
      if (sh.choice.done) {
        st->levels = level;
        st->done = 1;
      } else {
        if (level < kBfsLogLevels) {
          BfsLevelLog g;
          g.dir = sh.choice.dir;
          g.vertices = c->vertices;
          g.blocks = c->blocks;
          g.pad = 0;
          g.edges = c->edges;
          a.log[level] = g;
        }
        BfsFrontierCounts* cn = &st->slot[(level + 1) & 3];
        cn->explored = c->explored + c->edges;
        cn->prev_dir = sh.choice.dir;
        cn->prev_vertices = c->vertices;
        // Frontier L + 2's counts, zeroed for level L + 1 (nobody reads them in this level).
        BfsFrontierCounts* cz = &st->slot[(level + 2) & 3];
        cz->vertices = cz->blocks = cz->tasks = 0;
        cz->edges = 0;
      }
    }
  }
  __syncthreads();
  const LevelInfo r = sh;
  __syncthreads();  // sh is rewritten by the next level
  return r;
}

// Level L's work: clear frontier L - 1 (read by nobody now, written again as frontier L + 2) and
// expand frontier L.
__device__ __forceinline__ void expand_level(const BfsArgs& a, int level, const LevelInfo& li, Team team) {
  const int cur = level % 3, next = (level + 1) % 3, old = (level + 2) % 3;
  uint16_t* fold = masks16(a.frontier + (size_t)old * a.words);
  const int32_t* qold = a.queue + (size_t)old * a.blocks;
  // The thread's first old block is loaded now and cleared after the expansion, so its load
  // overlaps the expansion's first loads instead of adding a round trip before them (nothing in
  // this level reads frontier L - 1).
  const unsigned first_old = (unsigned)team.thread;
  const int q0 = first_old < li.old_blocks ? qold[first_old] : -1;

  uint32_t* fnext = a.frontier + (size_t)next * a.words;
  int32_t* qnext = a.queue + (size_t)next * a.blocks;
  BfsTask* tnext = a.tasks + (size_t)((level + 1) & 1) * a.task_capacity;
  BfsFrontierCounts* cn = &a.state->slot[(level + 1) & 3];
#if DBS_BFS_DIR != 2
  if (li.choice.dir == kBfsPush)
    push_level(a, level, a.tasks + (size_t)(level & 1) * a.task_capacity, li.ntasks, fnext, qnext, tnext, cn, team);
#endif
#if DBS_BFS_DIR != 1
  if (li.choice.dir == kBfsPull)
    pull_level(a, level, a.frontier + (size_t)cur * a.words, fnext, qnext, tnext, cn, team);
#endif
  (void)cur;
  if (q0 >= 0) fold[q0] = 0;
  for (unsigned i = first_old + (unsigned)team.threads; i < li.old_blocks; i += (unsigned)team.threads)
    fold[qold[i]] = 0;
}

__device__ __forceinline__ bool solo_level(const BfsArgs& a, const LevelInfo& li) {
  return a.cooperative && a.solo_tasks && !li.choice.done && li.choice.dir == kBfsPush && li.ntasks <= a.solo_tasks;
}

// Solo mode (cooperative only): while the levels are small pushes, block 0 runs them alone with
// __syncthreads() as the level barrier (it orders the block's global writes for the block's own
// threads), and the other blocks wait at the grid barrier; block 0 then says in state->resume
// where the grid goes on. A grid barrier costs more than a small level's work (Nsight Compute, 2D
// grid 2048^2: 72% of stall cycles at the barrier, DRAM 0.1%).
// Block 0 first waits until every block has read level L's counts (`readers` reaches the grid-wide
// level starts so far times the grid): its later level starts zero slots the others read at L, and
// a block that read a zeroed count would take the search for over and leave the grid barrier
// waiting for it.
__device__ __forceinline__ void run_solo(const BfsArgs& a, int level, LevelInfo li, LevelInfo& sh,
                                         unsigned expected_readers) {
  if (threadIdx.x == 0)
    while (*(volatile unsigned*)&a.state->readers < expected_readers) {
    }
  __syncthreads();
  for (;;) {
    expand_level(a, level, li, block_team());
    __syncthreads();
    ++level;
    li = begin_level(a, level, sh, false);
    if (!solo_level(a, li)) break;
  }
  if (threadIdx.x == 0) a.state->resume = li.choice.done ? -1 : level;
}

// The search, steps [step_begin, step_end): 0 clear, 1 seed, 2 + L level L. Cooperative: all steps
// in one launch, a grid barrier between them, ending at the first empty frontier. Otherwise one
// step per launch (the host loop of the profiling mode and of devices without cooperative launch).
// 32 warps per SM either way (4 blocks of 8 warps or 1 of 32): at most 64 registers. Without the
// minimum, ptxas gave the 8-warp auto variant 128 registers once solo mode was in (sm_90, -Xptxas -v).
template <int WARPS>
__global__ void __launch_bounds__(WARPS * 32, 32 / WARPS) bfs_search(BfsArgs a) {
  __shared__ LevelInfo sh;
  __shared__ int resume;
  unsigned grid_levels = 0;  // grid-wide level starts in this launch (the same count in every block)
  int step = a.step_begin;
  while (step < a.step_end) {
    int next = step + 1;
    if (step == 0) {
      clear_search(a);
    } else if (step == 1) {
      seed_search(a);
    } else {
      const LevelInfo li = begin_level(a, step - 2, sh, true);
      ++grid_levels;
      if (li.choice.done) return;
      if (!solo_level(a, li)) {
        expand_level(a, step - 2, li, grid_team());
      } else {
        if (blockIdx.x == 0) run_solo(a, step - 2, li, sh, grid_levels * gridDim.x);
        grid_barrier(&a.state->bar_count);
        if (threadIdx.x == 0) resume = *(volatile int*)&a.state->resume;
        __syncthreads();
        if (resume < 0) return;
        step = 2 + resume;
        continue;  // level `resume` starts without another barrier: block 0's writes are published
      }
    }
    if (a.cooperative && next < a.step_end) grid_barrier(&a.state->bar_count);
    step = next;
  }
}

// The baseline a library user would write around cuSPARSE (tools/baselines/cusparse_bfs.cpp): after
// y = A·f with a dense 0/1 frontier f, the unreached vertices with y != 0 join the next frontier.
template <int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
    bfs_dense_update(const float* y, float* f, int32_t* levels, int32_t n, int32_t next_level, unsigned* count) {
  unsigned mine = 0;
  for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
    const bool join = y[v] != 0.0f && levels[v] < 0;
    if (join) levels[v] = next_level;
    f[v] = join ? 1.0f : 0.0f;
    mine += join;
  }
  mine = __reduce_add_sync(kFull, mine);
  if ((threadIdx.x & 31) == 0 && mine) atomicAdd(count, mine);
}

// plan_bfs of a DeviceGraphView64 reads the caller's arrays: once csr_check (common/csr_view.cuh)
// has found each view's offsets and columns sound and the in-neighbour view's rows sorted,
//   pass 0, a thread a row: the push tasks (pieces) of every row of the push view;
//   pass 1, a warp a row: each entry (i, j) of the in-neighbour view looked up in row j of the
//     mirror view by binary search, counting the missing: the mirror is the view itself for a
//     symmetric graph, else the out-neighbour view. Rows strictly increasing, as many entries in
//     both views and every entry mirrored: then the views are exactly each other's transpose (the
//     lookups map entries one to one), so push and pull levels see the same edges.
template <typename Off>
__global__ void __launch_bounds__(256) bfs_check_view(const Off* ptr, const int32_t* idx, int n, const Off* mptr,
                                                      const int32_t* midx, int pass, BfsViewCheck* out) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long nt = (long long)gridDim.x * blockDim.x;
  const unsigned lane = bfs_lane();
  unsigned long long count = 0;
  if (pass == 0) {
    for (long long i = tid; i < n; i += nt)
      count += (unsigned long long)(((long long)ptr[i + 1] - (long long)ptr[i] + kBfsPiece - 1) / kBfsPiece);
    count = warp_sum(count);
    if (lane == 0 && count) atomicAdd(&out->pieces, count);
    return;
  }
  for (long long i = tid >> 5; i < n; i += nt >> 5) {
    const Off end = ptr[i + 1];
    for (Off k = ptr[i] + (Off)lane; k < end; k += 32) {
      const int j = idx[k];
      Off lo = mptr[j], hi = mptr[j + 1];
      while (lo < hi) {
        const Off mid = lo + (hi - lo) / 2;
        if (midx[mid] < (int)i)
          lo = mid + 1;
        else
          hi = mid;
      }
      if (lo == mptr[j + 1] || midx[lo] != (int)i) {
        ++count;
        atomicMin(&out->first_unmirrored, (unsigned long long)i);
      }
    }
  }
  count = warp_sum(count);
  if (lane == 0 && count) atomicAdd(&out->unmirrored, count);
}

}  // namespace dbs

// DB-BFS (db-spmspv-icpp26 §4.2, Alg. 5): each level is a Boolean (or, and) SpMSpV whose input is
// the frontier as 16-bit block masks and whose output is the next frontier's masks, filtered by the
// visited masks. Push expands the frontier's out-edges (listed as tasks when their vertices were
// discovered); pull scans, for each 16-vertex block with unvisited vertices, only those vertices'
// in-edges, and stops at the first one in the frontier. The direction is chosen on the GPU at the
// start of every level from the frontier's counts; the whole search is one cooperative launch with
// a grid barrier between levels (or one launch per step where the host asks for it).
//
// Macros from the key (codegen/bfs_key.cpp): DBS_BFS_DIR 0 auto, 1 push only, 2 pull only.
// Structs and constants shared with the host: include/dbsparse/abi/bfs.h.
#pragma once
#include "dbs_common.cuh"
#include "dbsparse/abi/bfs.h"

#ifndef DBS_BFS_DIR
#define DBS_BFS_DIR 0
#endif

namespace dbs {
using namespace dbsparse::abi;

constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ int bfs_warp_id() { return (blockIdx.x * blockDim.x + threadIdx.x) >> 5; }
__device__ __forceinline__ int bfs_warp_count() { return (gridDim.x * blockDim.x) >> 5; }
__device__ __forceinline__ unsigned bfs_lane() { return threadIdx.x & 31u; }

template <typename U>
__device__ __forceinline__ U warp_inclusive_sum(U v) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const U o = __shfl_up_sync(kFull, v, d);
    if (bfs_lane() >= (unsigned)d) v += o;
  }
  return v;
}

// The lane whose inclusive prefix first exceeds p (lanes [0, span) hold non-decreasing prefixes):
// a binary search in which every lane asks its own question.
template <int SPAN>
__device__ __forceinline__ int owner_of(unsigned incl, unsigned p) {
  int lo = 0;
#pragma unroll
  for (int s = SPAN / 2; s >= 1; s >>= 1) {
    const unsigned v = __shfl_sync(kFull, incl, lo + s - 1);
    if (v <= p) lo += s;
  }
  return lo;
}

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

// Vertex u joins frontier L + 1 (the caller won its visited bit): level, parent, the frontier bit,
// the block list when u's block was empty, and u's push tasks. Returns u's out-degree.
__device__ __forceinline__ unsigned join_frontier(const BfsArgs& a, int level, int u, int parent, uint32_t* fnext,
                                                  int32_t* qnext, BfsTask* tnext, BfsFrontierCounts* cn,
                                                  bool block_listed) {
  a.levels[u] = level + 1;
  if (a.parents) a.parents[u] = parent;
  if (!block_listed) {
    const uint32_t bit = 1u << (u & 31);
    const uint32_t old = atomicOr(&fnext[u >> 5], bit);
    if (((old >> (u & 16)) & 0xffffu) == 0) qnext[atomicAdd(&cn->blocks, 1u)] = u >> 4;
  }
  const int first = a.push_ptr[u];
  const unsigned deg = (unsigned)(a.push_ptr[u + 1] - first);
  const unsigned pieces = (deg + kBfsPiece - 1) / kBfsPiece;
  if (pieces) {
    const unsigned at = atomicAdd(&cn->tasks, pieces);
    for (unsigned i = 0; i < pieces; ++i) {
      BfsTask t;
      t.vertex = u;
      t.first = first + (int)(i * kBfsPiece);
      t.count = (int)min((unsigned)kBfsPiece, deg - i * kBfsPiece);
      t.pad = 0;
      tnext[at + i] = t;
    }
  }
  return deg;
}

// Push: a warp takes 32 tasks at a time and walks their edges together, a lane per edge, so short
// adjacency lists do not leave lanes idle (the tasks of a hub are its 128-edge pieces).
__device__ __forceinline__ void push_level(const BfsArgs& a, int level, const BfsTask* tasks, unsigned ntasks,
                                           uint32_t* fnext, int32_t* qnext, BfsTask* tnext, BfsFrontierCounts* cn) {
  const unsigned lane = bfs_lane();
  unsigned found = 0;
  unsigned long long edges = 0;
  for (unsigned base = (unsigned)bfs_warp_id() * 32u; base < ntasks; base += (unsigned)bfs_warp_count() * 32u) {
    BfsTask t{0, 0, 0, 0};
    if (base + lane < ntasks) t = tasks[base + lane];
    const unsigned incl = warp_inclusive_sum((unsigned)t.count);
    const unsigned total = __shfl_sync(kFull, incl, 31);
    for (unsigned p0 = 0; p0 < total; p0 += 32) {
      const unsigned p = p0 + lane;
      const int k = owner_of<32>(incl, p);
      const unsigned excl = __shfl_sync(kFull, incl - (unsigned)t.count, k);
      const int first = __shfl_sync(kFull, t.first, k);
      const int from = __shfl_sync(kFull, t.vertex, k);
      if (p >= total) continue;
      const int u = a.push_idx[first + (int)(p - excl)];
      const uint32_t bit = 1u << (u & 31);
      if (a.visited[u >> 5] & bit) continue;  // may be stale: the atomic decides
      if (atomicOr(&a.visited[u >> 5], bit) & bit) continue;
      edges += join_frontier(a, level, u, from, fnext, qnext, tnext, cn, false);
      ++found;
    }
  }
  found = __reduce_add_sync(kFull, found);
  edges += __shfl_xor_sync(kFull, edges, 16);
  edges += __shfl_xor_sync(kFull, edges, 8);
  edges += __shfl_xor_sync(kFull, edges, 4);
  edges += __shfl_xor_sync(kFull, edges, 2);
  edges += __shfl_xor_sync(kFull, edges, 1);
  if (lane == 0 && found) {
    atomicAdd(&cn->vertices, found);
    atomicAdd((unsigned long long*)&cn->edges, edges);
  }
}

// Pull (Alg. 5 by rows): a warp per 16-vertex block with unvisited vertices. Lanes walk the
// concatenated in-edges of the block's unvisited vertices, four rounds of 32 in flight, and a vertex
// drops out at its first in-neighbour in the frontier. One warp owns the block's masks, so they are
// written with plain 16-bit stores.
__device__ __forceinline__ void pull_level(const BfsArgs& a, int level, const uint32_t* fcur, uint32_t* fnext,
                                           int32_t* qnext, BfsTask* tnext, BfsFrontierCounts* cn) {
  const unsigned lane = bfs_lane();
  uint16_t* vis16 = masks16(a.visited);
  unsigned found_total = 0;
  unsigned long long edges = 0;
  for (int rb = bfs_warp_id(); rb < a.blocks; rb += bfs_warp_count()) {
    const unsigned vmask = vis16[rb];
    const unsigned open = ~vmask & 0xffffu;
    if (!open) continue;
    const int v = rb * 16 + (int)(lane & 15u);
    int beg = 0;
    unsigned len = 0;
    if (lane < 16 && ((open >> lane) & 1u)) {
      beg = a.pull_ptr[v];
      len = (unsigned)(a.pull_ptr[v + 1] - beg);
    }
    const unsigned incl = warp_inclusive_sum(len);
    const unsigned total = __shfl_sync(kFull, incl, 15);
    unsigned found = 0;
    for (unsigned p0 = 0; p0 < total && (open & ~found); p0 += 128) {
      int hit_row[4], hit_from[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const unsigned p = p0 + (unsigned)r * 32u + lane;
        const int k = owner_of<16>(incl, p);
        const unsigned excl = __shfl_sync(kFull, incl - len, k);
        const int b = __shfl_sync(kFull, beg, k);
        hit_row[r] = -1;
        hit_from[r] = p < total && !((found >> k) & 1u) ? a.pull_idx[b + (int)(p - excl)] : -1;
        if (hit_from[r] >= 0) hit_row[r] = k;
      }
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int j = hit_from[r];
        const bool hit = j >= 0 && ((fcur[j >> 5] >> (j & 31)) & 1u);
        // Any in-neighbour in the frontier is a valid parent: when several lanes hit one vertex,
        // whichever store lands last is kept.
        if (hit && a.parents) a.parents[rb * 16 + hit_row[r]] = j;
        found |= __reduce_or_sync(kFull, hit ? 1u << hit_row[r] : 0u);
      }
    }
    if (!found) continue;
    if (lane == 0) {
      vis16[rb] = (uint16_t)(vmask | found);
      masks16(fnext)[rb] = (uint16_t)found;
      qnext[atomicAdd(&cn->blocks, 1u)] = rb;
    }
    unsigned deg = 0;
    if (lane < 16 && ((found >> lane) & 1u)) {
      a.levels[v] = level + 1;
      const int first = a.push_ptr[v];
      deg = (unsigned)(a.push_ptr[v + 1] - first);
      const unsigned pieces = (deg + kBfsPiece - 1) / kBfsPiece;
      if (pieces) {
        const unsigned at = atomicAdd(&cn->tasks, pieces);
        for (unsigned i = 0; i < pieces; ++i) {
          BfsTask t;
          t.vertex = v;
          t.first = first + (int)(i * kBfsPiece);
          t.count = (int)min((unsigned)kBfsPiece, deg - i * kBfsPiece);
          t.pad = 0;
          tnext[at + i] = t;
        }
      }
    }
    edges += deg;
    found_total += __popc(found);
  }
  edges += __shfl_xor_sync(kFull, edges, 16);
  edges += __shfl_xor_sync(kFull, edges, 8);
  edges += __shfl_xor_sync(kFull, edges, 4);
  edges += __shfl_xor_sync(kFull, edges, 2);
  edges += __shfl_xor_sync(kFull, edges, 1);
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
  }
}

// Step 1 (block 0): the source is frontier 0, listed with its push tasks.
__device__ __forceinline__ void seed_search(const BfsArgs& a) {
  if (blockIdx.x != 0) return;
  const int s = a.source;
  const int first = a.push_ptr[s];
  const unsigned deg = (unsigned)(a.push_ptr[s + 1] - first);
  const unsigned pieces = (deg + kBfsPiece - 1) / kBfsPiece;
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
  for (unsigned i = threadIdx.x; i < pieces; i += blockDim.x) {
    BfsTask t;
    t.vertex = s;
    t.first = first + (int)(i * kBfsPiece);
    t.count = (int)min((unsigned)kBfsPiece, deg - i * kBfsPiece);
    t.pad = 0;
    a.tasks[i] = t;
  }
}

struct LevelShared {
  LevelChoice choice;
  unsigned ntasks, old_blocks;
};

// Step 2 + L: choose the direction, book-keep, clear frontier L - 1, expand frontier L. Returns
// false when frontier L is empty (the search is over; the same in every thread).
__device__ __forceinline__ bool run_level(const BfsArgs& a, int level, LevelShared& sh) {
  BfsState* st = a.state;
  if (threadIdx.x == 0) {
    const volatile BfsFrontierCounts* c = &st->slot[level & 3];
    sh.choice = choose_direction(a, c);
    sh.ntasks = c->tasks;
    sh.old_blocks = level > 0 ? st->slot[(level + 3) & 3].blocks : 0u;
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
  const LevelChoice ch = sh.choice;
  const unsigned ntasks = sh.ntasks, old_blocks = sh.old_blocks;
  __syncthreads();  // sh is rewritten by the next level
  if (ch.done) return false;
  const int cur = level % 3, next = (level + 1) % 3, old = (level + 2) % 3;
  // Frontier L - 1 is read by nobody now and is written again as frontier L + 2.
  const int tid = blockIdx.x * blockDim.x + threadIdx.x, nt = gridDim.x * blockDim.x;
  uint16_t* fold = masks16(a.frontier + (size_t)old * a.words);
  const int32_t* qold = a.queue + (size_t)old * a.blocks;
  for (unsigned i = (unsigned)tid; i < old_blocks; i += (unsigned)nt) fold[qold[i]] = 0;

  uint32_t* fnext = a.frontier + (size_t)next * a.words;
  int32_t* qnext = a.queue + (size_t)next * a.blocks;
  BfsTask* tnext = a.tasks + (size_t)((level + 1) & 1) * a.task_capacity;
  BfsFrontierCounts* cn = &st->slot[(level + 1) & 3];
#if DBS_BFS_DIR != 2
  if (ch.dir == kBfsPush)
    push_level(a, level, a.tasks + (size_t)(level & 1) * a.task_capacity, ntasks, fnext, qnext, tnext, cn);
#endif
#if DBS_BFS_DIR != 1
  if (ch.dir == kBfsPull) pull_level(a, level, a.frontier + (size_t)cur * a.words, fnext, qnext, tnext, cn);
#endif
  (void)ntasks;
  (void)cur;
  return true;
}

// The search, steps [step_begin, step_end). Cooperative: all steps in one launch, a grid barrier
// between them, ending at the first empty frontier. Otherwise one step per launch (the host loop
// of the profiling mode and of devices without cooperative launch).
template <int WARPS>
__global__ void __launch_bounds__(WARPS * 32) bfs_search(BfsArgs a) {
  __shared__ LevelShared sh;
  for (int step = a.step_begin; step < a.step_end; ++step) {
    if (step == 0) clear_search(a);
    else if (step == 1) seed_search(a);
    else if (!run_level(a, step - 2, sh)) return;
    if (a.cooperative && step + 1 < a.step_end) grid_barrier(&a.state->bar_count, &a.state->bar_gen);
  }
}

// The baseline a library user would write around cuSPARSE (tools/common/cusparse_bfs.cpp): after
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

}  // namespace dbs

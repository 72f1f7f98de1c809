// DB-BFS's host/kernel contract (docs/DESIGN.md §10): compiled by the host (runtime/bfs/bfs_plan.cpp) and
// by NVRTC with templates/bfs/bfs.cuh. Plain structs only; sizes are asserted in both compilers.
//
// The search state is bit masks: visited and three rotating frontiers, one bit per vertex, read as
// 16-bit masks per 16-vertex block (the DB format's vector blocks) and as 32-bit words by atomics.
// Level L reads frontier L % 3, writes frontier (L + 1) % 3 and clears frontier (L + 2) % 3 (the one
// before L) through that frontier's list of active blocks, so no pass over all vertices is needed
// to reset a frontier.
#pragma once
#include "dbsparse/abi/abi_types.h"

namespace dbsparse::abi {

constexpr int kBfsWarps = 8;          // warps per thread block by default (BfsConfig::block_warps: 8 or 32)
constexpr int kBfsPiece = 128;        // a push task: at most this many out-edges of one vertex
constexpr int kBfsLogLevels = 65536;  // levels whose statistics the search keeps (last_stats)
enum BfsDirId { kBfsPush = 0, kBfsPull = 1 };

// Out-edges [first, first + count) of `vertex` in the push view, to be expanded by one level.
// first is 64-bit for every variant, so that one layout serves 32- and 64-bit row offsets (the
// task is one 16-byte load either way: hence the alignment).
struct alignas(16) BfsTask {
  int32_t vertex;
  int32_t count;
  int64_t first;
};
static_assert(sizeof(BfsTask) == 16, "BfsTask is 16 bytes on both sides");

// One frontier's figures, accumulated by the level that discovers it (slot (L + 1) % 4 during
// level L; four slots so that the one being zeroed is never one being read).
struct BfsFrontierCounts {
  // blocks and tasks first, as one aligned 64-bit word: push reserves both with one atomic.
  uint32_t blocks;         // 16-vertex blocks with at least one (the length of its block list)
  uint32_t tasks;          // push tasks listed for it
  uint32_t vertices;       // vertices in the frontier
  int32_t prev_dir;        // the direction of the level that discovered it
  uint64_t edges;          // out-edges of its vertices (the work of pushing it)
  uint64_t explored;       // out-edges of every vertex discovered before it
  uint32_t prev_vertices;  // the previous frontier's size
  uint32_t pad;
};
static_assert(sizeof(BfsFrontierCounts) == 40, "BfsFrontierCounts is 40 bytes on both sides");

struct BfsLevelLog {
  int32_t dir;        // BfsDirId
  uint32_t vertices;  // frontier size at this level
  uint32_t blocks;    // active 16-vertex blocks
  uint32_t pad;
  uint64_t edges;  // out-edges of the frontier
};
static_assert(sizeof(BfsLevelLog) == 24, "BfsLevelLog is 24 bytes on both sides");

struct BfsState {
  uint64_t bar_count;  // the grid barrier's arrivals (grid_barrier: monotonic)
  int32_t levels;      // frontiers expanded (the deepest level + 1), set when done
  int32_t done;
  BfsFrontierCounts slot[4];
  int32_t resume;    // solo mode: the level the grid continues at (-1: the search is over)
  uint32_t readers;  // grid-wide level starts read so far, one per block (solo mode waits on it)
  int32_t pad[2];
};
static_assert(sizeof(BfsState) == 192, "BfsState is 192 bytes on both sides");

// The row offsets are int32 or (key .o64: graphs past 2^31 entries) int64: void here, read through
// the kernel's offset type.
struct BfsArgs {
  const void* push_ptr;     // per vertex j: its out-neighbours i (A(i, j) != 0) ...
  const int32_t* push_idx;  // ... push_idx[push_ptr[j] .. push_ptr[j + 1])
  const void* pull_ptr;     // per vertex i: its in-neighbours j (row i of A); may alias push_*
  const int32_t* pull_idx;
  uint32_t* visited;   // words bits
  uint32_t* frontier;  // 3 * words bits
  int32_t* queue;      // 3 * blocks: each frontier's active blocks
  BfsTask* tasks;      // 2 * task_capacity
  int32_t* levels;     // n
  int32_t* parents;    // n, or null
  BfsState* state;
  BfsLevelLog* log;      // kBfsLogLevels
  uint64_t total_edges;  // push view entries
  int32_t n, blocks, words, source;
  int32_t step_begin, step_end;  // steps: 0 clear, 1 the source, 2 + L level L
  int32_t cooperative;           // 1: one launch runs all steps with a grid barrier between them
  uint32_t task_capacity;
  float alpha, beta, th3;  // auto direction (BfsConfig)
  uint32_t solo_tasks;     // cooperative: push levels with at most this many tasks run on block 0 alone
};
static_assert(sizeof(BfsArgs) == 152, "BfsArgs is 152 bytes on both sides");

// What bfs_check_view finds in the views of plan_bfs(DeviceGraphView64) once csr_check
// (abi/csr_view.h) has found their offsets, columns and order sound.
struct BfsViewCheck {
  uint64_t pieces;            // pass 0: push tasks of every vertex (kBfsPiece out-edges a task), the task capacity
  uint64_t unmirrored;        // pass 1: entries (i, j) with no (j, i) in the mirror view
  uint64_t first_unmirrored;  // the lowest row holding one (~0: none; atomicMin)
  uint64_t pad;
};
static_assert(sizeof(BfsViewCheck) == 32, "BfsViewCheck is 32 bytes on both sides");

}  // namespace dbsparse::abi

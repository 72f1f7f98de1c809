#pragma once
// The BFS plan's host decisions (spec), apart from what puts them on the device (materialize, in
// bfs_plan.cpp) and the text that shows them (BfsPlan::explain): no CUDA call here, so the CPU
// tests check them. bfs_storage (bfs.hpp) is the spec's storage part for a host graph.
#include <cstdint>

#include "codegen/keys/bfs_key.hpp"
#include "dbsparse/bfs.hpp"

namespace dbsparse::detail {

// What a plan decides from its options, its config and the vertex count.
struct BfsSpec {
  Config config;  // params complete: every key of BfsConfig
  BfsConfig typed;
  BfsDirection direction = BfsDirection::Auto;
  bool profile = false;
  int32_t n = 0, blocks = 0, words = 0;  // vertices, 16-vertex blocks, 32-bit mask words
  codegen::BfsKey key;                   // the search variant: direction policy, block size, offsets
  unsigned threads = 0;                  // a search block's threads
  std::string trial;                     // the plan-time trial or its recorded outcome (explain); empty: none
};

// Throws UsageError for a config that is not a BfsConfig.
BfsSpec bfs_spec(const BfsOptions& opt, const Config& config, int32_t n, bool offsets64);

// How levels are driven: one cooperative launch where the device can and nothing asks otherwise
// (profiling times every level, so it needs the host loop). UsageError when opt asks for a
// cooperative launch the device cannot make.
BfsLaunch bfs_launch(const BfsOptions& opt, bool can_cooperate);

// The plan's own allocations besides the views: the masks, the block and task lists, the state and
// the level log.
int64_t bfs_search_state_bytes(int32_t n, int64_t task_capacity);

// The storage of a plan over the caller's views (64-bit row offsets), read in place: `pieces` is
// the push view's task count. convert_ms is left to the caller (it times the view checks).
BfsStats bfs_view_stats(int32_t n, int64_t entries, bool symmetric, int64_t pieces);

}  // namespace dbsparse::detail

#pragma once
// The DB-BFS kernel variant, e.g. "bfs.auto.or_and.w8": direction policy (auto compiles both
// level kinds and chooses on the GPU; push / pull compile one), the semiring (or-and: structure
// only) and warps per thread block; ".o64" at the end for 64-bit row offsets (a graph on the
// device past 2^31 entries, which also brings the view checks, bfs_check_view).
#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_source.hpp"
#include "codegen/keys/spmspv_key.hpp"
#include "dbsparse/semiring.hpp"

namespace dbsparse::codegen {

struct BfsKey {
  Direction direction = Direction::Auto;
  Semiring semiring = Semiring::OrAnd;
  int warps = 8;
  bool offsets64 = false;

  std::string to_string() const;
  static BfsKey parse(std::string_view text);  // throws UsageError
  auto operator<=>(const BfsKey&) const = default;
};

// Entry points by role: "search" (bfs_search), "dense_update" (bfs_dense_update, the cuSPARSE-loop
// baseline's frontier update) and, with offsets64, "check_view" (bfs_check_view).
KernelSource make_source(const BfsKey& key);

// Every variant: the three direction policies, 8 or 32 warps per block, 32- or 64-bit offsets.
std::vector<BfsKey> bfs_search_space();

}  // namespace dbsparse::codegen

#include "runtime/bfs/bfs_spec.hpp"

#include <algorithm>
#include <chrono>

#include "dbsparse/abi/bfs.h"

namespace dbsparse {
namespace detail {

BfsSpec bfs_spec(const BfsOptions& opt, const Config& config, int32_t n, bool offsets64) {
  BfsSpec s;
  s.config = config;
  s.typed = config_from_json<BfsConfig>(config.params);
  s.config.params = config_to_json(s.typed);
  s.direction = opt.direction;
  s.profile = opt.profile;
  s.n = n;
  s.blocks = (n + 15) / 16;
  s.words = (n + 31) / 32;
  s.key.direction = static_cast<codegen::Direction>(static_cast<int>(opt.direction));
  s.key.warps = s.typed.block_warps;
  s.key.offsets64 = offsets64;
  s.threads = static_cast<unsigned>(s.key.warps * 32);
  return s;
}

BfsLaunch bfs_launch(const BfsOptions& opt, bool can_cooperate) {
  if (opt.launch == BfsLaunch::Cooperative && !can_cooperate)
    throw UsageError("plan_bfs: cooperative launch asked for, but this device does not support it");
  return (opt.profile || opt.launch == BfsLaunch::HostLoop || !can_cooperate) ? BfsLaunch::HostLoop
                                                                              : BfsLaunch::Cooperative;
}

int64_t bfs_search_state_bytes(int32_t n, int64_t task_capacity) {
  const int64_t words = std::max<int64_t>((n + 31) / 32, 1), blocks = std::max<int64_t>((n + 15) / 16, 1);
  return 4 * words * 4 + 3 * blocks * 4 + 2 * task_capacity * static_cast<int64_t>(sizeof(abi::BfsTask)) +
         static_cast<int64_t>(sizeof(abi::BfsState)) +
         int64_t{abi::kBfsLogLevels} * static_cast<int64_t>(sizeof(abi::BfsLevelLog));
}

BfsStats bfs_view_stats(int32_t n, int64_t entries, bool symmetric, int64_t pieces) {
  BfsStats s;
  s.vertices = n;
  s.entries = entries;
  s.symmetric = symmetric;
  s.views_in_place = true;
  s.task_capacity = std::max<int64_t>(pieces, 1);
  const int64_t n1 = static_cast<int64_t>(n) + 1;
  s.bytes_format = (symmetric ? 1 : 2) * (n1 * 8 + entries * 4);
  s.bytes_device = bfs_search_state_bytes(n, s.task_capacity);
  s.bytes_csr = n1 * 8 + entries * 8;
  return s;
}

}  // namespace detail

BfsStats bfs_storage(const PatternGraph& g) {
  const auto t0 = std::chrono::steady_clock::now();
  BfsStats s;
  s.vertices = g.n;
  s.entries = g.entries();
  s.symmetric = is_symmetric(g);
  // Out-pieces of every vertex, from the push view's row lengths (g's column counts when g is not
  // symmetric): what one frontier can list at most, since each vertex joins one frontier.
  int64_t cap = 0;
  if (s.symmetric) {
    for (int32_t v = 0; v < g.n; ++v) cap += (g.row_ptr[v + 1] - g.row_ptr[v] + abi::kBfsPiece - 1) / abi::kBfsPiece;
  } else {
    std::vector<int32_t> out(static_cast<size_t>(g.n), 0);
    for (int32_t j : g.col_idx) ++out[static_cast<size_t>(j)];
    for (int32_t d : out) cap += (d + abi::kBfsPiece - 1) / abi::kBfsPiece;
  }
  s.task_capacity = std::max<int64_t>(cap, 1);
  const int64_t n1 = static_cast<int64_t>(g.n) + 1, views = s.symmetric ? 1 : 2;
  s.bytes_format = views * (n1 + std::max<int64_t>(s.entries, 1)) * 4;
  s.bytes_device = s.bytes_format + detail::bfs_search_state_bytes(g.n, s.task_capacity);
  s.bytes_csr = n1 * 4 + s.entries * 8;
  s.convert_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

}  // namespace dbsparse

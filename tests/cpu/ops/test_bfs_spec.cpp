// The BFS plan's host spec (runtime/bfs/bfs_spec.hpp): the kernel variant and block shape from the
// options and config, the level driver, and the storage of a plan over the caller's 64-bit views,
// each worked out by hand below.
#include <doctest/doctest.h>

#include "dbsparse/abi/bfs.h"
#include "runtime/bfs/bfs_spec.hpp"

using namespace dbsparse;

TEST_CASE("bfs spec: key, threads and block counts") {
  BfsOptions opt;
  opt.direction = BfsDirection::Push;
  Config config{"bfs", {{"block_warps", 32}}, ConfigSource::Explicit, ""};
  const auto s = detail::bfs_spec(opt, config, 33, false);
  CHECK(s.key.to_string() == "bfs.push.or_and.w32");
  CHECK(s.threads == 32 * 32);
  CHECK(s.n == 33);
  CHECK(s.blocks == 3);  // ceil(33 / 16)
  CHECK(s.words == 2);   // ceil(33 / 32)
  CHECK(s.typed.block_warps == 32);
  CHECK(s.config.params.at("alpha") == 14.0);  // echoed back in full
  CHECK(s.config.source == ConfigSource::Explicit);

  opt.direction = BfsDirection::Auto;
  opt.profile = true;
  const auto d = detail::bfs_spec(opt, Config{"bfs", nlohmann::json::object(), ConfigSource::Default, ""}, 16, true);
  CHECK(d.key.to_string() == "bfs.auto.or_and.w8.o64");
  CHECK(d.threads == 8 * 32);
  CHECK(d.blocks == 1);
  CHECK(d.words == 1);
  CHECK(d.profile);

  CHECK_THROWS_AS(detail::bfs_spec(opt, Config{"bfs", {{"block_warps", 16}}, ConfigSource::Explicit, ""}, 16, false),
                  UsageError);
}

TEST_CASE("bfs spec: the level driver") {
  BfsOptions opt;
  CHECK(detail::bfs_launch(opt, true) == BfsLaunch::Cooperative);
  CHECK(detail::bfs_launch(opt, false) == BfsLaunch::HostLoop);
  opt.profile = true;  // timing each level needs the host loop
  CHECK(detail::bfs_launch(opt, true) == BfsLaunch::HostLoop);
  opt.profile = false;
  opt.launch = BfsLaunch::HostLoop;
  CHECK(detail::bfs_launch(opt, true) == BfsLaunch::HostLoop);
  opt.launch = BfsLaunch::Cooperative;
  CHECK(detail::bfs_launch(opt, true) == BfsLaunch::Cooperative);
  CHECK_THROWS_AS(detail::bfs_launch(opt, false), UsageError);
}

TEST_CASE("bfs spec: storage of a plan over the caller's 64-bit views") {
  // 100 vertices, 1000 entries, 20 push tasks. Views: (101 offsets x 8 + 1000 indices x 4) bytes
  // each, one when symmetric, two otherwise. State: 4 mask arrays of ceil(100 / 32) = 4 words,
  // 3 lists of ceil(100 / 16) = 7 blocks, two task lists of 20, the state and the level log.
  const int64_t state = 4 * 4 * 4 + 3 * 7 * 4 + 2 * 20 * static_cast<int64_t>(sizeof(abi::BfsTask)) +
                        static_cast<int64_t>(sizeof(abi::BfsState)) +
                        int64_t{abi::kBfsLogLevels} * static_cast<int64_t>(sizeof(abi::BfsLevelLog));
  const auto sym = detail::bfs_view_stats(100, 1000, true, 20);
  CHECK(sym.vertices == 100);
  CHECK(sym.entries == 1000);
  CHECK(sym.symmetric);
  CHECK(sym.views_in_place);
  CHECK(sym.task_capacity == 20);
  CHECK(sym.bytes_format == 101 * 8 + 1000 * 4);
  CHECK(sym.bytes_device == state);
  CHECK(sym.bytes_csr == 101 * 8 + 1000 * 8);
  const auto two = detail::bfs_view_stats(100, 1000, false, 20);
  CHECK(two.bytes_format == 2 * (101 * 8 + 1000 * 4));
  CHECK(detail::bfs_view_stats(100, 0, true, 0).task_capacity == 1);  // never an empty task list
}

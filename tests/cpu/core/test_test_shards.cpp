// The shards a sanitizer run splits a long gpu case into (test_support.hpp, hardening_run.sh
// SAN_SHARDS): n shards run every item exactly once, and a malformed spec is an error, not a
// shard that silently runs nothing.
#include <doctest/doctest.h>

#include "dbsparse/generators.hpp"
#include "dbsparse/graph.hpp"
#include "test_support.hpp"

TEST_CASE("TestShardsSplitALoopSoThatTheirUnionRunsEveryItemOnce") {
  CHECK(dbs_test::parse_shard(nullptr) == std::pair<size_t, size_t>{0, 1});
  CHECK(dbs_test::parse_shard("") == std::pair<size_t, size_t>{0, 1});
  CHECK(dbs_test::parse_shard("2/5") == std::pair<size_t, size_t>{2, 5});
  for (size_t n : {1, 2, 3, 7}) {
    std::vector<int> runs(20, 0);
    for (size_t k = 0; k < n; ++k) {
      const auto [mine, of] = dbs_test::parse_shard((std::to_string(k) + "/" + std::to_string(n)).c_str());
      for (size_t i = 0; i < runs.size(); ++i) runs[i] += i % of == mine;
    }
    for (int r : runs) CHECK(r == 1);
  }
  for (const char* bad : {"5/5", "1/0", "x/2", "1/2/3", "1", "-1/2", "1/2 "})
    CHECK_THROWS_WITH_AS(dbs_test::parse_shard(bad), doctest::Contains("expected k/n"), std::invalid_argument);
}

// Under racecheck (DBSPARSE_TEST_RACECHECK=1, hardening_run.sh) BFS runs deeper than the cap are
// left out; elsewhere every depth runs.
TEST_CASE("BfsDepthCapAppliesUnderRacecheckAlone") {
  CHECK(dbs_test::bfs_depth({0, 1, 2, -1, 5}) == 6);
  CHECK(dbs_test::bfs_depth({}) == 0);
  CHECK(dbs_test::bfs_depth({-1, -1}) == 0);
  const int cap = dbs_test::kRacecheckMaxBfsLevels;
  for (int depth : {1, cap, cap + 1, 3000}) {
    CAPTURE(depth);
    CHECK(dbs_test::bfs_depth_runs(depth, false));
    CHECK(dbs_test::bfs_depth_runs(depth, true) == (depth <= cap));
  }
  // The BFS cases' racecheck graphs stay within the cap from their deepest source (an end of the
  // path, a corner of the stencil), measured by the CPU BFS.
  dbsparse::PatternGraph path;
  path.n = dbs_test::kRacecheckBfsPath;
  for (int32_t i = 0; i < path.n; ++i) {
    if (i > 0) path.col_idx.push_back(i - 1);
    if (i + 1 < path.n) path.col_idx.push_back(i + 1);
    path.row_ptr.push_back(static_cast<int32_t>(path.col_idx.size()));
  }
  const int path_depth = dbs_test::bfs_depth(dbsparse::bfs_reference(path, 0).level);
  CHECK(path_depth == path.n);
  CHECK(path_depth <= cap);
  for (const char* spec : {dbs_test::kRacecheckStencil, dbs_test::kRacecheckWideStencil}) {
    CAPTURE(spec);
    const dbsparse::PatternGraph g = dbsparse::pattern_of(dbsparse::generate(spec));
    CHECK(dbs_test::bfs_depth(dbsparse::bfs_reference(g, 0).level) <= cap);
  }
}

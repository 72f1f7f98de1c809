// DB-BFS on the GPU against the CPU BFS (graph.hpp): levels equal, parents a valid BFS tree
// (Graph500 rules), for every direction policy and both launch paths, on shapes that stress the
// level loop (a path), one huge level (a star), unreachable parts, self loops, the block edges of
// the 16-bit masks, directed graphs, generated and real graphs.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

#include "dbsparse/abi/bfs.h"
#include "dbsparse/bfs.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/io.hpp"
#include "gpu/gpu_support.hpp"

namespace {

CsrMatrix<double> from_edges(int32_t n, const std::vector<std::pair<int32_t, int32_t>>& edges, bool symmetric) {
  CooMatrix<double> coo;
  coo.rows = coo.cols = n;
  for (auto [i, j] : edges) {
    coo.row.push_back(i);
    coo.col.push_back(j);
    coo.values.push_back(1.0);
    if (symmetric && i != j) {
      coo.row.push_back(j);
      coo.col.push_back(i);
      coo.values.push_back(1.0);
    }
  }
  return coo_to_csr(coo);
}

struct Variant {
  BfsDirection direction;
  BfsLaunch launch;
};
const Variant kVariants[] = {{BfsDirection::Auto, BfsLaunch::Cooperative},
                             {BfsDirection::Push, BfsLaunch::Cooperative},
                             {BfsDirection::Pull, BfsLaunch::Cooperative},
                             {BfsDirection::Auto, BfsLaunch::HostLoop}};

// Every variant, every source: levels equal the reference's, the result validates, the statistics
// add up. A config (for the auto rule) may be given; with a shard, only its (variant, source) pairs.
template <class T>
void check_bfs(const std::string& name, const CsrMatrix<T>& a, std::vector<int32_t> sources, bool transpose = false,
               const Config* config = nullptr, dbs_test::Shard* shard = nullptr) {
  const PatternGraph g = pattern_of(a, transpose);
  Stream stream(ctx());
  for (const Variant& v : kVariants) {
    std::vector<int32_t> mine;
    for (int32_t s : sources)
      if (shard == nullptr || shard->next()) mine.push_back(s);
    if (mine.empty()) continue;
    BfsOptions opt;
    opt.direction = v.direction;
    opt.launch = v.launch;
    opt.transpose = transpose;
    opt.config = config;
    opt.trial_ms = 0;  // each variant's own kernel: no trial, no size rule turning auto into push
    BfsPlan plan = plan_bfs(ctx(), a, opt);
    DeviceBuffer<int32_t> levels(static_cast<size_t>(g.n)), parents(static_cast<size_t>(g.n));
    for (int32_t s : mine) {
      CAPTURE(name);
      CAPTURE(s);
      CAPTURE(to_string(v.direction));
      CAPTURE(to_string(v.launch));
      const BfsLevels ref = bfs_reference(g, s);
      if (!dbs_test::bfs_depth_runs_here(dbs_test::bfs_depth(ref.level), name, s)) continue;
      plan.run(s, levels, parents, stream);
      stream.synchronize();
      const auto lv = levels.download(), pv = parents.download();
      CHECK(lv == ref.level);
      const BfsValidation val = validate_bfs(g, s, lv, pv);
      CHECK_MESSAGE(val.ok, val.summary());
      const BfsRunStats st = plan.last_stats();
      CHECK(st.levels == val.max_level + 1);
      CHECK(st.launch == v.launch);
      if (st.levels <= abi::kBfsLogLevels) {
        int64_t sum = 0;
        for (const auto& l : st.per_level) {
          sum += l.frontier;
          if (v.direction != BfsDirection::Auto) CHECK(l.direction == v.direction);
        }
        CHECK(sum == val.reached);
      }
    }
  }
}

}  // namespace

TEST_CASE("BfsMatchesReferenceOnPathStarAndDisconnectedGraphs") {
  std::vector<std::pair<int32_t, int32_t>> path, star, parts;
  dbs_test::Shard shard;  // a (graph, variant, source) a shard under a sanitizer (hardening_run.sh SAN_SHARDS)
  // 300 levels under racecheck (dbs_test::under_racecheck): still past 256, the same kernels.
  const int32_t np = dbs_test::full_or_under_racecheck(3000, dbs_test::kRacecheckBfsPath);
  for (int32_t i = 0; i + 1 < np; ++i) path.push_back({i, i + 1});
  check_bfs("path", from_edges(np, path, true), {0, 15, 16, np / 2, np - 1}, false, nullptr, &shard);
  for (int32_t i = 1; i < 20000; ++i) star.push_back({0, i});
  check_bfs("star", from_edges(20000, star, true), {0, 15, 16, 19999}, false, nullptr, &shard);
  // Two cliques of 40, a path of 100, isolated vertices between them.
  for (int32_t i = 0; i < 40; ++i)
    for (int32_t j = i + 1; j < 40; ++j) parts.push_back({i, j}), parts.push_back({100 + i, 100 + j});
  for (int32_t i = 200; i < 299; ++i) parts.push_back({i, i + 1});
  check_bfs("disconnected", from_edges(333, parts, true), {0, 15, 16, 50, 120, 250, 332}, false, nullptr, &shard);
}

TEST_CASE("BfsMatchesReferenceWithSelfLoopsDuplicatesAndTinyGraphs") {
  // Duplicates are summed by coo_to_csr; self loops stay stored entries.
  std::vector<std::pair<int32_t, int32_t>> e = {{0, 0}, {0, 1},  {0, 1},   {1, 2},  {2, 2},
                                                {2, 3}, {3, 17}, {17, 17}, {17, 31}};
  check_bfs("loops", from_edges(40, e, true), {0, 15, 16, 17, 39});
  check_bfs("one vertex", from_edges(1, {}, true), {0});
  check_bfs("one vertex, self loop", from_edges(1, {{0, 0}}, true), {0});
  check_bfs("two vertices", from_edges(2, {{0, 1}}, true), {0, 1});
  // An empty graph plans; every source is out of range.
  BfsPlan empty = plan_bfs(ctx(), from_edges(0, {}, true), BfsOptions{});
  DeviceBuffer<int32_t> levels(1);
  Stream stream(ctx());
  CHECK_THROWS_AS(empty.run(0, levels.ptr(), 0, stream.handle()), UsageError);
}

TEST_CASE("BfsFollowsTheYEqualsAxConventionOnDirectedGraphs") {
  // A(i, j) != 0: i is reached from j. Edges 0 -> 1 -> 2 stored as A(1,0), A(2,1); 3 -> 0 as A(0,3).
  CsrMatrix<double> a = from_edges(20, {{1, 0}, {2, 1}, {0, 3}, {19, 2}}, false);
  check_bfs("directed", a, {0, 3, 19});
  check_bfs("directed, transposed", a, {0, 2, 19}, true);
  Stream stream(ctx());
  BfsPlan plan = plan_bfs(ctx(), a, BfsOptions{});
  DeviceBuffer<int32_t> levels(20);
  plan.run(0, levels, stream);
  stream.synchronize();
  const auto lv = levels.download();
  CHECK(lv[0] == 0);
  CHECK(lv[1] == 1);
  CHECK(lv[2] == 2);
  CHECK(lv[19] == 3);
  CHECK(lv[3] == -1);
}

TEST_CASE("BfsMatchesReferenceOnGeneratedGraphs") {
  dbs_test::Shard shard;  // a (graph, variant, source) a shard under a sanitizer (hardening_run.sh SAN_SHARDS)
  const std::string stencil =
      dbs_test::full_or_under_racecheck<std::string>("stencil2d:n=300", dbs_test::kRacecheckStencil);
  for (const char* spec : {"rmat:scale=14,ef=16,scramble=1", stencil.c_str(), "stencil3d:n=24,points=27",
                           "uniform:n=20000,d=6,seed=3", "powerlaw:n=30000,avg=6,alpha=1.5,max=5000,seed=2"}) {
    const CsrMatrix<double> a = generate(spec);
    const PatternGraph g = pattern_of(a);
    std::vector<int32_t> sources = pick_sources(g, 3, 7);
    sources.push_back(g.n - 1);
    check_bfs(spec, a, sources, false, nullptr, &shard);
  }
}

TEST_CASE("BfsDirectionRuleFromTheConfigIsHonoured") {
  // alpha tiny: push never gives way; bfs_th3 = 0: pull from the first level on.
  const CsrMatrix<double> a = generate("rmat:scale=13,ef=16,scramble=1");
  Config push_always{"bfs", {{"alpha", 1e-3}, {"beta", 1e6}}, ConfigSource::Explicit, ""};
  Config pull_always{"bfs", {{"bfs_th3", 0.0}}, ConfigSource::Explicit, ""};
  check_bfs("alpha tiny", a, {0, 5}, false, &push_always);
  check_bfs("th3 zero", a, {0, 5}, false, &pull_always);
  Stream stream(ctx());
  BfsOptions opt;
  opt.config = &pull_always;
  BfsPlan plan = plan_bfs(ctx(), a, opt);
  DeviceBuffer<int32_t> levels(static_cast<size_t>(a.rows));
  const int32_t source = pick_sources(pattern_of(a), 1, 3).back();  // vertex 0 may be isolated
  plan.run(source, levels, stream);
  const BfsRunStats st = plan.last_stats();
  REQUIRE(st.levels >= 2);
  for (const auto& l : st.per_level) CHECK(l.direction == BfsDirection::Pull);
  opt.config = &push_always;
  BfsPlan pusher = plan_bfs(ctx(), a, opt);
  pusher.run(source, levels, stream);
  for (const auto& l : pusher.last_stats().per_level) CHECK(l.direction == BfsDirection::Push);
  Config bad{"bfs", {{"alpha", -1.0}}, ConfigSource::Explicit, ""};
  opt.config = &bad;
  CHECK_THROWS_AS(plan_bfs(ctx(), a, opt), UsageError);
}

TEST_CASE("BfsWideBlocksAndSoloLevelsMatchReference") {
  // Solo mode hands small push levels to block 0 alone; a threshold above every level's task count
  // runs the whole search there, a small one switches back and forth.
  Config wide{"bfs", {{"block_warps", 32}}, ConfigSource::Explicit, ""};
  Config solo{"bfs", {{"solo_tasks", 64}}, ConfigSource::Explicit, ""};
  Config all_solo{"bfs", {{"solo_tasks", 1 << 20}, {"block_warps", 32}}, ConfigSource::Explicit, ""};
  std::vector<std::pair<int32_t, int32_t>> path;
  const int32_t np =
      dbs_test::full_or_under_racecheck(2000, dbs_test::kRacecheckBfsPath);  // see dbs_test::under_racecheck
  for (int32_t i = 0; i + 1 < np; ++i) path.push_back({i, i + 1});
  // Graph-major, a (graph, config, variant, source) an item: under racecheck a single run on the
  // path outlasts minutes (s30: 2000 levels, one grid sync or launch each), so with 36 shards each
  // holds one path run, one stencil run and one R-MAT run (hardening_run.sh SAN_SHARDS).
  dbs_test::Shard shard;
  // Smaller under racecheck: s31 cut n=200 runs with block_warps = 32 there.
  const std::string stencil =
      dbs_test::full_or_under_racecheck<std::string>("stencil2d:n=200", dbs_test::kRacecheckWideStencil);
  for (const char* spec : {"path", stencil.c_str(), "rmat:scale=13,ef=16,scramble=1"}) {
    const bool is_path = std::string(spec) == "path";
    const CsrMatrix<double> a = is_path ? from_edges(np, path, true) : generate(spec);
    const std::vector<int32_t> sources =
        is_path ? std::vector<int32_t>{0, np / 2 - 1, np - 1} : pick_sources(pattern_of(a), 3, 5);
    for (const Config* c : {&wide, &solo, &all_solo}) {
      CAPTURE(c->params.dump());
      check_bfs(spec, a, sources, false, c, &shard);
    }
  }
}

TEST_CASE("BfsProfilingTimesEveryLevelAndExplainSaysWhichPathRan") {
  const CsrMatrix<double> a = generate("stencil2d:n=200");
  Stream stream(ctx());
  BfsOptions opt;
  opt.profile = true;
  BfsPlan plan = plan_bfs(ctx(), a, opt);
  DeviceBuffer<int32_t> levels(static_cast<size_t>(a.rows));
  plan.run(0, levels, stream);
  const BfsRunStats st = plan.last_stats();
  CHECK(st.launch == BfsLaunch::HostLoop);
  CHECK(st.levels == 399);
  for (const auto& l : st.per_level) CHECK(l.ms >= 0);
  CHECK(plan.explain().find("host loop") != std::string::npos);
  BfsPlan coop = plan_bfs(ctx(), a, BfsOptions{});
  CHECK(coop.explain().find("cooperative") != std::string::npos);
  DeviceBuffer<int32_t> small(3);
  CHECK_THROWS_AS(coop.run(0, small, stream), UsageError);
  CHECK_THROWS_AS(coop.run(-1, levels, stream), UsageError);
  CHECK_THROWS_AS(coop.run(a.rows, levels, stream), UsageError);
}

TEST_CASE("BfsDeviceFootprintIsTheSumOfThePlansAllocations") {
  for (const char* spec : {"rmat:scale=12,ef=16,scramble=1", "uniform:n=5000,d=4,seed=2"}) {
    CAPTURE(spec);
    BfsPlan plan = plan_bfs(ctx(), generate(spec), BfsOptions{});
    CHECK(plan.device_bytes_held() == plan.stats().bytes_device);
  }
}

TEST_CASE("BfsMatchesReferenceOnRealMatrices") {
  dbs_test::Shard shard;  // a (matrix, variant, source) a shard under a sanitizer (hardening_run.sh SAN_SHARDS)
  for (const auto& file : dbs_test::shared_matrices()) {
    const CsrMatrix<double> a = read_matrix_market(file);
    if (a.rows != a.cols || a.rows == 0) continue;
    const PatternGraph g = pattern_of(a);
    std::vector<int32_t> sources = pick_sources(g, 2, 11);
    check_bfs(file, a, sources, false, nullptr, &shard);
    if (!is_symmetric(g)) {
      check_bfs(file + " (symmetrised)", ones_matrix<float>(symmetrize(g, false)), sources, false, nullptr, &shard);
    }
  }
}

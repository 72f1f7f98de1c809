// BFS over a graph on the device with 64-bit row offsets (plan_bfs of a DeviceGraphView64): the
// .o64 search against the CPU BFS (levels equal, parents a valid BFS tree), the checks of the
// caller's views, and a search past 2^31 entries (about 9 GB on the device).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>

#include "dbsparse/bfs.hpp"
#include "dbsparse/generators.hpp"
#include "gpu/gpu_support.hpp"

namespace {

// A pattern graph on the device with its row offsets widened to int64 (or given as they are, to
// test the checks).
struct DeviceGraph64 {
  DeviceBuffer<int64_t> row_ptr;
  DeviceBuffer<int32_t> col_idx;
  DeviceGraphView64 view;
  DeviceGraph64(int32_t n, const std::vector<int64_t>& ptr, const std::vector<int32_t>& idx)
      : row_ptr(std::span<const int64_t>(ptr)), col_idx(std::max<size_t>(idx.size(), 1)) {
    if (!idx.empty()) col_idx.upload(std::span<const int32_t>(idx));
    view = {n, static_cast<int64_t>(idx.size()), row_ptr.data(), col_idx.data()};
  }
  explicit DeviceGraph64(const PatternGraph& g)
      : DeviceGraph64(g.n, std::vector<int64_t>(g.row_ptr.begin(), g.row_ptr.end()), g.col_idx) {}
};

// Every direction policy and both launch paths from `sources`: levels equal bfs_reference's on g
// (the in-neighbour view), the parents pass Graph500's rules. With a shard, only its (variant, source) pairs.
void check_bfs64(const std::string& name, const PatternGraph& g, const DeviceGraphView64& a,
                 const DeviceGraphView64* a_t, bool transpose, const std::vector<int32_t>& sources,
                 dbs_test::Shard* shard = nullptr) {
  Stream stream(ctx());
  for (auto [dir, launch] :
       {std::pair{BfsDirection::Auto, BfsLaunch::Cooperative}, std::pair{BfsDirection::Push, BfsLaunch::Cooperative},
        std::pair{BfsDirection::Pull, BfsLaunch::Cooperative}, std::pair{BfsDirection::Auto, BfsLaunch::HostLoop}}) {
    std::vector<int32_t> mine;
    for (int32_t s : sources)
      if (shard == nullptr || shard->next()) mine.push_back(s);
    if (mine.empty()) continue;
    BfsOptions opt;
    opt.direction = dir;
    opt.launch = launch;
    opt.transpose = transpose;
    const BfsPlan plan = plan_bfs(ctx(), a, opt, a_t);
    CHECK(plan.kernel().key.find(".o64") != std::string::npos);
    CHECK(plan.explain().find("read in place") != std::string::npos);
    DeviceBuffer<int32_t> levels(static_cast<size_t>(g.n)), parents(static_cast<size_t>(g.n));
    for (int32_t s : mine) {
      CAPTURE(name);
      CAPTURE(s);
      CAPTURE(to_string(dir));
      CAPTURE(to_string(launch));
      const BfsLevels ref = bfs_reference(g, s);
      if (!dbs_test::bfs_depth_runs_here(dbs_test::bfs_depth(ref.level), name, s)) continue;
      plan.run(s, levels, parents, stream);
      stream.synchronize();
      const auto lv = levels.download(), pv = parents.download();
      CHECK(lv == ref.level);
      const BfsValidation val = validate_bfs(g, s, lv, pv);
      CHECK_MESSAGE(val.ok, val.summary());
    }
  }
}

}  // namespace

TEST_CASE("BfsOn64BitOffsetsMatchesReference") {
  (void)ctx();            // first: the uploads below need a current context (alone, nothing else made one)
  dbs_test::Shard shard;  // a (graph, variant, source) a shard under a sanitizer (hardening_run.sh SAN_SHARDS)
  // Symmetric graphs: one view.
  const std::string stencil =
      dbs_test::full_or_under_racecheck<std::string>("stencil2d:n=300", dbs_test::kRacecheckStencil);
  for (const char* spec :
       {"rmat:scale=14,ef=16,scramble=1", stencil.c_str(), "powerlaw:n=30000,avg=6,alpha=1.5,max=5000,seed=2"}) {
    const PatternGraph g = symmetrize(pattern_of(generate(spec)), false);
    const DeviceGraph64 d(g);
    std::vector<int32_t> sources = pick_sources(g, 3, 7);
    sources.push_back(g.n - 1);
    check_bfs64(spec, g, d.view, nullptr, false, sources, &shard);
  }
  // A directed graph: rows of A list in-neighbours, its transpose's rows out-neighbours; and the
  // same graph given the other way round (options.transpose: A's rows list out-neighbours).
  const PatternGraph g = pattern_of(generate("powerlaw:n=20000,avg=8,alpha=1.5,max=4000,seed=5"));
  const PatternGraph gt = transpose(g);
  const DeviceGraph64 d(g), dt(gt);
  const std::vector<int32_t> sources = pick_sources(g, 3, 11);
  check_bfs64("directed", g, d.view, &dt.view, false, sources, &shard);
  check_bfs64("directed, transposed", g, dt.view, &d.view, true, sources, &shard);
}

TEST_CASE("BfsOn64BitOffsetsChecksTheCallersViews") {
  (void)ctx();  // first: the uploads below need a current context (alone, nothing else made one)
  // 0 - 1 - 2 - 3, a path, symmetric.
  const std::vector<int64_t> ptr{0, 1, 3, 5, 6};
  const std::vector<int32_t> idx{1, 0, 2, 1, 3, 2};
  auto refused = [](const DeviceGraphView64& v, const DeviceGraphView64* vt, const char* says) {
    CAPTURE(says);
    CHECK_THROWS_WITH_AS(plan_bfs(ctx(), v, BfsOptions{}, vt), doctest::Contains(says), UsageError);
  };
  const DeviceGraph64 good(4, ptr, idx);
  CHECK_NOTHROW(plan_bfs(ctx(), good.view, BfsOptions{}));
  auto v = good.view;
  v.n = -1;
  refused(v, nullptr, "negative");
  v = good.view;
  v.col_idx = nullptr;
  refused(v, nullptr, "null");
  // Offsets that fall, that pass entries, or that do not start at 0.
  for (const auto& bad_ptr : {std::vector<int64_t>{0, 3, 1, 5, 6}, std::vector<int64_t>{0, 1, 3, 5, 7},
                              std::vector<int64_t>{1, 1, 3, 5, 6}}) {
    const DeviceGraph64 bad(4, bad_ptr, idx);
    refused(bad.view, nullptr, "row_ptr");
  }
  const DeviceGraph64 no_vertices(0, {5}, {1, 2, 3, 4, 5});
  refused(no_vertices.view, nullptr, "row_ptr[0] = 5");
  // Columns out of order, or twice in a row (either would let push and pull see other edges).
  const DeviceGraph64 unsorted(4, ptr, {1, 2, 0, 1, 3, 2});
  refused(unsorted.view, nullptr, "not sorted");
  const DeviceGraph64 twice(4, {0, 1, 3, 5, 6}, {1, 0, 0, 3, 3, 2});
  refused(twice.view, nullptr, "not sorted");
  const DeviceGraph64 bad_col(4, ptr, {1, 0, 2, 1, 4, 2});
  refused(bad_col.view, nullptr, "col_idx[4] = 4");
  const DeviceGraph64 negative_col(4, ptr, {1, 0, 2, -1, 3, 2});
  refused(negative_col.view, nullptr, "col_idx[3] = -1");
  // Directed 0 -> 1 -> 2 -> 3 (A(i, j): i reached from j), not symmetric.
  const DeviceGraph64 directed(4, {0, 0, 1, 2, 3}, {0, 1, 2});
  refused(directed.view, nullptr, "not symmetric");
  // A transposed view that is not the transpose, or of another size.
  const DeviceGraph64 same(4, {0, 0, 1, 2, 3}, {0, 1, 2});
  refused(directed.view, &same.view, "transpose");
  const DeviceGraph64 bigger(5, {0, 0, 1, 2, 3, 3}, {0, 1, 2});
  refused(directed.view, &bigger.view, "transpose");
  const DeviceGraph64 right(4, {0, 1, 2, 3, 3}, {1, 2, 3});
  CHECK_NOTHROW(plan_bfs(ctx(), directed.view, BfsOptions{}, &right.view));
}

// A circulant graph of 2^22 vertices, each joined to the 256 on either side and to itself: 513
// entries a row, 2,151,677,952 in all, past what 32-bit offsets address. From source s, vertex v
// is at level ceil(d / 256) with d its distance round the ring. Filled a block of rows at a time
// (the host never holds the graph); columns sorted in each row, as the symmetry check needs.
TEST_CASE("BfsOn64BitOffsetsPast2To31EntriesMatchesReference") {
  (void)ctx();  // first: the uploads below need a current context (alone, nothing else made one)
  const int32_t n = 1 << 22, reach = 256, len = 2 * reach + 1;
  const int64_t entries = int64_t{n} * len;
  REQUIRE(entries > int64_t{INT32_MAX});
  std::vector<int64_t> ptr(static_cast<size_t>(n) + 1);
  for (int64_t r = 0; r <= n; ++r) ptr[static_cast<size_t>(r)] = r * len;
  DeviceBuffer<int64_t> d_ptr{std::span<const int64_t>(ptr)};
  DeviceAllocation d_col(static_cast<size_t>(entries) * 4);
  const int32_t block = 1 << 16;
  std::vector<int32_t> hc(static_cast<size_t>(block) * len);
  for (int32_t r0 = 0; r0 < n; r0 += block) {
    for (int64_t r = r0; r < r0 + block; ++r) {
      int32_t* row = hc.data() + (r - r0) * len;
      for (int32_t k = 0; k < len; ++k) {
        int64_t c = r + k - reach;
        c += c < 0 ? n : c >= n ? -int64_t{n} : 0;
        row[k] = static_cast<int32_t>(c);
      }
      if (r < reach || r >= n - reach) std::sort(row, row + len);  // only rows that wrap round are out of order
    }
    d_col.upload(hc.data(), hc.size() * 4, static_cast<size_t>(r0) * len * 4);
  }
  const DeviceGraphView64 view{n, entries, d_ptr.data(), reinterpret_cast<const int32_t*>(d_col.ptr())};
  const BfsPlan plan = plan_bfs(ctx(), view, BfsOptions{});
  CAPTURE(plan.explain());
  CHECK(plan.stats().task_capacity == int64_t{n} * ((len + 127) / 128));
  Stream s(ctx());
  DeviceBuffer<int32_t> levels(static_cast<size_t>(n)), parents(static_cast<size_t>(n));
  auto ring = [&](int64_t u, int64_t v) {
    const int64_t d = std::llabs(u - v);
    return std::min(d, int64_t{n} - d);
  };
  for (int32_t source : {0, n / 2 + 77, n - 1}) {
    CAPTURE(source);
    plan.run(source, levels, parents, s);
    s.synchronize();
    const auto lv = levels.download(), pv = parents.download();
    int64_t wrong_level = 0, wrong_parent = 0;
    for (int64_t v = 0; v < n; ++v) {
      const int32_t want = static_cast<int32_t>((ring(source, v) + reach - 1) / reach);
      wrong_level += lv[static_cast<size_t>(v)] != want;
      const int32_t p = pv[static_cast<size_t>(v)];
      const bool ok =
          v == source ? p == source : p >= 0 && p < n && ring(p, v) <= reach && lv[static_cast<size_t>(p)] == want - 1;
      wrong_parent += !ok;
    }
    CHECK(wrong_level == 0);
    CHECK(wrong_parent == 0);
    CHECK(plan.last_stats().levels == static_cast<int32_t>((n / 2 + reach - 1) / reach) + 1);
  }
}

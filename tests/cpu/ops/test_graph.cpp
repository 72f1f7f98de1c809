// Graph utilities (include/dbsparse/graph.hpp). Expected levels are written by hand for the small
// graphs and computed by a different route (Bellman-Ford over an entry set, reference::bfs on the
// transposed matrix) for the random ones, never copied from the code under test.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dbsparse/error.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/graph.hpp"
#include "dbsparse/reference.hpp"

using namespace dbsparse;

namespace {

using Entry = std::pair<int32_t, int32_t>;  // (i, j): A(i, j) != 0, so j reaches i
using Levels = std::vector<int32_t>;

PatternGraph from_entries(int32_t n, const std::set<Entry>& entries) {
  PatternGraph g;
  g.n = n;
  g.row_ptr.assign(static_cast<size_t>(n) + 1, 0);
  for (const auto& [i, j] : entries) {
    ++g.row_ptr[i + 1];
    g.col_idx.push_back(j);  // the set is ordered by (i, j): rows come out sorted
  }
  for (int32_t i = 0; i < n; ++i) g.row_ptr[i + 1] += g.row_ptr[i];
  return g;
}

// Undirected edges {u, v}: both A(u,v) and A(v,u).
PatternGraph undirected(int32_t n, const std::vector<Entry>& edges) {
  std::set<Entry> e;
  for (const auto& [u, v] : edges) {
    e.insert({u, v});
    e.insert({v, u});
  }
  return from_entries(n, e);
}

std::set<Entry> entries_of(const PatternGraph& g) {
  std::set<Entry> e;
  for (int32_t i = 0; i < g.n; ++i)
    for (int32_t p = g.row_ptr[i]; p < g.row_ptr[i + 1]; ++p) e.insert({i, g.col_idx[p]});
  return e;
}

void check_pattern(const PatternGraph& g) {
  REQUIRE(g.row_ptr.size() == static_cast<size_t>(g.n) + 1);
  REQUIRE(g.row_ptr.back() == g.entries());
  bool ok = g.row_ptr.front() == 0;
  for (int32_t i = 0; i < g.n && ok; ++i)
    for (int32_t p = g.row_ptr[i]; p < g.row_ptr[i + 1] && ok; ++p)
      ok = g.col_idx[p] >= 0 && g.col_idx[p] < g.n && (p == g.row_ptr[i] || g.col_idx[p - 1] < g.col_idx[p]);
  CHECK_MESSAGE(ok, "columns in range, sorted and unique");
}

// Distances by relaxing every entry until nothing changes: slow, but obviously right.
Levels bellman_ford(int32_t n, const std::set<Entry>& entries, int32_t source) {
  Levels d(static_cast<size_t>(n), -1);
  d[source] = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [i, j] : entries)
      if (d[j] >= 0 && (d[i] < 0 || d[i] > d[j] + 1)) {
        d[i] = d[j] + 1;
        changed = true;
      }
  }
  return d;
}

std::set<Entry> random_entries(int32_t n, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<Entry> e;
  for (int k = 0; k < count; ++k) e.insert({static_cast<int32_t>(rng() % n), static_cast<int32_t>(rng() % n)});
  return e;
}

bool has_error(const BfsValidation& v, const std::string& part) {
  return std::any_of(v.errors.begin(), v.errors.end(),
                     [&](const std::string& e) { return e.find(part) != std::string::npos; });
}

std::string all_errors(const BfsValidation& v) {
  std::string s;
  for (const auto& e : v.errors) s += "\n  " + e;
  return s;
}

}  // namespace

TEST_CASE("BfsReferenceGivesKnownLevelsOnSmallGraphs") {
  SUBCASE("path") {
    const auto g = undirected(5, {{0, 1}, {1, 2}, {2, 3}, {3, 4}});
    CHECK(bfs_reference(g, 0).level == Levels{0, 1, 2, 3, 4});
    CHECK(bfs_reference(g, 0).parent == Levels{0, 0, 1, 2, 3});
    CHECK(bfs_reference(g, 2).level == Levels{2, 1, 0, 1, 2});
  }
  SUBCASE("star") {
    const auto g = undirected(6, {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}});
    CHECK(bfs_reference(g, 0).level == Levels{0, 1, 1, 1, 1, 1});
    const auto leaf = bfs_reference(g, 3);
    CHECK(leaf.level == Levels{1, 2, 2, 0, 2, 2});
    CHECK(leaf.parent == Levels{3, 0, 0, 3, 0, 0});
  }
  SUBCASE("disconnected: two triangles and an isolated vertex") {
    const auto g = undirected(7, {{0, 1}, {1, 2}, {0, 2}, {3, 4}, {4, 5}, {3, 5}});
    const auto r = bfs_reference(g, 0);
    CHECK(r.level == Levels{0, 1, 1, -1, -1, -1, -1});
    CHECK(r.parent == Levels{0, 0, 0, -1, -1, -1, -1});
    CHECK(bfs_reference(g, 6).level == Levels{-1, -1, -1, -1, -1, -1, 0});
  }
  SUBCASE("self loops change nothing") {
    auto e = entries_of(undirected(3, {{0, 1}, {1, 2}}));
    for (int32_t i = 0; i < 3; ++i) e.insert({i, i});
    const auto r = bfs_reference(from_entries(3, e), 0);
    CHECK(r.level == Levels{0, 1, 2});
    CHECK(r.parent == Levels{0, 0, 1});
  }
  SUBCASE("single vertex, with and without a self loop") {
    for (const auto& e : {std::set<Entry>{}, std::set<Entry>{{0, 0}}}) {
      const auto r = bfs_reference(from_entries(1, e), 0);
      CHECK(r.level == Levels{0});
      CHECK(r.parent == Levels{0});
    }
  }
}

TEST_CASE("BfsReferenceFollowsColumnsInTheYEqualsAxConvention") {
  // Edges 0 -> 1 -> 2 and 3 -> 0: A(1,0), A(2,1), A(0,3). Row order would run them backwards.
  const auto g = from_entries(4, {{1, 0}, {2, 1}, {0, 3}});
  CHECK(bfs_reference(g, 0).level == Levels{0, 1, 2, -1});
  CHECK(bfs_reference(g, 2).level == Levels{-1, -1, 0, -1});
  CHECK(bfs_reference(g, 3).level == Levels{1, 2, 3, 0});
  CHECK(bfs_reference(g, 3).parent == Levels{3, 0, 1, 3});
  // A user whose A(u,v) means u -> v gets the same graph through pattern_of(a, transpose = true).
  CooMatrix<double> coo{4, 4, {0, 1, 3}, {1, 2, 0}, {1.0, 1.0, 1.0}};
  CHECK(entries_of(pattern_of(coo_to_csr(coo), true)) == entries_of(g));
  CHECK_THROWS_AS(bfs_reference(g, -1), UsageError);
  CHECK_THROWS_AS(bfs_reference(g, 4), UsageError);
}

TEST_CASE("GraphBfsOnRandomDigraphsMatchesReference") {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const int32_t n = 1 + static_cast<int32_t>(seed * 7 % 60);
    const auto e = random_entries(n, static_cast<int>(n * (seed % 4)), seed);
    const auto g = from_entries(n, e);
    // reference::bfs reads A(u,v) as u -> v: give it A^T, built by coo_to_csr, not by transpose().
    CooMatrix<double> coo_t{n, n, {}, {}, {}};
    for (const auto& [i, j] : e) {
      coo_t.row.push_back(j);
      coo_t.col.push_back(i);
      coo_t.values.push_back(1.0);
    }
    const auto a_t = coo_to_csr(coo_t);
    for (int32_t s = 0; s < n; s += 1 + n / 5) {
      const auto r = bfs_reference(g, s);
      REQUIRE(r.level == bellman_ford(n, e, s));
      CHECK(r.level == reference::bfs(a_t, s).level);
      const auto v = validate_bfs(g, s, r.level, r.parent);
      CHECK_MESSAGE(v.ok, v.summary());
    }
  }
}

TEST_CASE("ValidateBfsAgreesWithBruteForceOnSpoiledRandomResults") {
  std::mt19937_64 rng(77);
  int rejected = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const int32_t n = 2 + static_cast<int32_t>(seed * 5 % 30);
    const auto e = random_entries(n, static_cast<int>(n * (1 + seed % 3)), seed);
    const auto g = from_entries(n, e);
    const int32_t s = static_cast<int32_t>(seed % n);
    const Levels dist = bellman_ford(n, e, s);
    const auto r = bfs_reference(g, s);
    for (int trial = 0; trial < 40; ++trial) {
      Levels level = r.level, parent = r.parent;
      for (int k = 0; k < 1 + trial % 2; ++k) {  // values in [-2, n): out of range, unreached, any vertex
        const auto u = static_cast<size_t>(rng() % n);
        (rng() % 2 ? level : parent)[u] = static_cast<int32_t>(rng() % (n + 2)) - 2;
      }
      bool tree = parent[s] == s;  // a BFS tree judged directly from the definition
      for (int32_t u = 0; u < n; ++u) {
        const int32_t p = parent[u];
        if (u != s) tree = tree && (dist[u] < 0 ? p == -1 : p >= 0 && e.count({u, p}) && dist[p] == dist[u] - 1);
      }
      CAPTURE(seed);
      CAPTURE(trial);
      CHECK(validate_bfs(g, s, level, parent).ok == (level == dist && tree));
      CHECK(validate_bfs(g, s, level, {}).ok == (level == dist));
      rejected += level != dist || !tree;
    }
  }
  CHECK(rejected > 600);  // most spoils break something; the rest are harmless (same value, another parent)
}

TEST_CASE("GraphPatternOfDropsStoredZerosAndRejectsNonSquare") {
  CooMatrix<double> coo{3, 3, {0, 0, 1, 2, 2}, {0, 2, 1, 0, 1}, {1.0, 0.0, -0.0, 2.5, -1.0}};
  const auto a = coo_to_csr(coo);
  REQUIRE(a.nnz() == 5);
  CHECK(entries_of(pattern_of(a)) == std::set<Entry>{{0, 0}, {2, 0}, {2, 1}});
  CHECK(entries_of(pattern_of(a, true)) == std::set<Entry>{{0, 0}, {0, 2}, {1, 2}});
  CHECK(entries_of(pattern_of(a.cast<float>())) == entries_of(pattern_of(a)));
  check_pattern(pattern_of(a));
  CooMatrix<double> wide{2, 3, {0}, {2}, {1.0}};
  CHECK_THROWS_WITH_AS(pattern_of(coo_to_csr(wide)), doctest::Contains("2x3"), UsageError);
}

TEST_CASE("GraphTransposeAndSymmetrizeMatchSetReference") {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const int32_t n = 1 + static_cast<int32_t>(seed * 13 % 50);
    const auto e = random_entries(n, 3 * n, seed);  // self loops included
    const auto g = from_entries(n, e);
    std::set<Entry> t, sym, sym_no_loops;
    for (const auto& [i, j] : e) {
      t.insert({j, i});
      sym.insert({i, j});
      sym.insert({j, i});
      if (i != j) {
        sym_no_loops.insert({i, j});
        sym_no_loops.insert({j, i});
      }
    }
    const auto gt = transpose(g), s = symmetrize(g, false), s0 = symmetrize(g, true);
    for (const auto* h : {&gt, &s, &s0}) check_pattern(*h);
    CHECK(entries_of(gt) == t);
    CHECK(entries_of(s) == sym);
    CHECK(entries_of(s0) == sym_no_loops);
    CHECK(is_symmetric(s));
    CHECK(is_symmetric(s0));
    CHECK(is_symmetric(g) == (e == t));
  }
}

TEST_CASE("GraphIsSymmetricDetectsOneMissingMirror") {
  auto e = entries_of(undirected(5, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {0, 4}}));
  e.insert({2, 2});
  CHECK(is_symmetric(from_entries(5, e)));
  auto missing = e;
  missing.erase({3, 2});
  CHECK_FALSE(is_symmetric(from_entries(5, missing)));
  auto extra = e;
  extra.insert({0, 2});
  CHECK_FALSE(is_symmetric(from_entries(5, extra)));
  // Every row and column holds one entry, yet the cycle is not its own transpose.
  CHECK_FALSE(is_symmetric(from_entries(3, {{0, 1}, {1, 2}, {2, 0}})));
  CHECK(is_symmetric(PatternGraph{}));
}

namespace {
// Edges 0-1, 0-2, 1-2, 1-3, 2-3, 3-4, 1-6; vertex 5 isolated. From 0: levels below.
PatternGraph validation_graph() { return undirected(7, {{0, 1}, {0, 2}, {1, 2}, {1, 3}, {2, 3}, {3, 4}, {1, 6}}); }
const Levels kLevels{0, 1, 1, 2, 3, -1, 2};
const Levels kParents{0, 0, 0, 1, 3, -1, 1};
}  // namespace

TEST_CASE("ValidateBfsAcceptsReferenceAndAnotherValidTree") {
  const auto g = validation_graph();
  const auto r = bfs_reference(g, 0);
  REQUIRE(r.level == kLevels);
  auto v = validate_bfs(g, 0, r.level, r.parent);
  CHECK_MESSAGE(v.ok, v.summary());
  CHECK(v.reached == 6);
  CHECK(v.max_level == 3);
  CHECK(v.summary() == "valid: 6 vertices reached, 4 levels");
  Levels other = r.parent;
  other[3] = other[3] == 1 ? 2 : 1;  // 3 hangs off either of its level-1 neighbours
  v = validate_bfs(g, 0, r.level, other);
  CHECK_MESSAGE(v.ok, v.summary());
  CHECK(validate_bfs(g, 0, r.level, {}).ok);  // levels only
  // A directed graph: 0 -> 1 -> 2 with a back edge 2 -> 0 (A(1,0), A(2,1), A(0,2)).
  const auto d = from_entries(3, {{1, 0}, {2, 1}, {0, 2}});
  CHECK(validate_bfs(d, 0, Levels{0, 1, 2}, Levels{0, 0, 1}).ok);
  CHECK(validate_bfs(d, 1, Levels{2, 0, 1}, Levels{2, 1, 1}).ok);
}

TEST_CASE("ValidateBfsRejectsEachBrokenRule") {
  struct Broken {
    const char* rule;
    void (*spoil)(Levels& level, Levels& parent);
    std::string expect;  // the start of the message that names the rule
    bool alone;          // the only violation, or one that drags others along
  };
  const Broken cases[] = {
      {"wrong source level", [](Levels& l, Levels&) { l[0] = 1; }, "source 0: level 1, expected 0", false},
      {"source parent not itself", [](Levels&, Levels& p) { p[0] = 1; }, "source 0: parent 1, expected itself", true},
      {"parent not an in-neighbour", [](Levels&, Levels& p) { p[6] = 2; },
       "vertex 6: parent 2 is not an in-neighbour (A(6,2) = 0)", true},
      {"parent level not level - 1", [](Levels&, Levels& p) { p[2] = 1; }, "vertex 2: level 1 but parent 1 has level 1",
       true},
      {"parent out of range", [](Levels&, Levels& p) { p[4] = 7; }, "vertex 4: parent 7 out of range", true},
      {"parent unreached", [](Levels&, Levels& p) { p[4] = 5; }, "vertex 4: parent 5 is unreached", true},
      {"level too large across a graph edge", [](Levels& l, Levels&) { l[4] = 4; },
       "edge A(4,3): level 4 of vertex 4 exceeds level 2 of vertex 3 + 1", false},
      {"unreachable vertex given a level",
       [](Levels& l, Levels& p) {
         l[5] = 1;
         p.clear();
       },
       "vertex 5: level 1 but unreachable from the source", true},
      {"reachable vertex left at -1", [](Levels& l, Levels& p) { l[4] = p[4] = -1; },
       "vertex 4: reachable (level 3) but left unreached", false},
      {"unreached vertex with a parent", [](Levels&, Levels& p) { p[5] = 0; }, "vertex 5: unreached but has parent 0",
       true},
      {"level below -1",
       [](Levels& l, Levels& p) {
         l[5] = -2;
         p.clear();
       },
       "vertex 5: level -2 is below -1", true},
      {"wrong sizes", [](Levels& l, Levels&) { l.pop_back(); }, "level has length 6, expected n = 7", true},
  };
  const auto g = validation_graph();
  for (const auto& c : cases) {
    CAPTURE(c.rule);
    Levels level = kLevels, parent = kParents;
    c.spoil(level, parent);
    const auto v = validate_bfs(g, 0, level, parent);
    CHECK_FALSE(v.ok);
    CHECK_MESSAGE(has_error(v, c.expect), (c.expect + " not among:" + all_errors(v)));
    if (c.alone) {
      CHECK(v.error_count == 1);
      CHECK(v.summary().rfind("INVALID: 1 error; first: " + c.expect, 0) == 0);
    }
  }
}

TEST_CASE("ValidateBfsKeepsTenMessagesAndCountsAllAndThrowsOnBadSource") {
  std::vector<Entry> path;
  for (int32_t i = 0; i + 1 < 50; ++i) path.push_back({i, i + 1});
  const auto g = undirected(50, path);
  Levels level(50, -1), parent(50, -1);
  level[0] = 0;  // and the 49 other reachable vertices left unreached
  parent[0] = 0;
  const auto v = validate_bfs(g, 0, level, parent);
  CHECK(v.errors.size() == 10);
  CHECK(v.error_count == 1 + 49);  // one edge out of the reached set, 49 missed vertices
  CHECK(v.summary().rfind("INVALID: 50 errors; first: ", 0) == 0);
  CHECK_THROWS_AS(validate_bfs(g, 50, level, parent), UsageError);
}

TEST_CASE("GraphComponentEdgesCountsUndirectedEdgesOnceAndDirectedEntries") {
  // Symmetric: 0-1, 1-2, 0-2, self loop on 1; unreached component 3-4 with a loop on 4.
  auto e = entries_of(undirected(5, {{0, 1}, {1, 2}, {0, 2}, {3, 4}}));
  e.insert({1, 1});
  e.insert({4, 4});
  const auto s = from_entries(5, e);
  REQUIRE(is_symmetric(s));
  CHECK(component_edges(s, bfs_reference(s, 0).level) == 3 + 1);
  CHECK(component_edges(s, bfs_reference(s, 3).level) == 1 + 1);
  // Directed 0 -> 1 -> 2, 2 -> 1, 3 -> 0: from 0, the entries A(1,0), A(2,1), A(1,2) count; A(0,3) not.
  const auto d = from_entries(4, {{1, 0}, {2, 1}, {1, 2}, {0, 3}});
  CHECK(component_edges(d, bfs_reference(d, 0).level) == 3);
  CHECK(component_edges(d, bfs_reference(d, 3).level) == 4);
  CHECK(component_edges(s, bfs_reference(s, 0).level, true) == 4);
  CHECK(component_edges(d, bfs_reference(d, 0).level, false) == 3);
  CHECK_THROWS_AS(component_edges(d, Levels{0, 1}), UsageError);
}

TEST_CASE("GraphPickSourcesIsDeterministicAndPicksNonIsolatedDistinctVertices") {
  auto e = random_entries(300, 200, 9);                   // sparse: many vertices with no out-neighbour
  for (int32_t i = 0; i < 300; i += 7) e.insert({i, i});  // a self loop alone does not qualify
  const auto g = from_entries(300, e);
  std::vector<bool> has_out(300, false);
  for (const auto& [i, j] : e) has_out[j] = has_out[j] || i != j;
  const auto a = pick_sources(g, 40, 123);
  CHECK(a == pick_sources(g, 40, 123));
  CHECK(a != pick_sources(g, 40, 124));
  REQUIRE(a.size() == 41);
  CHECK(a.front() == 0);
  CHECK(std::set<int32_t>(a.begin(), a.end()).size() == a.size());
  for (size_t k = 1; k < a.size(); ++k) CHECK((a[k] > 0 && a[k] < 300 && has_out[a[k]]));
  // Fewer when the graph lacks them: only 2 and 3 have an out-neighbour other than themselves.
  const auto few = from_entries(5, {{0, 2}, {1, 3}, {1, 1}, {4, 4}, {3, 0}});
  auto f = pick_sources(few, 10, 1);
  REQUIRE(f.size() == 3);
  CHECK(f[0] == 0);
  std::sort(f.begin() + 1, f.end());
  CHECK(f == std::vector<int32_t>{0, 2, 3});
  CHECK(pick_sources(few, 0, 1) == std::vector<int32_t>{0});
  CHECK(pick_sources(PatternGraph{}, 5, 1).empty());
  CHECK_THROWS_AS(pick_sources(few, -1, 1), UsageError);
}

TEST_CASE("GraphUtilitiesOnGeneratedRmatMatchReference") {
  const auto a = generate("rmat:scale=12,ef=8,seed=2");
  const auto g = symmetrize(pattern_of(a), true);
  CHECK(is_symmetric(g));
  const auto r = bfs_reference(g, 0);
  CHECK(r.level == reference::bfs(a, 0).level);
  const auto v = validate_bfs(g, 0, r.level, r.parent);
  CHECK_MESSAGE(v.ok, v.summary());
  int64_t both = 0;  // entries of a with both ends reached, counted from the matrix itself
  for (int32_t i = 0; i < a.rows; ++i)
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) both += r.level[i] >= 0 && r.level[a.col_idx[p]] >= 0;
  CHECK(component_edges(g, r.level) * 2 == both);
}

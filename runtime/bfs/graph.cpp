// Graph utilities for BFS (include/dbsparse/graph.hpp). Unlike runtime/reference/reference.cpp these must
// also be fast: they validate and count edges on Graph500-sized graphs (4M vertices, 130M entries),
// so each is a few linear passes over flat arrays, never a container per vertex.
#include "dbsparse/graph.hpp"

#include <algorithm>
#include <limits>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "dbsparse/error.hpp"

namespace dbsparse {
namespace {

constexpr int64_t kMaxEntries = std::numeric_limits<int32_t>::max();
constexpr size_t kMaxErrors = 10;

// Only the O(1) shape: a full column check would double the cost of every call, and the
// functions that build graphs here already guarantee sorted, unique, in-range columns.
void check_graph(const char* who, const PatternGraph& g) {
  if (g.n < 0) throw UsageError(fmt::format("{}: graph has n = {}", who, g.n));
  if (g.row_ptr.size() != static_cast<size_t>(g.n) + 1)
    throw UsageError(fmt::format("{}: row_ptr has {} entries, expected n + 1 = {}", who, g.row_ptr.size(),
                                 static_cast<int64_t>(g.n) + 1));
  if (g.row_ptr.front() != 0 || g.row_ptr.back() != g.entries())
    throw UsageError(fmt::format("{}: row_ptr spans [{}, {}] but there are {} entries", who, g.row_ptr.front(),
                                 g.row_ptr.back(), g.entries()));
}

void check_source(const char* who, const PatternGraph& g, int32_t source) {
  if (source < 0 || source >= g.n)
    throw UsageError(fmt::format("{}: source {} out of range [0, {})", who, source, g.n));
}

bool has_entry(const PatternGraph& g, int32_t i, int32_t j) {
  const auto begin = g.col_idx.begin() + g.row_ptr[i], end = g.col_idx.begin() + g.row_ptr[i + 1];
  return std::binary_search(begin, end, j);
}

// Sorted union of two sorted rows; counts only when out is null, so one routine serves both the
// sizing pass and the filling pass of symmetrize.
int64_t merge_row(const int32_t* a, const int32_t* a_end, const int32_t* b, const int32_t* b_end, int32_t skip,
                  int32_t* out) {
  int64_t count = 0;
  auto emit = [&](int32_t c) {
    if (c == skip) return;
    if (out) out[count] = c;
    ++count;
  };
  while (a != a_end && b != b_end) {
    if (*a < *b) {
      emit(*a++);
    } else if (*b < *a) {
      emit(*b++);
    } else {
      emit(*a++);
      ++b;
    }
  }
  while (a != a_end) emit(*a++);
  while (b != b_end) emit(*b++);
  return count;
}

}  // namespace

template <class T>
PatternGraph pattern_of(const CsrMatrix<T>& a, bool transposed) {
  if (a.rows != a.cols) throw UsageError(fmt::format("pattern_of: matrix must be square, is {}x{}", a.rows, a.cols));
  validate(a);  // the counting passes below index arrays by column: a broken matrix would corrupt memory
  PatternGraph g;
  g.n = a.rows;
  g.row_ptr.assign(static_cast<size_t>(g.n) + 1, 0);
  // Counted first so that col_idx is allocated once at its final size, even when most are zeros.
  for (int32_t i = 0; i < g.n; ++i) {
    int32_t kept = 0;
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) kept += a.values[p] != T(0);
    g.row_ptr[i + 1] = g.row_ptr[i] + kept;
  }
  g.col_idx.resize(static_cast<size_t>(g.row_ptr.back()));
  size_t q = 0;
  for (int64_t p = 0; p < a.nnz(); ++p)
    if (a.values[p] != T(0)) g.col_idx[q++] = a.col_idx[p];
  return transposed ? transpose(g) : g;
}

PatternGraph transpose(const PatternGraph& g) {
  check_graph("transpose", g);
  PatternGraph t;
  t.n = g.n;
  t.row_ptr.assign(static_cast<size_t>(g.n) + 1, 0);
  for (int32_t j : g.col_idx) ++t.row_ptr[j + 1];
  for (int32_t j = 0; j < g.n; ++j) t.row_ptr[j + 1] += t.row_ptr[j];  // same total: fits in int32
  t.col_idx.resize(g.col_idx.size());
  std::vector<int32_t> next(t.row_ptr.begin(), t.row_ptr.end() - 1);
  // Rows visited in increasing order leave every output row sorted without a sort.
  for (int32_t i = 0; i < g.n; ++i)
    for (int32_t p = g.row_ptr[i]; p < g.row_ptr[i + 1]; ++p) t.col_idx[next[g.col_idx[p]]++] = i;
  return t;
}

bool is_symmetric(const PatternGraph& g) {
  check_graph("is_symmetric", g);
  // Scanning rows in order visits the entries of column j in increasing row order, which is the
  // order row j must list them in if A = A^T: a cursor per row checks that without building A^T.
  std::vector<int32_t> cursor(g.row_ptr.begin(), g.row_ptr.end() - 1);
  for (int32_t i = 0; i < g.n; ++i) {
    for (int32_t p = g.row_ptr[i]; p < g.row_ptr[i + 1]; ++p) {
      const int32_t j = g.col_idx[p];
      if (cursor[j] == g.row_ptr[j + 1] || g.col_idx[cursor[j]] != i) return false;
      ++cursor[j];
    }
  }
  return true;  // every entry matched one mirror and the totals are equal: all rows consumed
}

PatternGraph symmetrize(const PatternGraph& g, bool drop_self_loops) {
  check_graph("symmetrize", g);
  const PatternGraph t = transpose(g);
  auto row = [](const PatternGraph& m, int32_t i) {
    return std::pair{m.col_idx.data() + m.row_ptr[i], m.col_idx.data() + m.row_ptr[i + 1]};
  };
  PatternGraph s;
  s.n = g.n;
  s.row_ptr.assign(static_cast<size_t>(g.n) + 1, 0);
  int64_t total = 0;  // up to twice the input: may not fit in int32
  for (int32_t i = 0; i < g.n; ++i) {
    const auto [a, a_end] = row(g, i);
    const auto [b, b_end] = row(t, i);
    total += merge_row(a, a_end, b, b_end, drop_self_loops ? i : -1, nullptr);
    if (total > kMaxEntries)
      throw UsageError(
          fmt::format("symmetrize: A + A^T has more than 2^31-1 entries (n = {}, {} entries)", g.n, g.entries()));
    s.row_ptr[i + 1] = static_cast<int32_t>(total);
  }
  s.col_idx.resize(static_cast<size_t>(total));
  for (int32_t i = 0; i < g.n; ++i) {
    const auto [a, a_end] = row(g, i);
    const auto [b, b_end] = row(t, i);
    merge_row(a, a_end, b, b_end, drop_self_loops ? i : -1, s.col_idx.data() + s.row_ptr[i]);
  }
  return s;
}

BfsLevels bfs_reference(const PatternGraph& g, int32_t source) {
  check_graph("bfs_reference", g);
  check_source("bfs_reference", g, source);
  // Out-neighbours of j are column j of A, i.e. row j of A^T; a symmetric A is its own transpose,
  // which saves a copy of the whole graph in the common case.
  PatternGraph transposed;
  const PatternGraph* out = &g;
  if (!is_symmetric(g)) {
    transposed = transpose(g);
    out = &transposed;
  }
  BfsLevels r;
  r.level.assign(static_cast<size_t>(g.n), -1);
  r.parent.assign(static_cast<size_t>(g.n), -1);
  std::vector<int32_t> queue(static_cast<size_t>(g.n));  // each vertex enters once
  size_t head = 0, tail = 0;
  r.level[source] = 0;
  r.parent[source] = source;
  queue[tail++] = source;
  while (head < tail) {
    const int32_t j = queue[head++];
    for (int32_t p = out->row_ptr[j]; p < out->row_ptr[j + 1]; ++p) {
      const int32_t i = out->col_idx[p];
      if (r.level[i] != -1) continue;
      r.level[i] = r.level[j] + 1;
      r.parent[i] = j;
      queue[tail++] = i;
    }
  }
  return r;
}

std::string BfsValidation::summary() const {
  if (ok) return fmt::format("valid: {} vertices reached, {} levels", reached, max_level + 1);
  return fmt::format("INVALID: {} error{}; first: {}", error_count, error_count == 1 ? "" : "s",
                     errors.empty() ? std::string("(none recorded)") : errors.front());
}

namespace {

// validate_bfs's rule 2: every tree edge p -> u is a graph edge one level down.
template <class Fail>
void check_tree_edges(const PatternGraph& g, int32_t source, std::span<const int32_t> level,
                      std::span<const int32_t> parent, Fail& fail) {
  for (int32_t u = 0; u < g.n; ++u) {
    if (u == source) continue;
    const int32_t p = parent[u];
    if (level[u] < 0) {
      if (p != -1) fail([&] { return fmt::format("vertex {}: unreached but has parent {}", u, p); });
      continue;
    }
    if (p < 0 || p >= g.n) {
      fail([&] { return fmt::format("vertex {}: parent {} out of range [0, {})", u, p, g.n); });
    } else if (level[p] < 0) {
      fail([&] { return fmt::format("vertex {}: parent {} is unreached", u, p); });
    } else {
      if (!has_entry(g, u, p))
        fail([&] { return fmt::format("vertex {}: parent {} is not an in-neighbour (A({},{}) = 0)", u, p, u, p); });
      if (level[u] != level[p] + 1)
        fail([&] {
          return fmt::format("vertex {}: level {} but parent {} has level {} (expected {})", u, level[u], p, level[p],
                             level[u] - 1);
        });
    }
  }
}

// validate_bfs's rule 3: no graph edge leaves the reached set or skips a level.
template <class Fail>
void check_graph_edges(const PatternGraph& g, std::span<const int32_t> level, Fail& fail) {
  for (int32_t i = 0; i < g.n; ++i) {
    for (int32_t q = g.row_ptr[i]; q < g.row_ptr[i + 1]; ++q) {
      const int32_t j = g.col_idx[q];
      if (level[j] < 0) continue;
      if (level[i] < 0)
        fail(
            [&] { return fmt::format("edge A({},{}): vertex {} at level {} but {} unreached", i, j, j, level[j], i); });
      else if (level[i] > level[j] + 1)
        fail([&] {
          return fmt::format("edge A({},{}): level {} of vertex {} exceeds level {} of vertex {} + 1", i, j, level[i],
                             i, level[j], j);
        });
    }
  }
}

}  // namespace

BfsValidation validate_bfs(const PatternGraph& g, int32_t source, std::span<const int32_t> level,
                           std::span<const int32_t> parent) {
  check_graph("validate_bfs", g);
  check_source("validate_bfs", g, source);
  BfsValidation v;
  // Takes a callable so that a badly wrong result on a big graph formats only the kept messages.
  auto fail = [&v](auto&& message) {
    v.ok = false;
    if (v.errors.size() < kMaxErrors) v.errors.push_back(message());
    ++v.error_count;
  };
  const auto n = static_cast<size_t>(g.n);
  const bool has_parents = !parent.empty();
  if (level.size() != n) fail([&] { return fmt::format("level has length {}, expected n = {}", level.size(), n); });
  if (has_parents && parent.size() != n)
    fail([&] { return fmt::format("parent has length {}, expected n = {} (or 0)", parent.size(), n); });
  if (!v.ok) return v;  // nothing below can be indexed safely

  // Rule 1: the level range and the source.
  for (int32_t u = 0; u < g.n; ++u) {
    if (level[u] < -1) fail([&] { return fmt::format("vertex {}: level {} is below -1", u, level[u]); });
    if (level[u] >= 0) ++v.reached;
    v.max_level = std::max(v.max_level, level[u]);
  }
  if (level[source] != 0) fail([&] { return fmt::format("source {}: level {}, expected 0", source, level[source]); });
  if (has_parents && parent[source] != source)
    fail([&] { return fmt::format("source {}: parent {}, expected itself", source, parent[source]); });

  // Rule 2: every tree edge p -> u is a graph edge one level down.
  if (has_parents) check_tree_edges(g, source, level, parent, fail);
  // Rule 3: no graph edge leaves the reached set or skips a level.
  check_graph_edges(g, level, fail);

  // Rule 4: levels are shortest distances, which are unique, so compare them outright. With parents,
  // rules 1-3 already imply it (Graph500's argument: a parent chain is a path from the source, so
  // level >= distance; rule 3 along a shortest path gives level <= distance), and the reference BFS,
  // the costliest part by far, runs only without parents or to name what a failed result got wrong.
  if (has_parents && v.ok) return v;
  const BfsLevels ref = bfs_reference(g, source);
  for (int32_t u = 0; u < g.n; ++u) {
    const int32_t got = level[u], want = ref.level[u];
    if (got == want || got < -1) continue;  // below -1 was reported by rule 1
    fail([&] {
      if (want == -1) return fmt::format("vertex {}: level {} but unreachable from the source", u, got);
      if (got == -1) return fmt::format("vertex {}: reachable (level {}) but left unreached", u, want);
      return fmt::format("vertex {}: level {}, shortest distance from source {} is {}", u, got, source, want);
    });
  }
  return v;
}

int64_t component_edges(const PatternGraph& g, std::span<const int32_t> level) {
  return component_edges(g, level, is_symmetric(g));
}

int64_t component_edges(const PatternGraph& g, std::span<const int32_t> level, bool symmetric) {
  check_graph("component_edges", g);
  if (level.size() != static_cast<size_t>(g.n))
    throw UsageError(fmt::format("component_edges: level has length {}, expected n = {}", level.size(), g.n));
  int64_t off_diagonal = 0, self_loops = 0;
  for (int32_t i = 0; i < g.n; ++i) {
    if (level[i] < 0) continue;
    for (int32_t p = g.row_ptr[i]; p < g.row_ptr[i + 1]; ++p) {
      const int32_t j = g.col_idx[p];
      if (level[j] < 0) continue;
      if (j == i)
        ++self_loops;
      else
        ++off_diagonal;
    }
  }
  // A symmetric graph stores each undirected edge twice, a self loop once.
  return symmetric ? off_diagonal / 2 + self_loops : off_diagonal + self_loops;
}

std::vector<int32_t> pick_sources(const PatternGraph& g, int count, uint64_t seed) {
  check_graph("pick_sources", g);
  if (count < 0) throw UsageError(fmt::format("pick_sources: count must be >= 0, got {}", count));
  std::vector<int32_t> out;
  if (g.n == 0) return out;
  out.push_back(0);
  // A vertex with no out-neighbour but itself makes a one-vertex BFS: no work worth timing.
  std::vector<uint8_t> has_out(static_cast<size_t>(g.n), 0);
  for (int32_t i = 0; i < g.n; ++i)
    for (int32_t p = g.row_ptr[i]; p < g.row_ptr[i + 1]; ++p)
      if (g.col_idx[p] != i) has_out[g.col_idx[p]] = 1;
  std::vector<int32_t> candidates;
  for (int32_t u = 1; u < g.n; ++u)
    if (has_out[u]) candidates.push_back(u);
  // Partial Fisher-Yates with plain modulo: std::uniform_int_distribution differs between
  // standard libraries, and the sources must be the same wherever a benchmark is rerun.
  std::mt19937_64 rng(seed);
  const size_t take = std::min(candidates.size(), static_cast<size_t>(count));
  for (size_t k = 0; k < take; ++k) {
    const size_t r = k + static_cast<size_t>(rng() % (candidates.size() - k));
    std::swap(candidates[k], candidates[r]);
    out.push_back(candidates[k]);
  }
  return out;
}

template PatternGraph pattern_of(const CsrMatrix<float>&, bool);
template PatternGraph pattern_of(const CsrMatrix<double>&, bool);

}  // namespace dbsparse

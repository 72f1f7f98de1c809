#pragma once
// CPU-side graph utilities for BFS: structure-only graphs, a plain reference BFS, Graph500-style
// validation of a BFS result, the TEPS edge count and source selection.
//
// Convention, as for every op here: y = A·x. Vertex i is reached from vertex j when A(i, j) != 0,
// so the out-neighbours of j are the rows of column j, and row i of A lists i's in-neighbours.
// For a symmetric A the direction does not matter (the common case: Graph500, most real graphs).
//
// Everything is O(n + entries) (validate_bfs adds a binary search per reached vertex) with no
// per-vertex allocation, so it stays usable at 4M vertices / 130M entries.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dbsparse/matrix.hpp"

namespace dbsparse {

// A graph's structure only: CSR pattern of the adjacency matrix A (row i lists the j with
// A(i,j) != 0), sorted unique columns. Functions taking one check its sizes, not its columns:
// build it with pattern_of / transpose / symmetrize, or keep columns sorted, unique and in range.
struct PatternGraph {
  int32_t n = 0;
  std::vector<int32_t> row_ptr{0};  // n + 1
  std::vector<int32_t> col_idx;
  int64_t entries() const { return static_cast<int64_t>(col_idx.size()); }
};

// Pattern of a square matrix (UsageError naming the shape otherwise); stored zeros are dropped;
// with transpose, the pattern of A^T (for users whose A(u,v) means an edge u->v).
template <class T>
PatternGraph pattern_of(const CsrMatrix<T>& a, bool transpose = false);
PatternGraph transpose(const PatternGraph& g);
// The graph as a CSR matrix with every stored entry 1 (what a library that takes values needs).
template <class T>
CsrMatrix<T> ones_matrix(const PatternGraph& g) {
  CsrMatrix<T> a;
  a.rows = a.cols = g.n;
  a.row_ptr = g.row_ptr;
  a.col_idx = g.col_idx;
  a.values.assign(g.col_idx.size(), T(1));
  return a;
}
bool is_symmetric(const PatternGraph& g);
// Pattern of A + A^T, sorted and unique; self loops dropped when asked (Graph500 generators drop
// them). UsageError if the result would exceed 2^31-1 entries.
PatternGraph symmetrize(const PatternGraph& g, bool drop_self_loops);

// -1 where unreached; parent[source] = source.
struct BfsLevels {
  std::vector<int32_t> level;
  std::vector<int32_t> parent;
};
// Plain queue BFS in the y = A·x convention (from j, reach every i with A(i,j) != 0).
// UsageError for a source out of range.
BfsLevels bfs_reference(const PatternGraph& g, int32_t source);

// Graph500 validation of a BFS result, adapted to directed graphs.
struct BfsValidation {
  bool ok = true;
  // At most 10, each naming the vertex/edge and the rule, e.g.
  // "vertex 17: parent 3 is not an in-neighbour (A(17,3) = 0)".
  std::vector<std::string> errors;
  int64_t error_count = 0;  // every violation found; errors keeps only the first 10
  int64_t reached = 0;      // vertices with a level
  int32_t max_level = -1;
  // One line: "valid: 123 vertices reached, 7 levels" or "INVALID: 2 errors; first: ...".
  std::string summary() const;
};
// Rules, all checked (a result breaking several reports each):
// (1) sizes are n (parent may be empty: then only level rules are checked); levels >= -1;
//     level[source] == 0 and parent[source] == source;
// (2) tree edges: for every reached v != source, p = parent[v] is in range, reached, A(v,p) != 0
//     (v is reached from p), and level[v] == level[p] + 1; unreached v has parent -1;
// (3) graph edges: for every stored A(i,j) with j reached, i is reached and
//     level[i] <= level[j] + 1 (symmetric: levels differ by at most 1 or both unreached);
// (4) a vertex has a level iff it is reachable from source, and the levels equal bfs_reference's
//     (implied by 1-3 when parents are given: bfs_reference then runs only if 1-3 found errors).
// UsageError for a source out of range; a wrong result is reported, never thrown.
BfsValidation validate_bfs(const PatternGraph& g, int32_t source, std::span<const int32_t> level,
                           std::span<const int32_t> parent);

// Graph500's edge count for TEPS: edges with both endpoints reached (level >= 0). For a symmetric
// g each undirected edge once (off-diagonal entries / 2, plus reached self loops once); otherwise
// the directed entries. UsageError unless level has length n.
int64_t component_edges(const PatternGraph& g, std::span<const int32_t> level);
// The same with symmetric = is_symmetric(g) computed once by the caller: a benchmark counts once per
// source, and the check costs most of the call (3.5 of 4.3 s, random graph of 134M entries, one core).
int64_t component_edges(const PatternGraph& g, std::span<const int32_t> level, bool symmetric);

// Vertex 0 first (if n > 0), then `count` distinct seeded random vertices with at least one
// out-neighbour other than themselves (a stored entry in their column off the diagonal),
// excluding 0; fewer when the graph lacks them. Deterministic for a seed on every standard library.
std::vector<int32_t> pick_sources(const PatternGraph& g, int count, uint64_t seed);

}  // namespace dbsparse

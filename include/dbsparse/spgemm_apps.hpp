#pragma once
// The applications of hash SpGEMM in the article (hash-spgemm-summary.md), as CPU references that
// their GPU versions are checked against: graph contraction and Markov clustering. (Its third,
// squaring, is hash_spgemm_cpu(a, a) or (a, transpose(a)); spgemm_flops gives its GFLOP count.)
//
// Graphs follow the library's convention (graph.hpp): vertex i is reached from j when
// A(i, j) != 0, so column j holds j's out-edges.
#include <cstdint>
#include <span>
#include <vector>

#include "dbsparse/matrix.hpp"

namespace dbsparse {

// C = S·G·Sᵀ, S k x n with S(labels[j], j) = 1: C(a, b) = sum of G(i, j) over labels[i] = a and
// labels[j] = b, present when some stored G(i, j) maps there (even if the sum is zero). Each
// group of vertices with one label becomes a vertex; within-group edges become C's diagonal.
// Computed as two reference::spgemm products, in double. UsageError when G is not square, labels
// is not n long, or a label is outside [0, k) (naming the vertex).
template <class T>
CsrMatrix<double> contract_cpu(const CsrMatrix<T>& g, std::span<const int32_t> labels, int32_t k);

// Markov clustering (van Dongen). The matrix M is column-stochastic, M(i, j) the chance of a step
// j -> i. Each iteration: expansion M = M·M; inflation, every entry to the power `inflation` and
// each column normalised to sum 1; pruning, entries below `prune_below` dropped and only the
// `keep_top_k` largest of each column kept (ties to the smaller row; a column's largest entry is
// never dropped), then the column normalised again. Stop when no entry moved by more than
// `tolerance` (the largest |difference|, over both patterns) or after `max_iterations`.
//
// The CPU (and the GPU version after it) holds P = Mᵀ in CSR: M's columns are P's rows, so
// normalising and pruning are row operations, and P·P = (M·M)ᵀ. This is MCL exactly, not an
// approximation, for any graph.
struct MclOptions {
  double inflation = 2.0;      // r >= 1
  double prune_below = 1e-4;   // in [0, 1)
  int32_t keep_top_k = 50;     // >= 1
  int32_t max_iterations = 100;
  double tolerance = 1e-6;
  bool add_self_loops = true;  // each vertex a loop of its column's largest weight (1 when it has no edge)
  bool weighted = false;       // edge weights |G(i, j)|; false: every stored entry weighs 1
};

struct MclResult {
  std::vector<int32_t> labels;  // cluster per vertex, 0..clusters-1, numbered by their smallest vertex
  int32_t clusters = 0;
  int32_t iterations = 0;       // expansions done
  bool converged = false;       // false: stopped at max_iterations
};

// Clusters: vertex j is attracted to i when M(i, j) > 0 in the final matrix; a cluster is a
// connected set of such pairs (an attractor, the vertices it attracts, and attractors that attract
// each other; a vertex attracted to two attractors joins their clusters). Expansions through
// hash_spgemm_cpu. UsageError for a non-square graph or options out of range, naming the field.
template <class T>
MclResult mcl_cpu(const CsrMatrix<T>& g, const MclOptions& o = {});

// The pieces, for GPU versions checked an iteration at a time: the start matrix P (Mᵀ, rows
// summing to 1 or empty), one iteration on P, and the labels of a P.
template <class T>
CsrMatrix<double> mcl_start(const CsrMatrix<T>& g, const MclOptions& o);
CsrMatrix<double> mcl_step(const CsrMatrix<double>& p, const MclOptions& o);
// The largest |a - b| over the union of their patterns (shapes must match).
double mcl_change(const CsrMatrix<double>& a, const CsrMatrix<double>& b);
MclResult mcl_labels(const CsrMatrix<double>& p);

}  // namespace dbsparse

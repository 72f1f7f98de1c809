#pragma once
// Vertex orderings for locality: a permutation of a square matrix's rows and columns
// under which neighbours sit close, so that the gathers of x (SpMV) or of B's rows (SpMM) that a
// row makes hit fewer, shared cache lines. Computed on the CPU from the symmetrised pattern, once
// per matrix; plans apply them inside (inputs and outputs in the user's order) or users keep their
// data permuted (permute_symmetric, the permutation's inverse).
//
//   degree     vertices by decreasing degree (hubs first, their rows and x entries together)
//   rcm        reverse Cuthill-McKee per connected component, each from a pseudo-peripheral vertex
//              (George-Liu): bandwidth and profile small on meshes, roads and stencils
//   community  label propagation (a few rounds, each vertex takes its neighbours' most frequent
//              label, ties to the smaller), communities in order of their first vertex, RCM inside
//              each: Rabbit order's idea (communities contiguous, neighbours within them close) at
//              a fraction of its cost
#include <cstdint>
#include <string>
#include <vector>

#include "dbsparse/graph.hpp"
#include "dbsparse/matrix.hpp"

namespace dbsparse {

enum class Reorder { None, Degree, Rcm, Community };
Reorder parse_reorder(const std::string& name);  // UsageError naming the four
const char* to_string(Reorder r);

// new_of_old[v]: v's index in the new order; old_of_new its inverse. Both of size n, a bijection.
struct Permutation {
  std::vector<int32_t> new_of_old, old_of_new;
  int32_t size() const { return static_cast<int32_t>(new_of_old.size()); }
  bool identity() const;
};

Permutation identity_permutation(int32_t n);
// From old_of_new (the order's list of vertices); UsageError if it is not a permutation of [0, n).
Permutation permutation_from_order(std::vector<int32_t> old_of_new);

// The ordering of a square matrix's vertices, from the pattern of A + A^T (self loops ignored).
// UsageError for a non-square A. O(nnz) for degree, O(nnz log d) for rcm and community.
template <class T>
Permutation reorder(const CsrMatrix<T>& a, Reorder how);
Permutation reorder(const PatternGraph& g, Reorder how);  // g symmetric (symmetrize)

// P A P^T: row and column v of A become row and column p.new_of_old[v]; columns sorted.
template <class T>
CsrMatrix<T> permute_symmetric(const CsrMatrix<T>& a, const Permutation& p);
// P A: row v of A becomes row p.new_of_old[v], columns as they were (A may be rectangular with
// p over its rows), for users who keep their rows permuted. (SpMM's reordered plans move
// nothing: their warps take A's rows in the order, SpmmConfig::reorder.)
template <class T>
CsrMatrix<T> permute_rows(const CsrMatrix<T>& a, const Permutation& p);
// y_new[p.new_of_old[v]] = x[v], and back.
template <class T>
std::vector<T> permute_vector(const std::vector<T>& x, const Permutation& p);
template <class T>
std::vector<T> unpermute_vector(const std::vector<T>& x_new, const Permutation& p);

// How local a matrix's pattern is: the largest |i - j| over entries (bandwidth), the mean of
// |i - j|, and the mean number of distinct 128-byte lines of a 4-byte x a row reads (the gathers
// SpMV makes; 32 entries a line).
struct LocalityStats {
  int64_t bandwidth = 0;
  double mean_distance = 0;
  double lines_per_row = 0;
};
template <class T>
LocalityStats locality(const CsrMatrix<T>& a);

}  // namespace dbsparse

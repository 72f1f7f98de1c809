#pragma once
// CPU references: plain, obviously correct, double accumulation. Every GPU result and every tuning
// candidate is checked against these (docs/DESIGN.md §7).
#include <cstdint>
#include <span>
#include <vector>

#include "dbsparse/matrix.hpp"
#include "dbsparse/semiring.hpp"

namespace dbsparse::reference {

// y = alpha*A*x + beta*y0 (y0 may be empty when beta == 0; beta == 0 ignores y0 even if NaN).
template <class T>
std::vector<double> spmv(const CsrMatrix<T>& a, std::span<const T> x, double alpha = 1.0, double beta = 0.0,
                         std::span<const T> y0 = {});

// Sparse x given as (indices, values); result dense, length a.rows, over the semiring (the GPU
// op's semiring is a plan parameter, and so it is here).
template <class T>
std::vector<double> spmspv(const CsrMatrix<T>& a, std::span<const int32_t> x_idx, std::span<const T> x_val,
                           Semiring semiring = Semiring::PlusTimes);

// BFS from source over the graph with an edge u->v for each A(u,v) != 0 stored entry.
// level[v] = -1 when unreachable; parent[source] = source, parent[v] = -1 when unreachable.
struct BfsResult {
  std::vector<int32_t> level;
  std::vector<int32_t> parent;
};
template <class T>
BfsResult bfs(const CsrMatrix<T>& a, int32_t source);
// Any valid BFS tree passes, not only the one bfs() returns: parents must be at level-1 with an edge.
template <class T>
bool bfs_parents_valid(const CsrMatrix<T>& a, int32_t source, std::span<const int32_t> level,
                       std::span<const int32_t> parent);

// C = A * B with B dense row-major (a.cols × n); C dense row-major (a.rows × n).
template <class T>
std::vector<double> spmm(const CsrMatrix<T>& a, std::span<const T> b, int32_t n);

// SDDMM on A's pattern: out[e] = dot(X[row(e), :], Y[col(e), :]) (times a_e when
// scale_by_values) for each entry e in CSR order; X is a.rows x k and Y a.cols x k, row-major.
template <class T>
std::vector<double> sddmm(const CsrMatrix<T>& a, std::span<const T> x, std::span<const T> y, int32_t k,
                          bool scale_by_values = false);

// C = A * B, both CSR; result CSR with sorted columns; explicit zeros from cancellation are kept.
template <class T>
CsrMatrix<double> spgemm(const CsrMatrix<T>& a, const CsrMatrix<T>& b);

// ||y - ref||_2 / ||ref||_2 (absolute norm when ref is all zero); NaN anywhere returns +inf.
double relative_error(std::span<const double> ref, std::span<const double> y);
template <class T>
double relative_error(std::span<const double> ref, std::span<const T> y);

}  // namespace dbsparse::reference

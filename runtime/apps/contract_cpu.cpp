// Graph contraction C = S·G·Sᵀ (include/dbsparse/spgemm_apps.hpp), by the definition: S built
// from the labels, then two products of the dense-accumulator reference, so that the GPU version
// (hash SpGEMM twice) is checked against code that shares nothing with it.
#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/reference.hpp"
#include "dbsparse/spgemm_apps.hpp"

namespace dbsparse {

template <class T>
CsrMatrix<double> contract_cpu(const CsrMatrix<T>& g, std::span<const int32_t> labels, int32_t k) {
  if (g.rows != g.cols) throw UsageError(fmt::format("contract: the graph must be square, is {}x{}", g.rows, g.cols));
  if (labels.size() != static_cast<size_t>(g.rows))
    throw UsageError(fmt::format("contract: {} labels for a graph of {} vertices", labels.size(), g.rows));
  if (k < 0) throw UsageError(fmt::format("contract: k must be >= 0, got {}", k));
  // S's row a lists the vertices labelled a, ascending: a counting sort by label.
  CsrMatrix<double> s;
  s.rows = k;
  s.cols = g.rows;
  s.row_ptr.assign(static_cast<size_t>(k) + 1, 0);
  for (int32_t j = 0; j < g.rows; ++j) {
    if (labels[j] < 0 || labels[j] >= k)
      throw UsageError(fmt::format("contract: vertex {} has label {}, outside [0, {})", j, labels[j], k));
    ++s.row_ptr[labels[j] + 1];
  }
  for (int32_t a = 0; a < k; ++a) s.row_ptr[a + 1] += s.row_ptr[a];
  s.col_idx.resize(static_cast<size_t>(g.rows));
  s.values.assign(static_cast<size_t>(g.rows), 1.0);
  std::vector<int32_t> fill(s.row_ptr.begin(), s.row_ptr.end() - 1);
  for (int32_t j = 0; j < g.rows; ++j) s.col_idx[fill[labels[j]]++] = j;
  const CsrMatrix<double> sg = reference::spgemm(s, g.template cast<double>());
  return reference::spgemm(sg, transpose(s));
}

template CsrMatrix<double> contract_cpu(const CsrMatrix<float>&, std::span<const int32_t>, int32_t);
template CsrMatrix<double> contract_cpu(const CsrMatrix<double>&, std::span<const int32_t>, int32_t);

}  // namespace dbsparse

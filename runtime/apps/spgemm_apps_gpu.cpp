// Squaring and graph contraction from host CSR on the GPU (include/dbsparse/spgemm_apps.hpp): hash
// SpGEMM (runtime/spgemm/spgemm_plan.cpp); contraction uploads G and the labels and runs on the device
// (runtime/apps/contract_gpu.cpp).
// Their CPU references are reference::spgemm and contract_cpu, which share no product code with
// these.
#include <chrono>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/spgemm_apps.hpp"
#include "runtime/gpu/upload_nonempty.hpp"

namespace dbsparse {

template <class T>
SpgemmPlan<T> plan_square(Context& ctx, const CsrMatrix<T>& a, bool transpose, const SpgemmOptions& options) {
  // The plan keeps device copies of both factors only, so Aᵀ may go when it returns.
  if (square_uses_transpose(a, transpose)) return plan_spgemm(ctx, a, dbsparse::transpose(a), options);
  return plan_spgemm(ctx, a, a, options);
}

template <class T>
CsrMatrix<T> square(Context& ctx, const CsrMatrix<T>& a, bool transpose, const SpgemmOptions& options) {
  SpgemmPlan<T> plan = plan_square(ctx, a, transpose, options);
  Stream s(ctx);
  plan.run(s.handle());
  return plan.download();
}

template <class T>
std::pair<CsrMatrix<T>, CsrMatrix<T>> contraction_factors(int32_t n, std::span<const int32_t> labels, int32_t k) {
  if (k < 0) throw UsageError(fmt::format("contract: k must be >= 0, got {}", k));
  if (labels.size() != static_cast<size_t>(n))
    throw UsageError(fmt::format("contract: {} labels for a graph of {} vertices", labels.size(), n));
  // S (k x n): row a lists the vertices labelled a, ascending (a counting sort). Sᵀ (n x k): row j
  // is the single entry (j, labels[j]), so it needs no transpose.
  CsrMatrix<T> s, st;
  s.rows = k;
  s.cols = n;
  s.row_ptr.assign(static_cast<size_t>(k) + 1, 0);
  st.rows = n;
  st.cols = k;
  st.row_ptr.resize(static_cast<size_t>(n) + 1);
  st.col_idx.resize(static_cast<size_t>(n));
  st.values.assign(static_cast<size_t>(n), T(1));
  for (int32_t j = 0; j < n; ++j) {
    if (labels[j] < 0 || labels[j] >= k)
      throw UsageError(fmt::format("contract: vertex {} has label {}, outside [0, {})", j, labels[j], k));
    ++s.row_ptr[labels[j] + 1];
    st.row_ptr[j] = j;
    st.col_idx[j] = labels[j];
  }
  st.row_ptr[n] = n;
  for (int32_t a = 0; a < k; ++a) s.row_ptr[a + 1] += s.row_ptr[a];
  s.col_idx.resize(static_cast<size_t>(n));
  s.values.assign(static_cast<size_t>(n), T(1));
  std::vector<int32_t> fill(s.row_ptr.begin(), s.row_ptr.end() - 1);
  for (int32_t j = 0; j < n; ++j) s.col_idx[fill[labels[j]]++] = j;

  return {std::move(s), std::move(st)};
}

template <class T>
ContractResult<T> contract(Context& ctx, const CsrMatrix<T>& g, std::span<const int32_t> labels, int32_t k,
                           const SpgemmOptions& options) {
  // The checks and messages of contract_cpu, so that both reject the same input alike.
  if (g.rows != g.cols) throw UsageError(fmt::format("contract: the graph must be square, is {}x{}", g.rows, g.cols));
  if (labels.size() != static_cast<size_t>(g.rows))
    throw UsageError(fmt::format("contract: {} labels for a graph of {} vertices", labels.size(), g.rows));
  if (k < 0) throw UsageError(fmt::format("contract: k must be >= 0, got {}", k));
  ContractResult<T> r;
  const auto t0 = std::chrono::steady_clock::now();
  Stream stream(ctx);
  const DeviceCsr<T> dg(g);
  const DeviceBuffer<int32_t> dl = detail::upload_nonempty(labels);
  const double upload_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const DeviceContraction<T> d =
      contract(ctx, dg.view(), reinterpret_cast<const int32_t*>(dl.ptr()), k, stream.handle(), options);
  const auto t1 = std::chrono::steady_clock::now();
  r.c = d.c.download();
  r.times = d.times;
  r.times.upload_ms = upload_ms;
  r.times.download_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  r.nnz_sg = d.sg.nnz();
  r.flops = 2 * (g.nnz() + r.nnz_sg);
  return r;
}

template SpgemmPlan<float> plan_square(Context&, const CsrMatrix<float>&, bool, const SpgemmOptions&);
template SpgemmPlan<double> plan_square(Context&, const CsrMatrix<double>&, bool, const SpgemmOptions&);
template CsrMatrix<float> square(Context&, const CsrMatrix<float>&, bool, const SpgemmOptions&);
template CsrMatrix<double> square(Context&, const CsrMatrix<double>&, bool, const SpgemmOptions&);
template std::pair<CsrMatrix<float>, CsrMatrix<float>> contraction_factors(int32_t, std::span<const int32_t>, int32_t);
template std::pair<CsrMatrix<double>, CsrMatrix<double>> contraction_factors(int32_t, std::span<const int32_t>,
                                                                             int32_t);
template ContractResult<float> contract(Context&, const CsrMatrix<float>&, std::span<const int32_t>, int32_t,
                                        const SpgemmOptions&);
template ContractResult<double> contract(Context&, const CsrMatrix<double>&, std::span<const int32_t>, int32_t,
                                         const SpgemmOptions&);

}  // namespace dbsparse

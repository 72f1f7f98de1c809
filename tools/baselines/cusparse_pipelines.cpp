#include "tools/baselines/cusparse_pipelines.hpp"

#include <memory>
#include <tuple>

#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <fmt/format.h>

#include "dbsparse/device_csr.hpp"
#include "dbsparse/error.hpp"
#include "tools/baselines/cusparse_check.hpp"
#include "tools/baselines/cusparse_spgemm.hpp"

namespace dbsparse::tools {

CusparseHandle::CusparseHandle() {
  cusparseHandle_t h = nullptr;
  DBS_SP(cusparseCreate(&h));
  h_ = h;
}

CusparseHandle::~CusparseHandle() {
  if (h_) cusparseDestroy(static_cast<cusparseHandle_t>(h_));
}

namespace {

// A fresh product on the device; Error with cuSPARSE's messages when neither algorithm ran.
template <class T>
std::unique_ptr<CusparseSpgemm<T>> product(const DeviceCsrView<T>& a, const DeviceCsrView<T>& b, void* stream,
                                           void* handle, const char* what) {
  auto p = std::make_unique<CusparseSpgemm<T>>(a, b, stream, handle);
  if (!p->prepare()) throw Error(fmt::format("cuSPARSE SpGEMM {} failed: {}", what, p->why()));
  return p;
}

}  // namespace

template <class T>
CusparseDeviceContraction<T> cusparse_contract(Context& ctx, const DeviceCsrView<T>& g, const int32_t* labels,
                                               int32_t k, void* stream, void* handle) {
  // contract()'s checks and messages, then its factors (the same device code).
  if (g.rows != g.cols) throw UsageError(fmt::format("contract: the graph must be square, is {}x{}", g.rows, g.cols));
  CusparseDeviceContraction<T> r;
  std::tie(r.s, r.st) = contraction_factors<T>(ctx, labels, g.rows, k, stream);
  r.sg = product(r.s.view(), g, stream, handle, "S*G");
  r.c = product(r.sg->result(), r.st.view(), stream, handle, "(S*G)*S^T");
  r.algs = fmt::format("{}+{}", to_string(r.sg->alg()), to_string(r.c->alg()));
  for (const auto* p : {r.sg.get(), r.c.get()})
    if (!p->why().empty()) r.note += (r.note.empty() ? "" : "; ") + p->why();
  return r;
}

template <class T>
CusparseContractResult<T> cusparse_contract(Context& ctx, const CsrMatrix<T>& g, std::span<const int32_t> labels,
                                            int32_t k, void* stream, void* handle) {
  // contract()'s checks and messages; then, as it does, G and the labels uploaded.
  if (g.rows != g.cols) throw UsageError(fmt::format("contract: the graph must be square, is {}x{}", g.rows, g.cols));
  if (labels.size() != static_cast<size_t>(g.rows))
    throw UsageError(fmt::format("contract: {} labels for a graph of {} vertices", labels.size(), g.rows));
  const DeviceCsr<T> dg(g);
  const DeviceBuffer<int32_t> dl = labels.empty() ? DeviceBuffer<int32_t>(1) : DeviceBuffer<int32_t>(labels);
  const CusparseDeviceContraction<T> d =
      cusparse_contract(ctx, dg.view(), reinterpret_cast<const int32_t*>(dl.ptr()), k, stream, handle);
  CusparseContractResult<T> r;
  r.nnz_sg = d.sg->nnz();
  r.algs = d.algs;
  r.note = d.note;
  r.c = d.c->download();
  return r;
}

template <class T>
MclResult cusparse_mcl(Context& ctx, const CsrMatrix<T>& g, const MclOptions& o, void* handle, bool check_sorted,
                       CusparseMclStats* stats) {
  // The last Q: mcl() uses it until the next expansion (or its return), so it lives until then.
  std::unique_ptr<CusparseSpgemm<T>> q;
  int iteration = 0;
  const MclExpand<T> expand = [&](const DeviceCsrView<T>& p, void* stream) -> DeviceCsrView<T> {
    ++iteration;
    q.reset();  // the previous Q, consumed by the previous iteration (mcl waited for it)
    q = product(p, p, stream, handle, "P*P");
    if (q->alg() == CusparseSpgemmAlg::Alg3 && stats) {
      if (stats->alg3_products++ == 0) stats->note = q->why();
    }
    const DeviceCsrView<T> v = q->result();
    if (check_sorted) {
      const CsrMatrix<T> h = download(v);
      for (int32_t i = 0; i < h.rows; ++i)
        for (int32_t e = h.row_ptr[i] + 1; e < h.row_ptr[i + 1]; ++e)
          if (h.col_idx[e - 1] >= h.col_idx[e])
            throw Error(
                fmt::format("cuSPARSE's P*P at iteration {}: row {} is not sorted by column ({} before {}); "
                            "mcl's pruning needs sorted rows",
                            iteration, i, h.col_idx[e - 1], h.col_idx[e]));
    }
    return v;
  };
  // mcl() waits for its stream after each use of Q and destroys it before returning (or throwing),
  // so the last Q must not synchronise it on destruction (that segfaulted in
  // `bench spgemm --mcl-iters`).
  struct Forget {
    std::unique_ptr<CusparseSpgemm<T>>& q;
    ~Forget() {
      if (q) q->forget_stream();
    }
  } forget{q};
  return mcl(ctx, g, o, expand);
}

#define DBS_CUSPARSE_CONTRACT(T)                                                                                      \
  template CusparseDeviceContraction<T> cusparse_contract(Context&, const DeviceCsrView<T>&, const int32_t*, int32_t, \
                                                          void*, void*);                                              \
  template CusparseContractResult<T> cusparse_contract(Context&, const CsrMatrix<T>&, std::span<const int32_t>,       \
                                                       int32_t, void*, void*);
DBS_CUSPARSE_CONTRACT(float)
DBS_CUSPARSE_CONTRACT(double)
#undef DBS_CUSPARSE_CONTRACT
template MclResult cusparse_mcl(Context&, const CsrMatrix<float>&, const MclOptions&, void*, bool, CusparseMclStats*);
template MclResult cusparse_mcl(Context&, const CsrMatrix<double>&, const MclOptions&, void*, bool, CusparseMclStats*);

}  // namespace dbsparse::tools

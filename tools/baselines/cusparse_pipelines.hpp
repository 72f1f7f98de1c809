#pragma once
// cuSPARSE-based versions of the SpGEMM applications (include/dbsparse/spgemm_apps.hpp), built the
// same way as dbsparse's so that `bench spgemm` compares the products and nothing else:
//  - contraction: G and the labels on the device (uploaded by the host-CSR version), S and Sᵀ by
//    contraction_factors' device overload (contract()'s own code), S·G and then (S·G)·Sᵀ by
//    CusparseSpgemm (DEFAULT, ALG3 where DEFAULT runs out of memory), the second reading S·G in
//    place on the device, C left there (or downloaded by the host-CSR version);
//  - MCL: the library's mcl() loop (mcl_start on the host, inflation, pruning, normalisation and
//    the change measure by templates/apps/mcl.cuh on the device) with the expansion P·P by
//    CusparseSpgemm instead of hash SpGEMM (mcl's MclExpand overload).
// Each product is a fresh CusparseSpgemm (descriptors, size queries, buffers and C allocated, the
// computation), as each of dbsparse's is a fresh plan; one cuSPARSE handle serves the pipeline.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "dbsparse/context.hpp"
#include "dbsparse/matrix.hpp"
#include "dbsparse/spgemm_apps.hpp"
#include "tools/baselines/cusparse_spgemm.hpp"

namespace dbsparse::tools {

// A cusparseHandle_t (as void*, so that this header needs no cuSPARSE one), made here and destroyed
// with this object.
class CusparseHandle {
 public:
  CusparseHandle();
  ~CusparseHandle();
  CusparseHandle(const CusparseHandle&) = delete;
  CusparseHandle& operator=(const CusparseHandle&) = delete;
  void* get() const { return h_; }

 private:
  void* h_ = nullptr;
};

template <class T>
struct CusparseContractResult {
  CsrMatrix<T> c;      // k x k; columns within a row as cuSPARSE wrote them
  int64_t nnz_sg = 0;  // nnz(S·G)
  std::string algs;    // the algorithm of each product, "cusparse-default+cusparse-alg3" etc.
  std::string note;    // DEFAULT's out-of-memory messages where ALG3 ran; else empty
};

// C = S·G·Sᵀ as contract() defines it, by cuSPARSE on `stream` with `handle` (CusparseHandle::get).
// The same UsageErrors as contract(); Error when a product fails (the messages of both algorithms).
template <class T>
CusparseContractResult<T> cusparse_contract(Context& ctx, const CsrMatrix<T>& g, std::span<const int32_t> labels,
                                            int32_t k, void* stream, void* handle);

// The device version, as contract()'s device overload: G and the labels on the device, C there too
// (result(), valid while this lives). Destroying it waits for `stream` (CusparseSpgemm's).
template <class T>
struct CusparseDeviceContraction {
  DeviceCsr<T> s, st;
  std::unique_ptr<CusparseSpgemm<T>> sg, c;  // S·G and C
  std::string algs, note;                    // as CusparseContractResult's
  DeviceCsrView<T> result() const { return c->result(); }
};
template <class T>
CusparseDeviceContraction<T> cusparse_contract(Context& ctx, const DeviceCsrView<T>& g, const int32_t* labels,
                                               int32_t k, void* stream, void* handle);

struct CusparseMclStats {
  int alg3_products = 0;  // expansions that ran with ALG3 (DEFAULT out of memory)
  std::string note;       // the first such DEFAULT failure
};

// mcl(ctx, g, o) with P·P by cuSPARSE. mcl_prune needs Q's rows sorted by column, which cuSPARSE
// is not documented to promise: with `check_sorted` every Q is downloaded and checked (for an
// untimed run), and an unsorted row is an Error naming the iteration and row rather than a wrong
// result. Error when a product fails.
template <class T>
MclResult cusparse_mcl(Context& ctx, const CsrMatrix<T>& g, const MclOptions& o, void* handle, bool check_sorted,
                       CusparseMclStats* stats = nullptr);

}  // namespace dbsparse::tools

#pragma once
// cuSPARSE's SDDMM as a baseline: out = alpha * (X Y^T) o spy(A) on A's CSR pattern, with X
// (rows x k) row-major as cuSPARSE's dense A (CUSPARSE_ORDER_ROW) and Y (cols x k) row-major read
// as cuSPARSE's dense B, k x cols column-major (leading dimension k), which is the same memory:
// SddmmPlan's layout, beta = 0. X, Y and out all f32, or all f16 / bf16, compute type CUDA_R_32F;
// CUSPARSE_SDDMM_ALG_DEFAULT, the one algorithm cuSPARSE has, with its preprocessing done ahead so
// that the timed loop measures cusparseSDDMM alone. Where cuSPARSE refuses the type or layout
// (bufferSize or preprocess fails), the baseline is unsupported, with its reason, and never run.
#include <memory>
#include <string>

#include "dbsparse/matrix.hpp"
#include "dbsparse/spmm.hpp"

namespace dbsparse::tools {

class CusparseSddmm {
 public:
  // Uploads its own copy of A's pattern; its out values are a buffer of its own until run() points
  // them at the caller's.
  CusparseSddmm(const CsrMatrix<float>& a, int k, void* stream, SpmmDtype dtype = SpmmDtype::F32);
  ~CusparseSddmm();
  CusparseSddmm(const CusparseSddmm&) = delete;
  CusparseSddmm& operator=(const CusparseSddmm&) = delete;

  bool supported() const;
  const std::string& why_unsupported() const;  // empty when supported
  // out (nnz values) = alpha * dot(X[row(e)], Y[col(e)]) on the stream given at construction; x,
  // y and out are device pointers. Throws when unsupported.
  void run(uint64_t x, uint64_t y, uint64_t out, float alpha = 1.0f);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace dbsparse::tools

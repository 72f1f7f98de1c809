#pragma once
// cuSPARSE's CSR SpMM as a baseline: C = alpha * A * B + beta * C with A CSR and B, C dense
// row-major (CUSPARSE_ORDER_ROW, leading dimension n), the layout SpmmPlan uses; A, B and C all
// f32 (CUDA_R_32F), or all f16 / bf16 (CUDA_R_16F / CUDA_R_16BF) with compute type CUDA_R_32F, as
// SpmmPlan's SpmmDtype. Every algorithm's
// descriptor, buffer and preprocessing are set up ahead, so the timed loop measures cusparseSpMM
// alone. An algorithm cuSPARSE refuses for this layout or shape (bufferSize or preprocess fails)
// is marked unsupported, with its reason, and never run.
#include <array>
#include <memory>
#include <span>
#include <string>

#include "dbsparse/context.hpp"
#include "dbsparse/matrix.hpp"
#include "dbsparse/spmm.hpp"

namespace dbsparse::tools {

enum class CusparseSpmmAlg { Default, CsrAlg1, CsrAlg2, CsrAlg3 };
inline constexpr std::array<CusparseSpmmAlg, 4> kCusparseSpmmAlgs = {
    CusparseSpmmAlg::Default, CusparseSpmmAlg::CsrAlg1, CusparseSpmmAlg::CsrAlg2, CusparseSpmmAlg::CsrAlg3};
const char* to_string(CusparseSpmmAlg a);  // "cusparse-default", "cusparse-csr-alg1", ...

class CusparseSpmm {
 public:
  // Uploads its own copy of A (cuSPARSE's descriptors point at it; f16 / bf16: A's values rounded
  // as SpmmPlan rounds them); B and C have n columns. Only the algorithms in `algs` are set up (the
  // others are unsupported, "not set up"): a caller that times the setup of the one it runs
  // (`dbsparse gcn`) pays for no other.
  CusparseSpmm(const CsrMatrix<float>& a, int n, void* stream,
               std::span<const CusparseSpmmAlg> algs = kCusparseSpmmAlgs, SpmmDtype dtype = SpmmDtype::F32);
  ~CusparseSpmm();
  CusparseSpmm(const CusparseSpmm&) = delete;
  CusparseSpmm& operator=(const CusparseSpmm&) = delete;

  bool supported(CusparseSpmmAlg alg) const;
  const std::string& why_unsupported(CusparseSpmmAlg alg) const;  // empty when supported
  // C = alpha * A * B + beta * C on the stream given at construction; b (cols x n) and c (rows x n)
  // are device pointers, row-major. Throws for an unsupported algorithm.
  void run(CusparseSpmmAlg alg, uint64_t b, uint64_t c, float alpha = 1.0f, float beta = 0.0f);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace dbsparse::tools

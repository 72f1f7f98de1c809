#include "tools/baselines/cusparse_check.hpp"
#include "tools/baselines/cusparse_spmv.hpp"

#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <fmt/format.h>

namespace dbsparse::tools {
namespace {

cusparseSpMVAlg_t native(CusparseSpmvAlg a) {
  return a == CusparseSpmvAlg::CsrAlg1 ? CUSPARSE_SPMV_CSR_ALG1 : CUSPARSE_SPMV_CSR_ALG2;
}

}  // namespace

const char* to_string(CusparseSpmvAlg a) {
  return a == CusparseSpmvAlg::CsrAlg1 ? "cusparse-csr-alg1" : "cusparse-csr-alg2";
}

template <class T>
struct CusparseSpmv<T>::State {
  cusparseHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  DeviceBuffer<int32_t> row_ptr, col_idx;
  DeviceBuffer<T> values, x_probe, y_probe;
  // One matrix descriptor per algorithm: preprocessing attaches algorithm-specific data to it.
  cusparseSpMatDescr_t mat[2] = {nullptr, nullptr};
  cusparseDnVecDescr_t vx = nullptr, vy = nullptr;
  DeviceAllocation buffer[2];
  int32_t rows = 0, cols = 0;
};

template <class T>
CusparseSpmv<T>::CusparseSpmv(const CsrMatrix<T>& a, void* stream) : s_(std::make_unique<State>()) {
  constexpr cudaDataType dt = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_64F;
  s_->stream = static_cast<cudaStream_t>(stream);
  s_->rows = a.rows;
  s_->cols = a.cols;
  s_->row_ptr = DeviceBuffer<int32_t>(std::span<const int32_t>(a.row_ptr));
  s_->col_idx = DeviceBuffer<int32_t>(std::span<const int32_t>(a.col_idx));
  s_->values = DeviceBuffer<T>(std::span<const T>(a.values));
  s_->x_probe = DeviceBuffer<T>(std::max<int32_t>(a.cols, 1));
  s_->y_probe = DeviceBuffer<T>(std::max<int32_t>(a.rows, 1));
  s_->x_probe.fill_bytes(0);
  DBS_SP(cusparseCreate(&s_->handle));
  DBS_SP(cusparseSetStream(s_->handle, s_->stream));
  DBS_SP(cusparseCreateDnVec(&s_->vx, a.cols, s_->x_probe.data(), dt));
  DBS_SP(cusparseCreateDnVec(&s_->vy, a.rows, s_->y_probe.data(), dt));
  T alpha = 1, beta = 0;
  for (int i = 0; i < 2; ++i) {
    auto alg = native(i == 0 ? CusparseSpmvAlg::CsrAlg1 : CusparseSpmvAlg::CsrAlg2);
    DBS_SP(cusparseCreateCsr(&s_->mat[i], a.rows, a.cols, a.nnz(), s_->row_ptr.data(), s_->col_idx.data(),
                             s_->values.data(), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, dt));
    size_t bytes = 0;
    DBS_SP(cusparseSpMV_bufferSize(s_->handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, s_->mat[i], s_->vx, &beta,
                                   s_->vy, dt, alg, &bytes));
    s_->buffer[i] = DeviceAllocation(std::max<size_t>(bytes, 16));
    DBS_SP(cusparseSpMV_preprocess(s_->handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, s_->mat[i], s_->vx, &beta,
                                   s_->vy, dt, alg, reinterpret_cast<void*>(s_->buffer[i].ptr())));
  }
}

template <class T>
CusparseSpmv<T>::~CusparseSpmv() {
  if (!s_) return;
  for (auto m : s_->mat)
    if (m) cusparseDestroySpMat(m);
  if (s_->vx) cusparseDestroyDnVec(s_->vx);
  if (s_->vy) cusparseDestroyDnVec(s_->vy);
  if (s_->handle) cusparseDestroy(s_->handle);
}

template <class T>
void CusparseSpmv<T>::run(CusparseSpmvAlg alg, uint64_t x, uint64_t y) {
  constexpr cudaDataType dt = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_64F;
  int i = alg == CusparseSpmvAlg::CsrAlg1 ? 0 : 1;
  // Re-pointing a dense descriptor is a host-side field update, not a device call.
  DBS_SP(cusparseDnVecSetValues(s_->vx, reinterpret_cast<void*>(x)));
  DBS_SP(cusparseDnVecSetValues(s_->vy, reinterpret_cast<void*>(y)));
  T alpha = 1, beta = 0;
  DBS_SP(cusparseSpMV(s_->handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, s_->mat[i], s_->vx, &beta, s_->vy, dt,
                      native(alg), reinterpret_cast<void*>(s_->buffer[i].ptr())));
}

template class CusparseSpmv<float>;
template class CusparseSpmv<double>;

}  // namespace dbsparse::tools

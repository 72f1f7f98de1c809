#include "tools/baselines/cusparse_check.hpp"
#include "tools/baselines/cusparse_spmm.hpp"

#include <algorithm>

#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <fmt/format.h>

#include "dbsparse/half.hpp"

namespace dbsparse::tools {
namespace {

cusparseSpMMAlg_t native(CusparseSpmmAlg a) {
  switch (a) {
    case CusparseSpmmAlg::Default:
      return CUSPARSE_SPMM_ALG_DEFAULT;
    case CusparseSpmmAlg::CsrAlg1:
      return CUSPARSE_SPMM_CSR_ALG1;
    case CusparseSpmmAlg::CsrAlg2:
      return CUSPARSE_SPMM_CSR_ALG2;
    case CusparseSpmmAlg::CsrAlg3:
      return CUSPARSE_SPMM_CSR_ALG3;
  }
  return CUSPARSE_SPMM_ALG_DEFAULT;
}

constexpr auto kOp = CUSPARSE_OPERATION_NON_TRANSPOSE;

}  // namespace

const char* to_string(CusparseSpmmAlg a) {
  switch (a) {
    case CusparseSpmmAlg::Default:
      return "cusparse-default";
    case CusparseSpmmAlg::CsrAlg1:
      return "cusparse-csr-alg1";
    case CusparseSpmmAlg::CsrAlg2:
      return "cusparse-csr-alg2";
    case CusparseSpmmAlg::CsrAlg3:
      return "cusparse-csr-alg3";
  }
  return "?";
}

struct CusparseSpmm::State {
  cusparseHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  DeviceBuffer<int32_t> row_ptr, col_idx;
  DeviceBuffer<float> values, b_probe, c_probe;  // the probes are as large as f32 needs, whatever the type
  DeviceBuffer<uint16_t> values16;               // A's values in f16 / bf16
  // One matrix descriptor per algorithm: preprocessing attaches algorithm-specific data to it.
  std::array<cusparseSpMatDescr_t, kCusparseSpmmAlgs.size()> mat{};
  cusparseDnMatDescr_t mb = nullptr, mc = nullptr;
  std::array<DeviceAllocation, kCusparseSpmmAlgs.size()> buffer;
  std::array<std::string, kCusparseSpmmAlgs.size()> unsupported;  // the reason, empty when usable
  int32_t rows = 0, cols = 0;
  int n = 0;
  cudaDataType type = CUDA_R_32F;  // of A, B and C; the compute type is CUDA_R_32F for all
};

CusparseSpmm::CusparseSpmm(const CsrMatrix<float>& a, int n, void* stream, std::span<const CusparseSpmmAlg> algs,
                           SpmmDtype dtype)
    : s_(std::make_unique<State>()) {
  if (n < 1) throw UsageError(fmt::format("CusparseSpmm: n must be >= 1, got {}", n));
  s_->stream = static_cast<cudaStream_t>(stream);
  s_->rows = a.rows;
  s_->cols = a.cols;
  s_->n = n;
  s_->row_ptr = DeviceBuffer<int32_t>(std::span<const int32_t>(a.row_ptr));
  s_->col_idx = DeviceBuffer<int32_t>(std::span<const int32_t>(a.col_idx));
  const cudaDataType type = cuda_data_type(dtype);
  void* values = nullptr;
  if (dtype == SpmmDtype::F32) {
    s_->values = DeviceBuffer<float>(std::span<const float>(a.values));
    values = s_->values.data();
  } else {
    const auto h = dtype == SpmmDtype::F16 ? floats_to_half(a.values) : floats_to_bf16(a.values);
    s_->values16 = DeviceBuffer<uint16_t>(std::span<const uint16_t>(h));
    values = s_->values16.data();
  }
  s_->type = type;
  s_->b_probe = DeviceBuffer<float>(std::max<size_t>(size_t(a.cols) * size_t(n), 1));
  s_->c_probe = DeviceBuffer<float>(std::max<size_t>(size_t(a.rows) * size_t(n), 1));
  s_->b_probe.fill_bytes(0);
  s_->c_probe.fill_bytes(0);
  DBS_SP(cusparseCreate(&s_->handle));
  DBS_SP(cusparseSetStream(s_->handle, s_->stream));
  DBS_SP(cusparseCreateDnMat(&s_->mb, a.cols, n, n, s_->b_probe.data(), type, CUSPARSE_ORDER_ROW));
  DBS_SP(cusparseCreateDnMat(&s_->mc, a.rows, n, n, s_->c_probe.data(), type, CUSPARSE_ORDER_ROW));
  float alpha = 1, beta = 0;
  for (size_t i = 0; i < kCusparseSpmmAlgs.size(); ++i) {
    if (std::find(algs.begin(), algs.end(), kCusparseSpmmAlgs[i]) == algs.end()) {
      s_->unsupported[i] = "not set up (not asked for)";
      continue;
    }
    const auto alg = native(kCusparseSpmmAlgs[i]);
    DBS_SP(cusparseCreateCsr(&s_->mat[i], a.rows, a.cols, a.nnz(), s_->row_ptr.data(), s_->col_idx.data(), values,
                             CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, type));
    size_t bytes = 0;
    cusparseStatus_t st = cusparseSpMM_bufferSize(s_->handle, kOp, kOp, &alpha, s_->mat[i], s_->mb, &beta, s_->mc,
                                                  CUDA_R_32F, alg, &bytes);
    if (st != CUSPARSE_STATUS_SUCCESS) {
      s_->unsupported[i] = fmt::format("cusparseSpMM_bufferSize: {}", cusparseGetErrorString(st));
      continue;
    }
    s_->buffer[i] = DeviceAllocation(std::max<size_t>(bytes, 16));
    // Preprocessing is optional; it pays with CSR_ALG1 and CSR_ALG3 (the docs) and is done for all.
    st = cusparseSpMM_preprocess(s_->handle, kOp, kOp, &alpha, s_->mat[i], s_->mb, &beta, s_->mc, CUDA_R_32F, alg,
                                 reinterpret_cast<void*>(s_->buffer[i].ptr()));
    if (st != CUSPARSE_STATUS_SUCCESS)
      s_->unsupported[i] = fmt::format("cusparseSpMM_preprocess: {}", cusparseGetErrorString(st));
  }
}

CusparseSpmm::~CusparseSpmm() {
  if (!s_) return;
  for (auto m : s_->mat)
    if (m) cusparseDestroySpMat(m);
  if (s_->mb) cusparseDestroyDnMat(s_->mb);
  if (s_->mc) cusparseDestroyDnMat(s_->mc);
  if (s_->handle) cusparseDestroy(s_->handle);
}

bool CusparseSpmm::supported(CusparseSpmmAlg alg) const { return s_->unsupported[static_cast<size_t>(alg)].empty(); }

const std::string& CusparseSpmm::why_unsupported(CusparseSpmmAlg alg) const {
  return s_->unsupported[static_cast<size_t>(alg)];
}

void CusparseSpmm::run(CusparseSpmmAlg alg, uint64_t b, uint64_t c, float alpha, float beta) {
  const auto i = static_cast<size_t>(alg);
  if (!s_->unsupported[i].empty())
    throw UsageError(fmt::format("{} does not run here: {}", to_string(alg), s_->unsupported[i]));
  // Re-pointing a dense descriptor is a host-side field update, not a device call.
  DBS_SP(cusparseDnMatSetValues(s_->mb, reinterpret_cast<void*>(b)));
  DBS_SP(cusparseDnMatSetValues(s_->mc, reinterpret_cast<void*>(c)));
  DBS_SP(cusparseSpMM(s_->handle, kOp, kOp, &alpha, s_->mat[i], s_->mb, &beta, s_->mc, CUDA_R_32F, native(alg),
                      reinterpret_cast<void*>(s_->buffer[i].ptr())));
}

}  // namespace dbsparse::tools

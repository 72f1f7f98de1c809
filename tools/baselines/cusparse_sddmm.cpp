#include "tools/baselines/cusparse_sddmm.hpp"

#include <algorithm>
#include <span>

#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <fmt/format.h>

#include "dbsparse/context.hpp"
#include "tools/baselines/cusparse_check.hpp"

namespace dbsparse::tools {
namespace {

constexpr auto kOp = CUSPARSE_OPERATION_NON_TRANSPOSE;

}  // namespace

struct CusparseSddmm::State {
  cusparseHandle_t handle = nullptr;
  DeviceBuffer<int32_t> row_ptr, col_idx;
  DeviceBuffer<float> x_probe, y_probe, out_probe;  // as large as f32 needs, whatever the type
  cusparseSpMatDescr_t mc = nullptr;
  cusparseDnMatDescr_t mx = nullptr, my = nullptr;
  DeviceAllocation buffer;
  std::string unsupported;
};

CusparseSddmm::CusparseSddmm(const CsrMatrix<float>& a, int k, void* stream, SpmmDtype dtype)
    : s_(std::make_unique<State>()) {
  if (k < 1) throw UsageError(fmt::format("CusparseSddmm: k must be >= 1, got {}", k));
  const cudaDataType type = cuda_data_type(dtype);
  s_->row_ptr = DeviceBuffer<int32_t>(std::span<const int32_t>(a.row_ptr));
  s_->col_idx = DeviceBuffer<int32_t>(std::span<const int32_t>(a.col_idx));
  s_->x_probe = DeviceBuffer<float>(std::max<size_t>(size_t(a.rows) * size_t(k), 1));
  s_->y_probe = DeviceBuffer<float>(std::max<size_t>(size_t(a.cols) * size_t(k), 1));
  s_->out_probe = DeviceBuffer<float>(std::max<size_t>(size_t(a.nnz()), 1));
  s_->x_probe.fill_bytes(0);
  s_->y_probe.fill_bytes(0);
  DBS_SP(cusparseCreate(&s_->handle));
  DBS_SP(cusparseSetStream(s_->handle, static_cast<cudaStream_t>(stream)));
  DBS_SP(cusparseCreateDnMat(&s_->mx, a.rows, k, k, s_->x_probe.data(), type, CUSPARSE_ORDER_ROW));
  DBS_SP(cusparseCreateDnMat(&s_->my, k, a.cols, k, s_->y_probe.data(), type, CUSPARSE_ORDER_COL));
  DBS_SP(cusparseCreateCsr(&s_->mc, a.rows, a.cols, a.nnz(), s_->row_ptr.data(), s_->col_idx.data(),
                           s_->out_probe.data(), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                           type));
  float alpha = 1, beta = 0;
  size_t bytes = 0;
  cusparseStatus_t st = cusparseSDDMM_bufferSize(s_->handle, kOp, kOp, &alpha, s_->mx, s_->my, &beta, s_->mc,
                                                 CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, &bytes);
  if (st != CUSPARSE_STATUS_SUCCESS) {
    s_->unsupported = fmt::format("cusparseSDDMM_bufferSize: {}", cusparseGetErrorString(st));
    return;
  }
  s_->buffer = DeviceAllocation(std::max<size_t>(bytes, 16));
  st = cusparseSDDMM_preprocess(s_->handle, kOp, kOp, &alpha, s_->mx, s_->my, &beta, s_->mc, CUDA_R_32F,
                                CUSPARSE_SDDMM_ALG_DEFAULT, reinterpret_cast<void*>(s_->buffer.ptr()));
  if (st != CUSPARSE_STATUS_SUCCESS)
    s_->unsupported = fmt::format("cusparseSDDMM_preprocess: {}", cusparseGetErrorString(st));
}

CusparseSddmm::~CusparseSddmm() {
  if (!s_) return;
  if (s_->mc) cusparseDestroySpMat(s_->mc);
  if (s_->mx) cusparseDestroyDnMat(s_->mx);
  if (s_->my) cusparseDestroyDnMat(s_->my);
  if (s_->handle) cusparseDestroy(s_->handle);
}

bool CusparseSddmm::supported() const { return s_->unsupported.empty(); }
const std::string& CusparseSddmm::why_unsupported() const { return s_->unsupported; }

void CusparseSddmm::run(uint64_t x, uint64_t y, uint64_t out, float alpha) {
  if (!supported()) throw UsageError("cusparse-sddmm does not run here: " + s_->unsupported);
  float beta = 0;
  // Re-pointing descriptors is a host-side field update, not a device call.
  DBS_SP(cusparseDnMatSetValues(s_->mx, reinterpret_cast<void*>(x)));
  DBS_SP(cusparseDnMatSetValues(s_->my, reinterpret_cast<void*>(y)));
  DBS_SP(cusparseSpMatSetValues(s_->mc, reinterpret_cast<void*>(out)));
  DBS_SP(cusparseSDDMM(s_->handle, kOp, kOp, &alpha, s_->mx, s_->my, &beta, s_->mc, CUDA_R_32F,
                       CUSPARSE_SDDMM_ALG_DEFAULT, reinterpret_cast<void*>(s_->buffer.ptr())));
}

}  // namespace dbsparse::tools

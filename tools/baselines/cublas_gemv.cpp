#include "tools/baselines/cublas_gemv.hpp"

#include <cublas_v2.h>

#include <fmt/format.h>

#include "dbsparse/error.hpp"

namespace dbsparse::tools {
namespace {
void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) throw CudaError(call, static_cast<int>(s), cublasGetStatusString(s));
}
cudaDataType_t cuda_type(DenseType t) {
  switch (t) {
    case DenseType::F16:
      return CUDA_R_16F;
    case DenseType::BF16:
      return CUDA_R_16BF;
    case DenseType::F32:
      return CUDA_R_32F;
  }
  return CUDA_R_32F;
}
}  // namespace

const char* to_string(DenseType t) {
  switch (t) {
    case DenseType::F16:
      return "f16";
    case DenseType::BF16:
      return "bf16";
    case DenseType::F32:
      return "f32";
  }
  return "?";
}

DenseType dense_type_from_string(const std::string& s) {
  if (s == "f16") return DenseType::F16;
  if (s == "bf16") return DenseType::BF16;
  if (s == "f32") return DenseType::F32;
  throw UsageError(fmt::format("unknown dtype '{}' (known: f16, bf16, f32)", s));
}

int dense_type_bytes(DenseType t) { return t == DenseType::F32 ? 4 : 2; }

CublasGemv::CublasGemv(void* stream) {
  cublasHandle_t h = nullptr;
  check(cublasCreate(&h), "cublasCreate");
  handle_ = h;
  check(cublasSetStream(h, static_cast<cudaStream_t>(stream)), "cublasSetStream");
}

CublasGemv::~CublasGemv() {
  if (handle_) cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

void CublasGemv::run(DenseType t, int32_t rows, int32_t cols, uint64_t w, uint64_t x, uint64_t y, int batch) {
  // Row-major W (rows x cols) is column-major W^T (cols x rows): y = op(W^T)^T... i.e. op = T.
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType_t dt = cuda_type(t);
  check(cublasGemmEx(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_T, CUBLAS_OP_N, rows, batch, cols, &alpha,
                     reinterpret_cast<const void*>(w), dt, cols, reinterpret_cast<const void*>(x), dt, cols, &beta,
                     reinterpret_cast<void*>(y), dt, rows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
}

}  // namespace dbsparse::tools

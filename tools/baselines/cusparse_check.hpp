#pragma once
// The one way tools check cuSPARSE and CUDA runtime statuses (an Error naming the call), and the
// data types they pass it.
#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/spmm.hpp"

namespace dbsparse::tools {

inline void check_status(cusparseStatus_t s, const char* call) {
  if (s != CUSPARSE_STATUS_SUCCESS)
    throw Error(fmt::format("cuSPARSE call {} failed: {}", call, cusparseGetErrorString(s)));
}

inline void check_status(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw Error(fmt::format("CUDA runtime call {} failed: {}", call, cudaGetErrorString(e)));
}

// The cuSPARSE data type of B and C (SpMM) or X and Y (SDDMM).
inline cudaDataType cuda_data_type(SpmmDtype d) {
  switch (d) {
    case SpmmDtype::F32:
      return CUDA_R_32F;
    case SpmmDtype::F16:
      return CUDA_R_16F;
    case SpmmDtype::BF16:
      return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

}  // namespace dbsparse::tools

#define DBS_SP(call) ::dbsparse::tools::check_status(call, #call)

#pragma once
// The one way tools check cuSPARSE and CUDA runtime statuses: an Error naming the call.
#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <fmt/format.h>

#include "dbsparse/error.hpp"

namespace dbsparse::tools {

inline void check_status(cusparseStatus_t s, const char* call) {
  if (s != CUSPARSE_STATUS_SUCCESS)
    throw Error(fmt::format("cuSPARSE call {} failed: {}", call, cusparseGetErrorString(s)));
}

inline void check_status(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw Error(fmt::format("CUDA runtime call {} failed: {}", call, cudaGetErrorString(e)));
}

}  // namespace dbsparse::tools

#define DBS_SP(call) ::dbsparse::tools::check_status(call, #call)

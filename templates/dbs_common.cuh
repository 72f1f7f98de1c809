// Shared device helpers for every dbsparse template. NVRTC sees this through the embedded headers.
#pragma once

namespace dbs {

// Read-only loads through the non-coherent path; x is gathered at random and never written here.
template <typename T>
__device__ __forceinline__ T load_ro(const T* p) { return __ldg(p); }

// y = alpha*acc + beta*y, where beta == 0 means y is not read (it may hold NaN).
template <typename T>
__device__ __forceinline__ void axpby_store(T* y, T acc, T alpha, T beta) {
  *y = beta == T(0) ? alpha * acc : alpha * acc + beta * *y;
}

}  // namespace dbs

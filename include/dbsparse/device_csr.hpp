#pragma once
// CSR on the device: a non-owning view (what a plan takes as input, and what a product gives back
// without a trip through the host) and an owning upload of a host CsrMatrix.
#include <cstdint>
#include <string>

#include "dbsparse/context.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/matrix.hpp"

namespace dbsparse {

// Device pointers (CUdeviceptr == cudaMalloc's) of a CSR matrix with int32 indices, columns sorted
// and unique in each row, as CsrMatrix. The view owns nothing: the arrays must outlive whatever
// uses it. row_ptr may be null only when rows == 0; col_idx and values only when nnz == 0.
template <class T>
struct DeviceCsrView {
  int32_t rows = 0;
  int32_t cols = 0;
  int64_t nnz = 0;
  const int32_t* row_ptr = nullptr;  // rows + 1
  const int32_t* col_idx = nullptr;  // nnz
  const T* values = nullptr;         // nnz
};

// The same with 64-bit row offsets: nnz may pass 2^31 (rows and columns stay int32), for matrices
// a CsrMatrix cannot hold, built on the device (PyTorch's CSR tensors have int64 offsets too).
// What plan_spmv(ctx, const DeviceCsrView64&) reads.
template <class T>
struct DeviceCsrView64 {
  int32_t rows = 0;
  int32_t cols = 0;
  int64_t nnz = 0;
  const int64_t* row_ptr = nullptr;  // rows + 1
  const int32_t* col_idx = nullptr;  // nnz
  const T* values = nullptr;         // nnz
};

// UsageError, `who` first, for negative sizes or a null array the sizes need (the arrays'
// contents stay unread: they are on the device).
template <class T>
void validate(const DeviceCsrView64<T>& a, const std::string& who) {
  if (a.rows < 0 || a.cols < 0 || a.nnz < 0)
    throw UsageError(who + ": rows " + std::to_string(a.rows) + ", cols " + std::to_string(a.cols) + " and nnz " +
                     std::to_string(a.nnz) + " must not be negative");
  if ((a.rows > 0 && !a.row_ptr) || (a.nnz > 0 && (!a.col_idx || !a.values)))
    throw UsageError(who + ": a null array in the view (row_ptr needs rows + 1 entries, col_idx and values nnz)");
}

// A host CsrMatrix uploaded (synchronously); every array has at least one element, so that no
// kernel parameter is a null pointer.
template <class T>
struct DeviceCsr {
  int32_t rows = 0;
  int32_t cols = 0;
  int64_t nnz = 0;
  DeviceBuffer<int32_t> row_ptr, col_idx;
  DeviceBuffer<T> values;

  DeviceCsr() = default;
  explicit DeviceCsr(const CsrMatrix<T>& m);
  DeviceCsrView<T> view() const {
    return {rows,
            cols,
            nnz,
            reinterpret_cast<const int32_t*>(row_ptr.ptr()),
            reinterpret_cast<const int32_t*>(col_idx.ptr()),
            reinterpret_cast<const T*>(values.ptr())};
  }
  int64_t device_bytes() const {
    return static_cast<int64_t>((row_ptr.size() + col_idx.size()) * sizeof(int32_t) + values.size() * sizeof(T));
  }
};

// The same upload with the row offsets widened to int64: a DeviceCsrView64 of a matrix a
// CsrMatrix holds, to test or time the 64-bit path against the 32-bit one.
template <class T>
struct DeviceCsr64 {
  int32_t rows = 0;
  int32_t cols = 0;
  int64_t nnz = 0;
  DeviceBuffer<int64_t> row_ptr;
  DeviceBuffer<int32_t> col_idx;
  DeviceBuffer<T> values;

  explicit DeviceCsr64(const CsrMatrix<T>& m);
  DeviceCsrView64<T> view() const {
    return {rows,
            cols,
            nnz,
            reinterpret_cast<const int64_t*>(row_ptr.ptr()),
            reinterpret_cast<const int32_t*>(col_idx.ptr()),
            reinterpret_cast<const T*>(values.ptr())};
  }
};

// The view's arrays to the host (waits for the device: cuCtxSynchronize).
template <class T>
CsrMatrix<T> download(const DeviceCsrView<T>& v);

}  // namespace dbsparse

// CSR on the device (include/dbsparse/device_csr.hpp).
#include "dbsparse/device_csr.hpp"

#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/upload_nonempty.hpp"

namespace dbsparse {

template <class T>
DeviceCsr<T>::DeviceCsr(const CsrMatrix<T>& m)
    : rows(m.rows),
      cols(m.cols),
      nnz(m.nnz()),
      row_ptr(detail::upload_nonempty(std::span<const int32_t>(m.row_ptr))),
      col_idx(detail::upload_nonempty(std::span<const int32_t>(m.col_idx))),
      values(detail::upload_nonempty(std::span<const T>(m.values))) {}

template <class T>
DeviceCsr64<T>::DeviceCsr64(const CsrMatrix<T>& m)
    : rows(m.rows),
      cols(m.cols),
      nnz(m.nnz()),
      row_ptr(
          detail::upload_nonempty(std::span<const int64_t>(std::vector<int64_t>(m.row_ptr.begin(), m.row_ptr.end())))),
      col_idx(detail::upload_nonempty(std::span<const int32_t>(m.col_idx))),
      values(detail::upload_nonempty(std::span<const T>(m.values))) {}

template <class T>
CsrMatrix<T> download(const DeviceCsrView<T>& v) {
  DBS_CU(cuCtxSynchronize());  // whichever stream wrote the arrays
  CsrMatrix<T> m;
  m.rows = v.rows;
  m.cols = v.cols;
  m.row_ptr.assign(static_cast<size_t>(v.rows) + 1, 0);
  m.col_idx.resize(static_cast<size_t>(v.nnz));
  m.values.resize(static_cast<size_t>(v.nnz));
  auto from = [](const void* p) { return reinterpret_cast<CUdeviceptr>(p); };
  if (v.row_ptr) DBS_CU(cuMemcpyDtoH(m.row_ptr.data(), from(v.row_ptr), m.row_ptr.size() * sizeof(int32_t)));
  if (v.nnz > 0) {
    DBS_CU(cuMemcpyDtoH(m.col_idx.data(), from(v.col_idx), m.col_idx.size() * sizeof(int32_t)));
    DBS_CU(cuMemcpyDtoH(m.values.data(), from(v.values), m.values.size() * sizeof(T)));
  }
  return m;
}

template struct DeviceCsr<float>;
template struct DeviceCsr<double>;
template struct DeviceCsr64<float>;
template struct DeviceCsr64<double>;
template CsrMatrix<float> download(const DeviceCsrView<float>&);
template CsrMatrix<double> download(const DeviceCsrView<double>&);

}  // namespace dbsparse

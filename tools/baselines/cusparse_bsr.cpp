// csr2bsr is deprecated since CUDA 12.8 but remains the device-side CSR->BSR conversion; the
// warning says nothing new here.
#define DISABLE_CUSPARSE_DEPRECATED
#include "tools/baselines/cusparse_bsr.hpp"
#include "tools/baselines/cusparse_check.hpp"

#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <type_traits>
#include <vector>

namespace dbsparse::tools {
namespace {

template <class T>
BsrFootprint footprint_of(int32_t rows, int32_t cols, int block_dim, int64_t blocks) {
  BsrFootprint f;
  f.block_dim = block_dim;
  f.block_rows = static_cast<int32_t>((static_cast<int64_t>(rows) + block_dim - 1) / block_dim);
  f.block_cols = static_cast<int32_t>((static_cast<int64_t>(cols) + block_dim - 1) / block_dim);
  f.blocks = blocks;
  f.value_count = blocks * block_dim * block_dim;
  f.bytes = (f.block_rows + 1) * 4ll + blocks * 4ll + f.value_count * static_cast<int64_t>(sizeof(T));
  return f;
}

}  // namespace

template <class T>
BsrFootprint bsr_footprint(const CsrMatrix<T>& a, int block_dim) {
  if (block_dim < 2) throw UsageError("BSR block dimension must be at least 2 (bsrmv's limit)");
  const int32_t mb = static_cast<int32_t>((static_cast<int64_t>(a.rows) + block_dim - 1) / block_dim);
  const int32_t nb = static_cast<int32_t>((static_cast<int64_t>(a.cols) + block_dim - 1) / block_dim);
  std::vector<int32_t> last(static_cast<size_t>(nb), -1);  // block row that last touched a block column
  int64_t blocks = 0;
  for (int32_t br = 0; br < mb; ++br) {
    const int32_t r1 = static_cast<int32_t>(std::min<int64_t>(a.rows, (br + 1ll) * block_dim));
    for (int32_t r = br * block_dim; r < r1; ++r)
      for (int32_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
        const int32_t bc = a.col_idx[k] / block_dim;
        if (last[bc] != br) last[bc] = br, ++blocks;
      }
  }
  return footprint_of<T>(a.rows, a.cols, block_dim, blocks);
}

std::string bsr_unavailable_reason(const BsrFootprint& f, int64_t max_bytes) {
  if (f.value_count > INT_MAX)
    return fmt::format("BSR{} would store {} values ({} blocks), past cuSPARSE's 32-bit value indexing", f.block_dim,
                       f.value_count, f.blocks);
  if (f.bytes > max_bytes)
    return fmt::format("BSR{} would need {:.1f} GB, over the {:.1f} GB cap", f.block_dim, f.bytes * 1e-9,
                       max_bytes * 1e-9);
  return {};
}

template <class T>
struct CusparseBsr<T>::State {
  cusparseHandle_t handle = nullptr;
  cusparseMatDescr_t descr = nullptr;  // general, zero-based: describes both the CSR input and BSR
  cudaStream_t stream = nullptr;
  DeviceBuffer<int32_t> row_ptr, col_idx;
  DeviceBuffer<T> values;
  BsrFootprint f;
  // Here rather than in ~CusparseBsr, so a constructor that throws half-way still releases them.
  ~State() {
    if (descr) cusparseDestroyMatDescr(descr);
    if (handle) cusparseDestroy(handle);
  }
};

template <class T>
CusparseBsr<T>::CusparseBsr(const CsrMatrix<T>& a, void* stream, int block_dim, int64_t max_bytes)
    : s_(std::make_unique<State>()) {
  if (block_dim < 2) throw UsageError("BSR block dimension must be at least 2 (bsrmv's limit)");
  if (a.nnz() == 0 || a.rows == 0 || a.cols == 0) throw Error("cuSPARSE BSR: empty matrix");
  auto& s = *s_;
  s.stream = static_cast<cudaStream_t>(stream);
  s.f = footprint_of<T>(a.rows, a.cols, block_dim, 0);
  DBS_SP(cusparseCreate(&s.handle));
  DBS_SP(cusparseSetStream(s.handle, s.stream));
  DBS_SP(cusparseSetPointerMode(s.handle, CUSPARSE_POINTER_MODE_HOST));
  DBS_SP(cusparseCreateMatDescr(&s.descr));
  DBS_SP(cusparseSetMatType(s.descr, CUSPARSE_MATRIX_TYPE_GENERAL));
  DBS_SP(cusparseSetMatIndexBase(s.descr, CUSPARSE_INDEX_BASE_ZERO));

  // The CSR copy lives only for the conversion.
  DeviceBuffer<int32_t> csr_rp{std::span<const int32_t>(a.row_ptr)};
  DeviceBuffer<int32_t> csr_ci{std::span<const int32_t>(a.col_idx)};
  DeviceBuffer<T> csr_v{std::span<const T>(a.values)};
  s.row_ptr = DeviceBuffer<int32_t>(static_cast<size_t>(s.f.block_rows) + 1);
  // The uploads above went through the legacy stream, which a non-blocking stream does not wait for.
  DBS_SP(cudaDeviceSynchronize());
  int nnzb = -1;
  DBS_SP(cusparseXcsr2bsrNnz(s.handle, CUSPARSE_DIRECTION_ROW, a.rows, a.cols, s.descr, csr_rp.data(), csr_ci.data(),
                             block_dim, s.descr, s.row_ptr.data(), &nnzb));
  DBS_SP(cudaStreamSynchronize(s.stream));
  if (nnzb < 0 || nnzb > a.nnz())
    throw Error(fmt::format("cusparseXcsr2bsrNnz returned {} blocks for {} nonzeros", nnzb, a.nnz()));
  s.f = footprint_of<T>(a.rows, a.cols, block_dim, nnzb);
  if (auto why = bsr_unavailable_reason(s.f, max_bytes); !why.empty()) throw Error("cuSPARSE " + why);

  s.col_idx = DeviceBuffer<int32_t>(static_cast<size_t>(nnzb));
  s.values = DeviceBuffer<T>(static_cast<size_t>(s.f.value_count));
  // csr2bsr should write the zeros of partly filled blocks itself; cleared in case it does not.
  DBS_SP(cudaMemsetAsync(s.values.data(), 0, s.values.size() * sizeof(T), s.stream));
  if constexpr (std::is_same_v<T, float>)
    DBS_SP(cusparseScsr2bsr(s.handle, CUSPARSE_DIRECTION_ROW, a.rows, a.cols, s.descr, csr_v.data(), csr_rp.data(),
                            csr_ci.data(), block_dim, s.descr, s.values.data(), s.row_ptr.data(), s.col_idx.data()));
  else
    DBS_SP(cusparseDcsr2bsr(s.handle, CUSPARSE_DIRECTION_ROW, a.rows, a.cols, s.descr, csr_v.data(), csr_rp.data(),
                            csr_ci.data(), block_dim, s.descr, s.values.data(), s.row_ptr.data(), s.col_idx.data()));
  DBS_SP(cudaStreamSynchronize(s.stream));
}

template <class T>
CusparseBsr<T>::~CusparseBsr() = default;

template <class T>
void CusparseBsr<T>::run(uint64_t x, uint64_t y) {
  const auto& s = *s_;
  const T alpha = 1, beta = 0;
  const auto nnzb = static_cast<int>(s.f.blocks);
  if constexpr (std::is_same_v<T, float>)
    DBS_SP(cusparseSbsrmv(s.handle, CUSPARSE_DIRECTION_ROW, CUSPARSE_OPERATION_NON_TRANSPOSE, s.f.block_rows,
                          s.f.block_cols, nnzb, &alpha, s.descr, s.values.data(), s.row_ptr.data(), s.col_idx.data(),
                          s.f.block_dim, reinterpret_cast<const T*>(x), &beta, reinterpret_cast<T*>(y)));
  else
    DBS_SP(cusparseDbsrmv(s.handle, CUSPARSE_DIRECTION_ROW, CUSPARSE_OPERATION_NON_TRANSPOSE, s.f.block_rows,
                          s.f.block_cols, nnzb, &alpha, s.descr, s.values.data(), s.row_ptr.data(), s.col_idx.data(),
                          s.f.block_dim, reinterpret_cast<const T*>(x), &beta, reinterpret_cast<T*>(y)));
}

template <class T>
const BsrFootprint& CusparseBsr<T>::footprint() const {
  return s_->f;
}

template <class T>
std::string CusparseBsr<T>::name() const {
  return fmt::format("cusparse-bsr{}", s_->f.block_dim);
}

template BsrFootprint bsr_footprint(const CsrMatrix<float>&, int);
template BsrFootprint bsr_footprint(const CsrMatrix<double>&, int);
template class CusparseBsr<float>;
template class CusparseBsr<double>;

}  // namespace dbsparse::tools

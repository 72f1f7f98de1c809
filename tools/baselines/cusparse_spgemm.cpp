#include "tools/baselines/cusparse_spgemm.hpp"

#include <algorithm>
#include <type_traits>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <fmt/format.h>

#include "tools/baselines/cusparse_check.hpp"

namespace dbsparse::tools {
namespace {

constexpr auto kOp = CUSPARSE_OPERATION_NON_TRANSPOSE;

// A failed cuSPARSE call with its status kept, so that prepare() can tell running out of memory
// (fall back to ALG3) from anything else (report it).
class CusparseStatusError : public Error {
 public:
  CusparseStatusError(cusparseStatus_t s, const char* call)
      : Error(fmt::format("cuSPARSE call {} failed: {}", call, cusparseGetErrorString(s))), status(s) {}
  cusparseStatus_t status;
};

void sp(cusparseStatus_t s, const char* call) {
  if (s != CUSPARSE_STATUS_SUCCESS) throw CusparseStatusError(s, call);
}
#define DBS_SPGEMM(call) sp(call, #call)

cusparseSpGEMMAlg_t native(CusparseSpgemmAlg a) {
  return a == CusparseSpgemmAlg::Alg3 ? CUSPARSE_SPGEMM_ALG3 : CUSPARSE_SPGEMM_DEFAULT;
}

template <class T>
constexpr cudaDataType value_type() {
  return std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_64F;
}

// The descriptors of one product; host objects, made afresh per sequence as a user's call would.
struct SequenceDescrs {
  cusparseSpGEMMDescr_t spgemm = nullptr;
  cusparseSpMatDescr_t c = nullptr;
  SequenceDescrs() = default;
  SequenceDescrs(const SequenceDescrs&) = delete;
  SequenceDescrs& operator=(const SequenceDescrs&) = delete;
  ~SequenceDescrs() {
    if (c) cusparseDestroySpMat(c);
    if (spgemm) cusparseSpGEMM_destroyDescr(spgemm);
  }
};

}  // namespace

const char* to_string(CusparseSpgemmAlg a) {
  return a == CusparseSpgemmAlg::Alg3 ? "cusparse-alg3" : "cusparse-default";
}

template <class T>
struct CusparseSpgemm<T>::State {
  cusparseHandle_t handle = nullptr;
  bool own_handle = true;  // false: the caller's (CusparseSpgemm from device views)
  cudaStream_t stream = nullptr;
  int32_t rows = 0, cols = 0;
  DeviceBuffer<int32_t> a_ptr, a_col, b_ptr, b_col;
  DeviceBuffer<T> a_val, b_val;
  cusparseSpMatDescr_t a = nullptr, b = nullptr;
  CusparseSpgemmAlg alg = CusparseSpgemmAlg::Default;
  float chunk = 0.2f;
  DeviceAllocation buf1, buf2;
  DeviceBuffer<int32_t> c_ptr, c_col;
  DeviceBuffer<T> c_val;
  int64_t nnz = -1;
  bool ready = false;
  std::string why;

  void release_work() {
    cudaStreamSynchronize(stream);  // nothing of a failed attempt may still use what is freed
    buf1 = {};
    buf2 = {};
    c_ptr = {};
    c_col = {};
    c_val = {};
    nnz = -1;
  }
};

namespace {
// At least one element: cuSPARSE takes no null pointer for an empty matrix's arrays.
template <class U>
DeviceBuffer<U> upload_min1(const std::vector<U>& host) {
  std::vector<U> tmp(host);
  if (tmp.empty()) tmp.push_back(U{});
  return DeviceBuffer<U>(std::span<const U>(tmp));
}
}  // namespace

template <class T>
CusparseSpgemm<T>::CusparseSpgemm(const CsrMatrix<T>& a, const CsrMatrix<T>& b, void* stream)
    : s_(std::make_unique<State>()) {
  if (a.cols != b.rows)
    throw UsageError(fmt::format("CusparseSpgemm: A is {}x{} and B {}x{}; A's columns must be B's rows", a.rows, a.cols,
                                 b.rows, b.cols));
  State& s = *s_;
  s.stream = static_cast<cudaStream_t>(stream);
  s.rows = a.rows;
  s.cols = b.cols;
  s.a_ptr = upload_min1(a.row_ptr);
  s.a_col = upload_min1(a.col_idx);
  s.a_val = upload_min1(a.values);
  s.b_ptr = upload_min1(b.row_ptr);
  s.b_col = upload_min1(b.col_idx);
  s.b_val = upload_min1(b.values);
  DBS_SP(cusparseCreate(&s.handle));
  DBS_SP(cusparseSetStream(s.handle, s.stream));
  constexpr auto vt = value_type<T>();
  DBS_SP(cusparseCreateCsr(&s.a, a.rows, a.cols, a.nnz(), s.a_ptr.data(), s.a_col.data(), s.a_val.data(),
                           CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, vt));
  DBS_SP(cusparseCreateCsr(&s.b, b.rows, b.cols, b.nnz(), s.b_ptr.data(), s.b_col.data(), s.b_val.data(),
                           CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, vt));
}

template <class T>
CusparseSpgemm<T>::CusparseSpgemm(const DeviceCsrView<T>& a, const DeviceCsrView<T>& b, void* stream, void* handle)
    : s_(std::make_unique<State>()) {
  if (a.cols != b.rows)
    throw UsageError(fmt::format("CusparseSpgemm: A is {}x{} and B {}x{}; A's columns must be B's rows", a.rows, a.cols,
                                 b.rows, b.cols));
  State& s = *s_;
  s.stream = static_cast<cudaStream_t>(stream);
  s.rows = a.rows;
  s.cols = b.cols;
  if (handle) {
    s.handle = static_cast<cusparseHandle_t>(handle);
    s.own_handle = false;
  } else {
    DBS_SP(cusparseCreate(&s.handle));
  }
  DBS_SP(cusparseSetStream(s.handle, s.stream));
  // cuSPARSE takes no null pointer for an empty matrix's arrays (upload_min1 above): a view's
  // empty arrays, which may be null, get a one-element stand-in of this object's.
  auto nonnull = [](const void* p, DeviceBuffer<int32_t>& stand_in) -> void* {
    if (p) return const_cast<void*>(p);
    if (stand_in.size() == 0) stand_in = DeviceBuffer<int32_t>(2);
    return stand_in.data();
  };
  constexpr auto vt = value_type<T>();
  DBS_SP(cusparseCreateCsr(&s.a, a.rows, a.cols, a.nnz, nonnull(a.row_ptr, s.a_ptr), nonnull(a.col_idx, s.a_col),
                           nonnull(a.values, s.a_ptr), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                           vt));
  DBS_SP(cusparseCreateCsr(&s.b, b.rows, b.cols, b.nnz, nonnull(b.row_ptr, s.b_ptr), nonnull(b.col_idx, s.b_col),
                           nonnull(b.values, s.b_ptr), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                           vt));
}

template <class T>
CusparseSpgemm<T>::~CusparseSpgemm() {
  if (!s_) return;
  if (s_->stream) cudaStreamSynchronize(s_->stream);
  if (s_->a) cusparseDestroySpMat(s_->a);
  if (s_->b) cusparseDestroySpMat(s_->b);
  if (s_->handle && s_->own_handle) cusparseDestroy(s_->handle);
}

template <class T>
void CusparseSpgemm<T>::forget_stream() {
  if (s_) s_->stream = nullptr;
}

template <class T>
void CusparseSpgemm<T>::sequence(bool first) {
  State& s = *s_;
  const auto alg = native(s.alg);
  constexpr auto vt = value_type<T>();
  const T alpha = 1, beta = 0;
  SequenceDescrs d;
  DBS_SPGEMM(cusparseSpGEMM_createDescr(&d.spgemm));
  DBS_SPGEMM(cusparseCreateCsr(&d.c, s.rows, s.cols, 0, nullptr, nullptr, nullptr, CUSPARSE_INDEX_32I,
                               CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, vt));
  // The first sequence grows a buffer to what a query asks for; a rerun must find it large enough.
  auto need = [&](DeviceAllocation& buf, size_t bytes, const char* what) -> void* {
    if (bytes > buf.bytes()) {
      if (!first)
        throw Error(fmt::format("cuSPARSE SpGEMM asked for {} bytes of {} on a rerun, more than the {} of the first",
                                bytes, what, buf.bytes()));
      DBS_SP(cudaStreamSynchronize(s.stream));  // the old memory may still be in use on the stream
      buf = DeviceAllocation(std::max<size_t>(bytes, 16));
    }
    return reinterpret_cast<void*>(buf.ptr());
  };
  size_t b1 = 0;
  DBS_SPGEMM(
      cusparseSpGEMM_workEstimation(s.handle, kOp, kOp, &alpha, s.a, s.b, &beta, d.c, vt, alg, d.spgemm, &b1, nullptr));
  void* p1 = need(s.buf1, b1, "buffer 1");
  DBS_SPGEMM(
      cusparseSpGEMM_workEstimation(s.handle, kOp, kOp, &alpha, s.a, s.b, &beta, d.c, vt, alg, d.spgemm, &b1, p1));
  size_t b2 = 0;
  if (s.alg == CusparseSpgemmAlg::Alg3) {
    // Buffer 3 is needed only by estimateMemory (cuSPARSE's sample frees it right after), so it
    // lives in buffer 2's memory: compute, which uses buffer 2, runs after it in stream order.
    size_t b3 = 0;
    DBS_SPGEMM(cusparseSpGEMM_estimateMemory(s.handle, kOp, kOp, &alpha, s.a, s.b, &beta, d.c, vt, alg, d.spgemm,
                                             s.chunk, &b3, nullptr, nullptr));
    void* p3 = need(s.buf2, b3, "buffer 3");
    DBS_SPGEMM(cusparseSpGEMM_estimateMemory(s.handle, kOp, kOp, &alpha, s.a, s.b, &beta, d.c, vt, alg, d.spgemm,
                                             s.chunk, &b3, p3, &b2));
    void* p2 = need(s.buf2, b2, "buffer 2");
    DBS_SPGEMM(cusparseSpGEMM_compute(s.handle, kOp, kOp, &alpha, s.a, s.b, &beta, d.c, vt, alg, d.spgemm, &b2, p2));
  } else {
    DBS_SPGEMM(
        cusparseSpGEMM_compute(s.handle, kOp, kOp, &alpha, s.a, s.b, &beta, d.c, vt, alg, d.spgemm, &b2, nullptr));
    void* p2 = need(s.buf2, b2, "buffer 2");
    DBS_SPGEMM(cusparseSpGEMM_compute(s.handle, kOp, kOp, &alpha, s.a, s.b, &beta, d.c, vt, alg, d.spgemm, &b2, p2));
  }
  int64_t c_rows = 0, c_cols = 0, c_nnz = 0;
  DBS_SPGEMM(cusparseSpMatGetSize(d.c, &c_rows, &c_cols, &c_nnz));
  if (first) {
    s.nnz = c_nnz;
    s.c_ptr = DeviceBuffer<int32_t>(static_cast<size_t>(s.rows) + 1);
    s.c_col = DeviceBuffer<int32_t>(static_cast<size_t>(std::max<int64_t>(c_nnz, 1)));
    s.c_val = DeviceBuffer<T>(static_cast<size_t>(std::max<int64_t>(c_nnz, 1)));
  } else if (c_nnz != s.nnz) {
    throw Error(fmt::format("cuSPARSE SpGEMM found nnz(C) = {} on a rerun, {} the first time", c_nnz, s.nnz));
  }
  DBS_SPGEMM(cusparseCsrSetPointers(d.c, s.c_ptr.data(), s.c_col.data(), s.c_val.data()));
  DBS_SPGEMM(cusparseSpGEMM_copy(s.handle, kOp, kOp, &alpha, s.a, s.b, &beta, d.c, vt, alg, d.spgemm));
  DBS_SP(cudaStreamSynchronize(s.stream));
}

template <class T>
bool CusparseSpgemm<T>::prepare(float chunk_fraction) {
  State& s = *s_;
  s.chunk = chunk_fraction;
  s.ready = false;
  s.why.clear();
  for (CusparseSpgemmAlg alg : {CusparseSpgemmAlg::Default, CusparseSpgemmAlg::Alg3}) {
    s.alg = alg;
    s.release_work();
    bool out_of_memory = false;
    std::string what;
    try {
      sequence(true);
      s.ready = true;
      return true;
    } catch (const CusparseStatusError& e) {
      out_of_memory = e.status == CUSPARSE_STATUS_INSUFFICIENT_RESOURCES || e.status == CUSPARSE_STATUS_ALLOC_FAILED;
      what = e.what();
    } catch (const CudaError& e) {
      out_of_memory = e.result() == CUDA_ERROR_OUT_OF_MEMORY;
      what = e.what();
    } catch (const Error& e) {
      what = e.what();
    }
    s.why += fmt::format("{}{}: {}", s.why.empty() ? "" : "; ", to_string(alg), what);
    s.release_work();
    if (!out_of_memory) break;  // only a lack of memory is what ALG3 is for
  }
  return false;
}

template <class T>
void CusparseSpgemm<T>::run() {
  if (!s_->ready) throw Error("CusparseSpgemm::run: prepare() did not succeed");
  sequence(false);
}

template <class T>
CusparseSpgemmAlg CusparseSpgemm<T>::alg() const {
  return s_->alg;
}
template <class T>
const std::string& CusparseSpgemm<T>::why() const {
  return s_->why;
}
template <class T>
int64_t CusparseSpgemm<T>::nnz() const {
  return s_->ready ? s_->nnz : -1;
}

template <class T>
int64_t CusparseSpgemm<T>::input_bytes() const {
  const State& s = *s_;
  return static_cast<int64_t>((s.a_ptr.size() + s.a_col.size() + s.b_ptr.size() + s.b_col.size()) * 4 +
                              (s.a_val.size() + s.b_val.size()) * sizeof(T));
}
template <class T>
int64_t CusparseSpgemm<T>::buffer_bytes() const {
  return static_cast<int64_t>(s_->buf1.bytes() + s_->buf2.bytes());
}
template <class T>
int64_t CusparseSpgemm<T>::c_bytes() const {
  const State& s = *s_;
  return static_cast<int64_t>((s.c_ptr.size() + s.c_col.size()) * 4 + s.c_val.size() * sizeof(T));
}

template <class T>
CsrMatrix<T> CusparseSpgemm<T>::download() const {
  const State& s = *s_;
  if (!s.ready) throw Error("CusparseSpgemm::download: prepare() did not succeed");
  DBS_SP(cudaStreamSynchronize(s.stream));
  CsrMatrix<T> c;
  c.rows = s.rows;
  c.cols = s.cols;
  c.row_ptr = s.c_ptr.download();
  c.col_idx = s.c_col.download();
  c.values = s.c_val.download();
  c.col_idx.resize(static_cast<size_t>(s.nnz));
  c.values.resize(static_cast<size_t>(s.nnz));
  return c;
}

template <class T>
DeviceCsrView<T> CusparseSpgemm<T>::result() const {
  const State& s = *s_;
  if (!s.ready) throw Error("CusparseSpgemm::result: prepare() did not succeed");
  return {s.rows, s.cols, s.nnz, s.c_ptr.data(), s.c_col.data(), s.c_val.data()};
}

template class CusparseSpgemm<float>;
template class CusparseSpgemm<double>;

}  // namespace dbsparse::tools

#pragma once
// cuSPARSE's SpGEMM as a baseline: C = A·B with A, B and C in CSR (int32 indices, f32 or f64), the
// generic API's whole sequence a user runs for one fresh product (work estimation, compute, C's
// size, copy into C). CUSPARSE_SPGEMM_DEFAULT first; when it runs out of memory (cuSPARSE's
// INSUFFICIENT_RESOURCES or ALLOC_FAILED, or a buffer that cannot be allocated) CUSPARSE_SPGEMM_ALG3,
// which bounds its buffer by taking the products in chunks (estimateMemory with a chunk fraction).
//
// prepare() runs the sequence once, untimed, and keeps every buffer and C at the sizes it found;
// run() then repeats the sequence with those buffers, so a timed run() holds no allocation: what it
// includes is the descriptors (host only), the size queries (calls with null buffers), the calls
// themselves, and the host synchronisation inside compute that reads nnz(C) back.
#include <cstdint>
#include <memory>
#include <string>

#include "dbsparse/context.hpp"
#include "dbsparse/device_csr.hpp"
#include "dbsparse/matrix.hpp"

namespace dbsparse::tools {

enum class CusparseSpgemmAlg { Default, Alg3 };
const char* to_string(CusparseSpgemmAlg a);  // "cusparse-default", "cusparse-alg3"

template <class T>
class CusparseSpgemm {
 public:
  // Uploads its own copies of A and B (a user's inputs would already be on the device). UsageError
  // when A's columns are not B's rows.
  CusparseSpgemm(const CsrMatrix<T>& a, const CsrMatrix<T>& b, void* stream);
  // A and B already on the device, read in place (not copied: they must outlive this object and
  // its C's use), as in a pipeline whose products feed each other. `handle` is a cusparseHandle_t
  // the caller made and keeps (its stream set to `stream` here), so that a pipeline pays for one
  // cusparseCreate, not one per product; null: a handle of this object's own.
  CusparseSpgemm(const DeviceCsrView<T>& a, const DeviceCsrView<T>& b, void* stream, void* handle = nullptr);
  ~CusparseSpgemm();
  CusparseSpgemm(const CusparseSpgemm&) = delete;
  CusparseSpgemm& operator=(const CusparseSpgemm&) = delete;

  // The first product: DEFAULT, else (out of memory) ALG3 with `chunk_fraction`. False when
  // neither ran; why() then says what each reported. Waits for the stream.
  bool prepare(float chunk_fraction = 0.2f);
  // The product again with prepare()'s buffers and C (Error if prepare() did not succeed, or if a
  // size query asks for more than prepare() found). Waits for the stream.
  void run();

  CusparseSpgemmAlg alg() const;
  const std::string& why() const;  // DEFAULT's failure when ALG3 ran; both when neither did; else empty
  int64_t nnz() const;             // -1 before a successful prepare()
  // Device bytes allocated here: A and B; work buffers (buffer 1, and buffer 2, whose memory ALG3
  // first lends to estimateMemory's buffer 3); C.
  int64_t input_bytes() const;
  int64_t buffer_bytes() const;
  int64_t c_bytes() const;
  // C as cuSPARSE left it (rows in order; columns within a row as cuSPARSE wrote them).
  CsrMatrix<T> download() const;
  // C on the device, owned by this object (Error before a successful prepare()); columns within a
  // row as cuSPARSE wrote them. Writable: a pipeline may work on C in place.
  DeviceCsrView<T> result() const;
  // The stream it ran on is gone, its owner having waited for it: the destructor must not
  // synchronise it (cusparse_mcl: mcl()'s stream dies before the last Q).
  void forget_stream();

 private:
  struct State;
  std::unique_ptr<State> s_;
  void sequence(bool first);
};

}  // namespace dbsparse::tools

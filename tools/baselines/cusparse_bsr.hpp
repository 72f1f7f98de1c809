#pragma once
// cuSPARSE's BSR SpMV (legacy bsrmv) as a baseline, with 16×16 blocks as the DB-SpMSpV paper uses.
// A is converted once on the device (csr2bsr); the timed call is cusparse{S,D}bsrmv alone.
// BSR pads every touched block to block_dim² values, which on scattered matrices outgrows both
// memory and cuSPARSE's 32-bit indexing: callers ask bsr_unavailable_reason() first.
#include <cstdint>
#include <memory>
#include <string>

#include "dbsparse/context.hpp"
#include "dbsparse/matrix.hpp"

namespace dbsparse::tools {

constexpr int64_t kBsrMaxBytes = 40'000'000'000;

struct BsrFootprint {
  int32_t block_dim = 16;
  int32_t block_rows = 0, block_cols = 0;
  int64_t blocks = 0;       // non-empty block_dim × block_dim blocks
  int64_t value_count = 0;  // blocks × block_dim²
  int64_t bytes = 0;        // row pointers + block column indices + values
};

// Counted on the host, so a matrix BSR cannot hold is refused before any device work.
template <class T>
BsrFootprint bsr_footprint(const CsrMatrix<T>& a, int block_dim);

// Empty when cuSPARSE's BSR can hold it; otherwise why not.
std::string bsr_unavailable_reason(const BsrFootprint& f, int64_t max_bytes = kBsrMaxBytes);

template <class T>
class CusparseBsr {
 public:
  // Converts on the caller's stream and synchronises. Throws Error naming the cuSPARSE call that
  // failed, or the limit (see bsr_unavailable_reason) that cuSPARSE's own block count breaks.
  CusparseBsr(const CsrMatrix<T>& a, void* stream, int block_dim = 16, int64_t max_bytes = kBsrMaxBytes);
  ~CusparseBsr();
  CusparseBsr(const CusparseBsr&) = delete;
  CusparseBsr& operator=(const CusparseBsr&) = delete;

  // y = A*x on the construction stream. bsrmv reads block_cols*block_dim entries of x and writes
  // block_rows*block_dim entries of y: both buffers must be padded to those lengths (x with zeros).
  void run(uint64_t x, uint64_t y);

  const BsrFootprint& footprint() const;
  std::string name() const;  // "cusparse-bsr16"

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace dbsparse::tools

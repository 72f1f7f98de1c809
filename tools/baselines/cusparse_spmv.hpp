#pragma once
// cuSPARSE's CSR SpMV as a baseline: called from C++ on the caller's stream, with every buffer
// allocated and preprocessed ahead, so the timed loop measures cusparseSpMV alone.
#include <memory>
#include <string>
#include <vector>

#include "dbsparse/context.hpp"
#include "dbsparse/matrix.hpp"

namespace dbsparse::tools {

enum class CusparseSpmvAlg { CsrAlg1, CsrAlg2 };
const char* to_string(CusparseSpmvAlg a);

template <class T>
class CusparseSpmv {
 public:
  // Uploads its own copy of A (cuSPARSE's descriptors point at it) and prepares both algorithms.
  CusparseSpmv(const CsrMatrix<T>& a, void* stream);
  ~CusparseSpmv();
  CusparseSpmv(const CusparseSpmv&) = delete;
  CusparseSpmv& operator=(const CusparseSpmv&) = delete;

  // y = A*x on the stream given at construction; x and y are device pointers.
  void run(CusparseSpmvAlg alg, uint64_t x, uint64_t y);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace dbsparse::tools

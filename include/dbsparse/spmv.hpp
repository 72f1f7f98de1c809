#pragma once
// SpMV, y = alpha*A*x + beta*y, with A in CSR. Plan once, run many times.
#include <cstdint>
#include <string>

#include "dbsparse/context.hpp"
#include "dbsparse/plan_info.hpp"
#include "dbsparse/tuning_db.hpp"

namespace dbsparse {

template <class T>
class SpmvPlan {
 public:
  // No allocation, no compilation, no host synchronisation: safe to capture in a CUDA graph.
  // x has cols() elements, y rows(). beta == 0 never reads y.
  void run(const DeviceBuffer<T>& x, DeviceBuffer<T>& y, const Stream& stream, T alpha = T(1),
           T beta = T(0)) const;
  // Raw device pointers and a CUstream/cudaStream_t, for callers that own their memory.
  void run(uint64_t x, uint64_t y, void* stream, T alpha = T(1), T beta = T(0)) const;

  int32_t rows() const { return rows_; }
  int32_t cols() const { return cols_; }
  int64_t nnz() const { return nnz_; }
  const Config& config() const { return config_; }
  ConfigSource config_source() const { return config_.source; }
  const KernelInfo& kernel() const { return kernel_; }
  const std::string& matrix_fingerprint() const { return matrix_fp_; }
  // Multi-line: the kernel key, where its config came from, and what the JIT cost.
  std::string explain() const;

 private:
  friend class Context;
  SpmvPlan() = default;

  int32_t rows_ = 0, cols_ = 0;
  int64_t nnz_ = 0;
  DeviceBuffer<int32_t> row_ptr_, col_idx_;
  DeviceBuffer<T> values_;
  void* fn_ = nullptr;  // CUfunction
  unsigned grid_ = 0, block_ = 0;
  Config config_;
  KernelInfo kernel_;
  std::string matrix_fp_;
};

}  // namespace dbsparse

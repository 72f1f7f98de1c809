#pragma once
// SpMV, y = alpha*A*x + beta*y, with A in CSR. Plan once, run many times.
#include <cstdint>
#include <string>
#include <vector>

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
  const KernelInfo& kernel() const { return kernels_.front(); }  // the first launch's kernel
  const std::vector<KernelInfo>& kernels() const { return kernels_; }  // every launch, in order
  // Launches per run (1 for a single-strategy plan; one per non-empty bin, +1 for long rows).
  size_t launches() const { return launches_.size(); }
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
  // What run() enqueues, fixed at plan time.
  enum class LaunchKind { Rows, LongPartial, LongFinalize, Classified };
  struct Launch {
    void* fn = nullptr;  // CUfunction
    LaunchKind kind = LaunchKind::Rows;
    unsigned grid = 0, block = 0;
    int32_t count = 0;      // rows (Rows, LongFinalize) or chunks (LongPartial)
    uint64_t row_list = 0;  // device pointer; 0: rows 0 .. count-1
  };
  std::vector<Launch> launches_;
  DeviceBuffer<int32_t> row_lists_;              // classified: the bins' rows, bin after bin
  DeviceBuffer<int32_t> long_rows_, chunk_ptr_;  // long-row split: its rows and their chunks
  DeviceBuffer<int32_t> chunks_;                 // {row, first, end, long-row slot} per chunk
  DeviceBuffer<T> partial_;                      // one partial sum per chunk
  DeviceBuffer<uint32_t> arrivals_;              // one-launch classified: chunks arrived per long row
  std::vector<int32_t> fused_;                   // its list offsets, counts and grid ends (one per bin each)
  std::string layout_text_;
  Config config_;
  std::vector<KernelInfo> kernels_;  // never empty once planned
  std::string matrix_fp_;
};

}  // namespace dbsparse

#pragma once
// Hash SpGEMM's analysis and C's sizing on the GPU, for SpgemmPlan (runtime/spgemm/spgemm_plan.cpp): the
// launches of templates/spgemm/spgemm_analysis.cuh, the buffers they fill and the two small read-backs
// (the groups after the analysis, nnz(C) after the symbolic phase). Internal to the runtime.
#include <cuda.h>

#include <array>
#include <cstdint>
#include <vector>

#include "dbsparse/abi/spgemm.h"
#include "dbsparse/context.hpp"
#include "dbsparse/spgemm.hpp"
#include "runtime/spgemm/spgemm_plan_spec.hpp"  // spgemm_group_rule

namespace dbsparse::detail {

// A and B as the analysis reads them: device pointers, shapes and nonzero counts.
struct SpgemmOperands {
  uint64_t a_ptr = 0, a_col = 0, b_ptr = 0, b_col = 0;
  int32_t rows = 0, a_cols = 0, b_cols = 0;
  int64_t a_nnz = 0, b_nnz = 0;
};

// Row pointers (rows + 1) from `rows` lengths on stream h by the analysis module's scan, for its
// other users (contraction's factors); not waited for. Its scratch comes from ctx's pool on h and
// goes back in h's order. The lengths must sum to at most 2^31-1.
void scan_lengths(Context& ctx, uint64_t row_len, int32_t rows, uint64_t out_ptr, CUstream h);

class SpgemmGpuAnalysis {
 public:
  SpgemmGpuAnalysis() = default;
  // Phases 1-2 up to the counts, on stream h: codes and counts, one wait for h and the counts read
  // back (UsageError for a bad row_ptr end or a column out of range, naming the row); the lists
  // are allocated, not yet filled. A without nonzeros launches nothing.
  SpgemmGpuAnalysis(Context& ctx, const SpgemmOperands& ops, const SpgemmConfig& c, CUstream h);
  // The lists and the global tables' places filled on stream h, once (later calls do nothing), not
  // waited for. The plan calls it in its first run, on the run's stream: a stream the user may
  // have made non-blocking, which would not wait for work queued at planning on another.
  void place_rows(CUstream h);
  bool placed() const { return placed_; }

  const abi::SpgemmStats& stats() const { return stats_; }
  int64_t count(int group) const { return stats_.rows[group]; }
  int64_t products() const;
  // Group g's rows on the device (groups 0-2; null when empty), and the global list: group 3's
  // rows, then those that may overflow, with their tables (abi::SpgemmTable each).
  uint64_t group_list(int group) const;
  int32_t global_rows() const { return stats_.rows[abi::kSpgemmGlobalGroup] + stats_.may_overflow; }
  uint64_t global_list() const { return global_list_.ptr(); }
  uint64_t tables() const { return tables_.ptr(); }
  // The global list's tables, read back (after place_rows, the stream waited for) and rewritten
  // (the plan lays them out again in chunks; synchronous).
  std::vector<abi::SpgemmTable> download_tables() const { return tables_.download(); }
  void upload_tables(const std::vector<abi::SpgemmTable>& t) { tables_.upload(t); }
  int64_t global_slots() const { return stats_.global_slots; }

  // Phase 4 on stream h, after the symbolic phase: C's row_ptr into c_ptr (rows + 1) from the
  // row lengths, then one wait for h and nnz(C) and the overflowed rows read back. UsageError
  // (check_nnz_fits's, naming the row) when nnz(C) passes 2^31-1. Without products it only zeroes
  // c_ptr, and does not wait.
  int64_t size_c(uint64_t row_len, uint64_t overflow, uint64_t c_ptr, CUstream h);
  // A one-pass first run (no symbolic phase), on stream h: each row's offset by IP into ip_ptr
  // (rows + 1; overflow zeroed, as size_c reads it), not waited for; products() <= 2^31-1.
  void ip_offsets(uint64_t overflow, uint64_t ip_ptr, CUstream h);
  // Then, after size_c: the rows moved from their IP offsets in the scratch arrays into C.
  void compact(uint64_t ip_ptr, uint64_t c_ptr, uint64_t from_col, uint64_t from_val, uint64_t c_col, uint64_t c_val,
               int val_bytes, CUstream h);

  // Each group's rows downloaded and sorted (for SpgemmPlan::grouping()).
  SpgemmGrouping grouping() const;
  int64_t device_bytes() const;

 private:
  void read_stats(CUstream h);
  void check_inputs(const SpgemmOperands& ops) const;

  int32_t rows_ = 0;
  bool placed_ = false;
  SpgemmOperands ops_;
  abi::SpgemmGroupRule rule_{};
  CUfunction analyse_ = nullptr, scatter_ = nullptr, tile_sums_ = nullptr, scan_tiles_ = nullptr, row_ptr_ = nullptr,
             compact_ = nullptr;
  void scan_rows(uint64_t row_len, uint64_t overflow, uint64_t out_ptr, CUstream h);
  abi::SpgemmStats stats_{};
  DeviceBuffer<abi::SpgemmStats> stats_dev_;
  DeviceBuffer<int8_t> code_;              // per row of A
  DeviceBuffer<int32_t> ip_row_;           // per row of A: its IP (capped at 2^31-1)
  DeviceBuffer<int32_t> lists_;            // groups 0, 1, 2 one after the other
  DeviceBuffer<int32_t> global_list_;      // group 3, then the rows that may overflow
  DeviceBuffer<abi::SpgemmTable> tables_;  // per position of the global list
  DeviceBuffer<int64_t> tile_sum_;         // per scan tile
};

}  // namespace dbsparse::detail

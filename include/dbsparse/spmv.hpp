#pragma once
// SpMV, y = alpha*A*x + beta*y, with A in CSR. Plan once, run many times.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "dbsparse/context.hpp"
#include "dbsparse/op_config.hpp"
#include "dbsparse/plan_info.hpp"
#include "dbsparse/tuning_db.hpp"

namespace dbsparse {

// SpMV's config: the strategy and the row-length cutoffs between strategies. What each default
// does: runtime/spmv/spmv_strategy.hpp; the measurements behind them: docs/decisions/spmv-defaults.md.
struct SpmvConfig {
  static constexpr const char* kOp = "spmv";
  static constexpr bool kBlockFeatures = false;

  std::string strategy = "classified";
  int lanes = 0;  // strategy "vector": lanes per row; 0 picks them from the mean row length
  int block_size = 256;
  int lane_entries_f32 = 8, lane_entries_f64 = 4;
  // The longest row one thread serves alone (the scalar bin, and uniform's scalar cutoff); longer
  // rows take the vector bins. 0: the precision's lane_entries on a matrix of at least
  // scalar_min_rows rows, 2 on a smaller one: there one thread a row leaves most of the device idle
  // while each row's entries form one dependent chain, so rows past 2 entries gain from a second lane.
  int scalar_max_len = 0;
  int64_t scalar_min_rows = 524288;
  int v1_lanes = 2, v2_lanes = 4, v3_lanes = 8, v4_lanes = 32;
  int64_t block_max_len = 4096;
  int64_t longrow_chunk = 2048;
  double fold_share = 0.02;
  int fuse_bins = 1;
  // classified, one launch: rows of length <= window_max_len (rounded down to a bin's bound) run
  // in memory order, 32 rows a warp, not from their bins' lists; 0 leaves every row in its bin.
  // Off by default until a benchmark on the GPU shows where it wins.
  int window_max_len = 0;
  // classified, a small matrix: where no row is longer than the widest vector bin holds (v4_lanes
  // x the larger lane_entries) and the rows at 2 lanes each fit in the device's resident threads
  // (fill_threads; -1: SMs x resident threads per SM), one vector kernel runs every row, with the
  // most lanes a row that still fit (at most 32, at most the longest row's length). Such a matrix
  // is latency-bound: a wider row shortens each row's chain of dependent steps, and no row list
  // puts a dependent load before the row's offsets. 0: off.
  int64_t fill_threads = -1;
  // degree: A's columns renumbered by decreasing count at plan time and x gathered into that order
  // each call (one more launch, n reads and writes): the x entries the rows read most share cache
  // lines. For scattered power-law graphs; A, x and y stay as the user gave them.
  // auto: degree where A's columns are skewed enough for hubs to share lines (the
  // reorder_hub_columns most frequent columns hold >= reorder_min_hub_share of the entries), x is
  // past L1 (cols >= reorder_min_cols) and A has >= 4 entries a column (the gather's bytes); else
  // none. auto is the default: it takes degree on scrambled power-law graphs, where it wins, and
  // leaves matrices with uniform columns as they are.
  std::string reorder = "auto";
  int64_t reorder_hub_columns = 4096;
  double reorder_min_hub_share = 0.2;
  int64_t reorder_min_cols = 262144;

  template <class V>
  void visit(V& v) {
    v.choice("strategy", strategy, {"classified", "uniform", "scalar", "vector", "block", "longrow"},
             "classified: rows binned by length, every bin in one launch; uniform: one strategy from the mean "
             "row length; or one strategy forced");
    v.integer("lanes", lanes, 0, 32, "strategy vector: lanes per row (0: from the mean row length)");
    v.integer("block_size", block_size, 32, 1024, "threads per block of every SpMV kernel");
    v.integer("lane_entries_f32", lane_entries_f32, 1, 1024, "f32: entries per lane before a wider lane group");
    v.integer("lane_entries_f64", lane_entries_f64, 1, 1024, "f64: entries per lane before a wider lane group");
    v.integer("scalar_max_len", scalar_max_len, 0, 1024,
              "longest row for one thread (scalar bin, uniform's scalar cutoff); 0: lane_entries, or 2 on a matrix "
              "of fewer than scalar_min_rows rows");
    v.integer("scalar_min_rows", scalar_min_rows, 0, INT32_MAX,
              "scalar_max_len 0: the fewest rows for lane_entries as the scalar bound (fewer: 2); 0: always "
              "lane_entries");
    v.integer("v1_lanes", v1_lanes, 2, 32, "lanes of the narrowest vector bin");
    v.integer("v2_lanes", v2_lanes, 2, 32, "lanes of the second vector bin");
    v.integer("v3_lanes", v3_lanes, 2, 32, "lanes of the third vector bin");
    v.integer("v4_lanes", v4_lanes, 2, 32, "lanes of the widest vector bin");
    v.integer("block_max_len", block_max_len, 1, INT32_MAX, "longest row served by one block per row");
    v.integer("longrow_chunk", longrow_chunk, 256, int64_t{1} << 30, "entries per block of a split long row");
    v.number("fold_share", fold_share, 0.0, 1.0, "bins under this share of the nonzeros join the next wider one");
    v.integer("fuse_bins", fuse_bins, 0, 1, "1: every classified bin in one launch; 0: one launch per bin");
    v.integer("fill_threads", fill_threads, -1, INT32_MAX,
              "classified, a small matrix (no row past the widest vector bin, rows x 2 <= this many threads; -1: the "
              "device's resident threads, 0: off): one vector kernel, as many lanes a row as fit");
    v.integer(
        "window_max_len", window_max_len, 0, 1024,
        "classified, one launch: rows up to this length (down to a bin's bound) in memory order, 32 a warp; 0: off");
    v.choice("reorder", reorder, {"none", "degree", "auto"},
             "none; degree: A's columns by decreasing count, x gathered into that order each call (x, A and y as "
             "given); auto: degree where the hub columns' share and x's length pass the two thresholds below");
    v.integer("reorder_hub_columns", reorder_hub_columns, 1, INT32_MAX,
              "reorder auto: how many of the most frequent columns count as hubs");
    v.number("reorder_min_hub_share", reorder_min_hub_share, 0.0, 1.0,
             "reorder auto: the hubs' least share of A's entries for degree");
    v.integer("reorder_min_cols", reorder_min_cols, 0, INT32_MAX,
              "reorder auto: the fewest columns (x's length) for degree");
  }
  // Rules between fields: block size a multiple of 32, lanes powers of two that grow from bin to
  // bin, and block_max_len past the widest vector bin. UsageError naming the keys.
  void check() const;
  int lane_entries(bool f64) const { return f64 ? lane_entries_f64 : lane_entries_f32; }
  // The scalar bound a matrix of `rows` rows takes (scalar_max_len, or its default by size).
  int scalar_max(bool f64, int64_t rows) const {
    if (scalar_max_len > 0) return scalar_max_len;
    return scalar_min_rows > 0 && rows < scalar_min_rows ? std::min(2, lane_entries(f64)) : lane_entries(f64);
  }
};

// What a caller may set on a plan beside its matrix. The tuning DB (or the defaults) gives the
// config unless `config` does; reorder, when not empty, then replaces that config's reorder
// ("none", "degree" or "auto") and keeps the rest of it, so a caller who cannot share a plan's
// x copy between streams (shares_call_state) turns the column order off without losing the tuning.
struct SpmvOptions {
  const Config* config = nullptr;
  std::string reorder;
};

// The config a plan with these options takes, from the one looked up (or options.config): the
// pure part of SpmvPlan::build(ctx, a, options). UsageError naming `reorder` for a value it does not know.
Config apply_spmv_options(Config looked_up, const SpmvOptions& options);

namespace detail {
struct SpmvPlanBuilder;
}  // namespace detail

template <class T>
class SpmvPlan {
 public:
  // Analysis, upload, config look-up and JIT happen here, once; run() is the hot path. The context
  // must outlive the plan. plan_spmv(ctx, a, ...) is the same call.
  static SpmvPlan build(Context& ctx, const CsrMatrix<T>& a);
  // With a given config instead of the database's: for the tuner and for ablations.
  static SpmvPlan build(Context& ctx, const CsrMatrix<T>& a, const Config& config);
  // With options: the DB's config with the caller's reorder, or options.config (see SpmvOptions).
  static SpmvPlan build(Context& ctx, const CsrMatrix<T>& a, const SpmvOptions& options);
  // A matrix already on the device with 64-bit row offsets, as large as the GPU holds (nnz past
  // 2^31): one kernel for every row (the config's strategy; classified takes the uniform choice,
  // longrow and reorder are refused), reading the caller's arrays, which must outlive the plan.
  // config null: SpmvConfig's defaults (a device view is not fingerprinted for the tuning DB).
  static SpmvPlan build(Context& ctx, const DeviceCsrView64<T>& a, const Config* config = nullptr);

  // No allocation, no compilation, no host synchronisation: safe to capture in a CUDA graph.
  // Several streams: calls on one plan may run concurrently when shares_call_state() is false
  // (every run only reads the plan). A plan with split long rows keeps per-call partial sums and
  // arrival counters on the device, and a plan in a column order (reorder degree) its copy of x;
  // their calls must be ordered (one stream, or streams joined by events): give each concurrent
  // stream its own plan.
  // x has cols() elements, y rows(). beta == 0 never reads y.
  void run(const DeviceBuffer<T>& x, DeviceBuffer<T>& y, const Stream& stream, T alpha = T(1), T beta = T(0)) const;
  // Raw device pointers and a CUstream/cudaStream_t, for callers that own their memory.
  void run(uint64_t x, uint64_t y, void* stream, T alpha = T(1), T beta = T(0)) const;

  int32_t rows() const { return rows_; }
  int32_t cols() const { return cols_; }
  int64_t nnz() const { return nnz_; }
  const Config& config() const { return config_; }  // where it came from; params complete
  const SpmvConfig& typed_config() const { return typed_; }
  ConfigSource config_source() const { return config_.source; }
  const KernelInfo& kernel() const { return kernels_.front(); }        // the first launch's kernel
  const std::vector<KernelInfo>& kernels() const { return kernels_; }  // every launch, in order
  // Launches per run (1 for a single-strategy plan; one per non-empty bin, +1 for long rows).
  size_t launches() const { return launches_.size(); }
  const std::string& matrix_fingerprint() const { return matrix_fp_; }
  // A's columns in degree order (reorder degree, or auto's choice): x is gathered each call.
  bool columns_reordered() const { return x_order_.size() > 0; }
  // Host time the plan spent on the column order, ms: auto's feature (a pass over A's entries,
  // past reorder_min_cols) and the order where taken; 0 where neither ran.
  double reorder_ms() const { return reorder_ms_; }
  // True when runs write plan-owned device state (long-row partials): see run().
  bool shares_call_state() const { return partial_.size() > 0 || x_order_.size() > 0; }
  // Multi-line: the kernel key, where its config came from, and what the JIT cost.
  std::string explain() const;

 private:
  static SpmvPlan build_impl(Context& ctx, const CsrMatrix<T>& a, const Config& config, std::string fingerprint);
  friend struct detail::SpmvPlanBuilder;  // runtime/spmv/spmv_plan.cpp: a plan's spec, materialized
  SpmvPlan() = default;

  int32_t rows_ = 0, cols_ = 0;
  int64_t nnz_ = 0;
  DeviceBuffer<int32_t> row_ptr_, col_idx_;
  DeviceBuffer<T> values_;
  // What run() enqueues, fixed at plan time.
  enum class LaunchKind { Gather, Rows, LongPartial, LongFinalize, Classified };
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
  uint64_t view_row_ptr_ = 0, view_col_idx_ = 0, view_values_ = 0;  // a DeviceCsrView64's arrays (not owned)
  DeviceBuffer<int32_t> col_order_;                                 // reorder degree: new column -> the user's column
  DeviceBuffer<T> x_order_;  // x in that order, written by the Gather launch each call
  double reorder_ms_ = 0;
  std::string layout_text_;
  Config config_;
  SpmvConfig typed_;
  std::vector<KernelInfo> kernels_;  // never empty once planned
  std::string matrix_fp_;
};

// The op's entry point, as every op spells it: plan_<op>(ctx, problem, options...).
template <class T, class... Args>
SpmvPlan<T> plan_spmv(Context& ctx, const CsrMatrix<T>& a, const Args&... args) {
  return SpmvPlan<T>::build(ctx, a, args...);
}
template <class T, class... Args>
SpmvPlan<T> plan_spmv(Context& ctx, const DeviceCsrView64<T>& a, const Args&... args) {
  return SpmvPlan<T>::build(ctx, a, args...);
}

}  // namespace dbsparse

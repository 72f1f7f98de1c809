#pragma once
// SpMSpV, y = A·x with x sparse, on the DB format with two-level adaptive push/pull
// (docs/DESIGN.md [1] §3.3). Plan once (conversion, look-up, JIT), then run many times.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "dbsparse/context.hpp"
#include "dbsparse/db_matrix.hpp"
#include "dbsparse/op_config.hpp"
#include "dbsparse/plan_info.hpp"
#include "dbsparse/semiring.hpp"
#include "dbsparse/tuning_db.hpp"

namespace dbsparse {

enum class SpmspvDirection { Auto, Push, Pull };
const char* to_string(SpmspvDirection d);

// SpMSpV's config. th0..th2 pick each block's format (the paper's values are the defaults). th3
// is normalised: push while xb < th3 / max(1, nnz per block) (the plan's xb_threshold), default
// 0.4. The paper compares xb with th3 = 0.01 directly (th3_scale "none"); the push/pull crossover
// moves with the nonzeros per block, because push pays an atomic per touched row and pull a scan
// per block (docs/decisions/spmspv-th3-scale.md). pull_coo "warp" walks the pull path's COO blocks warp-wide.
// residual_below moves blocks with fewer nonzeros out of the block structure into the residual
// (db_matrix.hpp); 0 keeps every block, 257 (the default) makes the whole matrix residual. The
// residual pushes: it reads only the active column blocks' entries, in order, and adds the active
// ones. With residual_pull "by_density" it also stores its rows and pulls from density
// residual_push_below on (its pull reads every entry and looks its column up: slower at every
// density measured, docs/decisions/spmspv-residual.md).
struct SpmspvConfig {
  static constexpr const char* kOp = "spmspv";
  static constexpr bool kBlockFeatures = true;

  int th0 = kDefaultTh0;
  int th1 = kDefaultTh1;
  double th2 = kDefaultTh2;
  double th3 = 0.4;
  std::string th3_scale = "nnz_per_block";
  std::string pull_coo = "lane";
  int residual_below = kDefaultResidualBelow;
  double residual_push_below = 0.5;
  std::string residual_pull = "off";
  int pdl = 1;
  int compute_blocks_per_sm = 0;  // 0: as many as fit (abi::kComputeBlocksPerSm at most)

  template <class V>
  void visit(V& v) {
    v.integer("th0", th0, 0, 257, "COO below this many nonzeros in a block");
    v.integer("th1", th1, 0, 256, "Dense above this many nonzeros in a block");
    v.number("th2", th2, 0.0, 1e9, "row/column skew ratio above which a block is ForceCSR / ForceCSC");
    v.number("th3", th3, 0.0, 1e9, "push while the x-block share < th3 (scaled by th3_scale)");
    v.choice("th3_scale", th3_scale, {"nnz_per_block", "none"},
             "nnz_per_block: th3 / max(1, nonzeros per block); none: th3 as is (the paper)");
    v.choice("pull_coo", pull_coo, {"lane", "warp"}, "how pull walks COO blocks: a lane each, or warp-wide");
    v.integer("residual_below", residual_below, 0, 257,
              "blocks with fewer nonzeros go to the residual (CSR/CSC-like, 4 index bytes per entry per view)");
    v.choice("residual_pull", residual_pull, {"off", "by_density"},
             "off: the residual always pushes and stores no row view; by_density: it also stores "
             "its rows and pulls once x's density reaches residual_push_below");
    v.number("residual_push_below", residual_push_below, 0.0, 2.0,
             "with residual_pull by_density: the residual pushes while x's nonzeros / cols is below this");
    v.integer("pdl", pdl, 0, 1,
              "1: a call's kernels after the first start by programmatic dependent launch (sm_90+), "
              "overlapping each launch with the previous kernel's run");
    v.integer("compute_blocks_per_sm", compute_blocks_per_sm, 0, 12,
              "thread blocks a SM of the compute launch (0: as many as fit); fewer start faster where "
              "a call has little work, more hide pull's latency where it has much");
  }
  void check() const;  // no rule between fields (runtime/spmspv/spmspv_plan.cpp says why)
  DbThresholds thresholds() const { return DbThresholds{th0, th1, th2, residual_below, residual_pull != "off"}; }
  // The paper's published defaults (docs/DESIGN.md [1] §3.2-3.3): th3 = 0.01 compared with xb.
  static SpmspvConfig paper();
};

struct SpmspvOptions {
  // Auto picks per run on the GPU: push when the share xb of non-empty 16-element x blocks is
  // below the plan's stats().xb_threshold, pull otherwise. One exception, for speed: run() after a
  // call (through the same workspace, not under a stream capture) whose parts all took the
  // directions of the push-only or the pull-only kernels runs those kernels, which skip the
  // direction work; an x whose density crossed the thresholds since then runs once in the old
  // direction, with the same result, and the call after it chooses again. Push or Pull force one
  // path (and compile only that one): for ablation.
  SpmspvDirection direction = SpmspvDirection::Auto;
  // When set, used instead of the tuning DB's config (its params are read as an SpmspvConfig).
  const Config* config = nullptr;
  // true: one cooperative launch (mask pass, grid barrier, compute), where the device supports
  // it. Off by default: it measured slower than two plain launches
  // (docs/decisions/spmspv-fused-launch.md).
  bool fused = false;
  Semiring semiring = Semiring::PlusTimes;  // plus-times; or-and (reachability) is plan_bfs (bfs.hpp)
};

struct SpmspvStats {
  DbStats storage;  // blocks and bytes by type; convert_ms is the conversion time
  int64_t pull_segments = 0;
  int64_t push_tasks_max = 0;      // the push lists' capacity: every block chunk and residual piece
  double xb_threshold = 0;         // blocks push below this x-block share: th3 / max(1, nnz per block)
  double residual_push_below = 0;  // the residual pushes while x nonzeros / cols is below this
  // Every allocation the plan holds (format, segments, its workspace) once planned; a first
  // run_sparse adds cols() * sizeof(T) for its dense x.
  int64_t device_bytes = 0;
};

template <class T>
class SpmspvPlan;

// The device state one call works in: x's block masks, the direction flag and counters, and the
// dense x that run_sparse scatters into. A plan owns one, so calls through the plan's own
// workspace must be ordered: one stream, or streams joined by events (a CUDA graph replaying one
// stream's capture is fine). To run one plan on several streams at once, give each stream a
// workspace of its own (SpmspvPlan::make_workspace): then the calls share only read-only data.
template <class T>
class SpmspvWorkspace {
 public:
  SpmspvWorkspace() = default;
  size_t bytes() const {
    return state_.size() + xmask_.size() * 2 + x_scatter_.size() * sizeof(T) + block_tasks_.size() * 8 +
           residual_tasks_.size() * 8 + small_tasks_.size() * 8 + sparse_xmask_.size() * 2 + y_acc_.size() * sizeof(T) +
           ytouched_.size() * 4 + ylist_.size() * 4;
  }

 private:
  friend class SpmspvPlan<T>;
  DeviceBuffer<uint8_t> state_;  // dbs::SpmspvState
  DeviceBuffer<uint16_t> xmask_;
  DeviceBuffer<T> x_scatter_;                // all-zero between calls
  DeviceBuffer<abi::PushTask> block_tasks_;  // the push lists the mask pass fills per call
  DeviceBuffer<abi::ResidualTask> residual_tasks_;
  DeviceBuffer<abi::ResidualTask> small_tasks_;
  // run_sparse_out's, allocated by its first call through this workspace: x masks and a dense y
  // kept all-zero between calls, and the touched row blocks (a bit each, and their list).
  DeviceBuffer<uint16_t> sparse_xmask_;
  DeviceBuffer<T> y_acc_;
  DeviceBuffer<uint32_t> ytouched_;
  DeviceBuffer<int32_t> ylist_;
  // The last run()'s x nonzeros and non-empty x blocks, written by its compute kernel (all ones
  // before the first): run() sizes the next compute grid and picks its kernels from them without
  // reading anything back.
  MappedHostAllocation feedback_;
};

template <class T>
class SpmspvPlan {
 public:
  // Converts A to the DB format (thresholds th0..th2 from the config look-up) and JIT-compiles the
  // variant for the block types present. plan_spmspv(ctx, a, ...) is the same call.
  static SpmspvPlan build(Context& ctx, const CsrMatrix<T>& a, const SpmspvOptions& options);
  static SpmspvPlan build(Context& ctx, const CsrMatrix<T>& a);

  // y = A·x, x dense on the device (zeros are the inactive entries), length cols(); y length rows().
  // No allocation, no compilation, no host synchronisation: capturable in a CUDA graph. Without a
  // workspace, the plan's own (see SpmspvWorkspace for running on several streams at once).
  void run(const DeviceBuffer<T>& x, DeviceBuffer<T>& y, const Stream& stream) const;
  void run(const DeviceBuffer<T>& x, DeviceBuffer<T>& y, const Stream& stream, SpmspvWorkspace<T>& ws) const;
  void run(uint64_t x, uint64_t y, void* stream) const;
  void run(uint64_t x, uint64_t y, void* stream, SpmspvWorkspace<T>& ws) const;
  // x given as nnz (index, value) pairs on the device; indices in [0, cols()), unique.
  void run_sparse(const DeviceBuffer<int32_t>& x_idx, const DeviceBuffer<T>& x_val, int32_t x_nnz, DeviceBuffer<T>& y,
                  const Stream& stream) const;
  void run_sparse(const DeviceBuffer<int32_t>& x_idx, const DeviceBuffer<T>& x_val, int32_t x_nnz, DeviceBuffer<T>& y,
                  const Stream& stream, SpmspvWorkspace<T>& ws) const;
  // The same on raw device pointers (x_idx: x_nnz int32, x_val: x_nnz T, y: rows() T) and a
  // CUstream, for callers that own their memory (the Python package); the plan's own workspace.
  void run_sparse(uint64_t x_idx, uint64_t x_val, int32_t x_nnz, uint64_t y, void* stream) const;

  // y = A·x with x and y both sparse: x as x_nnz (index, value) pairs (indices unique, in
  // [0, cols())), y written as (index, value) pairs of its nonzero rows, in no particular order, and
  // their count into y_nnz[0] on the device (no host synchronisation). y_idx and y_val need room
  // for rows() pairs. Both parts of the matrix push, so the cost follows x's nonzeros and the rows
  // they reach, with no pass over all of x or y: three launches (list the work, compute, write
  // out). The first call through a workspace allocates its buffers (a dense y, x masks, a bit and
  // a list entry per 16 rows): make it before capturing in a graph. Not for pull-only plans.
  void run_sparse_out(const DeviceBuffer<int32_t>& x_idx, const DeviceBuffer<T>& x_val, int32_t x_nnz,
                      DeviceBuffer<int32_t>& y_idx, DeviceBuffer<T>& y_val, DeviceBuffer<int32_t>& y_nnz,
                      const Stream& stream) const;
  void run_sparse_out(const DeviceBuffer<int32_t>& x_idx, const DeviceBuffer<T>& x_val, int32_t x_nnz,
                      DeviceBuffer<int32_t>& y_idx, DeviceBuffer<T>& y_val, DeviceBuffer<int32_t>& y_nnz,
                      const Stream& stream, SpmspvWorkspace<T>& ws) const;

  // A workspace of this plan's size (allocates: call it at set-up, not on the hot path). It holds
  // run_sparse's dense x (cols() elements). The plan's own workspace does not until the first
  // run_sparse through it allocates one: make that first call before capturing run_sparse in a
  // CUDA graph, or capture with a workspace from make_workspace().
  SpmspvWorkspace<T> make_workspace() const;

  // The path the last run in the plan's own workspace (or in ws) took, read back from the device
  // (synchronises the stream: not for the hot path; for tests, benches and the tuner). The blocks
  // and the residual choose apart; this is the choice of the part holding more nonzeros.
  SpmspvDirection last_direction(const Stream& stream) const;
  SpmspvDirection last_direction(const Stream& stream, const SpmspvWorkspace<T>& ws) const;
  // Non-empty x blocks / all x blocks in the last run (synchronises too).
  double last_xb(const Stream& stream) const;

  int32_t rows() const;
  int32_t cols() const;
  int64_t nnz() const;
  const SpmspvStats& stats() const;
  const Config& config() const;  // where it came from; params complete
  const SpmspvConfig& typed_config() const;
  Semiring semiring() const;
  ConfigSource config_source() const { return config().source; }
  const KernelInfo& kernel() const;
  std::string explain() const;

  // Bytes a call moves for x with these nonzero indices, the blocks as pulled and the residual as
  // pushed: for every block whose x block is non-empty, its metadata, values and aux, plus the
  // block-CSR view; the active column blocks' residual indices and the active entries' values;
  // x's active entries, x read by the mask pass, y reset and written, segments. The bench's GB/s
  // numerator (an approximation for the blocks' push). Host-side, from the plan's copy.
  int64_t pull_bytes_visited(std::span<const int32_t> x_indices) const;

  SpmspvPlan(SpmspvPlan&&) noexcept;
  SpmspvPlan& operator=(SpmspvPlan&&) noexcept;
  ~SpmspvPlan();

 private:
  struct Impl;
  explicit SpmspvPlan(std::unique_ptr<Impl> impl);
  SpmspvWorkspace<T> make_workspace_without_sparse_x() const;
  void sparse_in(uint64_t x_idx, uint64_t x_val, int32_t x_nnz, uint64_t y, void* stream, SpmspvWorkspace<T>& ws) const;
  // Which variant a dense run launches: the auto one, or the push-only or pull-only one that the
  // last call's counts matched (Impl::hint).
  enum class DirectionHint { None, Push, Pull };
  void dense_in(uint64_t x, uint64_t y, void* stream, SpmspvWorkspace<T>& ws, unsigned compute_grid,
                uint32_t* feedback = nullptr, DirectionHint hint = DirectionHint::None) const;
  std::unique_ptr<Impl> impl_;
};

// The op's entry point, as every op spells it: plan_<op>(ctx, problem, options...).
template <class T, class... Args>
SpmspvPlan<T> plan_spmspv(Context& ctx, const CsrMatrix<T>& a, const Args&... args) {
  return SpmspvPlan<T>::build(ctx, a, args...);
}

}  // namespace dbsparse

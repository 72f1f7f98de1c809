#pragma once
// DB-BFS (DB-SpMSpV, docs/DESIGN.md [1] §4.2): breadth-first search as one Boolean (or, and) SpMSpV per level
// over a graph converted once, with the frontier and the visited set as 16-bit masks per
// 16-vertex block on the device and the direction (push or pull) chosen on the GPU every level.
// The whole search is one cooperative launch with a grid barrier between levels: no host
// synchronisation until the caller waits on the stream.
//
// Convention, as for SpMSpV (y = A·x): vertex i is reached from j when A(i, j) != 0. For the
// other convention (A(u, v) != 0 is an edge u -> v), set BfsOptions::transpose.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dbsparse/context.hpp"
#include "dbsparse/graph.hpp"
#include "dbsparse/op_config.hpp"
#include "dbsparse/plan_info.hpp"
#include "dbsparse/spmspv.hpp"
#include "dbsparse/tuning_db.hpp"

namespace dbsparse {

// A graph on the device with 64-bit row offsets, as PatternGraph (row i lists the j with
// A(i, j) != 0, columns sorted and unique) but with entries past 2^31 allowed; vertices stay int32.
// Non-owning: what plan_bfs(ctx, const DeviceGraphView64&, ...) reads in place. From a CSR
// with values (PyTorch, CuPy), its row offsets and columns: BFS reads no values.
struct DeviceGraphView64 {
  int32_t n = 0;
  int64_t entries = 0;
  const int64_t* row_ptr = nullptr;  // n + 1
  const int32_t* col_idx = nullptr;  // entries
};

// The same three policies as SpMSpV's (auto: chosen on the GPU; push or pull: forced).
using BfsDirection = SpmspvDirection;

// BFS's config: the direction rule of the auto policy, after Beamer's direction-optimising BFS.
// A level pulls once the frontier's out-edges exceed the unexplored edges / alpha, or its active
// 16-vertex blocks exceed bfs_th3 of all blocks (the paper's xb); it pushes again once the frontier
// is below n / beta and shrinking (and its block share at most bfs_th3).
struct BfsConfig {
  static constexpr const char* kOp = "bfs";
  static constexpr bool kBlockFeatures = true;
  double alpha = 14.0;
  double beta = 24.0;
  double bfs_th3 = 1.0;  // 1.0: the block share never forces pull
  int block_warps = 8;   // warps per thread block: 8 (4 blocks per SM) or 32 (1 per SM: 4x fewer grid-barrier arrivals)
  int solo_tasks = 0;    // push levels with at most this many tasks run on one thread block, no grid barrier (0: off)

  template <class V>
  void visit(V& v) {
    v.number("alpha", alpha, 1e-3, 1e6, "pull once frontier out-edges * alpha > unexplored edges");
    v.number("beta", beta, 1e-3, 1e6, "push again once frontier vertices * beta < n (and shrinking)");
    v.number("bfs_th3", bfs_th3, 0.0, 1.0, "pull while the frontier's share of active 16-vertex blocks exceeds this");
    v.integer("block_warps", block_warps, 8, 32, "warps per thread block: 8 or 32");
    v.integer("solo_tasks", solo_tasks, 0, 1 << 20,
              "push levels with at most this many tasks run on one block (0: off)");
  }
  void check() const {
    if (block_warps != 8 && block_warps != 32) throw UsageError("bfs config: 'block_warps' must be 8 or 32");
  }
  // Beamer et al. (SC'12) report alpha = 14, beta = 24 as their tuned values.
  static BfsConfig paper() { return BfsConfig{}; }
};

// How the levels are driven: one cooperative launch for the whole search (the default where the
// device supports cooperative launch), or a launch per level with a host wait after each (the
// fallback; and what profiling uses, to time each level).
enum class BfsLaunch { Auto, Cooperative, HostLoop };
const char* to_string(BfsLaunch l);

struct BfsOptions {
  BfsDirection direction = BfsDirection::Auto;
  bool transpose = false;          // A(u, v) != 0 means an edge u -> v
  const Config* config = nullptr;  // instead of the tuning DB's (read as a BfsConfig)
  BfsLaunch launch = BfsLaunch::Auto;
  bool profile = false;  // time every level (host loop; syncs after each level)
  // Plan-time trial (direction auto, no explicit or tuned config): the plan times its direction
  // policy against push only (alpha so large that no level pulls) on BFSs from three of the graph's
  // vertices and keeps the faster; the tuning DB records the outcome for this graph and device, and
  // later plans take it without timing. < 0: on for graphs of >= 100K entries with a 20 ms budget
  // ($DBSPARSE_PLAN_TRIALS=0: off); 0: off; > 0: that budget in ms, whatever the size.
  double trial_ms = -1;
};

struct BfsStats {
  int32_t vertices = 0;
  int64_t entries = 0;          // stored adjacency entries (directed edges), self loops included
  bool symmetric = false;       // one view serves push and pull
  int64_t task_capacity = 0;    // push tasks one frontier can list
  int64_t bytes_format = 0;     // the adjacency views on the device (the caller's, for a DeviceGraphView64)
  bool views_in_place = false;  // the views are the caller's arrays (64-bit offsets): not in bytes_device
  int64_t bytes_device = 0;     // every allocation the plan holds (views, masks, lists, state)
  int64_t bytes_csr = 0;        // the same graph as a CSR with int32 indices and f32 values
  double convert_ms = 0;
  std::string to_text() const;  // the table `dbsparse convert --bfs` prints
};

// What a BFS plan on g holds on the device (both views, or one when g is symmetric; the masks, the
// block and task lists, the state and the level log), worked out on the CPU: BfsPlan::stats() and
// `dbsparse convert --bfs` report it. convert_ms is the time this took (the symmetry test and the
// task count: what planning does besides the upload).
BfsStats bfs_storage(const PatternGraph& g);

struct BfsLevelStats {
  int32_t level = 0;
  BfsDirection direction = BfsDirection::Push;
  int64_t frontier = 0;  // vertices at this level
  int64_t blocks = 0;    // their 16-vertex blocks
  int64_t edges = 0;     // their out-edges
  double ms = -1;        // with BfsOptions::profile only
};

struct BfsRunStats {
  int32_t source = -1;
  int32_t levels = 0;                         // frontiers expanded (deepest level + 1)
  BfsLaunch launch = BfsLaunch::Cooperative;  // what ran
  std::vector<BfsLevelStats> per_level;       // the first abi::kBfsLogLevels levels
  std::string to_text() const;                // one line per level
};

class BfsPlan {
 public:
  // Converts the graph once (its adjacency pattern: values are not read) for DB-BFS. Square
  // matrices only (UsageError naming the shape otherwise). plan_bfs(ctx, a, ...) is the same call.
  template <class T>
  static BfsPlan build(Context& ctx, const CsrMatrix<T>& a, const BfsOptions& options);
  template <class T>
  static BfsPlan build(Context& ctx, const CsrMatrix<T>& a);
  static BfsPlan build(Context& ctx, const PatternGraph& g, const BfsOptions& options);
  // A graph already on the device with 64-bit row offsets (entries past 2^31: what a PatternGraph
  // cannot hold), read in place: the arrays must outlive the plan. a's rows list in-neighbours
  // (options.transpose: out-neighbours); a_transposed is the other direction's view, or null for
  // a symmetric graph. The views are checked on the device first (offsets, columns, and that each
  // entry has its mirror in the other view: columns sorted in each row), UsageError otherwise.
  // options.config null: BfsConfig's defaults (a device view is not fingerprinted).
  static BfsPlan build(Context& ctx, const DeviceGraphView64& a, const BfsOptions& options,
                       const DeviceGraphView64* a_transposed = nullptr);

  // levels[v] = BFS level of v from source, -1 when unreached; parents (when given) a BFS tree:
  // parents[source] = source, -1 when unreached. Buffers of vertices() elements. No allocation,
  // no compilation; without profiling no host synchronisation. Runs through the plan's own
  // search state: calls on one plan must be ordered (one stream).
  void run(int32_t source, DeviceBuffer<int32_t>& levels, const Stream& stream) const;
  void run(int32_t source, DeviceBuffer<int32_t>& levels, DeviceBuffer<int32_t>& parents, const Stream& stream) const;
  void run(int32_t source, uint64_t levels, uint64_t parents, void* stream) const;  // parents may be 0

  // The last run's levels and per-level directions (waits for it: not for the hot path).
  BfsRunStats last_stats() const;

  int32_t vertices() const;
  int64_t device_bytes_held() const;  // summed from the allocations (stats().bytes_device predicts it)
  BfsDirection direction() const;
  BfsLaunch launch() const;  // what run() uses
  const BfsStats& stats() const;
  const Config& config() const;
  const BfsConfig& typed_config() const;
  const KernelInfo& kernel() const;
  std::string explain() const;

  BfsPlan(BfsPlan&&) noexcept;
  BfsPlan& operator=(BfsPlan&&) noexcept;
  ~BfsPlan();
  struct Impl;

 private:
  static BfsPlan build_impl(Context& ctx, PatternGraph g, const BfsOptions& options, const Config& config,
                            const std::string& matrix_fp);
  explicit BfsPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The op's entry point, as every op spells it: plan_<op>(ctx, problem, options...).
template <class G, class... Args>
BfsPlan plan_bfs(Context& ctx, const G& g, const Args&... args) {
  return BfsPlan::build(ctx, g, args...);
}

}  // namespace dbsparse

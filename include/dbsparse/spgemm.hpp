#pragma once
// Hash SpGEMM (hash-spgemm-summary.md): C = A·B with A and B in CSR (int32 indices), row by row,
// each row of C built in an open-addressing hash table. The CPU side here is what the kernels
// follow: the analysis (intermediate products per row, rows grouped by them, the nnz(C) check) and
// hash_spgemm_cpu, which runs the kernels' phases on the CPU and is their executable spec.
//
// Phases, per row i of A (the same on the GPU, templates/spgemm/spgemm_analysis.cuh and spgemm.cuh, and in
// hash_spgemm_cpu):
//  1. IP(i) = sum over k in row i of A of nnz(B row k): the products the row takes.
//  2. Group by IP (SpgemmConfig: IP < b0 group 0, < b1 group 1, < b2 group 2, else group 3). Rows
//     with IP == 0 are in no group: their row of C is empty and no launch covers them.
//  3. Symbolic: insert every product's column into the row's table (abi/spgemm.h: slot, probing,
//     empty key) and count the distinct ones: the row's length in C. Groups 0-2 use a table of
//     t0 / t1 / t2 slots in shared memory; group 3 a table in global memory of
//     spgemm_global_table_slots(IP) slots. A row whose distinct columns do not fit its shared
//     table (a key probes every slot and finds neither itself nor an empty one) is an overflow
//     row: it is counted again, and later accumulated, in a global table (overflow_to_global).
//  4. check_nnz_fits over the lengths, before C is allocated; exclusive prefix sum -> C's row_ptr.
//  5. Numeric: insert again into a table of the same size, adding A(i,k)·B(k,j) into the key's
//     slot (atomicAdd on the GPU), in the value type T.
//  6. Compaction: the occupied slots, in slot order, to C's row; then the row sorted by column.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dbsparse/abi/spgemm.h"
#include "dbsparse/context.hpp"
#include "dbsparse/device_csr.hpp"
#include "dbsparse/matrix.hpp"
#include "dbsparse/op_config.hpp"

namespace dbsparse {

inline constexpr int kSpgemmGroups = abi::kSpgemmGroups;
// The most shared memory one thread block can have on sm_90 (opt-in). check() holds
// the tables to it at f64's 12 bytes per slot (key + value); a plan must still compare against its
// device's own limit (sm_80: 166912 bytes).
inline constexpr int64_t kSpgemmMaxSharedBytes = 232448;
inline constexpr int kSpgemmSlotBytesF64 = 12;

// A key's first slot in a table of `slots` (a power of two), as abi/spgemm.h defines it.
inline uint32_t spgemm_first_slot(int32_t key, uint32_t slots) {
  return (static_cast<uint32_t>(key) * abi::kSpgemmHashMultiplier) & (slots - 1u);
}

// Hash SpGEMM's config: the IP bounds of the groups, the table and block sizes per group. The
// defaults are the article's (paper()) but for group 1's mapping (a warp per row, lanes1 = 32, in
// blocks of two warp-rows, block1 = 64), group 2's tables twice its bound (t2 = 16384: a table
// for up to 8191 distinct columns in 8192 slots fills to a load near 1, and linear probing then
// walks thousands of slots a key) and fit_tables; why, with the figures:
// docs/decisions/spgemm-config-defaults.md.
struct SpgemmConfig {
  static constexpr const char* kOp = "spgemm";
  // What predicts a good config is the IP distribution, not the 16x16 block histogram.
  static constexpr bool kBlockFeatures = false;
  int b0 = 32;                 // IP < b0: group 0 (partial warp per row)
  int b1 = 512;                // IP < b1: group 1 (block per row)
  int b2 = 8192;               // IP < b2: group 2 (block per row); IP >= b2: group 3 (global table)
  int t0 = 64;                 // shared table slots per row, group 0
  int t1 = 1024;               // group 1
  int t2 = 16384;              // group 2: twice its bound, as t0 and t1 are (the article's 8192)
  int lanes0 = 4;              // threads per row in group 0
  int lanes1 = 32;             // threads per row in group 1: a power of two <= 32, or 0 for the whole block
  int lanes2 = 0;              // group 2, as lanes1
  int block0 = 512;            // threads per block, group 0 (block0 / lanes0 rows per block)
  int block1 = 64;             // group 1 (block1 / lanes(1) rows per block; the article's 256)
  int block2 = 1024;           // group 2
  int block3 = 1024;           // group 3
  int split3 = 16;             // blocks per row of a global table, each an even share of its products
  int global_scale = 2;        // global table slots: next power of two >= global_scale * min(IP, B's columns)
  int overflow_to_global = 1;  // 1: a row that overflows its shared table is redone in a global one
  int stage_b_ranges = 0;      // 1: stage each group's B row ranges before the phases (the article's AIA, in software)
  int fit_tables = 1;          // 1: a group's tables shrink to its longest row's need (spgemm_fit_table)
  int narrow_dense = 1;        // 1: no global rows where B's columns fit group 2's table (spgemm_for_width)
  // Group 2 rows of at most merge2 A entries (a block a row, lanes2 = 0) merged instead of hashed:
  // each product's place is its rank among the row's B rows (sorted columns, found by binary
  // search), then equal columns summed; no table, no sort (docs/decisions/spgemm-low-accumulation.md).
  int merge2 = 0;  // 0: every row hashed

  template <class V>
  void visit(V& v) {
    v.integer("b0", b0, 1, 1 << 30, "IP below this: group 0 (partial warp per row, shared table of t0)");
    v.integer("b1", b1, 1, 1 << 30, "IP below this: group 1 (block per row, shared table of t1)");
    v.integer("b2", b2, 1, 1 << 30, "IP below this: group 2 (block per row, shared table of t2); above: global table");
    v.integer("t0", t0, 1, 1 << 16, "shared hash table slots per row in group 0 (a power of two)");
    v.integer("t1", t1, 1, 1 << 16, "shared hash table slots per row in group 1 (a power of two)");
    v.integer("t2", t2, 1, 1 << 16, "shared hash table slots per row in group 2 (a power of two)");
    v.integer("lanes0", lanes0, 1, 32, "threads per row in group 0 (a power of two)");
    v.integer("lanes1", lanes1, 0, 32, "threads per row in group 1 (a power of two up to 32; 0: the whole block)");
    v.integer("lanes2", lanes2, 0, 32, "threads per row in group 2 (a power of two up to 32; 0: the whole block)");
    v.integer("block0", block0, 32, 1024, "threads per block in group 0 (a multiple of 32)");
    v.integer("block1", block1, 32, 1024, "threads per block in group 1 (a multiple of 32)");
    v.integer("block2", block2, 32, 1024, "threads per block in group 2 (a multiple of 32)");
    v.integer("block3", block3, 32, 1024, "threads per block in group 3 (a multiple of 32)");
    v.integer("split3", split3, 1, 1024,
              "blocks per row with a global table (group 3, overflowed rows), each an even share of its products");
    v.integer("global_scale", global_scale, 1, 8,
              "global table slots = next power of two >= this * min(IP, columns of B)");
    v.integer("overflow_to_global", overflow_to_global, 0, 1,
              "1: a row with more distinct columns than its shared table is redone in a global table");
    v.integer("stage_b_ranges", stage_b_ranges, 0, 1, "1: gather each group's B row ranges into one array first");
    v.integer("fit_tables", fit_tables, 0, 1,
              "1: a group's shared tables shrink to the next power of two >= twice its longest row's products");
    v.integer("narrow_dense", narrow_dense, 0, 1,
              "1: where B has at most t2 columns (and group 2 has a block a row), group 2 takes every row from b1 "
              "up, in a dense shared table (slot = column): no global tables");
    v.integer("merge2", merge2, 0, 32,
              "group 2 rows of at most this many A entries merge their B rows by rank instead of a hash table and a "
              "sort (needs lanes2 = 0); 0: off");
  }
  // The rules between fields; UsageError naming the key (runtime/spgemm/spgemm_analysis.cpp).
  void check() const;
  // The article's table (hash-spgemm-summary.md): 32 / 512 / 8192, tables 64 / 1024 / 8192, four
  // lanes per row in group 0, blocks 512 / 256 / 1024 / 1024, rows that do not fit fall back to
  // global memory. It gives no global table size; AIA is hardware, so its software analogue is off.
  static SpgemmConfig paper() {
    SpgemmConfig c;
    c.lanes1 = 0;
    c.block1 = 256;
    c.t2 = 8192;
    c.fit_tables = 0;
    return c;
  }

  int bound(int group) const { return group == 0 ? b0 : group == 1 ? b1 : b2; }  // groups 0-2
  int table(int group) const { return group == 0 ? t0 : group == 1 ? t1 : t2; }  // groups 0-2
  int block(int group) const { return group == 0 ? block0 : group == 1 ? block1 : group == 2 ? block2 : block3; }
  // Threads per row: group 0's lanes0, groups 1-2's lanes (0: the block), group 3 the block.
  int lanes(int group) const {
    const int l = group == 0 ? lanes0 : group == 1 ? lanes1 : group == 2 ? lanes2 : 0;
    return l ? l : block(group);
  }
  int rows_per_block(int group) const { return block(group) / lanes(group); }
};

// Slots between two rows' shared tables of a block: the table plus the row's lanes when a warp
// holds several rows, so that the 32 lanes of a warp reading slots s .. s + lanes - 1 of their rows
// hit 32 different banks (a power-of-two stride puts several rows of a warp on one bank;
// docs/decisions/spgemm-config-defaults.md).
constexpr int64_t spgemm_table_stride(int64_t slots, int lanes) { return slots + (lanes < 32 ? lanes : 0); }

// The slots of a shared group's tables under config table size t: the next power of two >= twice
// the group's largest distinct-column bound min(max_ip, b_cols) (at least 32), at most t. Then a
// fitted table is at most half full, and a row overflows only where it would under t.
inline int spgemm_fit_table(int t, int64_t max_ip, int64_t b_cols) {
  const int64_t need = 2 * std::max<int64_t>(std::min(max_ip, b_cols), 1);
  int64_t slots = 32;
  while (slots < need && slots < t) slots *= 2;
  return static_cast<int>(std::min<int64_t>(slots, t));
}

// config with each shared group's table fitted to its longest row (group_max_ip[g], from the
// analysis) when fit_tables is set; config itself otherwise. What the kernels and hash_spgemm_cpu use.
inline SpgemmConfig spgemm_fitted(const SpgemmConfig& c, const std::array<int64_t, 3>& group_max_ip, int64_t b_cols) {
  SpgemmConfig f = c;
  if (c.fit_tables) {
    f.t0 = spgemm_fit_table(c.t0, group_max_ip[0], b_cols);
    f.t1 = spgemm_fit_table(c.t1, group_max_ip[1], b_cols);
    f.t2 = spgemm_fit_table(c.t2, group_max_ip[2], b_cols);
  }
  return f;
}

// config for a product whose B has b_cols columns. With narrow_dense, where group 2 has a block a
// row and B's columns fit its table (t2 >= b_cols), b2 rises past any row's IP (2^30): group 2
// takes every row from b1 up, in a table that is dense once fitted (slot = column: never full, no
// sort), and group 3 (global tables in L2: their atomics, init and sort) is left to rows of 2^30
// products (docs/decisions/spgemm-global-tables.md). Called after check() (b2 past t2 would fail
// its overflow rule, which a dense table cannot break).
inline SpgemmConfig spgemm_for_width(const SpgemmConfig& c, int64_t b_cols) {
  SpgemmConfig f = c;
  if (c.narrow_dense && c.lanes2 == 0 && b_cols <= c.t2 && c.b2 < (1 << 30)) f.b2 = 1 << 30;
  return f;
}

// Shared memory of one block's tables in group 0-2 (0 for group 3): rows per block * stride *
// (4 + value_bytes).
int64_t spgemm_shared_bytes(const SpgemmConfig& c, int group, int value_bytes);

// IP(i) per row of A. UsageError naming both shapes when A's columns are not B's rows.
template <class T>
std::vector<int64_t> intermediate_products(const CsrMatrix<T>& a, const CsrMatrix<T>& b);

// The group of a row with `ip` products: -1 for ip == 0 (no work), else 0..3 by the bounds.
int spgemm_group_of(int64_t ip, const SpgemmConfig& c);

struct SpgemmGrouping {
  std::array<std::vector<int32_t>, kSpgemmGroups> rows;  // each group's rows, ascending
  std::array<int64_t, kSpgemmGroups> ip{};               // the products of each group's rows
  int32_t idle_rows = 0;                                 // rows with IP == 0: in no group
  int64_t count(int group) const { return static_cast<int64_t>(rows[group].size()); }
};
// Every row with IP > 0 in exactly one group (spgemm_group_of).
SpgemmGrouping group_rows(std::span<const int64_t> ips, const SpgemmConfig& c);

// 2 * sum of IP: a multiply and an add per product, the GFLOP count of the `square` benchmark.
int64_t spgemm_flops(std::span<const int64_t> ips);
// sum over rows of min(IP, b_cols): no row of C can be longer than either.
int64_t spgemm_nnz_upper_bound(std::span<const int64_t> ips, int32_t b_cols);
// Slots of a row's global table: the next power of two >= global_scale * max(1, min(ip, b_cols)),
// at most 2^31 (abi::spgemm_table_slots, which the analysis kernel runs). It holds every distinct
// column of the row, so inserting never fails.
int64_t spgemm_global_table_slots(int64_t ip, int32_t b_cols, const SpgemmConfig& c);
// Whether a row of group 0-2 can overflow its shared table (min(ip, b_cols) > its table): only
// such rows may need a global table besides group 3's, so a plan can reserve theirs up front.
bool spgemm_row_may_overflow(int64_t ip, int32_t b_cols, const SpgemmConfig& c);

// Global tables (of `slots` each, in list order) laid out in chunks run one after another through
// one set of tables: a new chunk where the next table would take the chunk past budget_slots (a
// table larger than that alone is a chunk of its own). first: each chunk's first position, in
// order; offset: each table's place within its chunk; widest: the slots the largest chunk needs.
struct SpgemmChunkLayout {
  std::vector<int32_t> first;
  std::vector<int64_t> offset;
  int64_t widest = 0;
};
SpgemmChunkLayout spgemm_chunk_layout(std::span<const int64_t> slots, int64_t budget_slots);

// nnz(C) from the symbolic phase's row lengths; UsageError naming the first row at which the
// running count passes 2^31-1 (C's int32 indices), with that row's length and the count. Run it
// before allocating C.
int64_t check_nnz_fits(std::span<const int32_t> row_lengths);

template <class T>
struct HashSpgemmResult {
  CsrMatrix<T> c;
  std::vector<int64_t> ip;           // IP per row of A
  SpgemmGrouping grouping;           // rows by IP group
  std::vector<int8_t> group;         // per row: its group by IP, -1 when IP == 0
  std::vector<uint8_t> overflowed;   // per row: 1 when its distinct columns did not fit its shared table
  std::vector<int32_t> global_rows;  // rows whose phases ran in a global table (group 3 and overflowed), ascending
  int64_t global_slots = 0;          // the slots of their tables together (what a plan allocates)
  // Table slots the numeric phase reads to place its products (phases 5-6: one per product in a
  // dense table, slot = column; the probes of linear probing otherwise). Over IP: the accesses a
  // product, OpSparse's measure of a hash SpGEMM's table traffic.
  int64_t table_accesses = 0;
  int64_t merged_rows = 0;  // rows of group 2 merged by rank (SpgemmConfig::merge2), with no table
  int64_t overflow_rows() const;
};

// C = A·B the way the kernels compute it (phases 1-6 above), accumulating in T as their atomicAdd
// does; columns sorted, and a column that some product reaches stays even when its sum is zero (as
// in reference::spgemm). The GPU adds a row's products in another order, so its float values may
// differ from these in the last bits; structure, groups and overflows are the same. Throws
// UsageError on mismatched shapes, a config failing check(), or more than 2^31-1 nonzeros in C.
template <class T>
HashSpgemmResult<T> hash_spgemm_cpu(const CsrMatrix<T>& a, const CsrMatrix<T>& b, const SpgemmConfig& c = {});

// --- on the GPU (runtime/spgemm/spgemm_plan.cpp, templates/spgemm/spgemm.cuh) ------------------------------

struct SpgemmOptions {
  // The groups' bounds, tables and blocks. When empty: a plan from host CSR takes the tuning DB's
  // config for A on this device (tuned by `dbtune --op spgemm`, else predicted, else
  // SpgemmConfig{}); a plan from device CSR takes SpgemmConfig{} (SpgemmConfig::paper() is the article's).
  std::optional<SpgemmConfig> config;
  // The most bytes the global tables (keys and values) take at once. Past it their rows run in
  // chunks, one after another, through one set of tables: the first run waits once more and reads
  // the tables' places back to cut them. 0: a sixteenth of the device's memory, so that a product
  // does not hold far more than cuSPARSE's peak (docs/decisions/spgemm-global-tables.md). A row
  // larger than this alone gets a chunk of its own.
  int64_t global_table_bytes = 0;
  // The first run without a symbolic phase where it can: where no row can fill its shared table
  // (every group's table at least its longest row; global tables only for group 3's rows, all in
  // one chunk) and the products' scratch (IP keys and values) fits global_table_bytes' budget, the
  // numeric phase writes each row at its offset by IP, C is sized from the lengths it finds, then
  // filled by a copy (docs/decisions/spgemm-one-pass.md). false: always the symbolic phase first
  // (for comparison and tests).
  bool one_pass = true;
};

// C = A·B on the GPU by the phases above. plan_spgemm(ctx, ...) takes A and B as host CSR (uploaded into
// the plan) or as device CSR (DeviceCsrView: read in place, not copied). It analyses the structure
// once on the GPU (templates/spgemm/spgemm_analysis.cuh: IP and group per row, rows and products per
// group, the rows that may overflow, A's and B's columns checked), waits for that and reads back
// one small struct of counts (abi::SpgemmStats), allocates the group lists and global tables and
// loads the kernels; groups without rows launch nothing, and an A without products launches
// nothing after the analysis. The first run() fills the group lists and places the global tables
// (on its own stream, so that a non-blocking stream needs no wait for the planning's), does the
// symbolic phase and C's row_ptr on the GPU, then waits for the stream and reads back nnz(C) (the
// second small read; check_nnz_fits's UsageError when it passes 2^31-1, before C is allocated),
// allocates C and runs the numeric phase. Later runs
// reuse C's structure and launch the numeric phase only (no allocation, no host sync), so a plan
// whose A and B change only in their values (MCL, GNN training) calls values_changed() and run()
// (or, from device CSR, writes the new values into its arrays and calls run()).
// Where a fresh product's host time goes (wall clock, ms), for tools that split it: planning
// (allocations, kernel lookups; analysis_wait_ms of it waiting for the GPU analysis and reading
// its counts back), then the first run: the symbolic phase launched and waited for with nnz(C)
// read back (symbolic_wait_ms), C allocated (alloc_c_ms), the numeric phase launched
// (numeric_launch_ms; the caller's sync waits for it). Zero until measured.
struct SpgemmFreshTimes {
  double plan_ms = 0, analysis_wait_ms = 0, symbolic_wait_ms = 0, alloc_c_ms = 0, numeric_launch_ms = 0;
  bool one_pass = false;  // the first run had no symbolic phase (SpgemmOptions::one_pass); then
                          // symbolic_wait_ms is the numeric phase and its wait, numeric_launch_ms the copy into C
};

template <class T>
class SpgemmPlan {
 public:
  // Hash SpGEMM, C = A·B: A and B uploaded, the structure analysed on the GPU once (one small
  // read-back), kernels loaded; the first run() sizes C (one host synchronisation), later runs
  // recompute values only. From device CSR, A and B are not copied: the plan reads the caller's
  // arrays, which must outlive it; the analysis runs on `stream` (null: the legacy default
  // stream), so it follows whatever wrote A and B there, and is waited for before return.
  // plan_spgemm(ctx, a, b, ...) is the same call.
  static SpgemmPlan build(Context& ctx, const CsrMatrix<T>& a, const CsrMatrix<T>& b);
  static SpgemmPlan build(Context& ctx, const CsrMatrix<T>& a, const CsrMatrix<T>& b, const SpgemmOptions& options);
  static SpgemmPlan build(Context& ctx, const DeviceCsrView<T>& a, const DeviceCsrView<T>& b,
                          const SpgemmOptions& options, void* stream = nullptr);

  void run(void* stream);
  // New values for A and B (same structure, nnz(A) and nnz(B) values; UsageError otherwise),
  // uploaded after the context's work is done (it waits for the device). Takes effect at the next
  // run. A plan from device CSR then reads these copies instead of the caller's values.
  void values_changed(std::span<const T> a_values, std::span<const T> b_values);
  void run(std::span<const T> a_values, std::span<const T> b_values, void* stream) {
    values_changed(a_values, b_values);
    run(stream);
  }
  bool structure_known() const;  // the symbolic phase has run: C's row_ptr and nnz are known
  int32_t rows() const;
  int32_t cols() const;
  int64_t nnz() const;  // -1 before the first run
  // C on the device, valid after the first run (UsageError before): rows + 1 row pointers, nnz()
  // column indices (sorted in each row) and values.
  uint64_t row_ptr() const;
  uint64_t col_idx() const;
  uint64_t values() const;
  // The same as a view, to plan a next product from without a trip through the host; it is valid
  // while the plan lives and reads this plan's latest run.
  DeviceCsrView<T> result() const;
  // C on the host; waits for the device (cuCtxSynchronize), so the last run's stream may be gone.
  CsrMatrix<T> download() const;
  const SpgemmConfig& config() const;
  // Each group's rows, ascending (the GPU lists them in atomic order; this sorts a downloaded
  // copy, made on the first call: for tests and tools, not for a hot path). Before the first run
  // it fills the lists itself, on the legacy default stream, and waits for them.
  const SpgemmGrouping& grouping() const;
  int64_t products() const;                     // IP over all rows (the analysis's int64 sum)
  int64_t max_row_products() const;             // the largest IP of a row
  int64_t overflow_rows() const;                // rows that overflowed their shared table (known after the first run)
  int64_t global_slots() const;                 // the global tables' slots the plan holds
  const SpgemmFreshTimes& fresh_times() const;  // the plan's and its first run's host time by part
  // Everything the plan holds on the device (docs/DESIGN.md §12): its copies of A and B (none from
  // device CSR, unless values_changed made them), the analysis's codes, group lists and counters,
  // the global tables, the per-row counters, C's row_ptr and, once sized by the first run, C.
  int64_t device_bytes() const;
  // The most it held at once: device_bytes() plus the one-pass first run's scratch (released by
  // that run, in its stream's order), if it had one.
  int64_t peak_device_bytes() const;
  std::string explain() const;

  SpgemmPlan(SpgemmPlan&&) noexcept;
  SpgemmPlan& operator=(SpgemmPlan&&) noexcept;
  ~SpgemmPlan();
  struct Impl;

 private:
  explicit SpgemmPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One-shot C = A·B on the GPU: a plan, one run on a stream of its own, the result downloaded.
template <class T>
CsrMatrix<T> spgemm(Context& ctx, const CsrMatrix<T>& a, const CsrMatrix<T>& b, const SpgemmOptions& options = {});

// The op's entry point, as every op spells it: plan_<op>(ctx, problem, options...).
template <class T, class... Args>
SpgemmPlan<T> plan_spgemm(Context& ctx, const CsrMatrix<T>& a, const CsrMatrix<T>& b, const Args&... args) {
  return SpgemmPlan<T>::build(ctx, a, b, args...);
}
template <class T, class... Args>
SpgemmPlan<T> plan_spgemm(Context& ctx, const DeviceCsrView<T>& a, const DeviceCsrView<T>& b, const Args&... args) {
  return SpgemmPlan<T>::build(ctx, a, b, args...);
}

}  // namespace dbsparse

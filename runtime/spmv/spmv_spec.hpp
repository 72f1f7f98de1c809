#pragma once
// An SpMV plan as host values (the pure stage between the config and the device): the column
// order, the bins after folding, the kernels and every launch's shape. SpmvPlan::build_impl makes
// one from the config, A's shape and the classifier's counts, materializes it (uploads, module
// loads, L1 preferences) and explains it; nothing here touches CUDA, so the decisions are tested on
// the CPU (tests/cpu/ops/test_spmv_spec.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/keys/spmv_key.hpp"
#include "dbsparse/abi/spmv.h"
#include "dbsparse/spmv.hpp"
#include "runtime/spmv/spmv_strategy.hpp"

namespace dbsparse {

// A's shape, all a spec needs of the matrix besides its statistics.
struct SpmvShape {
  int32_t rows = 0, cols = 0;
  int64_t nnz = 0;
};

// Whether A's columns are renumbered by decreasing count (SpmvConfig::reorder) and why.
struct SpmvOrderChoice {
  bool automatic = false;  // reorder "auto": the choice below is the feature's
  // auto's feature was measured: cols >= reorder_min_cols (a shorter x sits in L1 whatever its
  // order) and >= 4 entries a column (the gather moves 12 bytes a column each f32 call against 8 an
  // entry, so a sparser A cannot win back its own gather).
  bool feature = false;
  double hub_share = 0;    // the reorder_hub_columns most frequent columns' share of the entries
  bool by_degree = false;  // degree order: x gathered into it each call (only with cols > 0)
};

// Whether the plan counts A's columns on the host (reorder degree, or auto's feature): one count
// serves both.
bool spmv_needs_column_counts(const SpmvConfig& config, const SpmvShape& shape);
// `counts`: spmv_column_counts of A where spmv_needs_column_counts, else empty.
SpmvOrderChoice choose_spmv_order(const SpmvConfig& config, const SpmvShape& shape, const std::vector<int32_t>& counts);

// Rows and nonzeros of each bin after folding, where each bin's rows start in the row lists, and
// each bin's bound (after folding: a folded bin takes its lower neighbour's, so the listing pass
// sends none of its rows there).
struct SpmvBins {
  std::vector<int64_t> rows, nnz, off, max_len;  // off[b] < 0: no row lists, one bin runs every row
  bool lists() const { return !off.empty() && off[0] >= 0; }
};

// The classifier's first pass, per bin: rows and nonzeros of the rows whose length falls in it.
struct SpmvBinCount {
  int64_t rows = 0, nnz = 0;
};

// Fold thin row-kernel bins (not block, not long rows) into the next wider one; then lists unless
// one bin below the long-row bin takes every row and no window is asked for (a matrix of one row
// length runs one kernel with no lists). `counts` has one entry per layout bin.
SpmvBins fold_spmv_bins(const SpmvLayout& layout, const std::vector<SpmvBinCount>& counts, int64_t nnz);
// An unclassified layout's one bin over every row, or a classified layout's empty bins (rows == 0).
SpmvBins unclassified_spmv_bins(const SpmvLayout& layout, const SpmvShape& shape);
SpmvBins empty_spmv_bins(const SpmvLayout& layout);

// Long rows cut into chunks of at most `chunk` entries (slot: the row's index in `rows`); a row
// with no entries gets one empty chunk, so that y = beta*y is still written.
struct SpmvLongRows {
  std::vector<int32_t> rows;  // ascending
  std::vector<abi::SpmvChunk> chunks;
  std::vector<int32_t> chunk_ptr;  // chunks of rows[s]: [chunk_ptr[s], chunk_ptr[s+1])
};
SpmvLongRows split_spmv_long_rows(const std::vector<int32_t>& row_ptr, std::vector<int32_t> rows, int64_t chunk);

enum class SpmvLaunchKind { Gather, Rows, LongPartial, LongFinalize, Classified };
// Where a launch's rows come from: none (rows 0 .. count-1), the bins' lists at list_off, or the
// long rows.
enum class SpmvRowSource { None, BinList, LongRows };

struct SpmvLaunchSpec {
  SpmvLaunchKind kind = SpmvLaunchKind::Rows;
  size_t kernel = 0;           // index into SpmvSpec::kernels
  const char* entry = "rows";  // the entry point's role in that kernel's source
  unsigned grid = 0, block = 0;
  int32_t count = 0;  // rows (Rows, LongFinalize), chunks (LongPartial), columns (Gather)
  SpmvRowSource rows_from = SpmvRowSource::None;
  int64_t list_off = 0;  // BinList: the first row's index in the lists
  int bin = -1;          // Rows: the layout's bin it serves
};

struct SpmvSpec {
  SpmvShape shape;
  SpmvConfig config;  // complete, checked
  SpmvLayout layout;
  SpmvOrderChoice order;
  SpmvBins bins;
  int32_t long_rows = 0, chunks = 0;
  std::vector<codegen::SpmvKey> kernels;  // loaded in this order; what the plan reports
  std::vector<SpmvLaunchSpec> launches;   // run() enqueues them in this order
  // One-launch classified: per bin its list offset, its count (rows, or chunks for the long-row
  // bin), then per grid slot the end of its thread blocks (SpmvClassifiedArgs).
  std::vector<int32_t> fused;
  int64_t window_rows = 0;  // rows the window serves in memory order
  int64_t fused_blocks = 0;
};

// Pure: the kernels and launches of a plan with these bins and long rows. Throws UsageError for a
// grid past 2^31 blocks or a one-launch layout without the ABI's bins.
SpmvSpec make_spmv_spec(const SpmvConfig& config, const SpmvShape& shape, const SpmvLayout& layout,
                        const SpmvOrderChoice& order, SpmvBins bins, int32_t long_rows, int32_t chunks);

// What the plan measured while it was materialized, for the explain text.
struct SpmvPlanTimes {
  double feature_ms = 0;  // auto's count and hub share, ms on the host
  double order_ms = 0;    // the degree order, counted from the same start
};

// The plan's layout lines of explain(): the column order, the bins and each launch's kernel. The
// L1 line (prefer_l1) is the materialized plan's, appended by the caller.
std::string explain_spmv_spec(const SpmvSpec& spec, const SpmvPlanTimes& times);
// The L1 line for launches that prefer at most `most_percent` of the SM's shared memory (-1: the
// driver's policy, no line).
std::string spmv_l1_text(int most_percent);

}  // namespace dbsparse

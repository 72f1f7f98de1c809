#pragma once
// The SpMSpV plan's host decisions (spec), apart from what puts them on the device (materialize,
// in spmspv_plan.cpp) and the text that shows them (explain): a spec is computed from the matrix,
// the typed config and two device facts, with no CUDA call, so the CPU tests check it.
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/keys/spmspv_key.hpp"
#include "dbsparse/db_matrix.hpp"
#include "dbsparse/plan_info.hpp"
#include "dbsparse/spmspv.hpp"

namespace dbsparse::detail {

// The device facts a spec reads (DeviceInfo's; a test passes its own).
struct SpmspvDeviceFacts {
  int sm_count = 1;
  int cc_major = 0;
};

// Everything a plan decides on the host besides the format's arrays.
struct SpmspvShape {
  int32_t rows = 0, cols = 0;
  int32_t block_rows = 0, block_cols = 0;  // ceil(rows / 16), ceil(cols / 16)
  int64_t nnz = 0;
  int64_t blocks = 0;                       // stored blocks (the residual's entries are in none)
  int64_t block_nnz = 0, residual_nnz = 0;  // nnz split between the blocks and the residual
  int32_t block_segments = 0;               // pull segments over blocks; the rest are the residual's
  int64_t block_task_capacity = 0, residual_task_capacity = 0, small_task_capacity = 0;
  // The most entries of A in one 16-column block: bounds a sparse x's push work on the host.
  int64_t max_colblock_entries = 0;
  // storage, pull_segments, push_tasks_max, xb_threshold, residual_push_below; device_bytes is
  // materialize's (0 here).
  SpmspvStats stats;
  codegen::SpmspvKey key;  // the kernel variant: direction, value type, pull COO walk, block types present
  SpmspvDirection direction = SpmspvDirection::Auto;
  Semiring semiring = Semiring::PlusTimes;
  unsigned sm_count = 1;
  bool pdl = false;        // launches by programmatic dependent launch (config pdl, sm_90+)
  unsigned prep_grid = 1;  // the mask pass: a thread per x block, at most four blocks a SM
};

// A shape and the host arrays materialize uploads.
template <class T>
struct SpmspvSpec {
  SpmspvShape shape;
  DbMatrix<T> db;
  std::vector<abi::Segment> segments;  // the pull segments; one of count 0 when there are none
};

// Converts A to the DB format under cfg's thresholds and derives the plan's shape. Throws what
// csr_to_db throws for a matrix the format cannot hold.
template <class T>
SpmspvSpec<T> spmspv_spec(const CsrMatrix<T>& a, const SpmspvConfig& cfg, SpmspvDirection direction, Semiring semiring,
                          const SpmspvDeviceFacts& device);

// The compute launch's full grid: the configured blocks a SM (0: as many as fit), never more than
// `occupancy` (the blocks a SM that fit, at least 1).
unsigned spmspv_full_compute_grid(int compute_blocks_per_sm, int occupancy, unsigned sm_count);

// The compute launch for an x of about x_nnz nonzeros, when the config leaves blocks a SM open:
// its blocks cost their start even when a call has little work, and the work follows x's
// nonzeros, not its density (docs/decisions/spmspv-compute-grid.md).
unsigned spmspv_compute_grid_for(int64_t x_nnz, int occupancy, unsigned sm_count);

// Which variant an auto plan's run() launches after a call with x_nnz nonzeros in x_nonempty
// non-empty 16-column x blocks, by the rules spmspv_prep.cuh applies on the device: the blocks
// push while x_nonempty < xb_threshold x block_cols, the residual while x_nnz <
// residual_push_below x cols. Push: both parts pushed. Pull: the blocks pulled and the residual
// went the way the pull-only variant takes it (pulled where it has a row view, pull segments past
// the blocks', else pushed). None: the auto variant (parts split, or no feedback).
enum class SpmspvHint { None, Push, Pull };
SpmspvHint spmspv_direction_hint(const SpmspvShape& shape, uint32_t x_nnz, uint32_t x_nonempty);

// explain()'s text for a plan of this shape, config and kernel (device_bytes from shape.stats).
std::string spmspv_explain(const SpmspvShape& shape, const Config& config, const KernelInfo& kernel);

}  // namespace dbsparse::detail

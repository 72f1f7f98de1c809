#pragma once
// The dual-view blocked (DB) format of DB-SpMSpV (docs/DESIGN.md [1] §3.2): 16×16 blocks with a block-CSR and a
// block-CSC view over one copy of per-block metadata and payload. Converted once from CSR.
#include <cstdint>
#include <string>
#include <vector>

#include "dbsparse/abi/spmspv.h"
#include "dbsparse/matrix.hpp"

namespace dbsparse {

// Numbered as the kernels number them (include/dbsparse/abi/spmspv.h). The paper's patched CSR
// is ForceCsr here: with no kernel reading its column view its payload was ForceCSR's byte for
// byte, and merging the two halves the kernel variants (16 type sets instead of 32)
// (docs/decisions/db-format-patched-csr.md).
enum class BlockType : uint8_t {
  Coo = abi::kCoo,
  Dense = abi::kDense,
  ForceCsr = abi::kForceCsr,
  ForceCsc = abi::kForceCsc
};
constexpr int kBlockTypes = abi::kBlockTypeCount;
const char* to_string(BlockType t);  // "coo", "dense", "csr", "csc"

// The paper's block-format thresholds (§3.2), the defaults of DbThresholds and SpmspvConfig alike.
inline constexpr int kDefaultTh0 = 32;
inline constexpr int kDefaultTh1 = 128;
inline constexpr double kDefaultTh2 = 2.0;
// Blocks with fewer nonzeros than this leave the block structure for the residual part; 257, the
// default, makes the whole matrix residual: the residual's push beat the blocks on every structured
// matrix measured (docs/decisions/spmspv-residual.md). Blocks stay a tuned option.
inline constexpr int kDefaultResidualBelow = 257;
// The residual's packed indices keep 28 bits for the global index and 4 for the local one.
inline constexpr int64_t kResidualMaxDim = int64_t{abi::kResidualIndexMask} + 1;
inline constexpr int kResidualChunk = abi::kResidualChunk;  // entries per pull segment / push piece

struct DbThresholds {
  int th0 = kDefaultTh0;                       // nnz < th0: COO
  int th1 = kDefaultTh1;                       // nnz > th1: Dense
  double th2 = kDefaultTh2;                    // skew ratio above which ForceCSR / ForceCSC is chosen
  int residual_below = kDefaultResidualBelow;  // nnz < this: the block's entries go to the residual
  // Also store the residual's row view, so that the residual can pull at high x density. Off by
  // default: the residual's push measured at least as fast up to density 0.9, and without the row
  // view the residual costs one CSC's bytes (docs/decisions/spmspv-residual.md).
  bool residual_rows = false;
};

// The type a block gets, given the nnz of each of its 16 rows and 16 columns (docs/DESIGN.md, the DB
// format): COO / Dense by nnz, else ForceCSC when skew_r/skew_c > th2, ForceCSR when
// otherwise ForceCSR (the paper's patched CSR included); skew_a = max line nnz / (nnz/16 + 1e-9).
BlockType choose_block_type(const int row_nnz[16], const int col_nnz[16], int nnz, const DbThresholds& th);

// Per-block metadata: the kernels' struct (include/dbsparse/abi/spmspv.h), used as is.
using BlockMeta = abi::BlockMeta;

// Payload of one block, by type. Local indices r, c are in [0, 16).
//   Coo:        values[nnz] in row-major order;   aux: nnz bytes (r << 4 | c)
//   Dense:      values[256] row-major (zeros where A has none); aux: nothing
//   ForceCsr:   values[nnz] row-major;            aux: uint16 row_ptr[17], uint16 row_mask[16]
//                                                  (bit c of row_mask[r]: A(r, c) stored)
//   ForceCsc:   values[nnz] column-major;         aux: uint16 col_ptr[17], uint16 col_mask[16]
//                                                  (bit r of col_mask[c]: A(r, c) stored)
template <class T>
struct DbMatrix {
  int32_t rows = 0, cols = 0;
  int32_t block_rows = 0, block_cols = 0;  // ceil(rows / 16), ceil(cols / 16)
  DbThresholds thresholds;

  // High level: two views of the same blocks.
  std::vector<int32_t> blk_row_ptr;  // block_rows + 1
  std::vector<int32_t> blk_col_idx;  // nblocks, block-CSR order
  std::vector<int32_t> blk_col_ptr;  // block_cols + 1
  std::vector<int32_t> blk_row_idx;  // nblocks, block-CSC order
  std::vector<int32_t> csc2csr;      // nblocks: block-CSC position -> block id (CSR order)
  std::vector<BlockMeta> meta;       // nblocks, block-CSR order

  // Low level: one payload per block.
  std::vector<T> values;
  std::vector<uint8_t> aux;

  // The residual: entries of blocks too sparse to pay for their metadata, stored as compactly as
  // CSC (and CSR) allow, 4 index bytes and one value per entry per view.
  //   Column view (push): by block column, entries by local column then row;
  //   res_cr = local column << 28 | global row.
  //   Row view (pull; only with thresholds.residual_rows): by block row, entries row-major;
  //   res_rc = local row << 28 | global column. res_row_ptr, its pointers, is kept either way (on
  //   the host: it tells which row blocks the residual touches).
  // Empty when rows or cols reach kResidualMaxDim (thresholds.residual_below is then 0).
  std::vector<int32_t> res_row_ptr;  // block_rows + 1
  std::vector<uint32_t> res_rc;
  std::vector<T> res_row_val;
  std::vector<int32_t> res_col_ptr;  // block_cols + 1
  std::vector<uint32_t> res_cr;
  std::vector<T> res_col_val;

  int64_t nnz = 0;  // of the source matrix
  int64_t blocks() const { return static_cast<int64_t>(meta.size()); }
  int64_t residual_nnz() const { return static_cast<int64_t>(res_cr.size()); }
};

// What the SpMSpV kernels read beyond the format itself, derived from it on the host: the pull
// segments (block segments first, then residual segments) and the capacity of the push task lists
// that each call fills on the device (one entry per <= kPushChunk blocks, or per <= kResidualChunk
// residual entries, of a column block).
struct DbLayout {
  std::vector<abi::Segment> segments;
  int32_t block_segments = 0;
  int64_t block_task_capacity = 0;
  int64_t residual_task_capacity = 0;  // pieces of column blocks with > kResidualSmall entries
  int64_t small_task_capacity = 0;     // column blocks with 1..kResidualSmall entries
};
template <class T>
DbLayout make_db_layout(const DbMatrix<T>& d);

// Throws UsageError when the payload would not fit the 32-bit offsets.
template <class T>
DbMatrix<T> csr_to_db(const CsrMatrix<T>& a, const DbThresholds& th = {});
template <class T>
CsrMatrix<T> db_to_csr(const DbMatrix<T>& d);

struct DbStats {
  int64_t blocks_by_type[kBlockTypes] = {};
  int64_t nnz_by_type[kBlockTypes] = {};
  int64_t residual_nnz = 0;
  int64_t bytes_high_level = 0;  // both views + csc2csr
  int64_t bytes_meta = 0;
  int64_t bytes_values = 0;
  int64_t bytes_aux = 0;
  int64_t bytes_residual = 0;  // the residual's views with their pointers
  int64_t bytes_total = 0;     // the format on the host: all of the above
  // On the device, what an SpMSpV plan uploads and allocates: the format minus the host-only
  // arrays (blk_row_ptr, blk_row_idx, res_row_ptr: the segments carry their ranges), plus the
  // segments, and one workspace (state, x masks, push task lists; run_sparse's dense x of cols
  // elements comes on the first run_sparse and is not counted).
  int64_t bytes_device_format = 0;
  int64_t bytes_segments = 0;
  int64_t bytes_workspace = 0;
  int64_t bytes_device = 0;
  int64_t bytes_csr = 0;        // the same matrix in CSR (int32 indices)
  int64_t bytes_csr_csc = 0;    // CSR plus CSC
  double convert_ms = 0;        // filled by callers that timed the conversion
  std::string to_text() const;  // the table `dbsparse convert --stats` prints
};

// The format's bytes and, through make_db_layout, the device footprint of an SpMSpV plan on it
// (SpmspvStats::device_bytes is the same figure, summed from the plan's actual allocations).
template <class T>
DbStats db_stats(const DbMatrix<T>& d);
template <class T>
DbStats db_stats(const DbMatrix<T>& d, const DbLayout& layout);  // with its layout, made already
// One workspace's bytes: state, x block masks, both push task lists (not run_sparse's dense x).
template <class T>
int64_t spmspv_workspace_bytes(const DbMatrix<T>& d, const DbLayout& l);

}  // namespace dbsparse

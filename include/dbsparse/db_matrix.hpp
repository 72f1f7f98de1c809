#pragma once
// The dual-view blocked (DB) format of db-spmspv-icpp26 §3.2: 16×16 blocks with a block-CSR and a
// block-CSC view over one copy of per-block metadata and payload. Converted once from CSR.
#include <cstdint>
#include <string>
#include <vector>

#include "dbsparse/matrix.hpp"

namespace dbsparse {

// Numbering is shared with the kernels (templates/spmspv_common.cuh): do not reorder.
enum class BlockType : uint8_t { Coo = 0, Dense = 1, ForceCsr = 2, ForceCsc = 3, PatchedCsr = 4 };
constexpr int kBlockTypes = 5;
const char* to_string(BlockType t);  // "coo", "dense", "csr", "csc", "pcsr"

struct DbThresholds {
  int th0 = 32;      // nnz < th0: COO
  int th1 = 128;     // nnz > th1: Dense
  double th2 = 2.0;  // skew ratio above which ForceCSR / ForceCSC is chosen
  // Store patched CSR's column view (col_ptr and a byte per nonzero, the paper's layout) as well as
  // its rows. Off by default: both paths walk these blocks by rows (the row walk beat the column
  // walk at every density measured on the H200, NOTES.md step 5), so nothing reads it; leaving it
  // out saves 34 + nnz bytes a block (27-point stencil: 44.7% -> ~56% smaller than CSR+CSC).
  bool pcsr_columns = false;
};

// The type a block gets, given the nnz of each of its 16 rows and 16 columns (DESIGN.md, the DB
// format): COO / Dense by nnz, else ForceCSC when skew_r/skew_c > th2, ForceCSR when
// skew_c/skew_r > th2, else patched CSR; skew_a = max line nnz / (nnz/16 + 1e-9).
BlockType choose_block_type(const int row_nnz[16], const int col_nnz[16], int nnz,
                            const DbThresholds& th);

// Per-block metadata, stored once, in block-CSR order. 20 bytes, read by the kernels as is.
struct BlockMeta {
  int32_t row;       // block row
  int32_t col;       // block column
  uint32_t val_off;  // first value of this block in DbMatrix::values
  uint32_t aux_off;  // first byte of this block's index data in DbMatrix::aux (4-byte aligned)
  uint16_t nnz;      // stored entries (Dense: the true nonzero count; 256 values are stored)
  uint8_t type;      // BlockType
  uint8_t pad = 0;
};
static_assert(sizeof(BlockMeta) == 20);

// Payload of one block, by type. Local indices r, c are in [0, 16).
//   Coo:        values[nnz] in row-major order;   aux: nnz bytes (r << 4 | c)
//   Dense:      values[256] row-major (zeros where A has none); aux: nothing
//   ForceCsr:   values[nnz] row-major;            aux: uint16 row_ptr[17], uint16 row_mask[16]
//                                                  (bit c of row_mask[r]: A(r, c) stored)
//   ForceCsc:   values[nnz] column-major;         aux: uint16 col_ptr[17], uint16 col_mask[16]
//                                                  (bit r of col_mask[c]: A(r, c) stored)
//   PatchedCsr: values[nnz] row-major;            aux: uint16 row_ptr[17], uint16 row_mask[16],
//                                                  uint16 col_ptr[17], then nnz bytes in
//                                                  column-major order, each (r << 4 | k) where
//                                                  values[row_ptr[r] + k] is that entry
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

  int64_t nnz = 0;  // of the source matrix
  int64_t blocks() const { return static_cast<int64_t>(meta.size()); }
};

// Throws UsageError when the payload would not fit the 32-bit offsets.
template <class T>
DbMatrix<T> csr_to_db(const CsrMatrix<T>& a, const DbThresholds& th = {});
template <class T>
CsrMatrix<T> db_to_csr(const DbMatrix<T>& d);

struct DbStats {
  int64_t blocks_by_type[kBlockTypes] = {};
  int64_t nnz_by_type[kBlockTypes] = {};
  int64_t bytes_high_level = 0;  // both views + csc2csr
  int64_t bytes_meta = 0;
  int64_t bytes_values = 0;
  int64_t bytes_aux = 0;
  int64_t bytes_total = 0;
  int64_t bytes_csr = 0;      // the same matrix in CSR (int32 indices)
  int64_t bytes_csr_csc = 0;  // CSR plus CSC
  double convert_ms = 0;      // filled by callers that timed the conversion
  std::string to_text() const;  // the table `dbsparse convert --stats` prints
};

template <class T>
DbStats db_stats(const DbMatrix<T>& d);

}  // namespace dbsparse

#pragma once
// The BRP format of BRP-SpMM (docs/DESIGN.md [3], slides 12-16): a matrix split into a tensor
// core part, where every group of TC blocks holds the same number of nonzeros so that each group's
// run of values is one aligned, fixed-size load, and a residual CSR for what does not fill a group.
//
// Definition (A is M x K, parameters f and g, both in {1, 2, 4, 8}):
//  - Row window w is rows [16w, 16w + 16). Its condensed columns are the distinct columns with a
//    nonzero in the window, ascending.
//  - A TC block is 16 rows x 8 slots (the k of mma m16n8k8). A slot holds exactly f nonzeros of
//    one original column (old_col_id), from f different rows of the window, rows ascending.
//  - Per window, each condensed column's nonzeros, in row order, are cut into slots of f; the last
//    (count mod f) of them go to the residual. The window's slots, in that order, are cut into
//    groups of 8g slots (g blocks); the slots after the last full group go to the residual.
//    So every group holds exactly 8*g*f nonzeros, none of them padding. (Stored entries count as
//    nonzeros, explicit zeros included, so the round trip keeps the pattern.)
//  - TC part, groups of all windows in window order:
//      group_window_id[q]              the group's window
//      old_col_id[q*8g + s]            slot s's column (block s / 8, slot s % 8 of that block)
//      local_id[q*local_stride + e]    the group's nonzero e, slot by slot and rows ascending in a
//      values[q*value_stride + e]      slot (so its slot is s = e / f): local id = row in the
//                                      window * 8 + s % 8, in 0..127
//    Each group's values start at a multiple of 128 bytes from the array's start (the slides'
//    aligned loads): value_stride is 8gf values rounded up to 128 bytes. Its local ids start at a
//    multiple of 32 bytes (one L2 sector): local_stride is 8gf bytes rounded up to 32, since
//    rounding them to 128 cost 96 of every 128 bytes at f = 1, g = 4 (BRP was 1.46x CSR on RMAT;
//    1.13x with 32 on rmat:scale=16,ef=16).
//    The padding after a run holds value 0 and local id kBrpPadLocalId.
//  - Residual part: CSR over the rows with residual nonzeros (res_rows_id ascending, columns
//    ascending within a row).
#include <cstdint>
#include <string>
#include <vector>

#include "dbsparse/abi/spmm.h"
#include "dbsparse/matrix.hpp"

namespace dbsparse {

// The shape is the kernels' (abi/spmm.h): one group is g mma.m16n8k8 A operands.
inline constexpr int kBrpWindowRows = abi::kSpmmWindowRows;  // m of mma m16n8k8
inline constexpr int kBrpBlockSlots = abi::kSpmmBlockSlots;  // k of mma m16n8k8
inline constexpr int kBrpValueAlignBytes = 128;
inline constexpr int kBrpLocalAlignBytes = 32;
// Outside 0..127 (16 rows x 8 slots), so a kernel that reads past a run cannot mistake padding
// for an entry.
inline constexpr uint8_t kBrpPadLocalId = abi::kSpmmPadLocalId;

struct BrpParams {
  int f = 1;  // nonzeros per slot
  int g = 4;  // TC blocks per group
};
// Throws UsageError naming the bad value and the allowed set {1, 2, 4, 8}.
void validate(const BrpParams& p);

template <class T>
struct BrpMatrix {
  int32_t rows = 0, cols = 0;
  int f = 1, g = 4;
  int32_t value_stride = 0;  // elements from one group's values to the next
  int32_t local_stride = 0;  // bytes from one group's local ids to the next

  std::vector<int32_t> group_window_id;  // groups
  std::vector<int32_t> old_col_id;       // groups * 8g
  std::vector<uint8_t> local_id;         // groups * local_stride
  std::vector<T> values;                 // groups * value_stride

  std::vector<int32_t> res_rows_id;        // residual rows
  std::vector<int32_t> res_row_offset{0};  // residual rows + 1
  std::vector<int32_t> res_col_id;         // residual nnz
  std::vector<T> res_values;               // residual nnz

  int64_t groups() const { return static_cast<int64_t>(group_window_id.size()); }
  int64_t group_nnz() const { return int64_t{kBrpBlockSlots} * g * f; }
  int64_t tc_nnz() const { return groups() * group_nnz(); }
  int64_t residual_nnz() const { return static_cast<int64_t>(res_col_id.size()); }
  int64_t nnz() const { return tc_nnz() + residual_nnz(); }
};

// Strides of a group's runs: 8gf values of `value_bytes` each rounded up to 128 bytes, in values;
// 8gf local ids rounded up to 32 bytes, in bytes.
int32_t brp_value_stride(int f, int g, int value_bytes);
int32_t brp_local_stride(int f, int g);

// Throws UsageError naming the first array length that would pass int32 with this many groups
// (the kernels index every array with int32).
void check_brp_counts(int64_t groups, const BrpParams& p, int value_bytes);

template <class T>
BrpMatrix<T> csr_to_brp(const CsrMatrix<T>& a, const BrpParams& p = {});
// Exact inverse of csr_to_brp: same pattern and values, columns sorted.
template <class T>
CsrMatrix<T> brp_to_csr(const BrpMatrix<T>& m);

struct BrpStats {
  int f = 1, g = 4;
  int64_t nnz = 0, tc_nnz = 0, residual_nnz = 0;
  int64_t groups = 0;
  int64_t windows = 0;     // ceil(rows / 16)
  int64_t tc_windows = 0;  // windows with at least one group
  int64_t residual_rows = 0;
  int64_t padding_bytes = 0;   // after the runs, in values and local_id
  int64_t bytes_tc = 0;        // the four TC arrays, padding included
  int64_t bytes_residual = 0;  // the four residual arrays
  int64_t bytes = 0;           // both parts: what a plan would upload
  int64_t bytes_csr = 0;       // the same matrix in CSR: int32 row_ptr and col_idx, T values
  double tc_share = 0;         // tc_nnz / nnz (0 for an empty matrix)
  int value_bytes = 4;         // sizeof(T)
  double convert_ms = 0;       // filled by callers that timed the conversion
  // csr_to_brp_device (brp_device.hpp): the conversion ran on the GPU, and the device memory it
  // allocated beyond the input CSR and the output, at its peak, against the bound
  // 4 * nnz * (4 + value_bytes) (4 index and value bytes per nonzero, 4 times).
  bool on_device = false;
  int64_t peak_extra_bytes = 0;
  int64_t peak_bound_bytes() const { return 4 * nnz * (4 + value_bytes); }
  std::string to_text() const;  // the table `dbsparse convert --format brp --stats` prints
};
template <class T>
BrpStats brp_stats(const BrpMatrix<T>& m);

// The share of a's nonzeros that csr_to_brp would put in full groups, from per-window column
// counts alone: a cheap feature for choosing (f, g) before converting.
template <class T>
double brp_group_share(const CsrMatrix<T>& a, int f, int g);

// C = alpha * A * B + beta * C, B K x n and C M x n, both row-major; accumulates in double. With
// beta == 0, C is resized to M x n and its old contents are not read.
template <class T>
void reference_spmm(const CsrMatrix<T>& a, const std::vector<T>& b, int n, std::vector<T>& c, T alpha, T beta);

// The same product computed the way the BRP kernels do, which makes it their executable spec:
// C = beta * C; each group as a dense 16 x 8g tile (zero where no entry) times the 8g rows of B
// its old_col_ids name, accumulated in T over the group, then alpha * tile added into C; then each
// residual row's sum in T, times alpha, added into C.
template <class T>
void brp_spmm_cpu(const BrpMatrix<T>& m, const std::vector<T>& b, int n, std::vector<T>& c, T alpha, T beta);

}  // namespace dbsparse

#pragma once
// Condensed tensor-core windows: the zero-padded counterpart of BRP (brp.hpp) for matrices of
// moderate sparsity, where BRP's exact slots of f nonzeros leave most of the matrix to the
// residual rows (BRP-SpMM's own critique, docs/DESIGN.md [3]: f = 1 is poor there; f = 8 takes a column's entries only
// in whole runs of 8).
//
// Definition (A is M x K, parameter g in {1, 2, 4, 8}):
//  - Row window w is rows [16w, 16w + 16), as in BRP. Its condensed columns are the distinct
//    columns with an entry in the window, ascending.
//  - Slot s of the window holds condensed column s whole: every entry of the window in that
//    column, wherever its row; the other rows are 0. Blocks are 8 consecutive slots (the k of
//    mma.m16n8k8), groups are g consecutive blocks; the window's last group is padded with slots of
//    value 0 whose column is the window's last condensed column (any valid row of B would do: it
//    is multiplied by 0).
//  - So every entry is in exactly one place, there is no residual, and the price is the padding:
//    fill() = nnz / (groups * g * 128). A's tiles are stored as the TC kernel reads them, in
//    mma fragment order (abi/spmm.h: brp_afrag_index for f32, brp_afrag16_index for 16 bits),
//    which is what BRP's expanded operands (SpmmConfig::expand_min_f) are: the plan runs
//    brp_tc_windows<.., FRAGS = true> on these arrays unchanged.
// As with BRP's zero-filled tiles, a non-finite value in a row of B that a window's slot names
// reaches every row of that window (0 * inf is NaN), not only the rows with an entry there.
#include <cstdint>
#include <vector>

#include "dbsparse/matrix.hpp"
#include "dbsparse/spmm.hpp"

namespace dbsparse {

struct CondensedTc {
  int32_t rows = 0, cols = 0;
  int g = 4;
  SpmmDtype dtype = SpmmDtype::F32;
  std::vector<int32_t> win_group;     // windows + 1: window w's groups are [win_group[w], win_group[w + 1])
  std::vector<int32_t> group_window;  // groups
  std::vector<int32_t> old_col;       // groups * 8g: slot s of group q is B's row old_col[q * 8g + s]
  // f32: groups * g * 32 lanes * 4 tf32 words (brp_afrag_index); f16 / bf16: groups * ceil(g / 2)
  // * 32 lanes * 4 words of two halves (brp_afrag16_index, little-endian halves).
  std::vector<uint32_t> afrag;
  int64_t nnz = 0;          // A's stored entries
  int64_t used_blocks = 0;  // blocks with at least one slot that is a condensed column

  int64_t groups() const { return static_cast<int64_t>(group_window.size()); }
  int64_t slots() const { return groups() * 8 * g; }
  // Stored entries over the tiles' capacity: 1 is a dense window, 1/128 one entry a block.
  double fill() const { return groups() ? double(nnz) / (double(groups()) * g * 128.0) : 0.0; }
  int64_t device_bytes() const {
    return static_cast<int64_t>(win_group.size() + group_window.size() + old_col.size() + afrag.size()) * 4;
  }
  // The same matrix in CSR, int32 indices and values of dtype: what the tiles are weighed against.
  int64_t csr_bytes() const { return (int64_t{rows} + 1) * 4 + nnz * (4 + spmm_value_bytes(dtype)); }
};

// The fill csr_to_condensed would reach at this g, from per-window distinct-column counts alone:
// what SpmmPath::Auto weighs (SpmmConfig::min_condensed_fill) before converting. 0 for no entries.
// max_windows > 0: an estimate from that many windows evenly spaced (all when there are fewer).
// Auto samples 2048: the full count over a large graph was a large share of plan_spmm, for a choice
// a sample makes as well (docs/decisions/spmm-kernel-design.md).
double condensed_fill(const CsrMatrix<float>& a, int g, int32_t max_windows = 0);

// Throws UsageError for g outside {1, 2, 4, 8}, or when an array would pass int32 indexing.
CondensedTc csr_to_condensed(const CsrMatrix<float>& a, int g, SpmmDtype dtype = SpmmDtype::F32);

// The f32 values the tiles hold (tf32 words read back as floats, 16-bit halves widened), as a
// dense M x K matrix row-major: the inverse the tests check against A (rounded the same way).
std::vector<float> condensed_to_dense(const CondensedTc& m);

// f32 to the tf32 word mma reads, rounded to nearest with ties away from zero as cvt.rna.tf32.f32
// does (the low 13 bits zero); NaN stays NaN, infinities stay infinite.
uint32_t tf32_bits(float x);

}  // namespace dbsparse

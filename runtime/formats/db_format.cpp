// CSR <-> DB conversion (db_matrix.hpp has the layout) and its storage statistics.
// csr_to_db is linear in nnz + blocks + block_rows + block_cols: the block structure is found with
// a scratch array indexed by block column and ordered by two counting sorts, never a comparison
// sort, because it runs on matrices of 100M+ nonzeros.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "dbsparse/db_matrix.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse {

const char* to_string(BlockType t) {
  switch (t) {
    case BlockType::Coo:
      return "coo";
    case BlockType::Dense:
      return "dense";
    case BlockType::ForceCsr:
      return "csr";
    case BlockType::ForceCsc:
      return "csc";
  }
  return "?";
}

BlockType choose_block_type(const int row_nnz[16], const int col_nnz[16], int nnz, const DbThresholds& th) {
  if (nnz < th.th0) return BlockType::Coo;
  if (nnz > th.th1) return BlockType::Dense;
  int max_r = 0, max_c = 0;
  for (int i = 0; i < 16; ++i) {
    max_r = std::max(max_r, row_nnz[i]);
    max_c = std::max(max_c, col_nnz[i]);
  }
  const double mean = nnz / 16.0 + 1e-9;
  const double skew_r = max_r / mean, skew_c = max_c / mean;
  if (skew_r / skew_c > th.th2) return BlockType::ForceCsc;
  // Columns skewed, or neither: the paper's patched CSR in the balanced case is stored and walked as
  // ForceCSR (db_matrix.hpp says why), so both are ForceCSR.
  return BlockType::ForceCsr;
}

namespace {

constexpr uint64_t kMaxOffset = std::numeric_limits<uint32_t>::max();
constexpr size_t kLineArrayBytes = 17 * 2 + 16 * 2;  // uint16 ptr[17] + uint16 mask[16]

// Appends n elements to v and returns where they start; refuses to let an offset outgrow uint32.
template <class V>
typename V::value_type* grow(V& v, size_t n, const char* what) {
  size_t old = v.size();
  if (old + n > kMaxOffset)
    throw UsageError(
        fmt::format("csr_to_db: the {} payload exceeds 2^32 elements; the DB format's "
                    "32-bit offsets cannot address it (use fewer Dense blocks or split "
                    "the matrix)",
                    what));
  v.resize(old + n);
  return v.data() + old;
}

// Builds one block's payload from its entries, given in row-major order as (r << 4 | c) bytes.
template <class T>
class BlockWriter {
 public:
  explicit BlockWriter(DbMatrix<T>& d) : d_(d) {}

  void write(size_t id, int32_t brow, int32_t bcol, const uint8_t* rc, const T* val, int n) {
    const DbThresholds& th = d_.thresholds;
    int rn[16] = {}, cn[16] = {};
    uint16_t rmask[16] = {}, cmask[16] = {}, rptr[17] = {}, cptr[17] = {};
    // COO and Dense follow from nnz alone (as in choose_block_type); most blocks of very sparse
    // matrices are COO, so the line counts are made only for the others.
    BlockType t = n < th.th0 ? BlockType::Coo : n > th.th1 ? BlockType::Dense : BlockType::ForceCsr;
    if (t == BlockType::ForceCsr) {  // not decided by nnz: by skew
      for (int e = 0; e < n; ++e) {
        int r = rc[e] >> 4, c = rc[e] & 15;
        ++rn[r];
        ++cn[c];
        rmask[r] |= static_cast<uint16_t>(1u << c);
        cmask[c] |= static_cast<uint16_t>(1u << r);
      }
      t = choose_block_type(rn, cn, n, th);
      prefix(rn, rptr);
      prefix(cn, cptr);
    }
    const auto val_off = static_cast<uint32_t>(d_.values.size());
    const auto aux_off = static_cast<uint32_t>(d_.aux.size());
    d_.meta[id] = {brow, bcol, val_off, aux_off, static_cast<uint16_t>(n), static_cast<uint8_t>(t), 0};
    switch (t) {
      case BlockType::Coo:
        std::memcpy(grow(d_.values, n, "values"), val, n * sizeof(T));
        std::memcpy(aux(n), rc, n);
        break;
      case BlockType::Dense: {
        T* out = grow(d_.values, 256, "values");  // zero-filled by resize
        for (int e = 0; e < n; ++e) out[rc[e]] = val[e];
        break;
      }
      case BlockType::ForceCsr:
        std::memcpy(grow(d_.values, n, "values"), val, n * sizeof(T));
        put_lines(aux(kLineArrayBytes), rptr, rmask);
        break;
      case BlockType::ForceCsc: {
        T* out = grow(d_.values, n, "values");
        uint16_t next[16];
        std::memcpy(next, cptr, sizeof next);
        // Row-major input visits each column's rows in increasing order: column-major, sorted.
        for (int e = 0; e < n; ++e) out[next[rc[e] & 15]++] = val[e];
        put_lines(aux(kLineArrayBytes), cptr, cmask);
        break;
      }
    }
  }

 private:
  static void prefix(const int count[16], uint16_t ptr[17]) {
    ptr[0] = 0;
    for (int i = 0; i < 16; ++i) ptr[i + 1] = static_cast<uint16_t>(ptr[i] + count[i]);
  }
  static void put_lines(uint8_t* out, const uint16_t ptr[17], const uint16_t mask[16]) {
    std::memcpy(out, ptr, 34);
    std::memcpy(out + 34, mask, 32);
  }
  // n bytes of aux, padded so the next block's aux_off stays 4-byte aligned.
  uint8_t* aux(size_t n) { return grow(d_.aux, (n + 3) & ~size_t{3}, "aux"); }

  DbMatrix<T>& d_;
};

template <class T>
void check_csr_shape(const CsrMatrix<T>& a) {
  if (a.rows < 0 || a.cols < 0) throw UsageError("csr_to_db: negative dimension");
  if (a.row_ptr.size() != static_cast<size_t>(a.rows) + 1 || a.row_ptr.front() != 0 ||
      static_cast<size_t>(a.row_ptr.back()) != a.col_idx.size() || a.col_idx.size() != a.values.size())
    throw UsageError("csr_to_db: row_ptr, col_idx and values disagree in size");
}

// The last row of block row I, plus one.
template <class T>
int32_t row_end(const CsrMatrix<T>& a, int32_t I) {
  return static_cast<int32_t>(std::min<int64_t>(a.rows, 16 * int64_t{I} + 16));
}

// Pass 1: which block columns each block row touches, in order of discovery, and how many entries
// each such block holds; blocks below d.thresholds.residual_below are left out (their entries go
// to the residual in pass 2). Fills d.blk_row_ptr and d.res_row_ptr; returns the kept block
// columns grouped by block row, and counts the blocks of each block column into per_col[J + 1].
// The per-entry checks here are what keep pass 2's scratch indexing in bounds.
template <class T>
std::vector<int32_t> find_blocks(const CsrMatrix<T>& a, DbMatrix<T>& d, std::vector<int32_t>& per_col) {
  const int32_t br = d.block_rows, bc = d.block_cols;
  const int res_below = d.thresholds.residual_below;
  std::vector<int32_t> count(bc, 0);  // entries of block column J in this block row (0: not seen)
  std::vector<int32_t> row_found;     // block columns of this block row, in order of discovery
  std::vector<int32_t> found;         // kept block columns, grouped by block row
  per_col.assign(static_cast<size_t>(bc) + 1, 0);
  d.blk_row_ptr.assign(static_cast<size_t>(br) + 1, 0);
  d.res_row_ptr.assign(static_cast<size_t>(br) + 1, 0);
  for (int32_t I = 0; I < br; ++I) {
    row_found.clear();
    for (int32_t i = 16 * I; i < row_end(a, I); ++i) {
      if (a.row_ptr[i + 1] < a.row_ptr[i]) throw UsageError(fmt::format("csr_to_db: row_ptr decreases at row {}", i));
      int32_t prev = -1;
      for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        int32_t c = a.col_idx[p];
        if (c <= prev || c >= a.cols)
          throw UsageError(
              fmt::format("csr_to_db: row {}: column indices must be sorted, unique and "
                          "in [0, {})",
                          i, a.cols));
        prev = c;
        if (count[c >> 4]++ == 0) row_found.push_back(c >> 4);
      }
    }
    int32_t residual = 0;
    for (int32_t J : row_found) {
      if (count[J] < res_below) {
        residual += count[J];
      } else {
        found.push_back(J);
        ++per_col[J + 1];
      }
      count[J] = 0;
    }
    d.blk_row_ptr[I + 1] = static_cast<int32_t>(found.size());
    d.res_row_ptr[I + 1] = d.res_row_ptr[I] + residual;
  }
  return found;
}

// The two block views from pass 1's blocks: blk_col_ptr, blk_row_idx, blk_col_idx and csc2csr.
template <class T>
void build_block_views(DbMatrix<T>& d, const std::vector<int32_t>& found, std::vector<int32_t> per_col) {
  const int32_t br = d.block_rows, bc = d.block_cols;
  const size_t nb = found.size();
  // Block-CSC view: counting sort by block column; block rows come out increasing in each column.
  for (int32_t J = 0; J < bc; ++J) per_col[J + 1] += per_col[J];
  d.blk_col_ptr = per_col;
  d.blk_row_idx.resize(nb);
  for (int32_t I = 0; I < br; ++I)
    for (int32_t k = d.blk_row_ptr[I]; k < d.blk_row_ptr[I + 1]; ++k) d.blk_row_idx[per_col[found[k]]++] = I;
  // Block-CSR order: walking the CSC view by column and dealing blocks out to their block rows
  // sorts each block row by column; where each block lands is its id.
  d.blk_col_idx.resize(nb);
  d.csc2csr.resize(nb);
  std::vector<int32_t> next(d.blk_row_ptr.begin(), d.blk_row_ptr.end() - 1);
  for (int32_t J = 0; J < bc; ++J)
    for (int32_t p = d.blk_col_ptr[J]; p < d.blk_col_ptr[J + 1]; ++p) {
      int32_t id = next[d.blk_row_idx[p]]++;
      d.blk_col_idx[id] = J;
      d.csc2csr[p] = id;
    }
}

// Reserves upper bounds for the payload, so it is never copied by regrowth: only the pages written
// get touched. A Dense block has at least min_dense entries, which bounds how many there can be.
template <class T>
void reserve_payload(DbMatrix<T>& d) {
  const DbThresholds& th = d.thresholds;
  const int64_t nb = d.blocks();
  const int64_t min_dense = std::max({int64_t{th.th1} + 1, int64_t{th.th0}, int64_t{1}});
  const int64_t max_dense = std::min<int64_t>(nb, d.nnz / min_dense);
  d.values.reserve(std::min<uint64_t>(kMaxOffset, d.nnz + max_dense * std::max<int64_t>(0, 256 - min_dense)));
  d.aux.reserve(std::min<uint64_t>(kMaxOffset, d.nnz + 103 * nb));
}

// Pass 2: buckets each block row's entries by block, in row-major order, and writes the payloads
// (meta, values, aux) and the residual's row view (res_rc, res_row_val).
template <class T>
void write_payloads(const CsrMatrix<T>& a, DbMatrix<T>& d) {
  const int32_t br = d.block_rows;
  d.meta.resize(d.blk_col_idx.size());
  reserve_payload(d);
  BlockWriter<T> writer(d);
  const int64_t nres = d.res_row_ptr.back();
  d.res_rc.resize(static_cast<size_t>(nres));
  d.res_row_val.resize(static_cast<size_t>(nres));
  std::vector<int32_t> slot(d.block_cols, -1);  // block column -> local index in the current block row, or -1
  std::vector<int32_t> start, fill;
  std::vector<uint8_t> rc;
  std::vector<T> val;
  for (int32_t I = 0; I < br; ++I) {
    const int32_t base = d.blk_row_ptr[I], nbk = d.blk_row_ptr[I + 1] - base;
    const int32_t p0 = a.row_ptr[16 * I], p1 = a.row_ptr[row_end(a, I)];
    for (int32_t k = 0; k < nbk; ++k) slot[d.blk_col_idx[base + k]] = k;
    start.assign(static_cast<size_t>(nbk) + 1, 0);
    for (int32_t p = p0; p < p1; ++p) {
      const int32_t k = slot[a.col_idx[p] >> 4];
      if (k >= 0) ++start[k + 1];
    }
    for (int32_t k = 0; k < nbk; ++k) start[k + 1] += start[k];
    fill.assign(start.begin(), start.end() - 1);
    rc.resize(static_cast<size_t>(p1 - p0));
    val.resize(static_cast<size_t>(p1 - p0));
    int32_t res = d.res_row_ptr[I];
    for (int32_t i = 16 * I; i < row_end(a, I); ++i) {
      const int r = i - 16 * I;
      for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        const int32_t k = slot[a.col_idx[p] >> 4];
        if (k < 0) {  // a residual entry: row-major, so each row's columns increase
          d.res_rc[res] = static_cast<uint32_t>(r) << abi::kResidualLocalShift | static_cast<uint32_t>(a.col_idx[p]);
          d.res_row_val[res++] = a.values[p];
          continue;
        }
        int32_t q = fill[k]++;
        rc[q] = static_cast<uint8_t>(r << 4 | (a.col_idx[p] & 15));
        val[q] = a.values[p];
      }
    }
    for (int32_t k = 0; k < nbk; ++k) {
      writer.write(base + k, I, d.blk_col_idx[base + k], rc.data() + start[k], val.data() + start[k],
                   start[k + 1] - start[k]);
      slot[d.blk_col_idx[base + k]] = -1;
    }
  }
}

// The residual's column view (res_col_ptr, res_cr, res_col_val): a counting sort of the row view
// by (block column, local column); rows come out increasing within each column. The row view is
// dropped after unless d.thresholds.residual_rows keeps it.
template <class T>
void build_residual_columns(DbMatrix<T>& d) {
  const int32_t bc = d.block_cols;
  std::vector<int64_t> by_col(static_cast<size_t>(d.cols) + 1, 0);
  for (uint32_t e : d.res_rc) ++by_col[(e & abi::kResidualIndexMask) + 1];
  for (int32_t c = 0; c < d.cols; ++c) by_col[c + 1] += by_col[c];
  d.res_col_ptr.assign(static_cast<size_t>(bc) + 1, 0);
  for (int32_t J = 0; J <= bc; ++J)
    d.res_col_ptr[J] = static_cast<int32_t>(by_col[std::min<int64_t>(int64_t{16} * J, d.cols)]);
  const size_t nres = d.res_rc.size();
  d.res_cr.resize(nres);
  d.res_col_val.resize(nres);
  for (int32_t I = 0; I < d.block_rows; ++I)
    for (int32_t k = d.res_row_ptr[I]; k < d.res_row_ptr[I + 1]; ++k) {
      const uint32_t c = d.res_rc[k] & abi::kResidualIndexMask;
      const uint32_t row = static_cast<uint32_t>(16 * I) + (d.res_rc[k] >> abi::kResidualLocalShift);
      const int64_t q = by_col[c]++;
      d.res_cr[q] = (c & 15u) << abi::kResidualLocalShift | row;
      d.res_col_val[q] = d.res_row_val[k];
    }
  if (!d.thresholds.residual_rows) {
    std::vector<uint32_t>().swap(d.res_rc);
    std::vector<T>().swap(d.res_row_val);
  }
}

}  // namespace

template <class T>
DbMatrix<T> csr_to_db(const CsrMatrix<T>& a, const DbThresholds& th) {
  check_csr_shape(a);
  DbMatrix<T> d;
  d.rows = a.rows;
  d.cols = a.cols;
  d.block_rows = static_cast<int32_t>((int64_t{a.rows} + 15) / 16);
  d.block_cols = static_cast<int32_t>((int64_t{a.cols} + 15) / 16);
  d.thresholds = th;
  d.nnz = a.nnz();
  // The residual's packed indices cannot address larger matrices: every entry stays in a block.
  if (a.rows >= kResidualMaxDim || a.cols >= kResidualMaxDim) d.thresholds.residual_below = 0;
  std::vector<int32_t> per_col;
  {
    const std::vector<int32_t> found = find_blocks(a, d, per_col);
    build_block_views(d, found, std::move(per_col));
  }
  write_payloads(a, d);
  build_residual_columns(d);
  return d;
}

namespace {

// Calls f(r, c, v) for each entry of block id, in an order where each row's columns increase.
// Dense blocks yield only their nonzero values: their stored zeros cannot be told from padding.
template <class T, class F>
void for_each_entry(const DbMatrix<T>& d, int64_t id, F&& f) {
  const BlockMeta& m = d.meta[id];
  const T* v = d.values.data() + m.val_off;
  const uint8_t* a = d.aux.data() + m.aux_off;
  uint16_t ptr[17], mask[16];
  auto lines = [&] {
    std::memcpy(ptr, a, 34);
    std::memcpy(mask, a + 34, 32);
  };
  switch (static_cast<BlockType>(m.type)) {
    case BlockType::Coo:
      for (int e = 0; e < m.nnz; ++e) f(a[e] >> 4, a[e] & 15, v[e]);
      return;
    case BlockType::Dense:
      for (int e = 0; e < 256; ++e)
        if (v[e] != T(0)) f(e >> 4, e & 15, v[e]);
      return;
    case BlockType::ForceCsr:
      lines();
      for (int r = 0; r < 16; ++r)
        for (uint32_t bits = mask[r], k = ptr[r]; bits; bits &= bits - 1, ++k) f(r, std::countr_zero(bits), v[k]);
      return;
    case BlockType::ForceCsc:  // column-major: still increasing columns within each row
      lines();
      for (int c = 0; c < 16; ++c)
        for (uint32_t bits = mask[c], k = ptr[c]; bits; bits &= bits - 1, ++k) f(std::countr_zero(bits), c, v[k]);
      return;
  }
  throw UsageError(fmt::format("db_to_csr: block {} has unknown type {}", id, m.type));
}

}  // namespace

template <class T>
CsrMatrix<T> db_to_csr(const DbMatrix<T>& d) {
  CsrMatrix<T> a;
  a.rows = d.rows;
  a.cols = d.cols;
  a.row_ptr.assign(static_cast<size_t>(d.rows) + 1, 0);
  for (int64_t id = 0; id < d.blocks(); ++id) {
    const int32_t row0 = 16 * d.meta[id].row;
    for_each_entry(d, id, [&](int r, int, T) { ++a.row_ptr[row0 + r + 1]; });
  }
  // Residual entries from the column view (always stored), added after each row's block entries;
  // rows that get both are sorted by column at the end.
  const bool has_residual = d.res_col_ptr.size() == static_cast<size_t>(d.block_cols) + 1;
  auto for_each_residual = [&](auto&& f) {
    for (int32_t J = 0; has_residual && J < d.block_cols; ++J)
      for (int32_t k = d.res_col_ptr[J]; k < d.res_col_ptr[J + 1]; ++k)
        f(static_cast<int32_t>(d.res_cr[k] & abi::kResidualIndexMask),
          16 * J + static_cast<int32_t>(d.res_cr[k] >> abi::kResidualLocalShift), d.res_col_val[k]);
  };
  for_each_residual([&](int32_t r, int32_t, T) { ++a.row_ptr[r + 1]; });
  for (int32_t i = 0; i < d.rows; ++i) a.row_ptr[i + 1] += a.row_ptr[i];
  a.col_idx.resize(a.row_ptr.back());
  a.values.resize(a.row_ptr.back());
  std::vector<int32_t> next(a.row_ptr.begin(), a.row_ptr.end() - 1);
  // Blocks are visited in increasing block column within each block row, so rows come out sorted.
  for (int64_t id = 0; id < d.blocks(); ++id) {
    const int32_t row0 = 16 * d.meta[id].row, col0 = 16 * d.meta[id].col;
    for_each_entry(d, id, [&](int r, int c, T v) {
      int32_t q = next[row0 + r]++;
      a.col_idx[q] = col0 + c;
      a.values[q] = v;
    });
  }
  if (d.residual_nnz() == 0) return a;
  for_each_residual([&](int32_t r, int32_t c, T v) {
    int32_t q = next[r]++;
    a.col_idx[q] = c;
    a.values[q] = v;
  });
  std::vector<std::pair<int32_t, T>> row;
  for (int32_t i = 0; i < d.rows; ++i) {
    const int32_t p0 = a.row_ptr[i], p1 = a.row_ptr[i + 1];
    if (std::is_sorted(a.col_idx.begin() + p0, a.col_idx.begin() + p1)) continue;
    row.clear();
    for (int32_t p = p0; p < p1; ++p) row.emplace_back(a.col_idx[p], a.values[p]);
    std::sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (int32_t p = p0; p < p1; ++p) std::tie(a.col_idx[p], a.values[p]) = row[p - p0];
  }
  return a;
}

template <class T>
DbLayout make_db_layout(const DbMatrix<T>& d) {
  DbLayout l;
  // Pull: each row block's blocks cut into segments by format weight, then its residual entries
  // cut every kResidualChunk. A segment alone on its row block writes y directly, the others add.
  std::vector<int32_t> per_row_block(static_cast<size_t>(d.block_rows), 0);
  for (int32_t rb = 0; rb < d.block_rows; ++rb) {
    int32_t start = d.blk_row_ptr[rb], weight = 0;
    for (int32_t b = start; b < d.blk_row_ptr[rb + 1]; ++b) {
      weight += abi::segment_weight(d.meta[b].type);
      if (weight >= abi::kSegmentWeight || b + 1 == d.blk_row_ptr[rb + 1]) {
        l.segments.push_back({rb, start, b + 1, 0});
        ++per_row_block[rb];
        start = b + 1;
        weight = 0;
      }
    }
  }
  static_assert(abi::kSegmentWeight <= abi::kSegmentMaxBlocks, "every block weighs at least 1");
  l.block_segments = static_cast<int32_t>(l.segments.size());
  // Residual segments exist only with the row view; either way a row block the residual touches
  // has no segment alone (the residual's push adds into it).
  const bool rows_view = !d.res_rc.empty();
  if (d.res_row_ptr.size() == static_cast<size_t>(d.block_rows) + 1)
    for (int32_t rb = 0; rb < d.block_rows; ++rb)
      for (int32_t k = d.res_row_ptr[rb]; k < d.res_row_ptr[rb + 1]; k += kResidualChunk) {
        if (rows_view) l.segments.push_back({rb, k, std::min(k + kResidualChunk, d.res_row_ptr[rb + 1]), 0});
        ++per_row_block[rb];
      }
  for (auto& s : l.segments) s.alone = per_row_block[s.row_block] == 1;
  if (l.segments.size() > static_cast<size_t>(INT32_MAX))
    throw UsageError(fmt::format("spmspv layout: {} pull segments exceed the 32-bit count", l.segments.size()));
  // Push: the most tasks one call can list, every column block active.
  if (d.block_cols >= (1 << abi::kTaskCountShift))
    throw UsageError(fmt::format("spmspv layout: {} block columns exceed the push task's 28-bit column", d.block_cols));
  for (int32_t c = 0; c < d.block_cols; ++c) {
    l.block_task_capacity += (d.blk_col_ptr[c + 1] - d.blk_col_ptr[c] + abi::kPushChunk - 1) / abi::kPushChunk;
    const int32_t n = d.res_col_ptr.empty() ? 0 : d.res_col_ptr[c + 1] - d.res_col_ptr[c];
    if (n > abi::kResidualSmall)
      l.residual_task_capacity += (n + kResidualChunk - 1) / kResidualChunk;
    else if (n > 0)
      ++l.small_task_capacity;
  }
  if (l.block_task_capacity > INT32_MAX || l.residual_task_capacity > INT32_MAX)
    throw UsageError("spmspv layout: push tasks exceed the 32-bit task count");
  return l;
}

template <class T>
int64_t spmspv_workspace_bytes(const DbMatrix<T>& d, const DbLayout& l) {
  // The lists get one element even when empty, so their device pointers stay valid. run_sparse's
  // dense x is not counted: the plan allocates it on the first run_sparse (spmspv.hpp).
  return static_cast<int64_t>(sizeof(abi::SpmspvState)) + 2 * int64_t{std::max(d.block_cols, 1)} +
         8 * std::max<int64_t>(l.block_task_capacity, 1) + 8 * std::max<int64_t>(l.residual_task_capacity, 1) +
         8 * std::max<int64_t>(l.small_task_capacity, 1);
}

template <class T>
DbStats db_stats(const DbMatrix<T>& d) {
  return db_stats(d, make_db_layout(d));
}

template <class T>
DbStats db_stats(const DbMatrix<T>& d, const DbLayout& l) {
  DbStats s;
  for (const BlockMeta& m : d.meta) {
    if (m.type >= kBlockTypes) throw UsageError(fmt::format("db_stats: block type {} unknown", m.type));
    ++s.blocks_by_type[m.type];
    s.nnz_by_type[m.type] += m.nnz;
  }
  s.residual_nnz = d.residual_nnz();
  s.bytes_high_level = 4 * static_cast<int64_t>(d.blk_row_ptr.size() + d.blk_col_idx.size() + d.blk_col_ptr.size() +
                                                d.blk_row_idx.size() + d.csc2csr.size());
  s.bytes_meta = d.blocks() * static_cast<int64_t>(sizeof(BlockMeta));
  s.bytes_values = static_cast<int64_t>(d.values.size() * sizeof(T));
  s.bytes_aux = static_cast<int64_t>(d.aux.size());
  const int64_t res_entry = 4 + static_cast<int64_t>(sizeof(T));
  const int64_t res_ptrs = 4 * static_cast<int64_t>(d.res_row_ptr.size() + d.res_col_ptr.size());
  s.bytes_residual = (s.residual_nnz + static_cast<int64_t>(d.res_rc.size())) * res_entry + res_ptrs;
  s.bytes_total = s.bytes_high_level + s.bytes_meta + s.bytes_values + s.bytes_aux + s.bytes_residual;
  const int64_t per_entry = 4 + static_cast<int64_t>(sizeof(T));
  s.bytes_csr = (int64_t{d.rows} + 1) * 4 + d.nnz * per_entry;
  s.bytes_csr_csc = s.bytes_csr + (int64_t{d.cols} + 1) * 4 + d.nnz * per_entry;

  s.bytes_device_format =
      s.bytes_total - 4 * static_cast<int64_t>(d.blk_row_ptr.size() + d.blk_row_idx.size() + d.res_row_ptr.size());
  s.bytes_segments = static_cast<int64_t>(std::max<size_t>(l.segments.size(), 1) * sizeof(abi::Segment));
  s.bytes_workspace = spmspv_workspace_bytes(d, l);
  s.bytes_device = s.bytes_device_format + s.bytes_segments + s.bytes_workspace;
  return s;
}

std::string DbStats::to_text() const {
  int64_t blocks = 0, nnz = 0;
  for (int t = 0; t < kBlockTypes; ++t) {
    blocks += blocks_by_type[t];
    nnz += nnz_by_type[t];
  }
  auto pct = [](double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; };
  auto mb = [](int64_t b) { return b / 1e6; };
  std::string out = fmt::format("{} blocks of 16x16, {} nonzeros ({:.1f} per block)\n", blocks, nnz,
                                blocks ? double(nnz) / blocks : 0.0);
  out += fmt::format("  {:<6} {:>12} {:>7} {:>14} {:>7}\n", "type", "blocks", "%", "nnz", "%");
  for (int t = 0; t < kBlockTypes; ++t)
    out += fmt::format("  {:<6} {:>12} {:>6.1f}% {:>14} {:>6.1f}%\n", to_string(BlockType(t)), blocks_by_type[t],
                       pct(blocks_by_type[t], blocks), nnz_by_type[t], pct(nnz_by_type[t], nnz + residual_nnz));
  out += fmt::format("  {:<6} {:>12} {:>7} {:>14} {:>6.1f}%\n", "resid.", "-", "", residual_nnz,
                     pct(residual_nnz, nnz + residual_nnz));
  out += fmt::format("  {:<24} {:>12} {:>10}\n", "bytes", "", "MB");
  const std::pair<const char*, int64_t> parts[] = {{"high level (both views)", bytes_high_level},
                                                   {"block metadata", bytes_meta},
                                                   {"values", bytes_values},
                                                   {"aux (indices, masks)", bytes_aux},
                                                   {"residual (both views)", bytes_residual},
                                                   {"DB total", bytes_total},
                                                   {"device: format", bytes_device_format},
                                                   {"device: segments", bytes_segments},
                                                   {"device: workspace", bytes_workspace},
                                                   {"device total", bytes_device},
                                                   {"CSR", bytes_csr},
                                                   {"CSR + CSC", bytes_csr_csc}};
  for (const auto& [name, b] : parts) out += fmt::format("  {:<24} {:>12} {:>10.2f}\n", name, b, mb(b));
  auto ratio = [&](const char* name, int64_t num, int64_t ref) {
    double r = ref > 0 ? double(num) / ref : 0.0;
    return fmt::format("  {:<24} {:>12.3f}   {:.1f}% {}\n", name, r, 100.0 * std::abs(1.0 - r),
                       r <= 1.0 ? "saved" : "larger");
  };
  out += ratio("DB / CSR", bytes_total, bytes_csr);
  out += ratio("DB / (CSR+CSC)", bytes_total, bytes_csr_csc);
  out += ratio("device / CSR", bytes_device, bytes_csr);
  out += ratio("device / (CSR+CSC)", bytes_device, bytes_csr_csc);
  if (convert_ms > 0) out += fmt::format("  conversion: {:.1f} ms\n", convert_ms);
  return out;
}

template DbMatrix<float> csr_to_db(const CsrMatrix<float>&, const DbThresholds&);
template DbMatrix<double> csr_to_db(const CsrMatrix<double>&, const DbThresholds&);
template CsrMatrix<float> db_to_csr(const DbMatrix<float>&);
template CsrMatrix<double> db_to_csr(const DbMatrix<double>&);
template DbStats db_stats(const DbMatrix<float>&);
template DbStats db_stats(const DbMatrix<double>&);
template DbStats db_stats(const DbMatrix<float>&, const DbLayout&);
template DbStats db_stats(const DbMatrix<double>&, const DbLayout&);
template DbLayout make_db_layout(const DbMatrix<float>&);
template DbLayout make_db_layout(const DbMatrix<double>&);
template int64_t spmspv_workspace_bytes(const DbMatrix<float>&, const DbLayout&);
template int64_t spmspv_workspace_bytes(const DbMatrix<double>&, const DbLayout&);

}  // namespace dbsparse

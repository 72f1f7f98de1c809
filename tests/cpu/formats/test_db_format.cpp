// The DB format: every block's payload is decoded here from the layout in db_matrix.hpp, not by the
// library's own decoder, and compared entry by entry with the source CSR.
// Dense blocks store 256 values and so cannot keep A's explicit zeros; round-trip equality is
// promised only without them, and every matrix here has its explicit zeros dropped first.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <map>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "dbsparse/db_matrix.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/io.hpp"
#include "test_support.hpp"

using namespace dbsparse;

namespace {

using Entry = std::tuple<int32_t, int32_t, double>;  // global (row, col, value)

template <class T>
CsrMatrix<T> drop_zeros(const CsrMatrix<T>& a) {
  CsrMatrix<T> out;
  out.rows = a.rows;
  out.cols = a.cols;
  for (int32_t i = 0; i < a.rows; ++i) {
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.values[p] != T(0)) {
        out.col_idx.push_back(a.col_idx[p]);
        out.values.push_back(a.values[p]);
      }
    out.row_ptr.push_back(static_cast<int32_t>(out.col_idx.size()));
  }
  return out;
}

CsrMatrix<double> from_entries(int32_t rows, int32_t cols, std::vector<Entry> e) {
  std::sort(e.begin(), e.end());
  CsrMatrix<double> m;
  m.rows = rows;
  m.cols = cols;
  m.row_ptr.assign(static_cast<size_t>(rows) + 1, 0);
  for (const auto& [r, c, v] : e) {
    ++m.row_ptr[r + 1];
    m.col_idx.push_back(c);
    m.values.push_back(v);
  }
  for (int32_t i = 0; i < rows; ++i) m.row_ptr[i + 1] += m.row_ptr[i];
  return m;
}

double nz_value(std::mt19937_64& rng) {
  return std::uniform_real_distribution<double>(0.5, 1.5)(rng) * (rng() & 1 ? 1 : -1);
}

// A block of A as the kernels see it: local (r, c, value) plus the byte ranges its payload uses.
template <class T>
struct Decoded {
  std::vector<std::tuple<int, int, T>> entries;
  size_t values = 0, aux = 0;  // elements / bytes of payload
};

uint16_t u16(const uint8_t* aux, int i) {
  uint16_t v;
  std::memcpy(&v, aux + 2 * i, 2);
  return v;
}

// Checks one 17-entry pointer array and its 16 masks against each other.
void check_lines(const uint8_t* aux, int ptr_at, int mask_at, int nnz) {
  CHECK(u16(aux, ptr_at) == 0);
  CHECK(u16(aux, ptr_at + 16) == nnz);
  for (int l = 0; l < 16; ++l)
    CHECK(u16(aux, ptr_at + l + 1) - u16(aux, ptr_at + l) == std::popcount(u16(aux, mask_at + l)));
}

template <class T>
Decoded<T> decode(const DbMatrix<T>& d, const BlockMeta& m) {
  Decoded<T> out;
  const T* v = d.values.data() + m.val_off;
  const uint8_t* a = d.aux.data() + m.aux_off;
  const int n = m.nnz;
  switch (static_cast<BlockType>(m.type)) {
    case BlockType::Coo:
      for (int e = 0; e < n; ++e) {
        if (e > 0) CHECK(a[e - 1] < a[e]);  // row-major, no repeats
        out.entries.emplace_back(a[e] >> 4, a[e] & 15, v[e]);
      }
      out.values = n;
      out.aux = n;
      break;
    case BlockType::Dense:
      for (int e = 0; e < 256; ++e)
        if (v[e] != T(0)) out.entries.emplace_back(e / 16, e % 16, v[e]);
      out.values = 256;
      break;
    case BlockType::ForceCsr:
      check_lines(a, 0, 17, n);
      for (int r = 0; r < 16; ++r) {
        int k = u16(a, r);
        for (int c = 0; c < 16; ++c)
          if (u16(a, 17 + r) >> c & 1) out.entries.emplace_back(r, c, v[k++]);
      }
      out.values = n;
      out.aux = 66;
      break;
    case BlockType::ForceCsc:
      check_lines(a, 0, 17, n);
      for (int c = 0; c < 16; ++c) {
        int k = u16(a, c);
        for (int r = 0; r < 16; ++r)
          if (u16(a, 17 + c) >> r & 1) out.entries.emplace_back(r, c, v[k++]);
      }
      out.values = n;
      out.aux = 66;
      break;
    default:
      FAIL("unknown block type " << int(m.type));
  }
  return out;
}

template <class T>
std::vector<Entry> entries_of(const CsrMatrix<T>& a) {
  std::vector<Entry> out;
  for (int32_t i = 0; i < a.rows; ++i)
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) out.emplace_back(i, a.col_idx[p], a.values[p]);
  return out;
}

// Half-open ranges must not overlap and must lie inside [0, size).
void check_disjoint(std::vector<std::pair<size_t, size_t>> ranges, size_t size, const char* what) {
  std::sort(ranges.begin(), ranges.end());
  bool ok = true;
  for (size_t i = 0; i < ranges.size(); ++i)
    ok = ok && ranges[i].second <= size && (i == 0 || ranges[i - 1].second <= ranges[i].first);
  CHECK_MESSAGE(ok, what << " payloads overlap or overrun");
}

// Every invariant of the format for A under th; returns the number of blocks of each type.
template <class T>
std::vector<int64_t> check_db(const CsrMatrix<T>& a, const DbThresholds& th) {
  const DbMatrix<T> d = csr_to_db(a, th);
  const int32_t br = (a.rows + 15) / 16, bc = (a.cols + 15) / 16;
  REQUIRE(d.rows == a.rows);
  REQUIRE(d.cols == a.cols);
  REQUIRE(d.block_rows == br);
  REQUIRE(d.block_cols == bc);
  REQUIRE(d.nnz == a.nnz());
  const size_t nb = d.meta.size();
  REQUIRE(d.blk_row_ptr.size() == size_t(br) + 1);
  REQUIRE(d.blk_col_ptr.size() == size_t(bc) + 1);
  REQUIRE(d.blk_col_idx.size() == nb);
  REQUIRE(d.blk_row_idx.size() == nb);
  REQUIRE(d.csc2csr.size() == nb);
  REQUIRE(d.blk_row_ptr.front() == 0);
  REQUIRE(size_t(d.blk_row_ptr.back()) == nb);
  REQUIRE(d.blk_col_ptr.front() == 0);
  REQUIRE(size_t(d.blk_col_ptr.back()) == nb);

  bool views_ok = true;
  for (int32_t I = 0; I < br; ++I)
    for (int32_t id = d.blk_row_ptr[I]; id < d.blk_row_ptr[I + 1]; ++id)
      views_ok = views_ok && d.meta[id].row == I && d.meta[id].col == d.blk_col_idx[id] &&
                 (id == d.blk_row_ptr[I] || d.blk_col_idx[id - 1] < d.blk_col_idx[id]);
  CHECK_MESSAGE(views_ok, "block-CSR view agrees with meta, columns increasing");
  std::vector<int> hits(nb, 0);
  views_ok = true;
  for (int32_t J = 0; J < bc; ++J)
    for (int32_t p = d.blk_col_ptr[J]; p < d.blk_col_ptr[J + 1]; ++p) {
      int32_t id = d.csc2csr[p];
      REQUIRE(id >= 0);
      REQUIRE(size_t(id) < nb);
      ++hits[id];
      views_ok = views_ok && d.meta[id].col == J && d.meta[id].row == d.blk_row_idx[p] &&
                 (p == d.blk_col_ptr[J] || d.blk_row_idx[p - 1] < d.blk_row_idx[p]);
    }
  CHECK_MESSAGE(views_ok, "block-CSC view agrees with meta, rows increasing");
  CHECK_MESSAGE(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }),
                "csc2csr is a permutation of the block ids");

  std::vector<Entry> got;
  std::vector<std::pair<size_t, size_t>> vranges, aranges;
  std::vector<int64_t> by_type(kBlockTypes, 0);
  bool blocks_ok = true;
  for (size_t id = 0; id < nb; ++id) {
    const BlockMeta& m = d.meta[id];
    CAPTURE(id);
    CHECK(m.aux_off % 4 == 0);
    REQUIRE(m.type < kBlockTypes);
    REQUIRE(m.nnz > 0);
    ++by_type[m.type];
    Decoded<T> dec = decode(d, m);
    vranges.emplace_back(m.val_off, m.val_off + dec.values);
    if (dec.aux) aranges.emplace_back(m.aux_off, m.aux_off + dec.aux);
    int rn[16] = {}, cn[16] = {};
    for (const auto& [r, c, v] : dec.entries) {
      ++rn[r];
      ++cn[c];
      const int32_t gr = 16 * m.row + r, gc = 16 * m.col + c;
      blocks_ok = blocks_ok && gr < a.rows && gc < a.cols;
      got.emplace_back(gr, gc, v);
    }
    blocks_ok = blocks_ok && dec.entries.size() == size_t(m.nnz) &&
                m.type == static_cast<uint8_t>(choose_block_type(rn, cn, m.nnz, th));
  }
  CHECK_MESSAGE(blocks_ok, "each block holds nnz in-range entries and has the type its counts give");
  check_disjoint(vranges, d.values.size(), "values");
  check_disjoint(aranges, d.aux.size(), "aux");
  for (size_t id = 0; id < nb; ++id) CHECK(d.meta[id].nnz >= d.thresholds.residual_below);

  // The residual: the column view by (local column, row) within each column block; each entry in a
  // block position that holds fewer than residual_below entries and no block; res_row_ptr counts
  // them by block row; the row view, when asked for, holds the same entries row-major.
  REQUIRE(d.res_row_ptr.size() == size_t(br) + 1);
  REQUIRE(d.res_col_ptr.size() == size_t(bc) + 1);
  REQUIRE(d.res_row_ptr.front() == 0);
  REQUIRE(d.res_col_ptr.front() == 0);
  REQUIRE(size_t(d.res_row_ptr.back()) == d.res_cr.size());
  REQUIRE(size_t(d.res_col_ptr.back()) == d.res_cr.size());
  REQUIRE(d.res_cr.size() == d.res_col_val.size());
  REQUIRE(d.res_rc.size() == d.res_row_val.size());
  REQUIRE(d.res_rc.size() == (d.thresholds.residual_rows ? d.res_cr.size() : 0));
  std::vector<Entry> res_rows, res_cols;
  std::map<std::pair<int32_t, int32_t>, int> per_block;
  std::vector<int32_t> per_row_block(br, 0);
  bool res_ok = true;
  for (int32_t J = 0; J < bc; ++J) {
    int64_t prev = -1;
    for (int32_t k = d.res_col_ptr[J]; k < d.res_col_ptr[J + 1]; ++k) {
      const int32_t c = 16 * J + int32_t(d.res_cr[k] >> 28), r = int32_t(d.res_cr[k] & 0x0fffffffu);
      const int64_t order = int64_t{c - 16 * J} * a.rows + r;
      res_ok = res_ok && c < a.cols && r < a.rows && order > prev;
      prev = order;
      ++per_block[{r >> 4, J}];
      ++per_row_block[r >> 4];
      res_cols.emplace_back(r, c, d.res_col_val[k]);
    }
  }
  for (const auto& [blk, n] : per_block) {
    const auto* row_begin = d.blk_col_idx.data() + d.blk_row_ptr[blk.first];
    const auto* row_end = d.blk_col_idx.data() + d.blk_row_ptr[blk.first + 1];
    res_ok = res_ok && n < d.thresholds.residual_below && std::find(row_begin, row_end, blk.second) == row_end;
  }
  for (int32_t I = 0; I < br; ++I) {
    res_ok = res_ok && d.res_row_ptr[I + 1] - d.res_row_ptr[I] == per_row_block[I];
    int64_t prev = -1;
    for (int32_t k = d.res_row_ptr[I]; d.thresholds.residual_rows && k < d.res_row_ptr[I + 1]; ++k) {
      const int32_t r = int32_t(d.res_rc[k] >> 28), c = int32_t(d.res_rc[k] & 0x0fffffffu);
      const int64_t order = int64_t{r} * a.cols + c;
      res_ok = res_ok && 16 * I + r < a.rows && c < a.cols && order > prev;
      prev = order;
      res_rows.emplace_back(16 * I + r, c, d.res_row_val[k]);
    }
  }
  CHECK_MESSAGE(res_ok, "residual views ordered, in range, and only where blocks are too sparse");
  std::sort(res_rows.begin(), res_rows.end());
  std::sort(res_cols.begin(), res_cols.end());
  if (d.thresholds.residual_rows) CHECK_MESSAGE(res_rows == res_cols, "the residual's two views hold the same entries");
  got.insert(got.end(), res_cols.begin(), res_cols.end());
  std::sort(got.begin(), got.end());
  CHECK_MESSAGE(got == entries_of(a), "the blocks hold exactly A's entries with their values");

  const CsrMatrix<T> back = db_to_csr(d);
  CHECK(back.rows == a.rows);
  CHECK(back.cols == a.cols);
  CHECK(back.row_ptr == a.row_ptr);
  CHECK(back.col_idx == a.col_idx);
  CHECK(back.values == a.values);

  const DbStats s = db_stats(d);
  int64_t blocks = 0, nnz = 0;
  for (int t = 0; t < kBlockTypes; ++t) {
    CHECK(s.blocks_by_type[t] == by_type[t]);
    blocks += s.blocks_by_type[t];
    nnz += s.nnz_by_type[t];
  }
  CHECK(blocks == int64_t(nb));
  CHECK(nnz + s.residual_nnz == a.nnz());
  CHECK(s.bytes_meta == int64_t(nb) * 20);
  CHECK(s.bytes_values == int64_t(d.values.size() * sizeof(T)));
  CHECK(s.bytes_aux == int64_t(d.aux.size()));
  CHECK(s.bytes_high_level == 4 * int64_t(br + 1 + bc + 1 + 3 * nb));
  CHECK(s.residual_nnz == int64_t(d.res_cr.size()));
  CHECK(s.bytes_residual ==
        (s.residual_nnz + int64_t(d.res_rc.size())) * int64_t(4 + sizeof(T)) + 4 * int64_t(br + 1 + bc + 1));
  CHECK(s.bytes_total == s.bytes_high_level + s.bytes_meta + s.bytes_values + s.bytes_aux + s.bytes_residual);
  CHECK(s.bytes_device == s.bytes_device_format + s.bytes_segments + s.bytes_workspace);
  CHECK(s.bytes_device_format == s.bytes_total - 4 * int64_t(br + 1 + nb + br + 1));
  CHECK(s.bytes_csr == (a.rows + 1) * 4 + a.nnz() * int64_t(4 + sizeof(T)));
  CHECK(s.bytes_csr_csc == s.bytes_csr + (a.cols + 1) * 4 + a.nnz() * int64_t(4 + sizeof(T)));
  return by_type;
}

int64_t type_count(const std::vector<int64_t>& by_type, BlockType t) { return by_type[int(t)]; }
int64_t total(const std::vector<int64_t>& by_type) {
  int64_t n = 0;
  for (auto b : by_type) n += b;
  return n;
}

// 203 x 77 (neither a multiple of 16): random entries, a dense patch, empty rows 48..69 and empty
// columns 30..49 (so block row 3 and block column 2 are empty).
CsrMatrix<double> rectangular() {
  std::mt19937_64 rng(7);
  std::vector<Entry> e;
  for (int32_t i = 0; i < 203; ++i)
    for (int32_t j = 0; j < 77; ++j) {
      if ((i >= 48 && i < 70) || (j >= 30 && j < 50)) continue;
      bool dense_patch = i >= 160 && i < 190 && j >= 50 && j < 76;
      if (dense_patch || rng() % 9 == 0) e.emplace_back(i, j, nz_value(rng));
    }
  return from_entries(203, 77, e);
}

// Every block holds lines full in one direction: `full_rows` makes each block row-skewed, else
// column-skewed. 70 x 90, partial last block row and column.
CsrMatrix<double> skewed(bool full_rows, int lines) {
  std::mt19937_64 rng(11);
  std::vector<Entry> e;
  for (int32_t i = 0; i < 70; ++i)
    for (int32_t j = 0; j < 90; ++j) {
      int line = full_rows ? i % 16 : j % 16;
      if (line < lines) e.emplace_back(i, j, nz_value(rng));
    }
  return from_entries(70, 90, e);
}

// One block of each type at the default thresholds: COO (5 nnz), Dense (200), three full rows
// (ForceCsc), three full columns (ForceCsr), three diagonals (patched CSR).
CsrMatrix<double> one_of_each() {
  std::mt19937_64 rng(5);
  std::vector<Entry> e;
  auto put = [&](int I, int J, int r, int c) { e.emplace_back(16 * I + r, 16 * J + c, nz_value(rng)); };
  for (int k = 0; k < 5; ++k) put(0, 0, k, 3 * k % 16);
  for (int k = 0; k < 200; ++k) put(0, 1, k / 16, k % 16);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 16; ++c) put(1, 0, 4 * r, c);
  for (int c = 0; c < 3; ++c)
    for (int r = 0; r < 16; ++r) put(1, 1, r, 5 * c + 1);
  for (int k = 0; k < 16; ++k)
    for (int s = 0; s < 3; ++s) put(2, 2, k, (k + s) % 16);
  return from_entries(48, 48, e);
}

// The block tests keep every nonzero in a block (residual_below 0); the default makes all residual.
const DbThresholds kDefault{};
const DbThresholds kBlocks{32, 128, 2.0, 0};
const DbThresholds kAllCoo{257, 256, 2.0, 0};
const DbThresholds kAllDense{0, 0, 2.0, 0};
const DbThresholds kAllCsc{0, 256, 0.0, 0};          // any nnz > 0 has skew_r / skew_c > 0
const DbThresholds kAllCsr{0, 256, 1e30, 0};         // no skew is that large: the balanced case, ForceCSR
const DbThresholds kSkewOnly{0, 256, 1.0, 0};        // csr / csc by which skew is larger
const DbThresholds kCooBeatsDense{100, 40, 2.0, 0};  // th0 > th1: the COO test comes first
const DbThresholds kResidual4{32, 128, 2.0, 4};
const DbThresholds kResidual16Rows{32, 128, 2.0, 16, true};
const DbThresholds kAllResidualRows{32, 128, 2.0, 257, true};

const char* const kGenerated[] = {
    "stencil2d:n=40",     "stencil3d:n=12,points=27", "stencil3d:n=10,points=7", "fem:nodes=3000,k=3,blocks=9",
    "banded:n=1500,bw=8", "uniform:n=1000,d=12",      "rmat:scale=10,ef=8",      "powerlaw:n=3000,avg=8"};

}  // namespace

TEST_CASE("Db choose_block_type follows the thresholds and the skew rule") {
  int flat[16], one_row[16], zeros[16] = {};
  std::fill(flat, flat + 16, 3);
  std::fill(one_row, one_row + 16, 0);
  one_row[4] = 16;
  int ones[16];
  std::fill(ones, ones + 16, 1);
  CHECK(choose_block_type(flat, flat, 31, kDefault) == BlockType::Coo);
  CHECK(choose_block_type(flat, flat, 129, kDefault) == BlockType::Dense);
  CHECK(choose_block_type(flat, flat, 48, kDefault) == BlockType::ForceCsr);     // balanced: the paper's patched CSR
  CHECK(choose_block_type(one_row, ones, 32, kDefault) == BlockType::ForceCsc);  // rows skewed
  CHECK(choose_block_type(ones, one_row, 32, kDefault) == BlockType::ForceCsr);  // columns skewed
  CHECK(choose_block_type(flat, flat, 50, kCooBeatsDense) == BlockType::Coo);
  CHECK(choose_block_type(zeros, zeros, 0, kAllCoo) == BlockType::Coo);
  CHECK(std::string(to_string(BlockType::Coo)) == "coo");
  CHECK(std::string(to_string(BlockType::Dense)) == "dense");
  CHECK(std::string(to_string(BlockType::ForceCsr)) == "csr");
  CHECK(std::string(to_string(BlockType::ForceCsc)) == "csc");
  CHECK(kBlockTypes == 4);
}

TEST_CASE("Db format holds every generated matrix exactly, at every threshold setting") {
  for (const char* spec : kGenerated) {
    CAPTURE(spec);
    const auto a = drop_zeros(generate(spec));
    auto def = check_db(a, kBlocks);
    CHECK(total(def) > 0);
    CHECK(total(check_db(a, kDefault)) == 0);
    CHECK(type_count(check_db(a, kAllCoo), BlockType::Coo) == total(def));
    CHECK(type_count(check_db(a, kAllDense), BlockType::Dense) == total(def));
    CHECK(type_count(check_db(a, kAllCsc), BlockType::ForceCsc) == total(def));
    CHECK(type_count(check_db(a, kAllCsr), BlockType::ForceCsr) == total(def));
    check_db(a, kSkewOnly);
    check_db(a, kCooBeatsDense);
    check_db(a.cast<float>(), kBlocks);
    CHECK(total(check_db(a, kAllResidualRows)) == 0);
    check_db(a, kResidual4);
    check_db(a.cast<float>(), kResidual16Rows);
  }
}

TEST_CASE("Db residual: only blocks below the threshold leave, and all of it residual costs about one CSC") {
  // uniform 16 per row: almost every block holds one entry. All of it residual (the default), the
  // device footprint is one CSC's and about CSR's; with a few blocks kept it is still under
  // CSR+CSC, and under the all-blocks layout by far.
  const auto a = drop_zeros(generate("uniform:n=20000,d=16")).cast<float>();
  const DbStats all = db_stats(csr_to_db(a)), some = db_stats(csr_to_db(a, kResidual4)),
                rows = db_stats(csr_to_db(a, kAllResidualRows)), none = db_stats(csr_to_db(a, kBlocks));
  CHECK(all.residual_nnz == a.nnz());
  CHECK(all.bytes_device <= all.bytes_csr + all.bytes_csr / 20);
  CHECK(all.bytes_device <= all.bytes_csr_csc / 2 + all.bytes_csr_csc / 40);
  CHECK(some.bytes_device < some.bytes_csr_csc);
  CHECK(rows.bytes_device < rows.bytes_csr_csc);
  CHECK(all.bytes_device * 4 < none.bytes_device);
  // A stencil under residual_below 4 keeps its 16-entry diagonals as blocks.
  const auto st = drop_zeros(generate("stencil3d:n=16,points=7"));
  const auto ds = csr_to_db(st, kResidual4);
  CHECK(ds.residual_nnz() < st.nnz() / 10);
  CHECK(db_stats(ds).bytes_device < db_stats(ds).bytes_csr_csc);
  CHECK(db_stats(csr_to_db(st)).bytes_device < db_stats(ds).bytes_csr_csc / 2 + db_stats(ds).bytes_csr_csc / 20);
}

TEST_CASE("Db layout: segments, their alone flags and the push capacities follow blocks and residual") {
  // Block row 0: a 20-entry block (kept at residual_below 4) and a 2-entry one (residual). Block row
  // 1: one 10-entry block only. Block row 2: a single residual entry. Column 40: one entry in each
  // of rows 48, 64, ..., 4832 (300 single-entry blocks: residual), so column block 2 holds more
  // than kResidualChunk residual entries.
  std::vector<Entry> e;
  std::mt19937_64 rng(3);
  for (int k = 0; k < 20; ++k) e.emplace_back(k % 16, k / 16 * 5 + k % 3, nz_value(rng));
  e.emplace_back(3, 17, 1.0), e.emplace_back(9, 20, 2.0);
  for (int k = 0; k < 10; ++k) e.emplace_back(16 + k, 16 + k, nz_value(rng));
  e.emplace_back(40, 1, 3.0);
  for (int k = 0; k < 300; ++k) e.emplace_back(48 + 16 * k, 40, nz_value(rng));
  std::sort(e.begin(), e.end());
  e.erase(std::unique(e.begin(), e.end(),
                      [](const Entry& x, const Entry& y) {
                        return std::get<0>(x) == std::get<0>(y) && std::get<1>(x) == std::get<1>(y);
                      }),
          e.end());
  const auto a = from_entries(48 + 16 * 300, 48, e);
  for (bool rows : {false, true}) {
    CAPTURE(rows);
    const auto d = csr_to_db(a, DbThresholds{32, 128, 2.0, 4, rows});
    check_db(a, d.thresholds);
    REQUIRE(d.blocks() == 2);
    const DbLayout l = make_db_layout(d);
    REQUIRE(l.block_segments == 2);
    CHECK(l.segments[0].row_block == 0);
    CHECK(l.segments[0].alone == 0);  // the residual adds into block row 0 too
    CHECK(l.segments[1].row_block == 1);
    CHECK(l.segments[1].alone == 1);
    // Residual segments only with the row view: block rows 0, 2 and the 300 of column 40.
    CHECK(l.segments.size() == size_t(rows ? 2 + 2 + 300 : 2));
    if (rows) {
      CHECK(l.segments[2].row_block == 0);
      CHECK(l.segments[2].alone == 0);
      CHECK(l.segments[3].row_block == 2);
      CHECK(l.segments[3].alone == 1);
    }
    CHECK(l.block_task_capacity == 2);     // one chunk per column block holding a block
    CHECK(l.residual_task_capacity == 2);  // column block 2: 300 entries, two pieces of 256
    CHECK(l.small_task_capacity == 2);     // column blocks 0 (column 1) and 1 (columns 17, 20)
  }
}

TEST_CASE("Db format on a rectangular matrix with partial blocks, empty rows, columns and blocks") {
  const auto a = rectangular();
  for (const auto& th : {kDefault, kBlocks, kAllCoo, kAllDense, kAllCsc, kAllCsr, kSkewOnly, kCooBeatsDense, kResidual4,
                         kResidual16Rows, kAllResidualRows}) {
    CAPTURE(th.th0);
    CAPTURE(th.th1);
    CAPTURE(th.th2);
    CAPTURE(th.residual_below);
    check_db(a, th);
    check_db(a.cast<float>(), th);
  }
  const auto d = csr_to_db(a, kBlocks);
  CHECK(d.blk_col_ptr[2] == d.blk_col_ptr[3]);
  CHECK(d.blk_row_ptr[3] == d.blk_row_ptr[4]);
  CHECK(type_count(check_db(a, kBlocks), BlockType::Dense) > 0);
}

TEST_CASE("Db format: each type can be had alone, and all four together") {
  const DbThresholds th{1, 256, 2.0, 0};
  CHECK(type_count(check_db(skewed(false, 2), th), BlockType::ForceCsr) == 30);
  CHECK(type_count(check_db(skewed(true, 2), th), BlockType::ForceCsc) == 30);
  auto mixed = check_db(one_of_each(), kBlocks);
  // one_of_each() holds the paper's five kinds: its balanced (patched CSR) block is ForceCSR here.
  for (int t = 0; t < kBlockTypes; ++t) {
    CAPTURE(to_string(BlockType(t)));
    CHECK(mixed[t] == (BlockType(t) == BlockType::ForceCsr ? 2 : 1));
  }
}

TEST_CASE("Db format of empty matrices") {
  CsrMatrix<double> none;
  auto d = csr_to_db(none);
  CHECK(d.blocks() == 0);
  CHECK(d.blk_row_ptr.size() == 1);
  CsrMatrix<double> hollow;
  hollow.rows = 33;
  hollow.cols = 17;
  hollow.row_ptr.assign(34, 0);
  CHECK(total(check_db(hollow, kDefault)) == 0);
}

TEST_CASE("Db csr_to_db rejects a malformed CSR") {
  auto a = from_entries(20, 20, {{0, 3, 1.0}, {0, 5, 2.0}, {4, 4, 3.0}});
  auto unsorted = a;
  std::swap(unsorted.col_idx[0], unsorted.col_idx[1]);
  CHECK_THROWS_AS(csr_to_db(unsorted), UsageError);
  auto out_of_range = a;
  out_of_range.col_idx[2] = 20;
  CHECK_THROWS_AS(csr_to_db(out_of_range), UsageError);
  auto short_ptr = a;
  short_ptr.row_ptr.pop_back();
  CHECK_THROWS_AS(csr_to_db(short_ptr), UsageError);
}

TEST_CASE("Db stats text names the types, the parts and both ratios") {
  auto s = db_stats(csr_to_db(drop_zeros(generate("stencil3d:n=12,points=27"))));
  std::string text = s.to_text();
  for (const char* word : {"coo", "dense", "csr", "values", "aux", "DB / CSR", "DB / (CSR+CSC)", "saved"})
    CHECK_MESSAGE(text.find(word) != std::string::npos, word);
  CHECK(text.find("conversion") == std::string::npos);
  s.convert_ms = 12.5;
  CHECK(s.to_text().find("conversion: 12.5 ms") != std::string::npos);
}

TEST_CASE("Db format round-trips the shared real matrices") {
  for (const auto& path : dbs_test::shared_matrices()) {
    CAPTURE(path);
    check_db(drop_zeros(load_matrix(path).csr), kDefault);
  }
}

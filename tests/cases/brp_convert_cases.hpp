#pragma once
// The matrices both tiers convert CSR -> BRP with the GPU conversion's kernels (the cpu tier runs
// them on the host, the gpu tier on the device) and compare with csr_to_brp: generated matrices and
// the edge shapes (empty rows and windows, M not a multiple of 16, K not a multiple of 8, windows
// with thousands of distinct columns, columns full in a window, hypersparse, empty).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "dbsparse/brp.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/matrix.hpp"
#include "test_support.hpp"

namespace dbs_test {

inline std::vector<std::pair<std::string, dbsparse::CsrMatrix<double>>> brp_convert_cases() {
  std::vector<std::pair<std::string, dbsparse::CsrMatrix<double>>> out;
  for (const char* spec : {"uniform:n=1500,d=6", "rmat:scale=10,ef=8", "stencil2d:n=30", "banded:n=700,bw=6",
                           "fem:nodes=600,k=3,blocks=4"})
    out.emplace_back(spec, dbsparse::generate(spec));
  {  // M = 70, K = 50: windows 1, 2 and 4 empty, empty rows inside windows, the last window partial
    std::vector<Entry> e;
    for (int32_t r : {0, 3, 15, 48, 50, 63, 66, 69})
      for (int32_t c = r % 5; c < 50; c += 2) e.emplace_back(r, c, 1.0 + r * 0.01 - c * 0.02);
    out.emplace_back("empty windows 70x50", csr_from_entries<double>(70, 50, e));
  }
  {  // M = 45, K = 21, 80% dense: every column of a window close to full, a ragged last window
    std::vector<Entry> e;
    for (int32_t r = 0; r < 45; ++r)
      for (int32_t c = 0; c < 21; ++c)
        if ((r * 7 + c * 3) % 5 != 0) e.emplace_back(r, c, std::sin(r * 21.0 + c));
    out.emplace_back("ragged 45x21", csr_from_entries<double>(45, 21, e));
  }
  {  // M = 33, K = 64, fully dense: 16 rows in each column of a window (f = 8 gives 2 slots)
    std::vector<Entry> e;
    for (int32_t r = 0; r < 33; ++r)
      for (int32_t c = 0; c < 64; ++c) e.emplace_back(r, c, 0.25 + r - 0.5 * c);
    out.emplace_back("dense 33x64", csr_from_entries<double>(33, 64, e));
  }
  {  // M = 20, K = 6001: window 0 with ~1000 random columns a row, thousands of distinct ones
    std::vector<int32_t> len(20, 1000);
    len[3] = 0;
    len[17] = 6001;  // a full row in the partial window
    out.emplace_back("wide windows 20x6001", csr_with_row_lengths<double>(6001, len, 41));
  }
  {  // M = 40, K = 3000: one full row and a window of long rows (the SpMM test's shape)
    std::vector<Entry> e;
    for (int32_t c = 0; c < 3000; ++c) e.emplace_back(5, c, std::cos(c * 0.37));
    for (int32_t r = 16; r < 32; ++r)
      for (int32_t c = r; c < 3000; c += 5) e.emplace_back(r, c, 0.5 + std::sin(r * 3.0 + c));
    out.emplace_back("long row and window 40x3000", csr_from_entries<double>(40, 3000, e));
  }
  {  // hypersparse, M = 100000: the scratch must not grow with the empty windows
    std::vector<Entry> e;
    for (int32_t i = 0; i < 60; ++i) e.emplace_back((i * 7919) % 100000, (i * 31) % 77, 1.0 + i);
    for (int32_t c = 0; c < 77; c += 3) e.emplace_back(99999, c, -2.0 + c);  // the last row, last window
    out.emplace_back("hypersparse 100000x77", csr_from_entries<double>(100000, 77, e));
  }
  out.emplace_back("one nonzero 17x9", csr_from_entries<double>(17, 9, {{16, 8, 3.0}}));
  out.emplace_back("no nonzeros 37x11", csr_from_entries<double>(37, 11, {}));
  out.emplace_back("empty 0x0", csr_from_entries<double>(0, 0, {}));
  return out;
}

// The first of the BRP arrays (or sizes) where got and want differ, bitwise; empty when none does.
template <class T>
std::string brp_difference(const dbsparse::BrpMatrix<T>& got, const dbsparse::BrpMatrix<T>& want) {
  auto same = [](const auto& x, const auto& y) {
    return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(x[0])) == 0);
  };
  if (got.rows != want.rows || got.cols != want.cols) return "shape";
  if (got.f != want.f || got.g != want.g) return "f, g";
  if (got.value_stride != want.value_stride || got.local_stride != want.local_stride) return "strides";
  const std::pair<const char*, bool> arrays[] = {{"group_window_id", same(got.group_window_id, want.group_window_id)},
                                                 {"old_col_id", same(got.old_col_id, want.old_col_id)},
                                                 {"local_id", same(got.local_id, want.local_id)},
                                                 {"values", same(got.values, want.values)},
                                                 {"res_rows_id", same(got.res_rows_id, want.res_rows_id)},
                                                 {"res_row_offset", same(got.res_row_offset, want.res_row_offset)},
                                                 {"res_col_id", same(got.res_col_id, want.res_col_id)},
                                                 {"res_values", same(got.res_values, want.res_values)}};
  for (const auto& [name, equal] : arrays)
    if (!equal) return name;
  return "";
}

}  // namespace dbs_test

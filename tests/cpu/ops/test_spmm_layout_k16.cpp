// The f16 / bf16 SpMM kernel's index math (include/dbsparse/abi/spmm.h, templates/spmm/spmm_tc_half.cuh),
// checked on the host as test_spmm_layout.cpp checks the tf32 one: the mma.m16n8k16 fragment
// functions against the PTX ISA's layout, and a BRP group's path through the kernel (two blocks a
// mma, g = 1 padded) against the reference. No GPU runs this before the H200 does.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dbsparse/abi/spmm.h"
#include "dbsparse/brp.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/half.hpp"
#include "test_support.hpp"

using namespace dbsparse;
using namespace dbsparse::abi;

namespace {

// The PTX ISA ("Matrix Fragments for mma.m16n8k16 with floating point type", .f16 / .bf16
// multiplicands, .f32 accumulators), transcribed on its own so that the check does not read what
// it checks:
//   A: row = groupID for a0, a1, a4, a5; groupID + 8 for a2, a3, a6, a7;
//      col = threadID_in_group * 2 + (i & 1) for i < 4, + 8 for i >= 4
//   B: row = threadID_in_group * 2 + (i & 1) for i < 2, + 8 for i >= 2; col = groupID
//   C, D: as m16n8k8 (row groupID for c0, c1, + 8 for c2, c3; col threadID_in_group * 2 + (i & 1))
struct Place {
  int row, col;
};
Place isa_a(int lane, int i) {
  const int group = lane >> 2, tig = lane % 4;
  const bool low_row = i == 0 || i == 1 || i == 4 || i == 5;
  return {low_row ? group : group + 8, tig * 2 + (i & 1) + (i < 4 ? 0 : 8)};
}
Place isa_b(int lane, int i) {
  const int group = lane >> 2, tig = lane % 4;
  return {tig * 2 + (i & 1) + (i < 2 ? 0 : 8), group};
}
Place isa_c(int lane, int i) {
  const int group = lane >> 2, tig = lane % 4;
  return {i < 2 ? group : group + 8, tig * 2 + (i & 0x1)};
}

// One warp's mma.m16n8k16.row.col.f32.f16.f16.f32, element by element (the 16-bit values as
// floats): a[lane][i] is a_i (register i / 2, half i % 2), b[lane][i] is b_i.
struct WarpRegs16 {
  float a[32][8] = {}, b[32][4] = {}, d[32][4] = {};
};
void emulate_mma16(WarpRegs16& w, bool* ok) {
  float A[16][16], B[16][8], C[16][8];
  int seen_a[16][16] = {}, seen_b[16][8] = {}, seen_c[16][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) {
      const Place pa = isa_a(lane, i);
      A[pa.row][pa.col] = w.a[lane][i];
      ++seen_a[pa.row][pa.col];
    }
    for (int i = 0; i < 4; ++i) {
      const Place pb = isa_b(lane, i), pc = isa_c(lane, i);
      B[pb.row][pb.col] = w.b[lane][i];
      ++seen_b[pb.row][pb.col];
      C[pc.row][pc.col] = w.d[lane][i];
      ++seen_c[pc.row][pc.col];
    }
  }
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) *ok = *ok && seen_a[r][c] == 1 && (c >= 8 || (seen_b[r][c] == 1 && seen_c[r][c] == 1));
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const Place pc = isa_c(lane, i);
      float sum = C[pc.row][pc.col];
      for (int k = 0; k < 16; ++k) sum += A[pc.row][k] * B[k][pc.col];
      w.d[lane][i] = sum;
    }
}

}  // namespace

TEST_CASE("Mma16FragmentFunctionsCoverEachPlaceOnceAndGiveThePtxIsaProduct") {
  // Each (row, col) of A, B and C is named by exactly one (lane, element) of the functions.
  int a_seen[16][16] = {}, b_seen[16][8] = {}, c_seen[16][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) {
      const int r = mma16_a_row(lane, i), c = mma16_a_col(lane, i);
      REQUIRE((r >= 0 && r < 16 && c >= 0 && c < 16));
      ++a_seen[r][c];
      // and agree with the ISA's table
      CHECK((isa_a(lane, i).row == r && isa_a(lane, i).col == c));
    }
    for (int i = 0; i < 4; ++i) {
      const int r = mma16_b_row(lane, i), c = mma16_b_col(lane);
      REQUIRE((r >= 0 && r < 16 && c >= 0 && c < 8));
      ++b_seen[r][c];
      CHECK((isa_b(lane, i).row == r && isa_b(lane, i).col == c));
      ++c_seen[mma_c_row(lane, i)][mma_c_col(lane, i)];
    }
  }
  bool once = true;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) {
      once = once && a_seen[r][c] == 1;
      if (c < 8) once = once && b_seen[r][c] == 1 && c_seen[r][c] == 1;
    }
  CHECK(once);
  // The A inverse the scatter uses: (row, col) -> (lane, half) -> (row, col).
  bool inverse = true;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) {
      const int lane = mma16_a_lane(r, c), h = mma16_a_half(r, c);
      inverse = inverse && lane >= 0 && lane < 32 && h >= 0 && h < 8 && mma16_a_row(lane, h) == r &&
                mma16_a_col(lane, h) == c;
    }
  CHECK(inverse);
  // Spot values from the ISA's figure: lane 0 holds A(0,0), A(0,1), A(8,0), A(8,1), A(0,8), A(0,9),
  // A(8,8), A(8,9); lane 5 (group 1, thread 1) holds B(2,1), B(3,1), B(10,1), B(11,1).
  CHECK((mma16_a_row(0, 2) == 8 && mma16_a_col(0, 2) == 0));
  CHECK((mma16_a_row(0, 5) == 0 && mma16_a_col(0, 5) == 9));
  CHECK((mma16_b_row(5, 0) == 2 && mma16_b_row(5, 3) == 11 && mma16_b_col(5) == 1));

  // One mma, loaded through the functions, equals the plain product (small integers: exact).
  uint32_t seed = 777;
  auto draw = [&seed](int span) {
    seed = seed * 1103515245u + 12345u;
    return static_cast<float>(static_cast<int>((seed >> 16) % static_cast<uint32_t>(span)) - span / 2);
  };
  float A[16][16], B[16][8], C[16][8];
  for (auto& row : A)
    for (float& v : row) v = draw(11);
  for (auto& row : B)
    for (float& v : row) v = draw(7);
  for (auto& row : C)
    for (float& v : row) v = draw(9);
  WarpRegs16 w;
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) w.a[lane][i] = A[mma16_a_row(lane, i)][mma16_a_col(lane, i)];
    for (int i = 0; i < 4; ++i) {
      w.b[lane][i] = B[mma16_b_row(lane, i)][mma16_b_col(lane)];
      w.d[lane][i] = C[mma_c_row(lane, i)][mma_c_col(lane, i)];
    }
  }
  bool ok = true;
  emulate_mma16(w, &ok);
  CHECK(ok);
  bool equal = true;
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const int r = mma_c_row(lane, i), c = mma_c_col(lane, i);
      float want = C[r][c];
      for (int k = 0; k < 16; ++k) want += A[r][k] * B[k][c];
      equal = equal && w.d[lane][i] == want;
    }
  CHECK(equal);
}

namespace {

// C = alpha * A * B + beta * C the way brp_tc_windows16 and brp_residual<ValF16> compute it,
// through abi/spmm.h: per group the 16-bit tile of ceil(g / 2) pairs (brp_afrag16_index), per
// pair and tile of 8 columns one emulated k16 mma with B rows by old_col_id of blocks 2p and
// 2p + 1 (none for g = 1), the window's sum times alpha added into C. Values as floats that are
// already f16 (the test rounds A and B first), so the only differences to the reference are f32
// summation order.
void emulated_brp_spmm16(const BrpMatrix<float>& m, const std::vector<float>& b, int n, std::vector<float>& c,
                         float alpha, float beta, bool* ok) {
  for (float& v : c) v = beta == 0.0f ? 0.0f : beta * v;
  const int g = m.g, f = m.f, slots = kSpmmBlockSlots * g, pairs = spmm_k16_pairs(g);
  std::vector<float> afrag(static_cast<size_t>(pairs) * 32 * 8);
  std::vector<int> filled(afrag.size());
  for (int64_t q = 0; q < m.groups(); ++q) {
    std::fill(afrag.begin(), afrag.end(), 0.0f);
    std::fill(filled.begin(), filled.end(), 0);
    for (int e = 0; e < slots * f; ++e) {
      const int lid = m.local_id[static_cast<size_t>(q * m.local_stride + e)];
      if (lid == kSpmmPadLocalId) continue;
      const int at = brp_afrag16_index(lid, e, f);
      *ok = *ok && at >= 0 && at < static_cast<int>(afrag.size()) && filled[static_cast<size_t>(at)]++ == 0;
      if (at >= 0 && at < static_cast<int>(afrag.size()))
        afrag[static_cast<size_t>(at)] = m.values[static_cast<size_t>(q * m.value_stride + e)];
    }
    const int row0 = m.group_window_id[static_cast<size_t>(q)] * kSpmmWindowRows;
    for (int t = 0; t * kSpmmTileCols < n; ++t) {
      WarpRegs16 w;
      for (int p = 0; p < pairs; ++p) {
        for (int lane = 0; lane < 32; ++lane) {
          for (int i = 0; i < 8; ++i) w.a[lane][i] = afrag[static_cast<size_t>((p * 32 + lane) * 8 + i)];
          const int col = t * kSpmmTileCols + mma16_b_col(lane);
          for (int i = 0; i < 4; ++i) {
            const int krow = mma16_b_row(lane, i);
            // g = 1: k 8..15 have no block; the kernel leaves those B registers 0
            if (2 * p * kSpmmBlockSlots + krow >= slots || col >= n) {
              w.b[lane][i] = 0.0f;
              continue;
            }
            const int k = m.old_col_id[static_cast<size_t>(q * slots + 2 * p * kSpmmBlockSlots + krow)];
            w.b[lane][i] = b[static_cast<size_t>(k) * n + col];
          }
        }
        emulate_mma16(w, ok);
      }
      for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < 4; ++i) {
          const int row = row0 + mma_c_row(lane, i), col = t * kSpmmTileCols + mma_c_col(lane, i);
          if (row < m.rows && col < n && w.d[lane][i] != 0.0f)
            c[static_cast<size_t>(row) * n + col] += alpha * w.d[lane][i];
        }
    }
  }
  for (size_t r = 0; r < m.res_rows_id.size(); ++r)
    for (int j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int32_t p = m.res_row_offset[r]; p < m.res_row_offset[r + 1]; ++p)
        sum +=
            m.res_values[static_cast<size_t>(p)] * b[static_cast<size_t>(m.res_col_id[static_cast<size_t>(p)]) * n + j];
      c[static_cast<size_t>(m.res_rows_id[r]) * n + j] += alpha * sum;
    }
}

std::vector<float> rounded_to_f16(std::vector<float> v) {
  for (float& x : v) x = half_to_float(float_to_half(x));
  return v;
}

}  // namespace

TEST_CASE("BrpKernelK16IndexMathEmulatedOnTheHostMatchesReference") {
  std::vector<std::pair<std::string, CsrMatrix<float>>> cases;
  for (const char* spec : {"uniform:n=700,d=12", "powerlaw:n=600,avg=8,alpha=1.5,max=200"})
    cases.emplace_back(spec, generate(spec).cast<float>());
  {  // 80% dense, 77 columns, 45 rows (not a multiple of 16): groups form at every (f, g) but f = 8, g = 8
    std::vector<dbs_test::Entry> e;
    for (int32_t r = 0; r < 45; ++r)
      for (int32_t c = 0; c < 77; ++c)
        if ((r * 7 + c * 3) % 5 != 0) e.emplace_back(r, c, std::sin(r * 77.0 + c));
    cases.emplace_back("dense 45x77", dbs_test::csr_from_entries<float>(45, 77, e));
  }
  for (auto& [name, a] : cases) {
    a.values = rounded_to_f16(a.values);
    for (int f : {1, 2, 4, 8})
      for (int g : {1, 2, 4, 8}) {
        CAPTURE(name);
        CAPTURE(f);
        CAPTURE(g);
        const BrpMatrix<float> m = csr_to_brp(a, BrpParams{f, g});
        for (int n : {1, 13}) {
          CAPTURE(n);
          const auto b = rounded_to_f16(dbs_test::random_vector<float>(static_cast<size_t>(a.cols) * n, 3 + n));
          const auto c0 = dbs_test::random_vector<float>(static_cast<size_t>(a.rows) * n, 5 + n);
          std::vector<float> ref = c0, got = c0;
          reference_spmm(a, b, n, ref, 0.75f, -0.5f);
          bool ok = true;
          emulated_brp_spmm16(m, b, n, got, 0.75f, -0.5f, &ok);
          CHECK_MESSAGE(ok, "each entry lands in its own place of the k16 fragment-ordered tile");
          double worst = 0;
          for (int32_t i = 0; i < a.rows; ++i)
            for (int j = 0; j < n; ++j) {
              const size_t at = static_cast<size_t>(i) * n + j;
              double scale = 0.5 * std::abs(double(c0[at]));
              for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
                scale += 0.75 * std::abs(double(a.values[p]) * b[static_cast<size_t>(a.col_idx[p]) * n + j]);
              worst = std::max(worst, std::abs(double(got[at]) - double(ref[at])) / std::max(scale, 1e-30));
            }
          CHECK(worst <= 1e-5);
        }
      }
  }
  CHECK(csr_to_brp(cases.back().second, BrpParams{1, 1}).groups() > 4);  // g = 1's padded pair ran
}

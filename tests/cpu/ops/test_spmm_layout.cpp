// The index math of the SpMM tensor core kernel (include/dbsparse/abi/spmm.h), checked on the host:
// the mma.m16n8k8 .tf32 fragment functions against the PTX ISA's layout (one mma emulated on the
// host), and a BRP group's path through the kernel (scatter into the fragment-ordered A tile, B
// rows by old_col_id, g mmas summed, C rows by window) against the reference. No GPU runs this: it
// is the only check of the layouts before one does.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "dbsparse/abi/spmm.h"
#include "dbsparse/brp.hpp"
#include "dbsparse/generators.hpp"
#include "test_support.hpp"

using namespace dbsparse;
using namespace dbsparse::abi;

namespace {

// The PTX ISA (§9.7.14.5.7, "Matrix Fragments for mma.m16n8k8", .tf32 multiplicands and .f32
// accumulators), transcribed here on its own so that the check does not read what it checks:
//   A: row = groupID for a0 and a2, groupID + 8 for a1 and a3;
//      col = threadID_in_group for a0 and a1, threadID_in_group + 4 for a2 and a3
//   B: row = threadID_in_group for b0, threadID_in_group + 4 for b1; col = groupID
//   C, D: row = groupID for c0 and c1, groupID + 8 for c2 and c3;
//         col = (threadID_in_group * 2) + (i & 0x1)
// with groupID = %laneid >> 2 and threadID_in_group = %laneid % 4.
struct Place {
  int row, col;
};
Place isa_a(int lane, int i) {
  const int group = lane >> 2, tig = lane % 4;
  return {(i == 0 || i == 2) ? group : group + 8, (i == 0 || i == 1) ? tig : tig + 4};
}
Place isa_b(int lane, int i) {
  const int group = lane >> 2, tig = lane % 4;
  return {i == 0 ? tig : tig + 4, group};
}
Place isa_c(int lane, int i) {
  const int group = lane >> 2, tig = lane % 4;
  return {i < 2 ? group : group + 8, tig * 2 + (i & 0x1)};
}

// What one warp's mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 computes, register by
// register: every lane's registers to their places in A, B and C, D = A B + C, D back to the
// lanes. Each place must be named by exactly one (lane, register), or *ok turns false.
struct WarpRegs {
  float a[32][4] = {}, b[32][2] = {}, d[32][4] = {};
};
void emulate_mma(WarpRegs& w, bool* ok) {
  float A[16][8], B[8][8], C[16][8];
  int seen_a[16][8] = {}, seen_b[8][8] = {}, seen_c[16][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 4; ++i) {
      const Place pa = isa_a(lane, i), pc = isa_c(lane, i);
      A[pa.row][pa.col] = w.a[lane][i];
      ++seen_a[pa.row][pa.col];
      C[pc.row][pc.col] = w.d[lane][i];
      ++seen_c[pc.row][pc.col];
    }
    for (int i = 0; i < 2; ++i) {
      const Place pb = isa_b(lane, i);
      B[pb.row][pb.col] = w.b[lane][i];
      ++seen_b[pb.row][pb.col];
    }
  }
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c) *ok = *ok && seen_a[r][c] == 1 && seen_c[r][c] == 1 && (r >= 8 || seen_b[r][c] == 1);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const Place pc = isa_c(lane, i);
      float sum = C[pc.row][pc.col];
      for (int k = 0; k < 8; ++k) sum += A[pc.row][k] * B[k][pc.col];
      w.d[lane][i] = sum;
    }
}

}  // namespace

TEST_CASE("MmaFragmentFunctionsGiveThePtxIsaProduct") {
  // Small integers: every product and sum is exact in float, so the comparison is exact. Drawn
  // from an LCG, not a formula in (row, col): (7r + 3c) % 11 gave A(r + 8, c) == A(r, c + 4), and
  // an A with a1 and a2 swapped passed.
  uint32_t seed = 12345;
  auto draw = [&seed](int span) {
    seed = seed * 1103515245u + 12345u;
    return static_cast<float>(static_cast<int>((seed >> 16) % static_cast<uint32_t>(span)) - span / 2);
  };
  float A[16][8], B[8][8], C[16][8];
  for (auto& row : A)
    for (float& v : row) v = draw(11);
  for (auto& row : B)
    for (float& v : row) v = draw(7);
  for (auto& row : C)
    for (float& v : row) v = draw(9);
  // Load the fragments the way the kernel does, through abi/spmm.h.
  WarpRegs w;
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 4; ++i) {
      w.a[lane][i] = A[mma_a_row(lane, i)][mma_a_col(lane, i)];
      w.d[lane][i] = C[mma_c_row(lane, i)][mma_c_col(lane, i)];
    }
    for (int i = 0; i < 2; ++i) w.b[lane][i] = B[mma_b_row(lane, i)][mma_b_col(lane)];
  }
  bool ok = true;
  emulate_mma(w, &ok);
  CHECK_MESSAGE(ok, "the ISA's layout names every place of A, B and C once");
  // Store D the way the kernel does, and compare with the plain product.
  float D[16][8] = {};
  int written[16][8] = {};
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      D[mma_c_row(lane, i)][mma_c_col(lane, i)] = w.d[lane][i];
      ++written[mma_c_row(lane, i)][mma_c_col(lane, i)];
    }
  bool equal = true, once = true;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c) {
      float want = C[r][c];
      for (int k = 0; k < 8; ++k) want += A[r][k] * B[k][c];
      equal = equal && D[r][c] == want;
      once = once && written[r][c] == 1;
    }
  CHECK(equal);
  CHECK(once);

  // The A inverse the scatter uses: (row, col) -> (lane, register) -> (row, col).
  bool inverse = true;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c) {
      const int lane = mma_a_lane(r, c), reg = mma_a_reg(r, c);
      inverse = inverse && lane >= 0 && lane < 32 && reg >= 0 && reg < 4 && mma_a_row(lane, reg) == r &&
                mma_a_col(lane, reg) == c;
    }
  CHECK(inverse);
  // Spot values from the ISA's figures: lane 0 holds A(0,0), A(8,0), A(0,4), A(8,4); lane 5
  // (group 1, thread 1) holds B(1,1), B(5,1) and C(1,2), C(1,3), C(9,2), C(9,3).
  CHECK(mma_a_row(0, 1) == 8);
  CHECK(mma_a_col(0, 2) == 4);
  CHECK((mma_b_row(5, 1) == 5 && mma_b_col(5) == 1));
  CHECK((mma_c_row(5, 3) == 9 && mma_c_col(5, 3) == 3));
}

namespace {

// C = alpha * A * B + beta * C the way the SpMM BRP kernels compute it, through abi/spmm.h, with
// each mma emulated as above (in f32, without the tf32 rounding): the groups' fragments and mma
// of brp_tc_windows (block by block, tile by tile, lane by lane; beta applied first, which is the
// same sum), brp_residual.
void emulated_brp_spmm(const BrpMatrix<float>& m, const std::vector<float>& b, int n, std::vector<float>& c,
                       float alpha, float beta, bool* ok) {
  for (float& v : c) v = beta == 0.0f ? 0.0f : beta * v;
  const int g = m.g, f = m.f, slots = kSpmmBlockSlots * g;
  std::vector<float> afrag(static_cast<size_t>(g) * 32 * 4);
  std::vector<int> filled(afrag.size());
  for (int64_t q = 0; q < m.groups(); ++q) {
    std::fill(afrag.begin(), afrag.end(), 0.0f);
    std::fill(filled.begin(), filled.end(), 0);
    for (int e = 0; e < slots * f; ++e) {
      const int lid = m.local_id[static_cast<size_t>(q * m.local_stride + e)];
      if (lid == kSpmmPadLocalId) continue;
      const int at = brp_afrag_index(lid, e, f);
      *ok = *ok && at >= 0 && at < static_cast<int>(afrag.size()) && filled[static_cast<size_t>(at)]++ == 0;
      if (at >= 0 && at < static_cast<int>(afrag.size()))
        afrag[static_cast<size_t>(at)] = m.values[static_cast<size_t>(q * m.value_stride + e)];
    }
    const int row0 = m.group_window_id[static_cast<size_t>(q)] * kSpmmWindowRows;
    for (int t = 0; t * kSpmmTileCols < n; ++t) {
      WarpRegs w;
      for (int blk = 0; blk < g; ++blk) {
        for (int lane = 0; lane < 32; ++lane) {
          for (int i = 0; i < 4; ++i) w.a[lane][i] = afrag[static_cast<size_t>((blk * 32 + lane) * 4 + i)];
          const int col = t * kSpmmTileCols + mma_b_col(lane);
          for (int i = 0; i < 2; ++i) {
            const int k = m.old_col_id[static_cast<size_t>(q * slots + blk * kSpmmBlockSlots + mma_b_row(lane, i))];
            w.b[lane][i] = col < n ? b[static_cast<size_t>(k) * n + col] : 0.0f;
          }
        }
        emulate_mma(w, ok);
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

CsrMatrix<float> from_entries(int32_t rows, int32_t cols, const std::vector<dbs_test::Entry>& e) {
  return dbs_test::csr_from_entries<float>(rows, cols, e);
}

}  // namespace

TEST_CASE("BrpKernelIndexMathEmulatedOnTheHostMatchesReference") {
  std::vector<std::pair<std::string, CsrMatrix<float>>> cases;
  for (const char* spec : {"uniform:n=700,d=12", "stencil2d:n=20", "powerlaw:n=600,avg=8,alpha=1.5,max=200"})
    cases.emplace_back(spec, generate(spec).cast<float>());
  {  // M = 70 and K = 50 (neither a multiple of 16 or 8), windows 1, 2 and 4 empty
    std::vector<std::tuple<int32_t, int32_t, double>> e;
    for (int32_t r : {0, 3, 15, 48, 50, 63, 66, 69})
      for (int32_t c = r % 5; c < 50; c += 2) e.emplace_back(r, c, 1.0 + r * 0.01 - c * 0.02);
    cases.emplace_back("empty windows 70x50", from_entries(70, 50, e));
  }
  {  // 80% dense, 77 columns: groups form at every (f, g) but f = 8, g = 8
    std::vector<std::tuple<int32_t, int32_t, double>> e;
    for (int32_t r = 0; r < 45; ++r)
      for (int32_t c = 0; c < 77; ++c)
        if ((r * 7 + c * 3) % 5 != 0) e.emplace_back(r, c, std::sin(r * 77.0 + c));
    cases.emplace_back("dense 45x77", from_entries(45, 77, e));
  }
  for (const auto& [name, a] : cases)
    for (int f : {1, 2, 4, 8})
      for (int g : {1, 2, 4, 8}) {
        CAPTURE(name);
        CAPTURE(f);
        CAPTURE(g);
        const BrpMatrix<float> m = csr_to_brp(a, BrpParams{f, g});
        for (int n : {1, 8, 13}) {
          CAPTURE(n);
          const auto b = dbs_test::random_vector<float>(static_cast<size_t>(a.cols) * n, 3 + n);
          const auto c0 = dbs_test::random_vector<float>(static_cast<size_t>(a.rows) * n, 5 + n);
          std::vector<float> ref = c0, got = c0;
          reference_spmm(a, b, n, ref, 0.75f, -0.5f);
          bool ok = true;
          emulated_brp_spmm(m, b, n, got, 0.75f, -0.5f, &ok);
          CHECK_MESSAGE(ok, "each entry lands in its own place of the fragment-ordered tile");
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
  // The dense case puts most nonzeros into groups at f = 1, g = 4, so the emulation ran the mma.
  CHECK(csr_to_brp(cases.back().second, BrpParams{1, 4}).groups() > 4);
}

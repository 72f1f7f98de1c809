// The index math of the SpMM tensor core kernels (include/dbsparse/abi/spmm.h), checked on the host
// for both mma shapes they use: m16n8k8 with .tf32 multiplicands (templates/spmm/spmm_tc.cuh) and
// m16n8k16 with .f16 / .bf16 ones (spmm_tc_half.cuh). The fragment functions against the PTX ISA's
// layout (one mma emulated on the host), and a BRP group's path through the kernel (scatter into
// the fragment-ordered A tile, B rows by old_col_id, the group's mmas summed, C rows by window)
// against the reference. No GPU runs this: it is the only check of the layouts before one does.
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

struct Place {
  int row, col;
};

// The m16n8k8 shape with .tf32 multiplicands and .f32 accumulators: one mma a BRP block.
struct MmaTf32K8 {
  static constexpr int kK = 8, kARegs = 4, kBRegs = 2, kBlocksPerMma = 1;
  // The PTX ISA (§9.7.14.5.7, "Matrix Fragments for mma.m16n8k8"), transcribed here on its own so
  // that the check does not read what it checks:
  //   A: row = groupID for a0 and a2, groupID + 8 for a1 and a3;
  //      col = threadID_in_group for a0 and a1, threadID_in_group + 4 for a2 and a3
  //   B: row = threadID_in_group for b0, threadID_in_group + 4 for b1; col = groupID
  // with groupID = %laneid >> 2 and threadID_in_group = %laneid % 4.
  static Place isa_a(int lane, int i) {
    const int group = lane >> 2, tig = lane % 4;
    return {(i == 0 || i == 2) ? group : group + 8, (i == 0 || i == 1) ? tig : tig + 4};
  }
  static Place isa_b(int lane, int i) {
    const int group = lane >> 2, tig = lane % 4;
    return {i == 0 ? tig : tig + 4, group};
  }
  // The functions under test (abi/spmm.h).
  static int a_row(int lane, int i) { return mma_a_row(lane, i); }
  static int a_col(int lane, int i) { return mma_a_col(lane, i); }
  static int a_lane(int row, int col) { return mma_a_lane(row, col); }
  static int a_reg(int row, int col) { return mma_a_reg(row, col); }
  static int b_row(int lane, int i) { return mma_b_row(lane, i); }
  static int b_col(int lane) { return mma_b_col(lane); }
  static int afrag_index(int local_id, int e, int f) { return brp_afrag_index(local_id, e, f); }
  static int mmas(int g) { return g; }
  static float rounded(float x) { return x; }
  // Spot values from the ISA's figures: lane 0 holds A(0,0), A(8,0), A(0,4), A(8,4); lane 5
  // (group 1, thread 1) holds B(1,1), B(5,1) and C(1,2), C(1,3), C(9,2), C(9,3).
  static void check_spot_values() {
    CHECK(mma_a_row(0, 1) == 8);
    CHECK(mma_a_col(0, 2) == 4);
    CHECK((mma_b_row(5, 1) == 5 && mma_b_col(5) == 1));
    CHECK((mma_c_row(5, 3) == 9 && mma_c_col(5, 3) == 3));
  }
  static constexpr uint32_t kSeed = 12345;
  // The BRP emulation's cases: the generated specs, the hand-made shape with empty windows, n.
  static std::vector<const char*> specs() {
    return {"uniform:n=700,d=12", "stencil2d:n=20", "powerlaw:n=600,avg=8,alpha=1.5,max=200"};
  }
  static constexpr bool kEmptyWindows = true;
  static std::vector<int> ns() { return {1, 8, 13}; }
  static constexpr int kGroupsAtG = 4;  // the dense case has groups at f = 1 and this g
};

// The m16n8k16 shape with .f16 / .bf16 multiplicands and .f32 accumulators: one mma a pair of BRP
// blocks (g = 1: one block, its pair's upper half zero).
struct MmaHalfK16 {
  static constexpr int kK = 16, kARegs = 8, kBRegs = 4, kBlocksPerMma = 2;
  // The PTX ISA ("Matrix Fragments for mma.m16n8k16 with floating point type"), transcribed on
  // its own; a_i is register i / 2, half i % 2:
  //   A: row = groupID for a0, a1, a4, a5; groupID + 8 for a2, a3, a6, a7;
  //      col = threadID_in_group * 2 + (i & 1) for i < 4, + 8 for i >= 4
  //   B: row = threadID_in_group * 2 + (i & 1) for i < 2, + 8 for i >= 2; col = groupID
  static Place isa_a(int lane, int i) {
    const int group = lane >> 2, tig = lane % 4;
    const bool low_row = i == 0 || i == 1 || i == 4 || i == 5;
    return {low_row ? group : group + 8, tig * 2 + (i & 1) + (i < 4 ? 0 : 8)};
  }
  static Place isa_b(int lane, int i) {
    const int group = lane >> 2, tig = lane % 4;
    return {tig * 2 + (i & 1) + (i < 2 ? 0 : 8), group};
  }
  static int a_row(int lane, int i) { return mma16_a_row(lane, i); }
  static int a_col(int lane, int i) { return mma16_a_col(lane, i); }
  static int a_lane(int row, int col) { return mma16_a_lane(row, col); }
  static int a_reg(int row, int col) { return mma16_a_half(row, col); }
  static int b_row(int lane, int i) { return mma16_b_row(lane, i); }
  static int b_col(int lane) { return mma16_b_col(lane); }
  static int afrag_index(int local_id, int e, int f) { return brp_afrag16_index(local_id, e, f); }
  static int mmas(int g) { return spmm_k16_pairs(g); }
  static float rounded(float x) { return half_to_float(float_to_half(x)); }
  // Spot values from the ISA's figure: lane 0 holds A(0,0), A(0,1), A(8,0), A(8,1), A(0,8), A(0,9),
  // A(8,8), A(8,9); lane 5 (group 1, thread 1) holds B(2,1), B(3,1), B(10,1), B(11,1).
  static void check_spot_values() {
    CHECK((mma16_a_row(0, 2) == 8 && mma16_a_col(0, 2) == 0));
    CHECK((mma16_a_row(0, 5) == 0 && mma16_a_col(0, 5) == 9));
    CHECK((mma16_b_row(5, 0) == 2 && mma16_b_row(5, 3) == 11 && mma16_b_col(5) == 1));
  }
  static constexpr uint32_t kSeed = 777;
  static std::vector<const char*> specs() { return {"uniform:n=700,d=12", "powerlaw:n=600,avg=8,alpha=1.5,max=200"}; }
  static constexpr bool kEmptyWindows = false;
  static std::vector<int> ns() { return {1, 13}; }
  static constexpr int kGroupsAtG = 1;  // g = 1's padded pair ran
};

// C, D (both shapes, the ISA's "C or D" fragment): row = groupID for c0 and c1, groupID + 8 for c2
// and c3; col = threadID_in_group * 2 + (i & 1).
Place isa_c(int lane, int i) {
  const int group = lane >> 2, tig = lane % 4;
  return {i < 2 ? group : group + 8, tig * 2 + (i & 0x1)};
}

// One warp's registers, element by element (16-bit values as floats): a[lane][i] is a_i.
template <class M>
struct WarpRegs {
  float a[32][M::kARegs] = {}, b[32][M::kBRegs] = {}, d[32][4] = {};
};

// What one warp's mma.sync.aligned.m16n8kK.row.col.f32 computes, register by register: every
// lane's registers to their places in A, B and C, D = A B + C, D back to the lanes. Each place must
// be named by exactly one (lane, register), or *ok turns false.
template <class M>
void emulate_mma(WarpRegs<M>& w, bool* ok) {
  constexpr int K = M::kK;
  float A[16][K], B[K][8], C[16][8];
  int seen_a[16][K] = {}, seen_b[K][8] = {}, seen_c[16][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < M::kARegs; ++i) {
      const Place pa = M::isa_a(lane, i);
      A[pa.row][pa.col] = w.a[lane][i];
      ++seen_a[pa.row][pa.col];
    }
    for (int i = 0; i < M::kBRegs; ++i) {
      const Place pb = M::isa_b(lane, i);
      B[pb.row][pb.col] = w.b[lane][i];
      ++seen_b[pb.row][pb.col];
    }
    for (int i = 0; i < 4; ++i) {
      const Place pc = isa_c(lane, i);
      C[pc.row][pc.col] = w.d[lane][i];
      ++seen_c[pc.row][pc.col];
    }
  }
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < K; ++c)
      *ok = *ok && seen_a[r][c] == 1 && (r >= K || c >= 8 || seen_b[r][c] == 1) && (c >= 8 || seen_c[r][c] == 1);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const Place pc = isa_c(lane, i);
      float sum = C[pc.row][pc.col];
      for (int k = 0; k < K; ++k) sum += A[pc.row][k] * B[k][pc.col];
      w.d[lane][i] = sum;
    }
}

}  // namespace

TYPE_TO_STRING(MmaTf32K8);
TYPE_TO_STRING(MmaHalfK16);

TEST_CASE_TEMPLATE("MmaFragmentFunctionsCoverEachPlaceOnceAndGiveThePtxIsaProduct", M, MmaTf32K8, MmaHalfK16) {
  constexpr int K = M::kK;
  // Each (row, col) of A, B and C is named by exactly one (lane, register) of the functions, the
  // ISA's place.
  int a_seen[16][K] = {}, b_seen[K][8] = {}, c_seen[16][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < M::kARegs; ++i) {
      const int r = M::a_row(lane, i), c = M::a_col(lane, i);
      REQUIRE((r >= 0 && r < 16 && c >= 0 && c < K));
      ++a_seen[r][c];
      CHECK((M::isa_a(lane, i).row == r && M::isa_a(lane, i).col == c));
    }
    for (int i = 0; i < M::kBRegs; ++i) {
      const int r = M::b_row(lane, i), c = M::b_col(lane);
      REQUIRE((r >= 0 && r < K && c >= 0 && c < 8));
      ++b_seen[r][c];
      CHECK((M::isa_b(lane, i).row == r && M::isa_b(lane, i).col == c));
    }
    for (int i = 0; i < 4; ++i) ++c_seen[mma_c_row(lane, i)][mma_c_col(lane, i)];
  }
  bool once = true;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < K; ++c) {
      once = once && a_seen[r][c] == 1;
      if (c < 8) once = once && c_seen[r][c] == 1 && (r >= K || b_seen[r][c] == 1);
    }
  CHECK(once);
  // The A inverse the scatter uses: (row, col) -> (lane, register) -> (row, col).
  bool inverse = true;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < K; ++c) {
      const int lane = M::a_lane(r, c), reg = M::a_reg(r, c);
      inverse = inverse && lane >= 0 && lane < 32 && reg >= 0 && reg < M::kARegs && M::a_row(lane, reg) == r &&
                M::a_col(lane, reg) == c;
    }
  CHECK(inverse);
  M::check_spot_values();

  // One mma, loaded through the functions, equals the plain product. Small integers: every product
  // and sum is exact in float, so the comparison is exact. Drawn from an LCG, not a formula in
  // (row, col): (7r + 3c) % 11 gave A(r + 8, c) == A(r, c + 4), and an A with a1 and a2 swapped passed.
  uint32_t seed = M::kSeed;
  auto draw = [&seed](int span) {
    seed = seed * 1103515245u + 12345u;
    return static_cast<float>(static_cast<int>((seed >> 16) % static_cast<uint32_t>(span)) - span / 2);
  };
  float A[16][K], B[K][8], C[16][8];
  for (auto& row : A)
    for (float& v : row) v = draw(11);
  for (auto& row : B)
    for (float& v : row) v = draw(7);
  for (auto& row : C)
    for (float& v : row) v = draw(9);
  WarpRegs<M> w;
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < M::kARegs; ++i) w.a[lane][i] = A[M::a_row(lane, i)][M::a_col(lane, i)];
    for (int i = 0; i < M::kBRegs; ++i) w.b[lane][i] = B[M::b_row(lane, i)][M::b_col(lane)];
    for (int i = 0; i < 4; ++i) w.d[lane][i] = C[mma_c_row(lane, i)][mma_c_col(lane, i)];
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
  bool equal = true, stored_once = true;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c) {
      float want = C[r][c];
      for (int k = 0; k < K; ++k) want += A[r][k] * B[k][c];
      equal = equal && D[r][c] == want;
      stored_once = stored_once && written[r][c] == 1;
    }
  CHECK(equal);
  CHECK(stored_once);
}

namespace {

// C = alpha * A * B + beta * C the way the SpMM BRP kernels compute it, through abi/spmm.h, with
// each mma emulated as above (in f32, without the tf32 rounding; 16-bit values as floats that the
// test rounded first): per group the fragment-ordered A tile (M::afrag_index), per mma and tile of
// 8 columns B rows by old_col_id of the mma's blocks (k past the group's last block: 0, as the
// kernel leaves those registers), the window's sum times alpha added into C (beta applied first,
// which is the same sum); then brp_residual. What differs from the reference is f32 summation order.
template <class M>
void emulated_brp_spmm(const BrpMatrix<float>& m, const std::vector<float>& b, int n, std::vector<float>& c,
                       float alpha, float beta, bool* ok) {
  for (float& v : c) v = beta == 0.0f ? 0.0f : beta * v;
  const int g = m.g, f = m.f, slots = kSpmmBlockSlots * g, mmas = M::mmas(g);
  std::vector<float> afrag(static_cast<size_t>(mmas) * 32 * M::kARegs);
  std::vector<int> filled(afrag.size());
  for (int64_t q = 0; q < m.groups(); ++q) {
    std::fill(afrag.begin(), afrag.end(), 0.0f);
    std::fill(filled.begin(), filled.end(), 0);
    for (int e = 0; e < slots * f; ++e) {
      const int lid = m.local_id[static_cast<size_t>(q * m.local_stride + e)];
      if (lid == kSpmmPadLocalId) continue;
      const int at = M::afrag_index(lid, e, f);
      *ok = *ok && at >= 0 && at < static_cast<int>(afrag.size()) && filled[static_cast<size_t>(at)]++ == 0;
      if (at >= 0 && at < static_cast<int>(afrag.size()))
        afrag[static_cast<size_t>(at)] = m.values[static_cast<size_t>(q * m.value_stride + e)];
    }
    const int row0 = m.group_window_id[static_cast<size_t>(q)] * kSpmmWindowRows;
    for (int t = 0; t * kSpmmTileCols < n; ++t) {
      WarpRegs<M> w;
      for (int p = 0; p < mmas; ++p) {
        for (int lane = 0; lane < 32; ++lane) {
          for (int i = 0; i < M::kARegs; ++i)
            w.a[lane][i] = afrag[static_cast<size_t>((p * 32 + lane) * M::kARegs + i)];
          const int col = t * kSpmmTileCols + M::b_col(lane);
          for (int i = 0; i < M::kBRegs; ++i) {
            const int slot = p * M::kBlocksPerMma * kSpmmBlockSlots + M::b_row(lane, i);
            if (slot >= slots || col >= n) {
              w.b[lane][i] = 0.0f;
              continue;
            }
            const int k = m.old_col_id[static_cast<size_t>(q * slots + slot)];
            w.b[lane][i] = b[static_cast<size_t>(k) * n + col];
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

template <class M>
std::vector<float> rounded(std::vector<float> v) {
  for (float& x : v) x = M::rounded(x);
  return v;
}

}  // namespace

TEST_CASE_TEMPLATE("BrpKernelIndexMathEmulatedOnTheHostMatchesReference", M, MmaTf32K8, MmaHalfK16) {
  std::vector<std::pair<std::string, CsrMatrix<float>>> cases;
  for (const char* spec : M::specs()) cases.emplace_back(spec, generate(spec).cast<float>());
  if (M::kEmptyWindows) {  // M = 70 and K = 50 (neither a multiple of 16 or 8), windows 1, 2 and 4 empty
    std::vector<dbs_test::Entry> e;
    for (int32_t r : {0, 3, 15, 48, 50, 63, 66, 69})
      for (int32_t c = r % 5; c < 50; c += 2) e.emplace_back(r, c, 1.0 + r * 0.01 - c * 0.02);
    cases.emplace_back("empty windows 70x50", dbs_test::csr_from_entries<float>(70, 50, e));
  }
  {  // 80% dense, 77 columns, 45 rows (not a multiple of 16): groups form at every (f, g) but f = 8, g = 8
    std::vector<dbs_test::Entry> e;
    for (int32_t r = 0; r < 45; ++r)
      for (int32_t c = 0; c < 77; ++c)
        if ((r * 7 + c * 3) % 5 != 0) e.emplace_back(r, c, std::sin(r * 77.0 + c));
    cases.emplace_back("dense 45x77", dbs_test::csr_from_entries<float>(45, 77, e));
  }
  for (auto& [name, a] : cases) {
    a.values = rounded<M>(a.values);
    for (int f : {1, 2, 4, 8})
      for (int g : {1, 2, 4, 8}) {
        CAPTURE(name);
        CAPTURE(f);
        CAPTURE(g);
        const BrpMatrix<float> m = csr_to_brp(a, BrpParams{f, g});
        for (int n : M::ns()) {
          CAPTURE(n);
          const auto b = rounded<M>(dbs_test::random_vector<float>(static_cast<size_t>(a.cols) * n, 3 + n));
          const auto c0 = dbs_test::random_vector<float>(static_cast<size_t>(a.rows) * n, 5 + n);
          std::vector<float> ref = c0, got = c0;
          reference_spmm(a, b, n, ref, 0.75f, -0.5f);
          bool ok = true;
          emulated_brp_spmm<M>(m, b, n, got, 0.75f, -0.5f, &ok);
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
  }
  // The dense case puts most nonzeros into groups at f = 1, so the emulation ran the mma.
  CHECK(csr_to_brp(cases.back().second, BrpParams{1, M::kGroupsAtG}).groups() > 4);
}

// SpMM on the GPU against the CPU reference (reference_spmm, double sums): the BRP path at every
// (f, g) and the CUDA-core CSR path, n in {1, 8, 32, 33, 128, 512}, alpha / beta, generated and
// hand-made shapes (empty windows, M not a multiple of 16, K not a multiple of 8) and the matrices
// in ../shared/matrices. Errors are relative to sum_j |alpha a_ij b_jk| + |beta c_ik| per entry:
// 2e-3 where tensor cores round A and B to TF32 (10-bit mantissa, round to nearest: 2^-11 each),
// 1e-5 on the f32 CUDA-core path.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cases/spmm_cases.hpp"
#include "dbsparse/brp.hpp"
#include "dbsparse/spmm.hpp"
#include "dbsparse/tc_condensed.hpp"
#include "gpu/spmm_gpu_support.hpp"
#include "tools/ops/registry.hpp"

namespace {

constexpr int kNs[] = {1, 8, 32, 33, 128, 512};

// NaN stays NaN through the epilogue (not fmaxf's 0): a few entries of C are NaN and beta != 0,
// so those of the product are NaN; they must come back NaN, the others within tol.
bool relu_keeps_nan(const SpmmPlan& plan, Expected x, double tol) {
  std::vector<size_t> nan_at;
  for (size_t i = 3; i < x.c0.size(); i += 97) nan_at.push_back(i);
  for (const size_t i : nan_at) x.c0[i] = x.ref[i] = std::numeric_limits<float>::quiet_NaN();
  Stream s(ctx());
  DeviceBuffer<float> b{std::span<const float>(x.b)}, c{std::span<const float>(x.c0)};
  plan.run(b, c, s, x.alpha, x.beta);
  s.synchronize();
  const std::vector<float> got = c.download();
  bool ok = true;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(x.ref[i])) {
      ok = ok && std::isnan(got[i]);
      continue;
    }
    const double err = std::fabs(double(got[i]) - double(x.ref[i])) / std::max(x.scale[i], 1e-30);
    ok = ok && !std::isnan(err) && err <= tol;
  }
  return ok;
}

std::vector<std::pair<std::string, CsrMatrix<float>>> test_matrices() { return dbs_test::spmm_test_matrices(); }

}  // namespace

TEST_CASE("SpmmMatchesReferenceForEveryFAndG") {
  // A (matrix, n, alpha / beta) a shard under a sanitizer (hardening_run.sh SAN_SHARDS). Each runs
  // every (f, g), and the groups depend on A, f and g alone: a shard that has one of a matrix's
  // checks that some (f, g) has groups.
  dbs_test::Shard shard;
  for (const auto& [name, a] : test_matrices()) {
    CAPTURE(name);
    bool any_groups = false, any_run = false;
    for (int n : kNs)
      for (auto [alpha, beta] : kAlphaBeta) {
        if (!shard.next()) continue;
        any_run = true;
        CAPTURE(n);
        CAPTURE(alpha);
        CAPTURE(beta);
        const Expected x = expected(a, n, alpha, beta, 17 + n);
        for (int f : {1, 2, 4, 8})
          for (int g : {1, 2, 4, 8}) {
            CAPTURE(f);
            CAPTURE(g);
            const SpmmPlan plan = plan_spmm(ctx(), a, n, SpmmOptions{SpmmPath::Brp, f, g});
            CAPTURE(plan.explain());
            REQUIRE(plan.path() == SpmmPath::Brp);
            any_groups = any_groups || plan.tc_share() > 0;
            CHECK(spmm_error(plan, x) <= kTolTf32);
          }
      }
    // Each matrix has groups at some (f, g): the tensor core kernel ran, not only the residual.
    if (any_run) CHECK(any_groups);
  }
}

// Condensed TC windows (tc_condensed.hpp): every g, n and alpha / beta on the hand-made shapes and
// generated matrices, a pruned weight matrix of moderate density (where auto must take them), one
// to eight warps a window and first-pass runs so short that most windows go through the pieces.
TEST_CASE("SpmmCondensedWindowsMatchReference") {
  auto mats = test_matrices();
  mats.emplace_back("pruned:rows=200,cols=300,density=0.3,block=1",
                    generate("pruned:rows=200,cols=300,density=0.3,block=1").cast<float>());
  dbs_test::Shard shard;  // a matrix a shard, then auto's choice (hardening_run.sh SAN_SHARDS)
  for (const auto& [name, a] : mats) {
    if (!shard.next()) continue;
    CAPTURE(name);
    for (int n : kNs)
      for (auto [alpha, beta] : kAlphaBeta) {
        CAPTURE(n);
        CAPTURE(alpha);
        CAPTURE(beta);
        const Expected x = expected(a, n, alpha, beta, 37 + n);
        for (int g : {1, 2, 4, 8}) {
          CAPTURE(g);
          const SpmmPlan plan = plan_spmm(ctx(), a, n, SpmmOptions{SpmmPath::Condensed, std::nullopt, g});
          CAPTURE(plan.explain());
          REQUIRE(plan.path() == SpmmPath::Condensed);
          CHECK(plan.tc_share() == (a.nnz() > 0 ? 1.0 : 0.0));
          CHECK(spmm_error(plan, x) <= kTolTf32);
        }
      }
    for (int n : {8, 33, 128}) {
      CAPTURE(n);
      const Expected x = expected(a, n, 0.75f, -0.5f, 43 + n);
      for (auto [warps, run] : {std::pair{1, 1}, std::pair{4, 2}, std::pair{8, 1}, std::pair{8, 32}}) {
        CAPTURE(warps);
        CAPTURE(run);
        const Config cfg{"spmm",
                         {{"path", "condensed"}, {"g", 2}, {"tc_warps", warps}, {"tc_max_run", run}},
                         ConfigSource::Explicit,
                         "test"};
        SpmmOptions o;
        o.config = &cfg;
        const SpmmPlan plan = plan_spmm(ctx(), a, n, o);
        CAPTURE(plan.explain());
        CHECK(spmm_error(plan, x) <= kTolTf32);
      }
    }
  }
  // auto: the moderate-density matrix's tiles are well filled, a 5-point stencil's are not.
  if (!shard.next()) return;
  const Config defaults{"spmm", {}, ConfigSource::Explicit, ""};
  SpmmOptions o;
  o.config = &defaults;
  const auto dense_ish = generate("pruned:rows=200,cols=300,density=0.5,block=1").cast<float>();
  CHECK(condensed_fill(dense_ish, 4) >= SpmmConfig{}.min_condensed_fill);
  const SpmmPlan by_fill = plan_spmm(ctx(), dense_ish, 32, o);
  CAPTURE(by_fill.explain());
  CHECK(by_fill.path() == SpmmPath::Condensed);
  CHECK(by_fill.condensed_fill() == doctest::Approx(condensed_fill(dense_ish, 4)));
  const auto stencil = generate("stencil2d:n=40").cast<float>();
  CHECK(condensed_fill(stencil, 4) < SpmmConfig{}.min_condensed_fill);
  CHECK(plan_spmm(ctx(), stencil, 32, o).path() != SpmmPath::Condensed);
}

TEST_CASE("SpmmCsrPathMatchesReference") {
  auto mats = test_matrices();
  for (const char* spec : {"rmat:scale=14,ef=8", "powerlaw:n=20000,avg=8,alpha=1.5,max=4000", "stencil2d:n=120"})
    mats.emplace_back(spec, generate(spec).cast<float>());
  for (const auto& [name, a] : mats) {
    CAPTURE(name);
    for (int n : kNs)
      for (auto [alpha, beta] : kAlphaBeta) {
        CAPTURE(n);
        CAPTURE(alpha);
        CAPTURE(beta);
        const SpmmPlan plan = plan_spmm(ctx(), a, n, SpmmOptions{SpmmPath::CsrCudaCore});
        CAPTURE(plan.explain());
        REQUIRE(plan.path() == SpmmPath::CsrCudaCore);
        CHECK(spmm_error(plan, expected(a, n, alpha, beta, 29 + n)) <= tol_f32(a));
      }
  }
}

// Rows walked in another order (SpmmConfig::reorder), C's rows written back by their old index:
// C in the user's order equals the reference, with and without the pieces pass (csr_max_run 8 cuts
// most rows), with beta reading the old C through the same map.
TEST_CASE("SpmmReorderedCsrMatchesReference") {
  std::vector<std::pair<std::string, CsrMatrix<float>>> mats;
  for (const char* spec : {"powerlaw:n=20000,avg=8,alpha=1.5,max=4000", "rmat:scale=12,ef=8", "stencil2d:n=60"})
    mats.emplace_back(spec, generate(spec).cast<float>());
  for (auto& m : test_matrices())
    if (m.second.rows == m.second.cols && m.second.rows > 0) mats.push_back(std::move(m));
  for (const auto& [name, a] : mats) {
    CAPTURE(name);
    for (Reorder order : {Reorder::Degree, Reorder::Rcm, Reorder::Community})
      for (int n : {8, 32, 33, 128})
        for (int run : {0, 8}) {
          CAPTURE(to_string(order));
          CAPTURE(n);
          CAPTURE(run);
          const Config cfg{"spmm",
                           {{"csr_max_run", run}, {"csr_blocks_per_sm", run ? 1 : 0}, {"csr_piece_reduce", 1}},
                           ConfigSource::Explicit,
                           "test"};
          SpmmOptions o;
          o.config = &cfg;
          o.reorder = order;
          const SpmmPlan plan = plan_spmm(ctx(), a, n, o);
          CAPTURE(plan.explain());
          REQUIRE(plan.path() == SpmmPath::CsrCudaCore);  // auto takes CSR when a reorder is asked
          CHECK(plan.reorder() == order);
          CHECK(permutation_from_order(plan.row_order()).size() == a.rows);  // throws unless a permutation
          for (auto [alpha, beta] : kAlphaBeta)
            CHECK(spmm_error(plan, expected(a, n, alpha, beta, 71 + n)) <= tol_f32(a));
        }
  }
}

TEST_CASE("SpmmReorderIsRefusedWhereItCannotApply") {
  const auto a = generate("rmat:scale=8,ef=8").cast<float>();
  SpmmOptions brp{SpmmPath::Brp};
  brp.reorder = Reorder::Rcm;
  CHECK_THROWS_AS(plan_spmm(ctx(), a, 32, brp), UsageError);
  SpmmOptions cnd{SpmmPath::Condensed};
  cnd.reorder = Reorder::Degree;
  CHECK_THROWS_AS(plan_spmm(ctx(), a, 32, cnd), UsageError);
  CsrMatrix<float> wide = a;
  wide.cols += 5;
  SpmmOptions o;
  o.reorder = Reorder::Community;
  CHECK_THROWS_AS(plan_spmm(ctx(), wide, 32, o), UsageError);
  o.reorder = Reorder::Degree;  // the rows' own lengths: any shape
  CHECK(plan_spmm(ctx(), wide, 32, o).reorder() == Reorder::Degree);
  // A config's reorder turned off by the option: the plain plan.
  const Config cfg{"spmm", {{"reorder", "rcm"}}, ConfigSource::Explicit, "test"};
  SpmmOptions off;
  off.config = &cfg;
  off.reorder = Reorder::None;
  CHECK(plan_spmm(ctx(), a, 32, off).reorder() == Reorder::None);
  off.reorder.reset();
  CHECK(plan_spmm(ctx(), a, 32, off).reorder() == Reorder::Rcm);
}

// reorder auto (the default): the degree order where row lengths vary, A's own order where rows
// are alike; the product matches the reference either way.
TEST_CASE("SpmmAutoOrderFollowsTheRowLengthsAndMatchesReference") {
  const Config defaults{"spmm", {{"path", "csr"}}, ConfigSource::Explicit, "test"};
  SpmmOptions o;
  o.config = &defaults;
  const auto skewed = generate("powerlaw:n=20000,avg=8,alpha=1.5,max=4000").cast<float>();
  const auto even = generate("stencil2d:n=100").cast<float>();
  const SpmmPlan ps = plan_spmm(ctx(), skewed, 32, o);
  const SpmmPlan pe = plan_spmm(ctx(), even, 32, o);
  CAPTURE(ps.explain());
  CAPTURE(pe.explain());
  CHECK(ps.reorder() == Reorder::Degree);
  CHECK(pe.reorder() == Reorder::None);
  CHECK(spmm_error(ps, expected(skewed, 32, 0.75f, -0.5f, 5)) <= tol_f32(skewed));
  CHECK(spmm_error(pe, expected(even, 32, 1.0f, 0.0f, 6)) <= tol_f32(even));
}

// The knobs the tuner turns that change which code runs: A operands expanded ahead or built per
// group (expand_min_f 1 / 16), 1 to 8 warps sharing a window, and first-pass runs so short that most of every window and row goes
// through the atomic pieces pass (tc_max_run, csr_max_run).
TEST_CASE("SpmmPiecesAndExpandedOperandsMatchReference") {
  NamedMatrices mats;
  for (auto& m : test_matrices())
    if (m.first == "long row and window 40x3000" || m.first == "ragged 45x21") mats.push_back(std::move(m));
  mats.emplace_back("rmat:scale=10,ef=8", generate("rmat:scale=10,ef=8").cast<float>());
  // csr_blocks_per_sm 1: 132 blocks stride over every row and piece; blocks of 1 to 8 warps.
  // csr_piece_reduce 1: a block's pieces of one row summed in shared memory first.
  // csr_split 1: long rows cut whole into parts in the rows' launch (reduce does not apply).
  std::vector<nlohmann::json> csr_variants;
  for (auto [bps, warps] : {std::pair{0, 8}, std::pair{1, 8}, std::pair{6, 2}, std::pair{0, 4}, std::pair{0, 1}})
    for (auto [split, reduce] : {std::pair{0, 0}, std::pair{0, 1}, std::pair{1, 0}})
      csr_variants.push_back(
          {{"csr_blocks_per_sm", bps}, {"csr_warps", warps}, {"csr_piece_reduce", reduce}, {"csr_split", split}});
  dbs_test::Shard shard;  // a plan a shard under a sanitizer (hardening_run.sh SAN_SHARDS)
  check_pieces_and_expanded_operands(mats, SpmmDtype::F32, shard, false, csr_variants);
}

// csr_split: a long row's parts run with the other rows and its last part to finish writes C.
// The counts must be back at 0 after every call (calls 2.. would skip or double a row), the sums
// go in part order (so two calls give the same bits), and a part past a row's end adds nothing:
// an inf in B's row 0 stays out of rows that do not hold column 0.
TEST_CASE("SpmmSplitLongRowsMatchReferenceCallAfterCall") {
  for (const char* spec : {"powerlaw:n=20000,avg=8,alpha=1.5,max=4000", "rmat:scale=12,ef=8"}) {
    CAPTURE(spec);
    const auto a = generate(spec).cast<float>();
    for (int n : {8, 32, 33, 128})
      for (const char* order : {"none", "degree"}) {
        CAPTURE(n);
        CAPTURE(order);
        const Config cfg{
            "spmm", {{"path", "csr"}, {"csr_split", 1}, {"reorder", order}}, ConfigSource::Explicit, "test"};
        SpmmOptions o;
        o.config = &cfg;
        const SpmmPlan plan = plan_spmm(ctx(), a, n, o);
        CAPTURE(plan.explain());
        REQUIRE(plan.explain().find("parts of a warp each in the same launch") != std::string::npos);
        for (int call = 0; call < 3; ++call)
          for (auto [alpha, beta] : kAlphaBeta)
            CHECK(spmm_error(plan, expected(a, n, alpha, beta, 90 + call)) <= tol_f32(a));
        Expected x = expected(a, n, 1.0f, 0.0f, 97);
        for (int j = 0; j < n; ++j) x.b[static_cast<size_t>(j)] = std::numeric_limits<float>::infinity();
        Stream s(ctx());
        DeviceBuffer<float> b{std::span<const float>(x.b)}, c1{std::span<const float>(x.c0)},
            c2{std::span<const float>(x.c0)};
        plan.run(b, c1, s, 1.0f, 0.0f);
        plan.run(b, c2, s, 1.0f, 0.0f);
        s.synchronize();
        const auto g1 = c1.download(), g2 = c2.download();
        CHECK(std::memcmp(g1.data(), g2.data(), g1.size() * sizeof(float)) == 0);
        size_t wrong = 0;
        for (int32_t r = 0; r < a.rows; ++r) {
          bool has0 = false;
          for (int32_t p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p) has0 = has0 || a.col_idx[p] == 0;
          if (!has0)
            for (int j = 0; j < n; ++j) wrong += std::isfinite(g1[static_cast<size_t>(r) * n + j]) ? 0 : 1;
        }
        CHECK(wrong == 0);
      }
  }
}

// SpmmEpilogue::Relu: C = max(alpha A B + beta C, 0) on every path, fused into the CSR path's
// stores (split long rows' last parts included; rows a warp; unaligned B and C through the scalar
// kernel) and a pass of the plan's own where several kernels add into C (f32 atomic pieces, BRP,
// condensed windows). Staged windows form on this graph for float4 calls (89 windows at reuse
// 1.01, spmm_stage_windows on the CPU), so n = 8 and 32 take the pass there and n = 33 (scalar
// kernel, no windows) fuses. NaN in C stays NaN on each of them. ReLU is 1-Lipschitz, so the
// reference's tolerance holds.
TEST_CASE("SpmmReluEpilogueMatchesReferenceOnEveryPath") {
  const auto a = generate("powerlaw:n=3000,avg=8,alpha=1.5,max=1500,seed=3").cast<float>();
  const auto relu_of = [](Expected x) {
    for (auto& v : x.ref) v = v < 0.0f ? 0.0f : v;
    return x;
  };
  struct Variant {
    const char* name;
    nlohmann::json cfg;
    bool fused;
  };
  const Variant variants[] = {
      {"csr, long rows split", {{"path", "csr"}, {"csr_split", 1}, {"csr_max_run", 64}}, true},
      {"csr, 4 rows a warp", {{"path", "csr"}, {"csr_rows_per_warp", 4}}, true},
      {"csr, atomic pieces", {{"path", "csr"}, {"csr_split", 0}, {"csr_max_run", 64}}, false},
      {"csr, staged windows", {{"path", "csr"}, {"csr_stage_reuse", 1.01}, {"reorder", "none"}}, false},
      {"brp", {{"path", "brp"}, {"f", 2}, {"g", 2}}, false},
      {"condensed", {{"path", "condensed"}, {"g", 2}}, false}};
  for (const Variant& v : variants) {
    CAPTURE(v.name);
    const Config cfg{"spmm", v.cfg, ConfigSource::Explicit, "test"};
    for (int n : {8, 32, 33}) {
      CAPTURE(n);
      SpmmOptions o;
      o.config = &cfg;
      o.epilogue = SpmmEpilogue::Relu;
      const SpmmPlan plan = plan_spmm(ctx(), a, n, o);
      CAPTURE(plan.explain());
      CHECK(plan.epilogue() == SpmmEpilogue::Relu);
      if (std::string(v.name) == "csr, staged windows")
        CHECK(plan.epilogue_fused() == (n % 4 != 0));
      else
        CHECK(plan.epilogue_fused() == v.fused);
      CHECK(plan.explain().find("epilogue relu") != std::string::npos);
      const double tol = plan.path() == SpmmPath::CsrCudaCore ? tol_f32(a) : kTolTf32;
      for (auto [alpha, beta] : kAlphaBeta) {
        const Expected x = relu_of(expected(a, n, alpha, beta, 61 + n));
        CHECK(spmm_error(plan, x) <= tol);
        CHECK(unaligned_error(plan, x) <= tol);
      }
      CHECK(relu_keeps_nan(plan, relu_of(expected(a, n, 0.75f, -0.5f, 67 + n)), tol));
    }
  }
  // No epilogue: the same plan's C keeps its negative entries.
  const SpmmPlan plain = plan_spmm(ctx(), a, 32, SpmmOptions{SpmmPath::CsrCudaCore});
  CHECK(plain.epilogue() == SpmmEpilogue::None);
  CHECK(spmm_error(plain, expected(a, 32, 1.0f, 0.0f, 5)) <= tol_f32(a));
  CHECK(parse_spmm_epilogue("relu") == SpmmEpilogue::Relu);
  CHECK_THROWS_AS(parse_spmm_epilogue("gelu"), UsageError);
}

// csr_rows_per_warp: 2 or 4 rows a warp, each on its own group of lanes with shuffles masked to
// it, rows of unequal length side by side (A's order) or alike (degree), with and without split
// long rows and on B and C too wide for the groups (n = 128 takes one row a warp: explain says).
TEST_CASE("SpmmRowsPerWarpMatchReference") {
  std::vector<std::pair<std::string, CsrMatrix<float>>> mats;
  for (const char* spec : {"powerlaw:n=20000,avg=8,alpha=1.5,max=4000", "rmat:scale=12,ef=8"})
    mats.emplace_back(spec, generate(spec).cast<float>());
  for (auto& m : test_matrices()) mats.push_back(std::move(m));
  for (const auto& [name, a] : mats) {
    CAPTURE(name);
    for (int rows : {2, 4})
      for (int n : {1, 8, 32, 33, 64, 128})
        for (auto [order, split] : {std::pair{"none", 1}, std::pair{"degree", 1}, std::pair{"none", 0}}) {
          CAPTURE(rows);
          CAPTURE(n);
          CAPTURE(order);
          CAPTURE(split);
          const Config cfg{"spmm",
                           {{"path", "csr"}, {"csr_rows_per_warp", rows}, {"reorder", order}, {"csr_split", split}},
                           ConfigSource::Explicit,
                           "test"};
          SpmmOptions o;
          o.config = &cfg;
          const SpmmPlan plan = plan_spmm(ctx(), a, n, o);
          CAPTURE(plan.explain());
          if (n <= 32 && n > 1) CHECK(plan.explain().find("rows a warp") != std::string::npos);
          for (auto [alpha, beta] : kAlphaBeta)
            CHECK(spmm_error(plan, expected(a, n, alpha, beta, 31 + n)) <= tol_f32(a));
        }
  }
}

// csr_rows_per_warp 0 (the default): many short rows take 4 rows a warp at n = 32 and 2 at n = 64
// (the lanes across N leave no more); few rows or long ones keep a warp a row. Long rows past the
// groups' max_run go to whole-warp parts.
TEST_CASE("SpmmRowsPerWarpPickedByThePlanMatchReference") {
  struct Case {
    const char* spec;
    int n;
    const char* says;
  };
  for (const Case& c :
       {Case{"uniform:n=100000,d=6", 32, "4 rows a warp"}, Case{"uniform:n=100000,d=6", 64, "2 rows a warp"},
        Case{"powerlaw:n=120000,avg=6,alpha=1.5,max=3000", 32, "4 rows a warp"},
        Case{"uniform:n=3000,d=6", 32, "a warp per row"}, Case{"uniform:n=100000,d=80", 32, "a warp per row"},
        Case{"uniform:n=100000,d=6", 128, "a warp per row"}}) {
    CAPTURE(c.spec);
    CAPTURE(c.n);
    const auto a = generate(c.spec).cast<float>();
    const SpmmPlan plan = plan_spmm(ctx(), a, c.n, SpmmOptions{SpmmPath::CsrCudaCore, 1, 1});
    CAPTURE(plan.explain());
    CHECK(plan.explain().find(c.says) != std::string::npos);
    for (auto [alpha, beta] : kAlphaBeta) CHECK(spmm_error(plan, expected(a, c.n, alpha, beta, 7 + c.n)) <= tol_f32(a));
  }
}

// B and C one float past a 16-byte boundary: the float4 kernels must not be used (n = 128 asks
// for them), on any path.
TEST_CASE("SpmmUnalignedBAndCUseScalarLanes") {
  check_unaligned_b_and_c({SpmmDtype::F32}, {SpmmPath::CsrCudaCore, SpmmPath::Brp, SpmmPath::Condensed});
}

// Staged windows (csr_stage_reuse): the windows' rows read B from shared memory, the other rows
// go through the CSR kernel; with B and C unaligned the plan falls back to the scalar CSR kernel
// over every row. The stencil's rows share columns, so windows form there (checked); on the
// graphs few or none may qualify, and the split between windows and plain rows must hold either
// way. Widths that give 384, 192, 96 and 85 columns a window; long rows cut into parts or pieces
// beside them.
TEST_CASE("SpmmStagedWindowsMatchReference") {
  std::vector<std::pair<std::string, CsrMatrix<float>>> mats;
  for (const char* spec : {"stencil2d:n=150", "community:n=20000,k=40,p_in=0.03,p_out=0.0001,seed=2",
                           "rmat:scale=13,ef=8,seed=4", "powerlaw:n=20000,avg=8,alpha=1.5,max=4000"})
    mats.emplace_back(spec, generate(spec).cast<float>());
  for (const auto& [name, a] : mats)
    for (int n : {32, 64, 128, 144})
      for (int split : {1, 0}) {
        CAPTURE(name);
        CAPTURE(n);
        CAPTURE(split);
        const Config cfg{"spmm",
                         {{"csr_stage_reuse", 1.2}, {"csr_split", split}, {"reorder", "degree"}},
                         ConfigSource::Explicit,
                         "test"};
        SpmmOptions o;
        o.config = &cfg;
        const SpmmPlan plan = plan_spmm(ctx(), a, n, o);
        CAPTURE(plan.explain());
        const bool windows = plan.explain().find("windows of up to 32 rows") != std::string::npos;
        if (name.rfind("stencil", 0) == 0) CHECK(windows);
        for (auto [alpha, beta] : kAlphaBeta)
          CHECK(spmm_error(plan, expected(a, n, alpha, beta, 91 + n)) <= tol_f32(a));
        // Unaligned B and C: the scalar kernel over every row, no windows.
        CHECK(unaligned_error(plan, expected(a, n, 0.75f, -0.5f, 93)) <= tol_f32(a));
      }
}

TEST_CASE("SpmmOnSharedMatrices") {
  for (const auto& path : dbs_test::shared_matrices()) {
    CAPTURE(path);
    const CsrMatrix<float> a = read_matrix_market(path).cast<float>();
    for (int n : {32, 128}) {
      CAPTURE(n);
      const Expected x = expected(a, n, 0.75f, -0.5f, 53 + n);
      for (SpmmOptions o : {SpmmOptions{}, SpmmOptions{SpmmPath::Brp, 1, 4}, SpmmOptions{SpmmPath::CsrCudaCore},
                            SpmmOptions{SpmmPath::Condensed}}) {
        const SpmmPlan plan = plan_spmm(ctx(), a, n, o);
        CAPTURE(plan.explain());
        CHECK(spmm_error(plan, x) <= (plan.path() == SpmmPath::CsrCudaCore ? tol_f32(a) : kTolTf32));
      }
    }
  }
}

// `dbsparse bench spmm --epilogue relu`: every row, dbsparse's paths and cuSPARSE's with its relu
// pass, checked against ReLU(A B) (the bench's own check), and the records say so.
TEST_CASE("BenchSpmmWithTheReluEpilogueChecksEveryRowAgainstReluOfTheProduct") {
  Stream s(ctx());
  tools::BenchRequest req;
  req.specs = {"powerlaw:n=3000,avg=8,alpha=1.5,max=1500,seed=3", "stencil2d:n=40"};
  req.n_cols = {32, 33};
  req.epilogue = "relu";
  req.timing.samples = 2;
  req.timing.batch = 1;
  req.timing.warmup = 1;
  const nlohmann::json out = tools::find_op("spmm").bench(ctx(), s, req);
  REQUIRE(out["results"].size() == 4);
  for (const auto& rec : out["results"]) {
    CAPTURE(rec["matrix"].get<std::string>());
    CHECK(rec["epilogue"] == "relu");
    bool saw_cusparse = false;
    for (const auto& impl : rec["impls"]) {
      if (!impl.contains("us")) continue;  // a row left out (condensed tiles past 4 GB)
      CAPTURE(impl.dump());
      CHECK(impl["correct"].get<bool>());
      saw_cusparse = saw_cusparse || impl["impl"].get<std::string>().find("+relu") != std::string::npos;
    }
    CHECK(saw_cusparse);
  }
}

TEST_CASE("SpmmRejectsWhatItCannotRun") {
  const auto a = generate("stencil2d:n=20").cast<float>();
  for (int n : {0, -1, 4097}) {
    CAPTURE(n);
    CHECK_THROWS_AS(plan_spmm(ctx(), a, n), UsageError);
  }
  CHECK_NOTHROW(plan_spmm(ctx(), a, 4096));
  CHECK_THROWS_AS(plan_spmm(ctx(), generate("stencil2d:n=20"), 8), UsageError);  // f64
  CHECK_THROWS_AS(plan_spmm(ctx(), a, 8, SpmmOptions{SpmmPath::Brp, 3, 4}), UsageError);
  const SpmmPlan plan = plan_spmm(ctx(), a, 8, SpmmOptions{SpmmPath::Brp, 1, 4});
  CHECK(plan.explain().find("converted on the GPU") != std::string::npos);
  CHECK(plan.device_bytes() > 0);
  Stream s(ctx());
  DeviceBuffer<float> b(static_cast<size_t>(a.cols) * 8), c_short(5);
  try {
    plan.run(b, c_short, s);
    FAIL("no UsageError");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find(std::to_string(a.rows * 8)) != std::string::npos);
  }
  // The default config is auto: condensed windows by their fill (a 5-point stencil's is low), else
  // CSR (min_tc_share above 1 leaves BRP out); with a min_tc_share of 1 or less auto follows the
  // TC share at the config's (f, g); explicit options win.
  const Config defaults{"spmm", {}, ConfigSource::Explicit, ""};
  SpmmOptions with_defaults;
  with_defaults.config = &defaults;
  REQUIRE(condensed_fill(a, 4) < SpmmConfig{}.min_condensed_fill);
  CHECK(plan_spmm(ctx(), a, 8, with_defaults).path() == SpmmPath::CsrCudaCore);
  const Config weigh{"spmm", {{"path", "auto"}, {"min_tc_share", 0.5}}, ConfigSource::Explicit, ""};
  SpmmOptions by_share;
  by_share.config = &weigh;
  CHECK(plan_spmm(ctx(), a, 8, by_share).path() ==
        (brp_group_share(a, 1, 4) >= 0.5 ? SpmmPath::Brp : SpmmPath::CsrCudaCore));
  const Config never{"spmm", {{"path", "auto"}, {"min_tc_share", 1.0}, {"f", 2}, {"g", 2}}, ConfigSource::Explicit, ""};
  SpmmOptions by_config;
  by_config.config = &never;
  const SpmmPlan csr_by_config = plan_spmm(ctx(), a, 8, by_config);
  CHECK(csr_by_config.f() == 2);
  CHECK(csr_by_config.g() == 2);
  if (brp_group_share(a, 2, 2) < 1.0) CHECK(csr_by_config.path() == SpmmPath::CsrCudaCore);
  by_config.path = SpmmPath::Brp;
  by_config.g = 8;
  const SpmmPlan forced = plan_spmm(ctx(), a, 8, by_config);
  CHECK(forced.path() == SpmmPath::Brp);
  CHECK(forced.f() == 2);
  CHECK(forced.g() == 8);
  const Config bad{"spmm", {{"g", 3}}, ConfigSource::Explicit, ""};
  by_config.config = &bad;
  by_config.g.reset();
  CHECK_THROWS_AS(plan_spmm(ctx(), a, 8, by_config), UsageError);
  CsrMatrix<float> empty;
  empty.rows = 0;
  empty.cols = 3;
  empty.row_ptr = {0};
  const SpmmPlan none = plan_spmm(ctx(), empty, 4);
  DeviceBuffer<float> b3(12), c0(0);
  CHECK_NOTHROW(none.run(b3, c0, s));
}

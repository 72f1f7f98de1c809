// SpMM in f16 and bf16 on the GPU against the CPU reference: A, B and C rounded to the 16-bit type
// first (as a plan rounds A and a caller's B and C are), then reference_spmm in double. What is
// left is f32 summation, mma.m16n8k16's f32 accumulation and C's rounding (once, also for rows and
// windows cut into pieces, twice on a BRP residual row; 2^-9 relative in bf16): errors must stay within 1e-2 of sum_j |alpha a_ij b_jk| +
// |beta c_ik| per entry, the f16 tolerance, for both types.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cases/spmm_cases.hpp"
#include "dbsparse/brp.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/spmm.hpp"
#include "gpu/spmm_gpu_support.hpp"

namespace {

// 2-3 small generated matrices and the ragged and long-row shapes of spmm_test_matrices().
std::vector<std::pair<std::string, CsrMatrix<float>>> half_matrices() {
  std::vector<std::pair<std::string, CsrMatrix<float>>> out;
  for (auto& m : dbs_test::spmm_test_matrices())
    if (m.first == "uniform:n=1500,d=6" || m.first == "rmat:scale=10,ef=8" || m.first == "stencil2d:n=30" ||
        m.first == "ragged 45x21" || m.first == "long row and window 40x3000")
      out.push_back(std::move(m));
  return out;
}

}  // namespace

TEST_CASE("SpmmHalfMatchesReference") {
  const auto mats = half_matrices();
  REQUIRE(mats.size() == 5);
  dbs_test::Shard shard;  // a (type, matrix) a shard under a sanitizer (hardening_run.sh SAN_SHARDS)
  for (SpmmDtype d : kHalfTypes) {
    CAPTURE(to_string(d));
    for (const auto& [name, a] : mats) {
      if (!shard.next()) continue;
      CAPTURE(name);
      bool any_groups = false;
      for (int n : {8, 32, 33, 128}) {
        CAPTURE(n);
        std::vector<Expected> xs;
        for (auto [alpha, beta] : kAlphaBeta) xs.push_back(expected(a, n, alpha, beta, 17 + n, d));
        auto check_plan = [&](const SpmmPlan& plan) {
          CAPTURE(plan.explain());
          CHECK(plan.dtype() == d);
          for (const auto& x : xs) {
            CAPTURE(x.alpha);
            CAPTURE(x.beta);
            CHECK(spmm_error(plan, x) <= kTolHalf);
          }
        };
        for (int f : {1, 2, 4, 8})
          for (int g : {1, 2, 4, 8}) {
            CAPTURE(f);
            CAPTURE(g);
            SpmmOptions o{SpmmPath::Brp, f, g};
            o.dtype = d;
            const SpmmPlan plan = plan_spmm(ctx(), a, n, o);
            REQUIRE(plan.path() == SpmmPath::Brp);
            any_groups = any_groups || plan.tc_share() > 0;
            check_plan(plan);
          }
        for (int g : {1, 2, 8}) {  // condensed TC windows: g = 1 leaves the k16 pair's upper half zero
          CAPTURE(g);
          SpmmOptions o{SpmmPath::Condensed, std::nullopt, g};
          o.dtype = d;
          const SpmmPlan plan = plan_spmm(ctx(), a, n, o);
          REQUIRE(plan.path() == SpmmPath::Condensed);
          check_plan(plan);
        }
        SpmmOptions o{SpmmPath::CsrCudaCore};
        o.dtype = d;
        const SpmmPlan csr = plan_spmm(ctx(), a, n, o);
        REQUIRE(csr.path() == SpmmPath::CsrCudaCore);
        check_plan(csr);
      }
      // The tensor core kernel ran at some (f, g), not only the residual rows.
      CHECK(any_groups);
    }
  }
}

// The knobs that change which half code runs: operands expanded ahead (expand_min_f 1) or built
// per group (16), 1 / 4 / 8 warps a window, first passes so short that most of every window and
// row goes through the atomic pieces pass, the host conversion. The pieces of a cut row or window
// are summed in the plan's f32 workspace and C rounded once: when each piece was added into the
// 16-bit C (a compare-and-swap rounding C at every add), bf16 reached 0.0100-0.0123 here (rmat at
// n = 128, tc_max_run 1 or csr_max_run 1, H200, 2026-12-01), past kTolHalf.
TEST_CASE("SpmmHalfPiecesExpandedOperandsAndHostConversionMatchReference") {
  NamedMatrices mats;
  for (auto& m : half_matrices())
    if (m.first == "long row and window 40x3000" || m.first == "ragged 45x21" || m.first == "rmat:scale=10,ef=8")
      mats.push_back(std::move(m));
  dbs_test::Shard shard;  // a plan a shard under a sanitizer (hardening_run.sh SAN_SHARDS)
  for (SpmmDtype d : kHalfTypes) {
    CAPTURE(to_string(d));
    // Run 3 converts A on the host; the CSR plans take only csr_max_run.
    check_pieces_and_expanded_operands(mats, d, shard, true, {nlohmann::json::object()});
  }
}

// SpmmEpilogue::Relu in 16 bits: fused into the CSR path's stores and its finalize pass (the rows
// cut into pieces are summed in f32 and rounded once, then ReLU'd), a pass of relu_inplace on the
// 16-bit C on the BRP and condensed paths. ReLU is 1-Lipschitz: the tolerance holds.
TEST_CASE("SpmmHalfReluEpilogueMatchesReference") {
  const auto mats = half_matrices();
  for (SpmmDtype d : kHalfTypes) {
    CAPTURE(to_string(d));
    for (const auto& [name, a] : mats) {
      CAPTURE(name);
      for (const char* path : {"csr", "brp", "condensed"})
        for (int max_run : {0, 8}) {  // 8: every long row or window cut into pieces
          CAPTURE(path);
          CAPTURE(max_run);
          nlohmann::json cfg_json{{"path", path}};
          if (max_run) cfg_json[std::string(path) == "csr" ? "csr_max_run" : "tc_max_run"] = max_run;
          const Config cfg{"spmm", cfg_json, ConfigSource::Explicit, "test"};
          SpmmOptions o;
          o.config = &cfg;
          o.dtype = d;
          o.epilogue = SpmmEpilogue::Relu;
          for (int n : {32, 33}) {  // 33: the scalar stores (store_c's VEC = 1 branch)
            CAPTURE(n);
            const SpmmPlan plan = plan_spmm(ctx(), a, n, o);
            CAPTURE(plan.explain());
            CHECK(plan.epilogue_fused() == (std::string(path) == "csr"));
            for (auto [alpha, beta] : kAlphaBeta) {
              Expected x = expected(a, n, alpha, beta, 71, d);
              for (auto& v : x.ref) v = v < 0.0f ? 0.0f : v;
              CHECK(spmm_error(plan, x) <= kTolHalf);
            }
          }
        }
    }
  }
}

// A reordered CSR plan in 16 bits: the cut rows' f32 workspace is indexed by the walked row and
// finalize writes C's row through the order's map.
TEST_CASE("SpmmHalfReorderedCsrMatchesReference") {
  const auto a = generate("powerlaw:n=6000,avg=8,alpha=1.5,max=1500").cast<float>();
  for (SpmmDtype d : kHalfTypes)
    for (Reorder order : {Reorder::Degree, Reorder::Community})
      for (int run : {0, 8})
        for (int n : {8, 128}) {
          CAPTURE(to_string(d));
          CAPTURE(to_string(order));
          CAPTURE(run);
          CAPTURE(n);
          const Config cfg{"spmm",
                           {{"path", "csr"},
                            {"csr_max_run", run},
                            {"csr_blocks_per_sm", run ? 1 : 0},
                            {"csr_piece_reduce", run ? 1 : 0}},
                           ConfigSource::Explicit,
                           "test"};
          SpmmOptions o;
          o.config = &cfg;
          o.dtype = d;
          o.reorder = order;
          const SpmmPlan plan = plan_spmm(ctx(), a, n, o);
          CAPTURE(plan.explain());
          CHECK(spmm_error(plan, expected(a, n, 0.75f, -0.5f, 83 + n, d)) <= kTolHalf);
          CHECK(spmm_error(plan, expected(a, n, 1.0f, 0.0f, 89 + n, d)) <= kTolHalf);
        }
}

// B and C one value (2 bytes) past an 8-byte boundary: the 4-value kernels must not be used
// (n = 128 asks for them), on either path.
TEST_CASE("SpmmHalfUnalignedBAndCUseScalarLanes") {
  check_unaligned_b_and_c({SpmmDtype::F16, SpmmDtype::BF16}, {SpmmPath::CsrCudaCore, SpmmPath::Brp});
}

TEST_CASE("SpmmHalfPlansNameTheirTypeAndRefuseTheOtherBuffers") {
  const auto a = generate("stencil2d:n=20").cast<float>();
  Stream s(ctx());
  DeviceBuffer<float> bf(static_cast<size_t>(a.cols) * 8), cf(static_cast<size_t>(a.rows) * 8);
  // B and C zeroed: the runs that go through read them (initcheck: no bytes nothing wrote).
  const std::vector<uint16_t> zb(static_cast<size_t>(a.cols) * 8, 0), zc(static_cast<size_t>(a.rows) * 8, 0);
  DeviceBuffer<uint16_t> bh{std::span<const uint16_t>(zb)}, ch{std::span<const uint16_t>(zc)}, ch_short(5);
  for (SpmmDtype d : kHalfTypes)
    for (SpmmPath path : {SpmmPath::Brp, SpmmPath::CsrCudaCore}) {
      CAPTURE(to_string(d));
      CAPTURE(to_string(path));
      SpmmOptions o{path, 1, 4};
      o.dtype = d;
      const SpmmPlan plan = plan_spmm(ctx(), a, 8, o);
      CHECK(plan.dtype() == d);
      const std::string want = fmt::format("spmm.{}.{}.", path == SpmmPath::Brp ? "brp" : "csr", to_string(d));
      REQUIRE(!plan.kernels().empty());
      for (const auto& k : plan.kernels()) CHECK(k.key.rfind(want, 0) == 0);
      CHECK_THROWS_AS(plan.run(bf, cf, s), UsageError);
      CHECK_THROWS_AS(plan.run(bh, ch_short, s), UsageError);
      CHECK_NOTHROW(plan.run(bh, ch, s));
    }
  const SpmmPlan f32 = plan_spmm(ctx(), a, 8, SpmmOptions{SpmmPath::Brp, 1, 4});
  CHECK(f32.dtype() == SpmmDtype::F32);
  CHECK_THROWS_AS(f32.run(bh, ch, s), UsageError);
  s.synchronize();
  CHECK(spmm_dtype_from_string("tf32") == SpmmDtype::F32);
  CHECK_THROWS_AS(spmm_dtype_from_string("f64"), UsageError);
}

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
#include "dbsparse/dbsparse.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/spmm.hpp"
#include "test_support.hpp"

using namespace dbsparse;

namespace {

Context& ctx() {
  static Context c;
  return c;
}

constexpr double kTolHalf = 1e-2;
constexpr std::pair<float, float> kAlphaBeta[] = {{0.75f, -0.5f}, {1.0f, 0.0f}};

std::vector<uint16_t> to_bits(const std::vector<float>& x, SpmmDtype d) {
  return d == SpmmDtype::F16 ? floats_to_half(x) : floats_to_bf16(x);
}
std::vector<float> from_bits(const std::vector<uint16_t>& h, SpmmDtype d) {
  return d == SpmmDtype::F16 ? half_to_floats(h) : bf16_to_floats(h);
}
std::vector<float> rounded(const std::vector<float>& x, SpmmDtype d) { return from_bits(to_bits(x, d), d); }

// One (A, B, C0, alpha, beta) in a 16-bit type and what C must become. With beta == 0, C starts
// as NaN (0xFFFF): it must not be read.
struct Expected16 {
  int n = 0;
  SpmmDtype dtype = SpmmDtype::F16;
  float alpha = 1, beta = 0;
  std::vector<uint16_t> b, c0;
  std::vector<float> ref;
  std::vector<double> scale;
};

Expected16 expected16(const CsrMatrix<float>& a, SpmmDtype d, int n, float alpha, float beta, uint64_t seed) {
  Expected16 x;
  x.n = n;
  x.dtype = d;
  x.alpha = alpha;
  x.beta = beta;
  CsrMatrix<float> ar = a;
  ar.values = rounded(a.values, d);
  const auto b = rounded(dbs_test::random_vector<float>(static_cast<size_t>(a.cols) * n, seed), d);
  const auto c0 = beta == 0.0f ? std::vector<float>(static_cast<size_t>(a.rows) * n, 0.0f)
                               : rounded(dbs_test::random_vector<float>(static_cast<size_t>(a.rows) * n, seed + 1), d);
  x.b = to_bits(b, d);
  x.c0 = beta == 0.0f ? std::vector<uint16_t>(c0.size(), 0xFFFF) : to_bits(c0, d);
  x.ref = c0;
  reference_spmm(ar, b, n, x.ref, alpha, beta);
  x.scale.assign(x.ref.size(), 0.0);
  for (int32_t i = 0; i < a.rows; ++i)
    for (int j = 0; j < n; ++j) {
      const size_t at = static_cast<size_t>(i) * n + j;
      double s = std::fabs(double(beta) * c0[at]);
      for (int32_t p = ar.row_ptr[i]; p < ar.row_ptr[i + 1]; ++p)
        s += std::fabs(double(alpha) * ar.values[p] * b[static_cast<size_t>(ar.col_idx[p]) * n + j]);
      x.scale[at] = s;
    }
  return x;
}

// spmm_rounding_floor(f16) of |C - ref| is forgiven (an entry cancelled to ~1e-6 of its sum |a||b|
// failed at 4.8e-2 on every plan, H200 2026-12-01).
double worst_error(const std::vector<float>& got, const Expected16& x) {
  const double floor = spmm_rounding_floor(x.dtype);
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err =
        std::max(0.0, std::fabs(double(got[i]) - double(x.ref[i])) - floor) / std::max(x.scale[i], 1e-30);
    if (std::isnan(err)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, err);
  }
  return worst;
}

// Worst relative error of C after plan.run (twice with beta == 0: a run keeps no state).
double spmm_error16(const SpmmPlan& plan, const Expected16& x) {
  Stream s(ctx());
  DeviceBuffer<uint16_t> b{std::span<const uint16_t>(x.b)}, c{std::span<const uint16_t>(x.c0)};
  plan.run(b, c, s, x.alpha, x.beta);
  if (x.beta == 0.0f) plan.run(b, c, s, x.alpha, x.beta);
  s.synchronize();
  return worst_error(from_bits(c.download(), x.dtype), x);
}

// 2-3 small generated matrices and the ragged and long-row shapes of spmm_test_matrices().
std::vector<std::pair<std::string, CsrMatrix<float>>> half_matrices() {
  std::vector<std::pair<std::string, CsrMatrix<float>>> out;
  for (auto& m : dbs_test::spmm_test_matrices())
    if (m.first == "uniform:n=1500,d=6" || m.first == "rmat:scale=10,ef=8" || m.first == "stencil2d:n=30" ||
        m.first == "ragged 45x21" || m.first == "long row and window 40x3000")
      out.push_back(std::move(m));
  return out;
}

constexpr SpmmDtype kHalfTypes[] = {SpmmDtype::F16, SpmmDtype::BF16};

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
        std::vector<Expected16> xs;
        for (auto [alpha, beta] : kAlphaBeta) xs.push_back(expected16(a, d, n, alpha, beta, 17 + n));
        auto check_plan = [&](const SpmmPlan& plan) {
          CAPTURE(plan.explain());
          CHECK(plan.dtype() == d);
          for (const auto& x : xs) {
            CAPTURE(x.alpha);
            CAPTURE(x.beta);
            CHECK(spmm_error16(plan, x) <= kTolHalf);
          }
        };
        for (int f : {1, 2, 4, 8})
          for (int g : {1, 2, 4, 8}) {
            CAPTURE(f);
            CAPTURE(g);
            SpmmOptions o{SpmmPath::Brp, f, g};
            o.dtype = d;
            const SpmmPlan plan = ctx().plan_spmm(a, n, o);
            REQUIRE(plan.path() == SpmmPath::Brp);
            any_groups = any_groups || plan.tc_share() > 0;
            check_plan(plan);
          }
        for (int g : {1, 2, 8}) {  // condensed TC windows: g = 1 leaves the k16 pair's upper half zero
          CAPTURE(g);
          SpmmOptions o{SpmmPath::Condensed, std::nullopt, g};
          o.dtype = d;
          const SpmmPlan plan = ctx().plan_spmm(a, n, o);
          REQUIRE(plan.path() == SpmmPath::Condensed);
          check_plan(plan);
        }
        SpmmOptions o{SpmmPath::CsrCudaCore};
        o.dtype = d;
        const SpmmPlan csr = ctx().plan_spmm(a, n, o);
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
  std::vector<std::pair<std::string, CsrMatrix<float>>> mats;
  for (auto& m : half_matrices())
    if (m.first == "long row and window 40x3000" || m.first == "ragged 45x21" || m.first == "rmat:scale=10,ef=8")
      mats.push_back(std::move(m));
  dbs_test::Shard shard;  // a plan a shard under a sanitizer (hardening_run.sh SAN_SHARDS)
  for (SpmmDtype d : kHalfTypes) {
    CAPTURE(to_string(d));
    for (const auto& [name, a] : mats) {
      CAPTURE(name);
      for (int n : {8, 33, 128}) {
        CAPTURE(n);
        const Expected16 x = expected16(a, d, n, 0.75f, -0.5f, 61 + n);
        for (int run : {1, 3, 0}) {
          CAPTURE(run);
          for (auto [expand, warps] : {std::pair{1, 8}, std::pair{16, 1}, std::pair{16, 4}})
            for (int f : {1, 8})
              for (int g : {1, 4}) {
                if (!shard.next()) continue;
                CAPTURE(expand);
                CAPTURE(warps);
                CAPTURE(f);
                CAPTURE(g);
                const Config cfg{"spmm",
                                 {{"path", "brp"},
                                  {"f", f},
                                  {"g", g},
                                  {"expand_min_f", expand},
                                  {"tc_warps", warps},
                                  {"tc_max_run", run == 0 ? 32 : run}},
                                 ConfigSource::Explicit,
                                 "test"};
                SpmmOptions o;
                o.config = &cfg;
                o.dtype = d;
                o.convert_on_host = run == 3;
                const SpmmPlan plan = ctx().plan_spmm(a, n, o);
                CAPTURE(plan.explain());
                CHECK(spmm_error16(plan, x) <= kTolHalf);
              }
          if (!shard.next()) continue;
          const Config cfg{"spmm", {{"path", "csr"}, {"csr_max_run", run}}, ConfigSource::Explicit, "test"};
          SpmmOptions o;
          o.config = &cfg;
          o.dtype = d;
          const SpmmPlan plan = ctx().plan_spmm(a, n, o);
          CAPTURE(plan.explain());
          CHECK(spmm_error16(plan, x) <= kTolHalf);
        }
      }
    }
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
            const SpmmPlan plan = ctx().plan_spmm(a, n, o);
            CAPTURE(plan.explain());
            CHECK(plan.epilogue_fused() == (std::string(path) == "csr"));
            for (auto [alpha, beta] : kAlphaBeta) {
              Expected16 x = expected16(a, d, n, alpha, beta, 71);
              for (auto& v : x.ref) v = v < 0.0f ? 0.0f : v;
              CHECK(spmm_error16(plan, x) <= kTolHalf);
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
          const SpmmPlan plan = ctx().plan_spmm(a, n, o);
          CAPTURE(plan.explain());
          CHECK(spmm_error16(plan, expected16(a, d, n, 0.75f, -0.5f, 83 + n)) <= kTolHalf);
          CHECK(spmm_error16(plan, expected16(a, d, n, 1.0f, 0.0f, 89 + n)) <= kTolHalf);
        }
}

// B and C one value (2 bytes) past an 8-byte boundary: the 4-value kernels must not be used
// (n = 128 asks for them), on either path.
TEST_CASE("SpmmHalfUnalignedBAndCUseScalarLanes") {
  const auto a = generate("rmat:scale=10,ef=8").cast<float>();
  const int n = 128;
  for (SpmmDtype d : kHalfTypes) {
    CAPTURE(to_string(d));
    const Expected16 x = expected16(a, d, n, 0.75f, -0.5f, 41);
    for (SpmmPath path : {SpmmPath::CsrCudaCore, SpmmPath::Brp}) {
      CAPTURE(to_string(path));
      SpmmOptions o{path, 1, 1};
      o.dtype = d;
      const SpmmPlan plan = ctx().plan_spmm(a, n, o);
      Stream s(ctx());
      DeviceAllocation b((x.b.size() + 1) * 2), c((x.c0.size() + 1) * 2);
      b.upload(x.b.data(), x.b.size() * 2, 2);
      c.upload(x.c0.data(), x.c0.size() * 2, 2);
      plan.run(b.ptr() + 2, c.ptr() + 2, s.handle(), x.alpha, x.beta);
      s.synchronize();
      std::vector<uint16_t> got(x.c0.size());
      c.download(got.data(), got.size() * 2, 2);
      CHECK(worst_error(from_bits(got, d), x) <= kTolHalf);
    }
  }
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
      const SpmmPlan plan = ctx().plan_spmm(a, 8, o);
      CHECK(plan.dtype() == d);
      const std::string want = fmt::format("spmm.{}.{}.", path == SpmmPath::Brp ? "brp" : "csr", to_string(d));
      REQUIRE(!plan.kernels().empty());
      for (const auto& k : plan.kernels()) CHECK(k.key.rfind(want, 0) == 0);
      CHECK_THROWS_AS(plan.run(bf, cf, s), UsageError);
      CHECK_THROWS_AS(plan.run(bh, ch_short, s), UsageError);
      CHECK_NOTHROW(plan.run(bh, ch, s));
    }
  const SpmmPlan f32 = ctx().plan_spmm(a, 8, SpmmOptions{SpmmPath::Brp, 1, 4});
  CHECK(f32.dtype() == SpmmDtype::F32);
  CHECK_THROWS_AS(f32.run(bh, ch, s), UsageError);
  s.synchronize();
  CHECK(spmm_dtype_from_string("tf32") == SpmmDtype::F32);
  CHECK_THROWS_AS(spmm_dtype_from_string("f64"), UsageError);
}

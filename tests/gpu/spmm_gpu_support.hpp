#pragma once
// What the SpMM gpu cases share across value types (test_spmm_gpu.cpp: f32 with tf32 tensor cores;
// test_spmm_half_gpu.cpp: f16 and bf16): the operands and the reference of one call, the error of a
// plan's run against it (aligned and one value off), the tolerances, and the cases whose loops are
// the same for every type. Errors are relative to sum_j |alpha a_ij b_jk| + |beta c_ik| per entry.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "dbsparse/half.hpp"
#include "dbsparse/spmm.hpp"
#include "gpu/gpu_support.hpp"

namespace {

// 2e-3 where tensor cores round A and B to TF32 (10-bit mantissa, round to nearest: 2^-11 each),
// 1e-5 on the f32 CUDA-core path; 1e-2 in f16 and bf16 (f32 summation, the mma's f32 accumulation
// and C's rounding), the f16 tolerance.
constexpr double kTolTf32 = 2e-3, kTolF32 = 1e-5, kTolHalf = 1e-2;
constexpr std::pair<float, float> kAlphaBeta[] = {{0.75f, -0.5f}, {1.0f, 0.0f}};
constexpr SpmmDtype kHalfTypes[] = {SpmmDtype::F16, SpmmDtype::BF16};

// f32 sums along a row drift like a random walk, ~eps * sqrt(len) of the row's size: 1e-5 holds
// to rows of ~20000 entries; past that the bound is the estimate with a margin of 4 (as SpMV's).
inline double tol_f32(const CsrMatrix<float>& a) {
  int64_t longest = 0;
  for (int32_t r = 0; r < a.rows; ++r) longest = std::max<int64_t>(longest, a.row_ptr[r + 1] - a.row_ptr[r]);
  return std::max(kTolF32, 4 * 0x1p-24 * std::sqrt(static_cast<double>(longest)));
}

// The tolerance of a plan of type d on `path` for A.
inline double spmm_tolerance(SpmmDtype d, SpmmPath path, const CsrMatrix<float>& a) {
  if (d != SpmmDtype::F32) return kTolHalf;
  return path == SpmmPath::CsrCudaCore ? tol_f32(a) : kTolTf32;
}

inline std::vector<uint16_t> to_bits(const std::vector<float>& x, SpmmDtype d) {
  return d == SpmmDtype::F16 ? floats_to_half(x) : floats_to_bf16(x);
}
inline std::vector<float> from_bits(const std::vector<uint16_t>& h, SpmmDtype d) {
  return d == SpmmDtype::F16 ? half_to_floats(h) : bf16_to_floats(h);
}
inline std::vector<float> rounded(const std::vector<float>& x, SpmmDtype d) { return from_bits(to_bits(x, d), d); }

// One (A, B, C0, n, alpha, beta) in a value type and what C must become. With beta == 0, C starts
// as NaN: it must not be read (the BRP path zeroes it, the CSR path never loads it).
struct Expected {
  int n = 0;
  SpmmDtype dtype = SpmmDtype::F32;
  float alpha = 1, beta = 0;
  std::vector<float> b, c0;         // f32: what the device gets; 16-bit: A's and B's values rounded
  std::vector<uint16_t> b16, c016;  // 16-bit: what the device gets (C0 0xFFFF, a NaN, with beta == 0)
  std::vector<float> ref;
  std::vector<double> scale;
};

// A, B and C are rounded to the 16-bit type first (as a plan rounds A and a caller's B and C are),
// then reference_spmm in double: what is left is the kernels' own error.
inline Expected expected(const CsrMatrix<float>& a, int n, float alpha, float beta, uint64_t seed,
                         SpmmDtype d = SpmmDtype::F32) {
  Expected x;
  x.n = n;
  x.dtype = d;
  x.alpha = alpha;
  x.beta = beta;
  const size_t bn = static_cast<size_t>(a.cols) * n, cn = static_cast<size_t>(a.rows) * n;
  CsrMatrix<float> ar = a;
  if (d == SpmmDtype::F32) {
    x.b = dbs_test::random_vector<float>(bn, seed);
    x.c0 = beta == 0.0f ? std::vector<float>(cn, std::numeric_limits<float>::quiet_NaN())
                        : dbs_test::random_vector<float>(cn, seed + 1);
    x.ref = x.c0;
  } else {
    ar.values = rounded(a.values, d);
    x.b = rounded(dbs_test::random_vector<float>(bn, seed), d);
    x.c0 = beta == 0.0f ? std::vector<float>(cn, 0.0f) : rounded(dbs_test::random_vector<float>(cn, seed + 1), d);
    x.b16 = to_bits(x.b, d);
    x.c016 = beta == 0.0f ? std::vector<uint16_t>(cn, 0xFFFF) : to_bits(x.c0, d);
    x.ref = x.c0;
  }
  reference_spmm(ar, x.b, n, x.ref, alpha, beta);
  x.scale.assign(x.ref.size(), 0.0);
  for (int32_t i = 0; i < a.rows; ++i)
    for (int j = 0; j < n; ++j) {
      const size_t at = static_cast<size_t>(i) * n + j;
      double s = beta == 0.0f ? 0.0 : std::fabs(double(beta) * x.c0[at]);
      for (int32_t p = ar.row_ptr[i]; p < ar.row_ptr[i + 1]; ++p)
        s += std::fabs(double(alpha) * ar.values[p] * x.b[static_cast<size_t>(ar.col_idx[p]) * n + j]);
      x.scale[at] = s;
    }
  return x;
}

// The worst relative error of `got` (C read back as floats); a NaN fails. spmm_rounding_floor of
// |C - ref| is forgiven (an f16 entry cancelled to ~1e-6 of its sum |a||b| fails by rounding alone).
inline double worst_error(const std::vector<float>& got, const Expected& x) {
  const double floor = spmm_rounding_floor(x.dtype);
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double diff = std::fabs(double(got[i]) - double(x.ref[i]));
    const double err = std::max(0.0, diff - floor) / std::max(x.scale[i], 1e-30);
    if (std::isnan(diff) || std::isnan(err)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, err);
  }
  return worst;
}

// C read back as floats.
inline std::vector<float> as_floats(std::vector<float> got, const Expected&) { return got; }
inline std::vector<float> as_floats(const std::vector<uint16_t>& got, const Expected& x) {
  return from_bits(got, x.dtype);
}

// B and C in buffers of their own: plan.run twice with beta == 0 (a run keeps no state).
template <class V>
double aligned_error(const SpmmPlan& plan, const Expected& x, const std::vector<V>& b0, const std::vector<V>& c0) {
  Stream s(ctx());
  DeviceBuffer<V> b{std::span<const V>(b0)}, c{std::span<const V>(c0)};
  plan.run(b, c, s, x.alpha, x.beta);
  if (x.beta == 0.0f) plan.run(b, c, s, x.alpha, x.beta);
  s.synchronize();
  return worst_error(as_floats(c.download(), x), x);
}

// B and C one value past their allocations' start: past the vector width's alignment.
template <class V>
double unaligned_error(const SpmmPlan& plan, const Expected& x, const std::vector<V>& b0, const std::vector<V>& c0) {
  Stream s(ctx());
  constexpr size_t v = sizeof(V);
  DeviceAllocation b((b0.size() + 1) * v), c((c0.size() + 1) * v);
  b.upload(b0.data(), b0.size() * v, v);
  c.upload(c0.data(), c0.size() * v, v);
  plan.run(b.ptr() + v, c.ptr() + v, s.handle(), x.alpha, x.beta);
  s.synchronize();
  std::vector<V> got(c0.size());
  c.download(got.data(), got.size() * v, v);
  return worst_error(as_floats(std::move(got), x), x);
}

// Worst relative error of C after plan.run (twice with beta == 0: a run keeps no state).
inline double spmm_error(const SpmmPlan& plan, const Expected& x) {
  return x.dtype == SpmmDtype::F32 ? aligned_error(plan, x, x.b, x.c0) : aligned_error(plan, x, x.b16, x.c016);
}

// The same with B and C one value past their alignment: the plan must take its scalar kernels.
inline double unaligned_error(const SpmmPlan& plan, const Expected& x) {
  return x.dtype == SpmmDtype::F32 ? unaligned_error(plan, x, x.b, x.c0) : unaligned_error(plan, x, x.b16, x.c016);
}

using NamedMatrices = std::vector<std::pair<std::string, CsrMatrix<float>>>;

// The knobs the tuner turns that change which code runs, for one value type: A operands expanded
// ahead or built per group (expand_min_f 1 / 16), 1 to 8 warps sharing a window, and first-pass
// runs so short that most of every window and row goes through the atomic pieces pass (tc_max_run,
// csr_max_run); with `host_conversion`, run 3's BRP plans convert A on the host. Each entry of
// `csr_variants` adds its knobs to a CSR plan's at every run. A plan a shard under a sanitizer
// (hardening_run.sh SAN_SHARDS).
inline void check_pieces_and_expanded_operands(const NamedMatrices& mats, SpmmDtype d, dbs_test::Shard& shard,
                                               bool host_conversion, const std::vector<nlohmann::json>& csr_variants) {
  for (const auto& [name, a] : mats) {
    CAPTURE(name);
    for (int n : {8, 33, 128}) {
      CAPTURE(n);
      const Expected x = expected(a, n, 0.75f, -0.5f, 61 + n, d);
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
              o.convert_on_host = host_conversion && run == 3;
              const SpmmPlan plan = plan_spmm(ctx(), a, n, o);
              CAPTURE(plan.explain());
              CHECK(spmm_error(plan, x) <= spmm_tolerance(d, SpmmPath::Brp, a));
            }
        for (const nlohmann::json& variant : csr_variants) {
          if (!shard.next()) continue;
          CAPTURE(variant.dump());
          nlohmann::json knobs = variant;
          knobs["path"] = "csr";
          knobs["csr_max_run"] = run;
          const Config cfg{"spmm", knobs, ConfigSource::Explicit, "test"};
          SpmmOptions o;
          o.config = &cfg;
          o.dtype = d;
          const SpmmPlan plan = plan_spmm(ctx(), a, n, o);
          CAPTURE(plan.explain());
          CHECK(spmm_error(plan, x) <= spmm_tolerance(d, SpmmPath::CsrCudaCore, a));
        }
      }
    }
  }
}

// B and C one value past the vector width's alignment at n = 128 (which asks for the vector
// kernels): each of `paths` must take its scalar lanes and still match, in each type of `types`.
inline void check_unaligned_b_and_c(const std::vector<SpmmDtype>& types, const std::vector<SpmmPath>& paths) {
  const auto a = generate("rmat:scale=10,ef=8").cast<float>();
  const int n = 128;
  for (SpmmDtype d : types) {
    CAPTURE(to_string(d));
    const Expected x = expected(a, n, 0.75f, -0.5f, 41, d);
    for (SpmmPath path : paths) {
      CAPTURE(to_string(path));
      SpmmOptions o{path, 1, 1};
      o.dtype = d;
      const SpmmPlan plan = plan_spmm(ctx(), a, n, o);
      CHECK(unaligned_error(plan, x) <= spmm_tolerance(d, path, a));
    }
  }
}

}  // namespace

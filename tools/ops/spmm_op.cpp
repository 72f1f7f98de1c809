// The SpMM op's registry entry: BRP-SpMM (docs/DESIGN.md [3]; include/dbsparse/spmm.hpp), TC
// groups in TF32 (f32) or f16 / bf16 plus residual rows on CUDA cores, or the CUDA-core CSR
// product; against cuSPARSE in the same value type.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "codegen/keys/brp_convert_key.hpp"
#include "codegen/keys/spmm_key.hpp"
#include "dbsparse/brp.hpp"
#include "dbsparse/device_csr.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/spmm.hpp"
#include "dbsparse/tc_condensed.hpp"
#include "runtime/spmm/spmm_relu.hpp"
#include "runtime/spmm/spmm_spec.hpp"
#include "tools/baselines/cusparse_spmm.hpp"
#include "tools/bench/bench_spmm_reduce.hpp"
#include "tools/bench/random.hpp"
#include "tools/bench/stats.hpp"
#include "tools/bench/suites.hpp"
#include "tools/ops/op_support.hpp"
#include "tools/ops/first_calls.hpp"
#include "tools/ops/fixed_cost_calls.hpp"
#include "tools/ops/registry.hpp"

namespace dbsparse::tools {
namespace {

using tuner::Measurement;
using tuner::ParamSpec;

// The accepted tolerances, per entry, relative to sum |a||b| of that entry: TF32 tensor cores
// (BRP) and f32 CUDA cores (CSR); f16 and bf16, every path and cuSPARSE (the reference takes A and
// B as rounded to 16 bits, so what remains is f32 summation and C's rounding: 2^-9 in bf16).
constexpr double kTolTf32 = 2e-3;
constexpr double kTolF32 = 1e-5;
// The tuner's widths: one per bucket (spmm_tuning_bucket), both when no bucket is named.
std::vector<int> objective_widths(const std::string& bucket) {
  if (bucket.empty()) return {32, 128};
  if (bucket == spmm_tuning_bucket(32)) return {32};
  if (bucket == spmm_tuning_bucket(128)) return {128};
  throw UsageError("spmm: unknown tuning bucket '" + bucket + "' (n32, n128)");
}
constexpr double kTolHalf = 1e-2;
const std::vector<int> kBenchN = {32, 64, 128, 256};

tuner::SearchSpace make_space() {
  tuner::SearchSpace s{"spmm", {}, {}, config_to_json(SpmmConfig{}), tuner::validate_as<SpmmConfig>()};
  s.params = {
      ParamSpec::choice("path", {"auto", "brp", "csr", "condensed"},
                        "auto (condensed fill, then TC share), BRP, CUDA-core CSR or condensed TC windows"),
      ParamSpec::choice("f", {1, 2, 4, 8}, "BRP: nonzeros per slot"),
      ParamSpec::choice("g", {1, 2, 4, 8}, "BRP: TC blocks per group"),
      ParamSpec::choice("min_tc_share", {0.25, 0.5, 0.75, 1.01},
                        "auto takes BRP at this TC share or above (1.01: never)"),
      ParamSpec::choice("tc_warps", {1, 4, 8}, "BRP: warps per window's block"),
      ParamSpec::choice("expand_min_f", {4, 16}, "BRP: A operands expanded once per plan from this f (16: never)"),
      ParamSpec::choice("tc_max_run", {8, 32, 128}, "BRP: groups a block sums before the atomic pass"),
      ParamSpec::choice("csr_max_run", {0, 64, 1024}, "CSR: entries a warp takes before the atomic pass (0: auto)"),
      ParamSpec::choice("csr_warps", {2, 4, 8}, "CSR: warps a block"),
      ParamSpec::choice("csr_piece_reduce", {0, 1}, "CSR: a block's pieces of one row summed before the atomic add"),
      ParamSpec::choice("csr_split", {0, 1},
                        "CSR, f32: long rows' parts in the rows' launch (1) or an atomic pass (0)"),
      ParamSpec::choice("csr_rows_per_warp", {0, 1, 2, 4},
                        "CSR: rows a warp, each on 32 / rows lanes (0: the plan picks)"),
      ParamSpec::choice("reorder", {"auto", "none", "degree", "rcm", "community"},
                        "CSR: the order warps take A's rows in (with path auto or csr)"),
  };
  return s;
}

// x rounded to the 16-bit type and back (exact in f32), as a plan rounds A and a caller's B is.
std::vector<float> rounded(const std::vector<float>& x, SpmmDtype d) {
  if (d == SpmmDtype::F32) return x;
  return d == SpmmDtype::F16 ? half_to_floats(floats_to_half(x)) : bf16_to_floats(floats_to_bf16(x));
}

// One width's inputs in one value type: B on the host and the device, the reference C and sum
// |a||b| per entry. `a` is as the plans get it; the reference uses its values as a plan rounds them.
struct SpmmCase {
  int n = 0;
  SpmmDtype dtype = SpmmDtype::F32;
  DeviceBuffer<float> b, c;         // f32
  DeviceBuffer<uint16_t> b16, c16;  // f16 / bf16
  std::vector<float> ref, scale;

  // relu: the reference is ReLU(A B) (bench --epilogue relu); the yardstick stays sum |a||b|, which
  // bounds the error of ReLU(C) as it bounds C's (ReLU is 1-Lipschitz).
  SpmmCase(const CsrMatrix<float>& a, const CsrMatrix<float>& abs_a, int n_cols, uint64_t seed,
           SpmmDtype d = SpmmDtype::F32, bool relu = false)
      : n(n_cols), dtype(d) {
    const auto hb = rounded(random_values<float>(size_t(a.cols) * size_t(n), seed), d);
    if (d == SpmmDtype::F32) {
      b = DeviceBuffer<float>(std::span<const float>(hb));
      c = DeviceBuffer<float>(size_t(a.rows) * size_t(n));
    } else {
      const auto h = d == SpmmDtype::F16 ? floats_to_half(hb) : floats_to_bf16(hb);
      b16 = DeviceBuffer<uint16_t>(std::span<const uint16_t>(h));
      c16 = DeviceBuffer<uint16_t>(size_t(a.rows) * size_t(n));
    }
    CsrMatrix<float> ar = a, abs_ar = abs_a;
    ar.values = rounded(a.values, d);
    abs_ar.values = rounded(abs_a.values, d);
    reference_spmm(ar, hb, n, ref, 1.0f, 0.0f);  // accumulates in double
    if (relu)
      for (auto& v : ref) v = v < 0.0f ? 0.0f : v;
    std::vector<float> abs_b(hb.size());
    for (size_t i = 0; i < hb.size(); ++i) abs_b[i] = std::fabs(hb[i]);
    reference_spmm(abs_ar, abs_b, n, scale, 1.0f, 0.0f);
  }

  uint64_t b_ptr() const { return dtype == SpmmDtype::F32 ? b.ptr() : b16.ptr(); }
  uint64_t c_ptr() const { return dtype == SpmmDtype::F32 ? c.ptr() : c16.ptr(); }
  // C = NaN everywhere (0xFF bytes in every type), so that an entry left unwritten shows.
  void poison() {
    if (dtype == SpmmDtype::F32)
      c.fill_bytes(0xFF);
    else
      c16.fill_bytes(0xFF);
  }
  void run(const SpmmPlan& plan, const Stream& s) {
    if (dtype == SpmmDtype::F32)
      plan.run(b, c, s);
    else
      plan.run(b16, c16, s);
  }

  // The largest |C - ref| / sum |a||b| over the entries (C downloaded; waits for the stream's work).
  double error() const {
    const auto got = dtype == SpmmDtype::F32   ? c.download()
                     : dtype == SpmmDtype::F16 ? half_to_floats(c16.download())
                                               : bf16_to_floats(c16.download());
    const double floor = spmm_rounding_floor(dtype);
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double d = std::max(0.0, std::fabs(double(got[i]) - double(ref[i])) - floor);
      const double e = scale[i] > 0 ? d / double(scale[i]) : (d == 0 ? 0.0 : std::numeric_limits<double>::infinity());
      if (!(e <= worst)) worst = e;  // NaN propagates as the worst
    }
    return worst;
  }
};

CsrMatrix<float> abs_of(const CsrMatrix<float>& a) {
  CsrMatrix<float> out = a;
  for (auto& v : out.values) v = std::fabs(v);
  return out;
}

double tolerance(SpmmPath p, SpmmDtype d = SpmmDtype::F32) {
  if (d != SpmmDtype::F32) return kTolHalf;
  return p == SpmmPath::Brp || p == SpmmPath::Condensed ? kTolTf32 : kTolF32;
}

// The tuner's time: plan.run (C = A B) at the bucket's N (the geomean over N = 32 and 128 with no
// bucket), each checked against reference_spmm first.
struct SpmmObjective {
  Context& ctx;
  CsrMatrix<float> a;
  std::vector<std::unique_ptr<SpmmCase>> cases;

  SpmmObjective(Context& c, const NamedMatrix& m, const std::string& bucket) : ctx(c), a(m.csr.cast<float>()) {
    const CsrMatrix<float> abs_a = abs_of(a);
    for (int n : objective_widths(bucket)) cases.push_back(std::make_unique<SpmmCase>(a, abs_a, n, 17 + n));
  }

  Measurement operator()(const nlohmann::json& params, int samples) {
    return guarded([&]() -> Measurement {
      const Config cfg{"spmm", params, ConfigSource::Explicit, "tuning candidate"};
      SpmmOptions opt;
      opt.config = &cfg;
      Stream s(ctx);
      std::vector<double> times;
      std::string detail;
      for (auto& k : cases) {
        const SpmmPlan plan = plan_spmm(ctx, a, k->n, opt);
        k->poison();
        k->run(plan, s);
        s.synchronize();
        const double err = k->error();
        if (!(err <= tolerance(plan.path())))
          return {TrialStatus::WrongResult, 0,
                  fmt::format("n = {}, path {}: error {:.3e} relative to sum |a||b| (tolerance {:.0e})", k->n,
                              to_string(plan.path()), err, tolerance(plan.path()))};
        const double us =
            time_on_stream(s.handle(), objective_timing(samples), [&](int64_t) { k->run(plan, s); }).median_us;
        times.push_back(us);
        detail += fmt::format("{}n = {}: {:.1f} us ({})", detail.empty() ? "" : ", ", k->n, us, to_string(plan.path()));
      }
      return {TrialStatus::Ok, geomean(times), detail};
    });
  }
};

struct BenchTime {
  std::string impl;
  double us = 0, err = 0;
  std::string note;
};

// Times `launch` (C = A B into k.c), after checking its result once.
template <class F>
BenchTime time_impl(const std::string& impl, const Stream& stream, const TimingOptions& t, SpmmCase& k, F&& launch) {
  BenchTime r{impl};
  k.poison();
  launch();
  stream.synchronize();
  r.err = k.error();
  r.us = time_on_stream(stream.handle(), t, [&](int64_t) { launch(); }).median_us;
  return r;
}

// --precision's words, in order, each once: f32 (tf32 is its alias: the f32 BRP path's tensor
// core precision), f16, bf16.
std::vector<SpmmDtype> bench_dtypes(const std::vector<std::string>& words) {
  std::vector<SpmmDtype> out;
  for (const auto& w : words) {
    if (w == "f64") throw UsageError("bench spmm: no f64 SpMM kernels (--precision f32, tf32, f16, bf16)");
    const SpmmDtype d = spmm_dtype_from_string(w);
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
  return out;
}

// What `bench spmm` was asked for, read once before any GPU work.
struct SpmmBenchSetup {
  std::vector<SpmmDtype> dtypes;
  std::vector<int> widths;
  SpmmEpilogue epilogue = SpmmEpilogue::None;
  bool relu = false;
  std::optional<Config> given;  // --config
};

// What bench spmm refuses before any GPU work (OpDescriptor::check_request; bench_setup again).
void check_bench_request(const BenchRequest& r) {
  if (!r.densities.empty()) throw UsageError("bench spmm: --density applies to ops with a sparse x (spmspv)");
  if (!r.strategies.empty()) throw UsageError("bench spmm: --strategy applies to spmv (spmm: --config)");
  (void)bench_dtypes(r.precisions);
  (void)parse_spmm_epilogue(r.epilogue);
  const SpmmConfig typed = r.config ? config_from_json<SpmmConfig>(*r.config) : SpmmConfig{};
  if (!r.reduces.empty() && (typed.path == "brp" || typed.path == "condensed"))
    throw UsageError("bench spmm: --reduce runs on the CSR path, but --config asks for path " + typed.path);
}

SpmmBenchSetup bench_setup(const BenchRequest& r) {
  check_bench_request(r);
  SpmmBenchSetup s;
  s.dtypes = bench_dtypes(r.precisions);
  s.widths = r.n_cols.empty() ? kBenchN : r.n_cols;
  s.epilogue = parse_spmm_epilogue(r.epilogue);
  s.relu = s.epilogue == SpmmEpilogue::Relu;
  if (s.relu)
    fmt::print(
        "epilogue relu: C = ReLU(A B); dbsparse's plans apply it (fused into the CSR path's stores, a pass "
        "elsewhere), cuSPARSE's rows add a relu pass over C (its SpMM has no epilogue)\n");
  if (r.config) s.given = Config{"spmm", *r.config, ConfigSource::Explicit, "--config"};
  return s;
}

// Across the suite, for the summary: auto over the best cuSPARSE by (precision, N), the BRP plans'
// conversions, and the reordered CSR over the best cuSPARSE by (order, N), f32 and 16 bits together.
struct SpmmBenchTotals {
  std::map<std::pair<SpmmDtype, int>, std::vector<std::pair<double, std::string>>> speedups;
  std::vector<std::pair<std::string, BrpStats>> conversions;
  std::map<std::pair<std::string, int>, std::vector<std::pair<double, std::string>>> reordered;
};

// One (matrix, precision, N): its case, the auto plan and the forced paths' plans, and its rows:
// dbsparse's (auto, BRP, condensed, CSR, then CSR in each asked row order), then cuSPARSE's from
// `first_cusparse` on.
struct SpmmBenchCase {
  const std::string& name;
  const CsrMatrix<float>& a;
  SpmmDtype dtype;
  int n;
  SpmmCase k;
  std::vector<BenchTime> rows;
  nlohmann::json reorders = nlohmann::json::array();
  nlohmann::json unsupported = nlohmann::json::object();
  size_t first_cusparse = 0;
};

// Reordered CSR: the ordering's host time and the calls that pay it back against plain CSR.
void time_reorders(Context& ctx, const Stream& stream, const BenchRequest& r, const SpmmOptions& csr_opt,
                   SpmmBenchCase& c) {
  const double csr_us = c.rows.back().us;
  for (const std::string& name : r.reorders) {
    if (c.a.rows != c.a.cols) break;  // orderings are of a graph's vertices
    // degree-gpu: the path of a caller's 64-bit device CSR (f32), its degree order made on the GPU.
    const bool on_gpu = name == "degree-gpu";
    if (on_gpu && c.dtype != SpmmDtype::F32) continue;
    SpmmOptions ro = csr_opt;
    ro.reorder = parse_reorder(on_gpu ? "degree" : name);
    std::optional<DeviceCsr64<float>> d64;  // A as a caller's 64-bit device CSR
    if (on_gpu) d64.emplace(c.a);
    const SpmmPlan rp = on_gpu ? plan_spmm(ctx, d64->view(), c.n, ro) : plan_spmm(ctx, c.a, c.n, ro);
    c.rows.push_back(time_impl("dbsparse-csr-" + name, stream, r.timing, c.k, [&] { c.k.run(rp, stream); }));
    const double saved_us = csr_us - c.rows.back().us;
    const double payback = saved_us > 0 ? rp.reorder_ms() * 1e3 / saved_us : -1;
    c.rows.back().note =
        payback > 0 ? fmt::format("order {:.1f} ms, paid back after {:.0f} calls", rp.reorder_ms(), std::ceil(payback))
                    : fmt::format("order {:.1f} ms, never paid back", rp.reorder_ms());
    c.reorders.push_back({{"order", name},
                          {"ms", rp.reorder_ms()},
                          {"us", c.rows.back().us},
                          {"payback_calls", payback > 0 ? std::ceil(payback) : -1.0}});
  }
}

// cuSPARSE's rows, each algorithm it supports for this case; with relu, the pass its users add.
void time_cusparse(Context& ctx, const Stream& stream, const BenchRequest& r, bool relu, SpmmBenchCase& c) {
  CusparseSpmm cs(c.a, c.n, stream.handle(), kCusparseSpmmAlgs, c.dtype);
  // cuSPARSE SpMM has no epilogue: its users run ReLU as a pass of its own, timed with the product.
  std::optional<detail::ReluPass> pass;
  if (relu) pass = detail::relu_pass(ctx, c.dtype, static_cast<long long>(c.a.rows) * c.n);
  for (CusparseSpmmAlg alg : kCusparseSpmmAlgs) {
    if (!cs.supported(alg)) {
      c.unsupported[to_string(alg)] = cs.why_unsupported(alg);
      continue;
    }
    if (!relu) {
      c.rows.push_back(
          time_impl(to_string(alg), stream, r.timing, c.k, [&] { cs.run(alg, c.k.b_ptr(), c.k.c_ptr()); }));
      continue;
    }
    c.rows.push_back(time_impl(std::string(to_string(alg)) + "+relu", stream, r.timing, c.k, [&] {
      cs.run(alg, c.k.b_ptr(), c.k.c_ptr());
      pass->run(c.k.c_ptr(), static_cast<CUstream>(stream.handle()));
    }));
  }
}

// The tolerance a row is held to: its path's, in the case's precision.
double tolerance_of(const BenchTime& t, const SpmmPlan& plan, SpmmDtype dtype) {
  if (t.impl.rfind("dbsparse-brp", 0) == 0) return tolerance(SpmmPath::Brp, dtype);
  if (t.impl.rfind("dbsparse-condensed", 0) == 0) return tolerance(SpmmPath::Condensed, dtype);
  if (t.impl == "dbsparse-auto") return tolerance(plan.path(), dtype);
  return tolerance(SpmmPath::CsrCudaCore, dtype);
}

// The case's record: its shape, the auto plan's choices, the BRP conversion and every row.
nlohmann::json case_record(const SpmmBenchCase& c, SpmmEpilogue epilogue, const SpmmPlan& plan, const SpmmPlan& brp,
                           double fill, SpmmBenchTotals& totals) {
  const double flops = 2.0 * double(c.a.nnz()) * double(c.n);
  nlohmann::json rec;
  rec["matrix"] = c.name;
  rec["precision"] = to_string(c.dtype);
  rec["rows"] = c.a.rows;
  rec["cols"] = c.a.cols;
  rec["nnz"] = c.a.nnz();
  rec["n"] = c.n;
  rec["auto_path"] = to_string(plan.path());
  rec["epilogue"] = to_string(epilogue);
  rec["epilogue_fused"] = plan.epilogue_fused();
  rec["config"] = config_to_json(plan.typed_config());
  rec["config_source"] = to_string(plan.config().source);
  rec["tc_share_brp"] = brp.tc_share();
  rec["condensed_fill"] = fill;
  // The preprocessing's bound (4 nnz (index + value bytes) of extra device memory).
  if (const auto st = brp.brp_stats()) {
    rec["brp_convert"] = {{"on_device", st->on_device},
                          {"ms", st->convert_ms},
                          {"peak_extra_bytes", st->peak_extra_bytes},
                          {"bound_bytes", st->peak_bound_bytes()},
                          {"peak_bytes_per_nnz", c.a.nnz() ? double(st->peak_extra_bytes) / double(c.a.nnz()) : 0.0}};
    totals.conversions.push_back({c.name, *st});
  }
  rec["impls"] = nlohmann::json::array();
  for (const auto& t : c.rows) {
    if (t.us <= 0) {
      rec["impls"].push_back({{"impl", t.impl}, {"note", t.note}});
      continue;
    }
    const double tol = tolerance_of(t, plan, c.dtype);
    rec["impls"].push_back({{"impl", t.impl},
                            {"us", t.us},
                            {"gflops", t.us > 0 ? flops / (t.us * 1e3) : 0.0},
                            {"error", t.err},
                            {"tolerance", tol},
                            {"correct", t.err <= tol}});
  }
  if (!c.unsupported.empty()) rec["cusparse_unsupported"] = c.unsupported;
  return rec;
}

// The case against the best correct cuSPARSE row: into the record and the totals, one table line,
// a line per reordered CSR row and one per wrong row.
void compare_case(SpmmBenchCase& c, const SpmmPlan& plan, nlohmann::json& rec, SpmmBenchTotals& totals) {
  // cuSPARSE's rows are held to CSR's tolerance (f32 CUDA cores, or the 16-bit one).
  const double tol_cs = tolerance(SpmmPath::CsrCudaCore, c.dtype);
  const BenchTime* best_cs = nullptr;
  for (size_t i = c.first_cusparse; i < c.rows.size(); ++i)
    if (c.rows[i].err <= tol_cs && (!best_cs || c.rows[i].us < best_cs->us)) best_cs = &c.rows[i];
  const double flops = 2.0 * double(c.a.nnz()) * double(c.n);
  auto gflops = [&](double us) { return us > 0 ? flops / (us * 1e3) : 0.0; };
  const double t_auto = c.rows[0].us, t_brp = c.rows[1].us, t_cnd = c.rows[2].us, t_csr = c.rows[3].us;
  double vs_cs = 0;
  if (best_cs) {
    vs_cs = best_cs->us / t_auto;
    rec["cusparse_best"] = best_cs->impl;
    rec["auto_over_cusparse"] = vs_cs;
    totals.speedups[{c.dtype, c.n}].push_back({vs_cs, c.name});
  }
  rec["brp_over_csr"] = t_csr / t_brp;
  const double cnd_over_cs = best_cs && t_cnd > 0 ? best_cs->us / t_cnd : 0.0;
  if (t_cnd > 0) rec["condensed_over_cusparse"] = cnd_over_cs;
  fmt::print(
      "{:<36} {:>4} {:>5} {:>8.1f}us {:>8.1f}us {:>8.1f}us {:>8.1f}us {:>8.1f}us {:>10.1f} {:>7.2f} {:>7.2f} "
      "{:>7.2f}  {}; {}\n",
      c.name.substr(0, 36), to_string(c.dtype), c.n, t_auto, t_brp, t_cnd, t_csr, best_cs ? best_cs->us : 0.0,
      gflops(t_auto), vs_cs, t_csr / t_brp, cnd_over_cs, to_string(plan.path()),
      best_cs ? best_cs->impl : "none correct");
  for (size_t i = 0; i < c.reorders.size(); ++i) {
    const BenchTime& t = c.rows[4 + i];
    const bool correct = t.err <= tolerance_of(t, plan, c.dtype);
    const double over_cs = best_cs && t.us > 0 ? best_cs->us / t.us : 0.0;
    c.reorders[i]["over_cusparse"] = over_cs;
    c.reorders[i]["correct"] = correct;
    if (best_cs) totals.reordered[{c.reorders[i]["order"].get<std::string>(), c.n}].push_back({over_cs, c.name});
    fmt::print("  {:<34} {:>4} {:>5} {:>8.1f}us  {:.2f}x the best cuSPARSE, {:.2f}x csr; {}{}\n", t.impl,
               to_string(c.dtype), c.n, t.us, over_cs, t.us > 0 ? t_csr / t.us : 0.0, t.note, correct ? "" : " WRONG");
  }
  if (!c.reorders.empty()) rec["reorders"] = c.reorders;
  for (const auto& t : c.rows)
    if (t.us > 0 && !(t.err <= tolerance_of(t, plan, c.dtype)))
      fmt::print("  WRONG: {} error {:.3e} relative to sum |a||b| (tolerance {:.0e})\n", t.impl, t.err,
                 tolerance_of(t, plan, c.dtype));
}

// One (matrix, precision, N): the auto plan and each forced path timed, then cuSPARSE; its record.
nlohmann::json bench_case(Context& ctx, const Stream& stream, const BenchRequest& r, const SpmmBenchSetup& setup,
                          SpmmBenchCase& c, SpmmBenchTotals& totals) {
  SpmmOptions auto_opt;
  if (setup.given) auto_opt.config = &*setup.given;
  auto_opt.dtype = c.dtype;
  auto_opt.epilogue = setup.epilogue;
  const SpmmPlan plan = plan_spmm(ctx, c.a, c.n, auto_opt);
  SpmmOptions brp_opt = auto_opt, csr_opt = auto_opt, cnd_opt = auto_opt;
  brp_opt.path = SpmmPath::Brp;
  csr_opt.path = SpmmPath::CsrCudaCore;
  csr_opt.reorder = Reorder::None;  // the plain CSR row: auto's order shows in the auto row
  cnd_opt.path = SpmmPath::Condensed;
  const SpmmPlan brp = plan_spmm(ctx, c.a, c.n, brp_opt);
  const SpmmPlan csr = plan_spmm(ctx, c.a, c.n, csr_opt);
  // The condensed tiles take 512 bytes (f32) per 8 columns of a window: on a graph of 1% fill
  // that is 50x CSR, so they are left out past 4 GB.
  const double fill = condensed_fill(c.a, plan.g());
  const double cnd_bytes = fill > 0 ? double(c.a.nnz()) / fill * spmm_value_bytes(c.dtype) : 0.0;
  std::optional<SpmmPlan> cnd;
  if (cnd_bytes <= 4e9) cnd.emplace(plan_spmm(ctx, c.a, c.n, cnd_opt));
  SpmmCase& k = c.k;
  c.rows.push_back(time_impl("dbsparse-auto", stream, r.timing, k, [&] { k.run(plan, stream); }));
  c.rows.back().note = to_string(plan.path());
  c.rows.push_back(time_impl(fmt::format("dbsparse-brp-f{}-g{}", brp.f(), brp.g()), stream, r.timing, k,
                             [&] { k.run(brp, stream); }));
  if (cnd)
    c.rows.push_back(
        time_impl(fmt::format("dbsparse-condensed-g{}", cnd->g()), stream, r.timing, k, [&] { k.run(*cnd, stream); }));
  else
    c.rows.push_back(
        BenchTime{"dbsparse-condensed", 0, 0, fmt::format("left out: {:.1f} GB of tiles", cnd_bytes / 1e9)});
  c.rows.push_back(time_impl("dbsparse-csr", stream, r.timing, k, [&] { k.run(csr, stream); }));
  time_reorders(ctx, stream, r, csr_opt, c);
  c.first_cusparse = c.rows.size();
  if (r.baselines) time_cusparse(ctx, stream, r, setup.relu, c);
  nlohmann::json rec = case_record(c, setup.epilogue, plan, brp, fill, totals);
  compare_case(c, plan, rec, totals);
  if (!r.reduces.empty())
    rec["reductions"] = bench_spmm_reductions(ctx, stream, c.a, c.dtype, c.n, r.reduces, r.timing,
                                              setup.given ? &*setup.given : nullptr, c.rows[3].us);
  return rec;
}

// The geomean and the worst matrix of each group of ratios, printed and returned.
template <class Key, class Name, class Line>
void summarize_ratios(const std::map<Key, std::vector<std::pair<double, std::string>>>& groups, const char* field,
                      Name&& name_of, Line&& line, nlohmann::json& summary) {
  for (const auto& [key, v] : groups) {
    std::vector<double> xs;
    const std::pair<double, std::string>* worst = nullptr;
    for (const auto& p : v) {
      xs.push_back(p.first);
      if (!worst || p.first < worst->first) worst = &p;
    }
    summary[name_of(key)] = {
        {field, geomean(xs)}, {"worst", worst->first}, {"worst_matrix", worst->second}, {"matrices", xs.size()}};
    line(key, geomean(xs), xs.size(), *worst);
  }
}

nlohmann::json summarize(const SpmmBenchTotals& totals, const std::vector<SpmmDtype>& dtypes) {
  // f32 alone keeps the summary's old shape (keyed by N); with f16 or bf16 the key is "<precision> <N>".
  const bool f32_only = dtypes == std::vector<SpmmDtype>{SpmmDtype::F32};
  nlohmann::json summary = nlohmann::json::object();
  using Worst = std::pair<double, std::string>;
  summarize_ratios(
      totals.speedups, "geomean_auto_over_best_cusparse",
      [&](const std::pair<SpmmDtype, int>& k) {
        return f32_only ? std::to_string(k.second) : fmt::format("{} {}", to_string(k.first), k.second);
      },
      [](const std::pair<SpmmDtype, int>& k, double g, size_t count, const Worst& worst) {
        fmt::print(
            "{} N = {}: dbsparse auto over the best cuSPARSE algorithm: geomean {:.2f}x over {} matrices, worst "
            "{:.2f}x ({})\n",
            to_string(k.first), k.second, g, count, worst.first, worst.second);
      },
      summary);
  summarize_ratios(
      totals.reordered, "geomean_over_best_cusparse",
      [](const std::pair<std::string, int>& k) { return fmt::format("csr-{} {}", k.first, k.second); },
      [](const std::pair<std::string, int>& k, double g, size_t count, const Worst& worst) {
        fmt::print(
            "N = {}: dbsparse csr, rows in {} order, over the best cuSPARSE algorithm: geomean {:.2f}x over {} "
            "matrices, worst {:.2f}x ({})\n",
            k.second, k.first, g, count, worst.first, worst.second);
      },
      summary);
  return summary;
}

// One line per matrix (the first N's plan; the format does not depend on N).
void print_conversions(const std::vector<std::pair<std::string, BrpStats>>& conversions) {
  std::string last;
  for (const auto& [name, st] : conversions) {
    if (name == last) continue;
    last = name;
    const double per_nnz = st.nnz ? double(st.peak_extra_bytes) / double(st.nnz) : 0.0;
    const double bound = st.nnz ? double(st.peak_bound_bytes()) / double(st.nnz) : 0.0;
    const char* verdict = !st.on_device                                  ? "not metered on the host"
                          : st.peak_extra_bytes <= st.peak_bound_bytes() ? "within"
                                                                         : "OVER";
    fmt::print(
        "BRP f = {}, g = {} on {}: converted on the {} in {:.2f} ms, peak extra device memory {:.1f} B/nnz "
        "(bound {:.0f}: {})\n",
        st.f, st.g, name.substr(0, 40), st.on_device ? "GPU" : "host", st.convert_ms, per_nnz, bound, verdict);
  }
}

nlohmann::json bench(Context& ctx, const Stream& stream, const BenchRequest& r) {
  const SpmmBenchSetup setup = bench_setup(r);
  fmt::print("{:<36} {:>4} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7} {:>7} {:>7}  {}\n", "matrix", "prec",
             "N", "auto", "brp", "condensed", "csr", "cusparse", "GFLOP/s", "a/cs", "brp/csr", "cnd/cs",
             "auto path; best cuSPARSE algorithm");
  nlohmann::json results = nlohmann::json::array();
  SpmmBenchTotals totals;
  for_each_matrix(r.specs, [&](const NamedMatrix& m, bool) {
    const CsrMatrix<float> a = m.csr.cast<float>();
    const CsrMatrix<float> abs_a = abs_of(a);
    for (SpmmDtype dtype : setup.dtypes)
      for (int n : setup.widths) {
        SpmmBenchCase c{m.name, a, dtype, n, SpmmCase(a, abs_a, n, 101 + n, dtype, setup.relu)};
        results.push_back(bench_case(ctx, stream, r, setup, c, totals));
      }
  });
  nlohmann::json summary = summarize(totals, setup.dtypes);
  print_conversions(totals.conversions);
  nlohmann::json j;
  j["results"] = results;
  j["summary"] = summary;
  j["gflops"] = "2 * nnz * N / median time per call (C = A B, B and C row-major in the record's precision)";
  j["tolerance"] = {{"tf32", kTolTf32},
                    {"f32", kTolF32},
                    {"f16_bf16", kTolHalf},
                    {"relative_to", "sum |a||b| per entry of C, A and B as rounded to the record's precision"}};
  return j;
}

// --check-auto: per (matrix, precision, N, epilogue), the auto row against the forced paths' rows
// (BRP, condensed, plain CSR) that ran and were correct. The reordered CSR rows are row orders
// of the CSR path, not paths, and take no part.
std::vector<AutoCheck> auto_checks(const nlohmann::json& results) {
  std::vector<TimedRow> rows;
  for (const auto& rec : results) {
    std::string setting = fmt::format("{} N={}", rec.at("precision").get<std::string>(), rec.at("n").get<int>());
    if (rec.value("epilogue", "none") != "none") setting += " " + rec["epilogue"].get<std::string>();
    for (const auto& t : rec.at("impls"))
      rows.push_back({rec.at("matrix"), setting, t.at("impl"), t.value("correct", false) ? t.value("us", 0.0) : 0.0,
                      rec.value("auto_path", "")});
  }
  return group_auto_checks("spmm", rows, "dbsparse-auto", [](const std::string& impl) {
    return impl == "dbsparse-csr" || impl.rfind("dbsparse-brp", 0) == 0 || impl.rfind("dbsparse-condensed", 0) == 0;
  });
}

// The variants SpmmConfig's defaults reach (OpDescriptor::default_variants), in f32, f16 and bf16:
// the CSR path's keys as the plans make them (csr_key over csr_rows_a_warp, run here through the
// pure spmm_view64_spec over widths N 1..256, short and long mean rows, few and many rows and SMs),
// with 32- and 64-bit offsets; auto's condensed path (BRP's module at f 1 and the config's g and
// tc_warps); the ReLU pass (spmm_relu.cpp: the CSR module with 8 warps); the CSR keys' max and
// min (SpmmOptions::reduce) at the same lanes and rows a warp. BRP itself is not auto's
// by default (min_tc_share above 1), nor its conversion.
std::vector<codegen::KernelSource> spmm_default_variants() {
  const SpmmConfig c;
  const Config config{"spmm", config_to_json(c), ConfigSource::Default, "defaults"};
  std::set<codegen::SpmmKey> keys;
  const auto add_csr = [&](codegen::SpmmKey k) {
    keys.insert(k);  // 64-bit offsets: f32 only
    k.offsets64 = false;
    for (auto v : {codegen::SpmmValue::F32, codegen::SpmmValue::F16, codegen::SpmmValue::BF16}) {
      k.value = v;
      // Max and min (SpmmOptions::reduce) take the sum's lanes and rows a warp (spmm_spec.cpp);
      // the mean runs the sum's modules.
      for (auto r : {codegen::SpmmReduceOp::Sum, codegen::SpmmReduceOp::Max, codegen::SpmmReduceOp::Min}) {
        k.reduce = r;
        keys.insert(k);
      }
    }
  };
  for (int n = 1; n <= 256; ++n)
    for (int32_t rows : {1, 1 << 24})
      for (int64_t mean : {1, 64})
        for (int sms : {1, 132}) {
          const auto s = spmm_detail::spmm_view64_spec(rows, rows, rows * mean, n, SpmmOptions{}, config, sms);
          add_csr(s.csr_key1);
          if (s.vec4) add_csr(s.csr_key4);
        }
  for (auto v : {codegen::SpmmValue::F32, codegen::SpmmValue::F16, codegen::SpmmValue::BF16}) {
    keys.insert(codegen::SpmmKey{codegen::SpmmKernelPath::Brp, 1, c.g, c.tc_warps, 1, 32, v});
    keys.insert(codegen::SpmmKey{codegen::SpmmKernelPath::Csr, 1, 4, 8, 1, 32, v});
  }
  std::vector<codegen::KernelSource> out;
  for (const auto& k : keys) out.push_back(codegen::make_source(k));
  return out;
}

OpDescriptor make() {
  OpDescriptor d;
  d.name = "spmm";
  d.doc = "C = A B, A in CSR, B and C dense row-major: BRP-SpMM (TF32, f16 or bf16 tensor cores) or CUDA-core CSR";
  d.config = config_info<SpmmConfig>();
  d.objective_doc = "plan.run time, geomean over N = 32 and 128";
  d.space = make_space();
  d.bench_suite = [](const std::string& size) { return spmm_suite(size); };
  d.suite_sets = kSpmmSuiteSets;
  d.bench_suite_set = [](const std::string& size, const std::string& set) { return spmm_suite(size, set); };
  // f16 / bf16 kernels only with opt_in: the tuner times f32 alone, and dbtune compiles every
  // variant ahead, which the 16-bit modules would double (docs/decisions/tuner-search-spaces.md).
  // A 16-bit plan compiles its own on first use.
  d.variants = [](bool opt_in) {
    std::vector<codegen::KernelSource> out;
    for (const auto& k : codegen::spmm_search_space())
      if (opt_in || k.value == codegen::SpmmValue::F32) out.push_back(codegen::make_source(k));
    // A BRP plan converts A on the GPU (csr_to_brp_device, f32) at its (f, g).
    for (const auto& k : codegen::brp_convert_keys({codegen::ValueType::F32})) out.push_back(codegen::make_source(k));
    return out;
  };
  d.default_variants = spmm_default_variants;
  d.objective = [](Context& ctx, const NamedMatrix& m, const ObjectiveOptions& o) -> std::unique_ptr<tuner::Objective> {
    if (!o.densities.empty()) throw UsageError("spmm: B is dense; --density does not apply");
    auto obj = std::make_shared<SpmmObjective>(ctx, m, o.bucket);
    return std::make_unique<tuner::Objective>([obj](const nlohmann::json& c, int n) { return (*obj)(c, n); });
  };
  d.buckets = {spmm_tuning_bucket(32), spmm_tuning_bucket(128)};
  d.bench_options = {"--config", "--n", "--precision", "--reorder", "--epilogue", "--reduce"};
  d.bench = bench;
  d.check_request = check_bench_request;
  d.explain = [](Context& ctx, const NamedMatrix& m) { return plan_spmm(ctx, m.csr.cast<float>(), 128).explain(); };
  d.fixed_cost_calls = spmm_fixed_cost_calls;
  d.first_call = spmm_first_call;
  d.auto_checks = auto_checks;  // every bench case times the forced paths: nothing to ask of the request
  return d;
}

}  // namespace

const OpDescriptor& spmm_op() {
  static const OpDescriptor d = make();
  return d;
}

}  // namespace dbsparse::tools

// The SDDMM op's registry entry: out[e] = dot(X[row(e)], Y[col(e)]) on A's CSR pattern
// (include/dbsparse/sddmm.hpp), timed against cuSPARSE's SDDMM in the same run.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>

#include "codegen/keys/sddmm_key.hpp"
#include "dbsparse/abi/sddmm.h"
#include "dbsparse/generators.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/reference.hpp"
#include "dbsparse/sddmm.hpp"
#include "tools/baselines/cusparse_sddmm.hpp"
#include "tools/bench/random.hpp"
#include "tools/bench/stats.hpp"
#include "tools/bench/suites.hpp"
#include "tools/ops/op_support.hpp"
#include "tools/ops/registry.hpp"

namespace dbsparse::tools {
namespace {

using tuner::Measurement;
using tuner::ParamSpec;

constexpr double kTolF32 = 1e-5, kTolHalf = 1e-2;  // relative to alpha * sum_j |x_j y_j| per entry
constexpr int kDefaultWidths[] = {32, 128};

tuner::SearchSpace make_space() {
  tuner::SearchSpace s{"sddmm", {}, {}, config_to_json(SddmmConfig{}), tuner::validate_as<SddmmConfig>()};
  s.params = {
      ParamSpec::choice("tile", {8, 16, 32, 64, 128}, "entries a group of lanes takes"),
      ParamSpec::choice("warps", {2, 4, 8}, "warps a block"),
  };
  return s;
}

std::vector<float> rounded(std::vector<float> x, SpmmDtype d) {
  if (d == SpmmDtype::F16) return half_to_floats(floats_to_half(x));
  if (d == SpmmDtype::BF16) return bf16_to_floats(floats_to_bf16(x));
  return x;
}

// One (A, k, value type): X and Y on the device (as the type's words), the reference in double,
// each entry's magnitude sum_j |x_j y_j| for the error, and an out buffer.
struct SddmmCase {
  const CsrMatrix<float>& a;
  int k;
  SpmmDtype dtype;
  DeviceBuffer<float> x, y, out;  // f32
  DeviceBuffer<uint16_t> x16, y16, out16;
  std::vector<double> ref, mag;

  SddmmCase(const CsrMatrix<float>& m, int width, SpmmDtype d, uint64_t seed) : a(m), k(width), dtype(d) {
    const std::vector<float> xh = rounded(random_values<float>(size_t(a.rows) * k, seed), d);
    const std::vector<float> yh = rounded(random_values<float>(size_t(a.cols) * k, seed + 1), d);
    ref = reference::sddmm(a, std::span<const float>(xh), std::span<const float>(yh), k);
    std::vector<float> xa(xh.size()), ya(yh.size());
    for (size_t i = 0; i < xh.size(); ++i) xa[i] = std::abs(xh[i]);
    for (size_t i = 0; i < yh.size(); ++i) ya[i] = std::abs(yh[i]);
    mag = reference::sddmm(a, std::span<const float>(xa), std::span<const float>(ya), k);
    if (d == SpmmDtype::F32) {
      x = DeviceBuffer<float>(std::span<const float>(xh));
      y = DeviceBuffer<float>(std::span<const float>(yh));
      out = DeviceBuffer<float>(std::max<size_t>(size_t(a.nnz()), 1));
    } else {
      const auto words = [d](const std::vector<float>& v) {
        return d == SpmmDtype::F16 ? floats_to_half(v) : floats_to_bf16(v);
      };
      x16 = DeviceBuffer<uint16_t>(std::span<const uint16_t>(words(xh)));
      y16 = DeviceBuffer<uint16_t>(std::span<const uint16_t>(words(yh)));
      out16 = DeviceBuffer<uint16_t>(std::max<size_t>(size_t(a.nnz()), 1));
    }
  }
  bool f32() const { return dtype == SpmmDtype::F32; }
  uint64_t xp() const { return f32() ? x.ptr() : x16.ptr(); }
  uint64_t yp() const { return f32() ? y.ptr() : y16.ptr(); }
  uint64_t outp() const { return f32() ? out.ptr() : out16.ptr(); }
  double tolerance() const { return f32() ? kTolF32 : kTolHalf; }
  void poison() { f32() ? out.fill_bytes(0xFF) : out16.fill_bytes(0xFF); }
  // The largest |out - ref| over the entry's magnitude (NaN: infinite).
  double error() const {
    std::vector<float> got;
    if (f32())
      got = out.download();
    else
      got = dtype == SpmmDtype::F16 ? half_to_floats(out16.download()) : bf16_to_floats(out16.download());
    double worst = 0;
    for (size_t e = 0; e < ref.size(); ++e) {
      const double err = std::abs(double(got[e]) - ref[e]) / (mag[e] + 1e-30);
      if (!(err <= worst)) worst = std::isnan(err) ? INFINITY : err;
    }
    return worst;
  }
  // The least traffic of a call: col_idx and out per entry, row_ptr, X's and Y's rows once each.
  double floor_bytes() const {
    const int vb = spmm_value_bytes(dtype);
    return double(a.nnz()) * (4 + vb) + (double(a.rows) + a.cols) * k * vb + (double(a.rows) + 1) * 4;
  }
};

struct SddmmTime {
  std::string impl;
  double us = 0, err = 0;
  std::string note;
};

template <class F>
SddmmTime time_impl(const std::string& impl, const Stream& stream, const TimingOptions& t, SddmmCase& c, F&& launch) {
  SddmmTime r{impl};
  c.poison();
  launch();
  stream.synchronize();
  r.err = c.error();
  r.us = time_on_stream(stream.handle(), t, [&](int64_t) { launch(); }).median_us;
  return r;
}

std::vector<SpmmDtype> bench_dtypes(const std::vector<std::string>& words) {
  std::vector<SpmmDtype> out;
  for (const auto& w : words) {
    if (w == "f64" || w == "tf32")
      throw UsageError(fmt::format("bench sddmm: --precision {} does not apply (f32, f16, bf16)", w));
    const SpmmDtype d = spmm_dtype_from_string(w);
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
  return out;
}

using Totals = std::map<std::pair<SpmmDtype, int>, std::vector<std::pair<double, std::string>>>;

// One (matrix, precision, k): dbsparse's plan and cuSPARSE's SDDMM, each checked then timed.
nlohmann::json bench_case(Context& ctx, const Stream& stream, const BenchRequest& r, const std::string& name,
                          SddmmCase& c, Totals& totals) {
  SddmmOptions opt;
  opt.dtype = c.dtype;
  std::optional<Config> given;
  if (r.config) given = Config{"sddmm", *r.config, ConfigSource::Explicit, "--config"};
  if (given) opt.config = &*given;
  const SddmmPlan plan = plan_sddmm(ctx, c.a, c.k, opt);
  if (r.explain) fmt::print(stderr, "{}", plan.explain());
  std::vector<SddmmTime> rows;
  rows.push_back(
      time_impl("dbsparse", stream, r.timing, c, [&] { plan.run(c.xp(), c.yp(), c.outp(), stream.handle()); }));
  std::string unsupported;
  if (r.baselines) {
    CusparseSddmm cs(c.a, c.k, stream.handle(), c.dtype);
    if (cs.supported())
      rows.push_back(time_impl("cusparse-sddmm", stream, r.timing, c, [&] { cs.run(c.xp(), c.yp(), c.outp()); }));
    else
      unsupported = cs.why_unsupported();
  }
  nlohmann::json rec = {{"matrix", name},
                        {"precision", to_string(c.dtype)},
                        {"rows", c.a.rows},
                        {"cols", c.a.cols},
                        {"nnz", c.a.nnz()},
                        {"k", c.k},
                        {"floor_bytes", c.floor_bytes()},
                        {"config", config_to_json(plan.typed_config())}};
  rec["impls"] = nlohmann::json::array();
  for (const auto& t : rows)
    rec["impls"].push_back({{"impl", t.impl},
                            {"us", t.us},
                            {"gbps_floor", t.us > 0 ? c.floor_bytes() / (t.us * 1e3) : 0.0},
                            {"error", t.err},
                            {"tolerance", c.tolerance()},
                            {"correct", t.err <= c.tolerance()}});
  if (!unsupported.empty()) rec["cusparse_unsupported"] = unsupported;
  const bool cs_ok = rows.size() > 1 && rows[1].err <= c.tolerance();
  const double ratio = cs_ok ? rows[1].us / rows[0].us : 0.0;
  if (cs_ok) {
    rec["dbsparse_over_cusparse"] = ratio;
    totals[{c.dtype, c.k}].push_back({ratio, name});
  }
  fmt::print("{:<36} {:>4} {:>4} {:>9.1f}us {:>9.1f}us {:>7.2f} {:>8.1f}  {}{}\n", name.substr(0, 36),
             to_string(c.dtype), c.k, rows[0].us, rows.size() > 1 ? rows[1].us : 0.0, ratio,
             rows[0].us > 0 ? c.floor_bytes() / (rows[0].us * 1e3) : 0.0,
             rows[0].err <= c.tolerance() ? "" : "dbsparse WRONG ",
             !unsupported.empty()        ? "cusparse unsupported: " + unsupported
             : rows.size() > 1 && !cs_ok ? "cusparse WRONG"
                                         : "");
  return rec;
}

nlohmann::json summarize(const Totals& totals) {
  nlohmann::json summary = nlohmann::json::object();
  for (const auto& [key, v] : totals) {
    std::vector<double> xs;
    const std::pair<double, std::string>* worst = nullptr;
    for (const auto& p : v) {
      xs.push_back(p.first);
      if (!worst || p.first < worst->first) worst = &p;
    }
    summary[fmt::format("{} {}", to_string(key.first), key.second)] = {{"geomean_dbsparse_over_cusparse", geomean(xs)},
                                                                       {"worst", worst->first},
                                                                       {"worst_matrix", worst->second},
                                                                       {"matrices", xs.size()}};
    fmt::print("{} k = {}: dbsparse over cuSPARSE SDDMM: geomean {:.2f}x over {} matrices, worst {:.2f}x ({})\n",
               to_string(key.first), key.second, geomean(xs), xs.size(), worst->first, worst->second);
  }
  return summary;
}

// What bench sddmm refuses before any GPU work (OpDescriptor::check_request; bench again).
void check_bench_request(const BenchRequest& r) {
  if (!r.densities.empty() || !r.strategies.empty())
    throw UsageError("bench sddmm: --density and --strategy do not apply (X and Y are dense)");
  (void)bench_dtypes(r.precisions);
  for (int k : r.n_cols)
    if (k > abi::kSddmmMaxK) throw UsageError(fmt::format("bench sddmm: --n (k) {} is past {}", k, abi::kSddmmMaxK));
  if (r.config) (void)config_from_json<SddmmConfig>(*r.config);
}

nlohmann::json bench(Context& ctx, const Stream& stream, const BenchRequest& r) {
  check_bench_request(r);
  const std::vector<SpmmDtype> dtypes = bench_dtypes(r.precisions);
  std::vector<int> widths = r.n_cols;
  if (widths.empty()) widths.assign(std::begin(kDefaultWidths), std::end(kDefaultWidths));
  fmt::print("{:<36} {:>4} {:>4} {:>11} {:>11} {:>7} {:>8}\n", "matrix", "prec", "k", "dbsparse", "cusparse", "db/cs",
             "GB/s");
  nlohmann::json results = nlohmann::json::array();
  Totals totals;
  for_each_matrix(r.specs, [&](const NamedMatrix& m, bool) {
    const CsrMatrix<float> a = m.csr.cast<float>();
    for (SpmmDtype d : dtypes)
      for (int k : widths) {
        SddmmCase c(a, k, d, 211 + k);
        results.push_back(bench_case(ctx, stream, r, m.name, c, totals));
      }
  });
  nlohmann::json j;
  j["results"] = results;
  j["summary"] = summarize(totals);
  j["gbps_floor"] = "floor bytes (col_idx and out per entry, X's and Y's rows once) / median time per call";
  j["tolerance"] = {
      {"f32", kTolF32}, {"f16_bf16", kTolHalf}, {"relative_to", "sum_j |x_j y_j| per entry, X and Y as rounded"}};
  return j;
}

struct SddmmObjective {
  Context& ctx;
  CsrMatrix<float> a;
  std::vector<std::unique_ptr<SddmmCase>> cases;

  SddmmObjective(Context& c, const NamedMatrix& m) : ctx(c), a(m.csr.cast<float>()) {
    for (int k : kDefaultWidths) cases.push_back(std::make_unique<SddmmCase>(a, k, SpmmDtype::F32, 7 + k));
  }

  Measurement operator()(const nlohmann::json& params, int samples) {
    return guarded([&]() -> Measurement {
      const Config cfg{"sddmm", params, ConfigSource::Explicit, "tuning candidate"};
      SddmmOptions opt;
      opt.config = &cfg;
      Stream s(ctx);
      std::vector<double> times;
      std::string detail;
      for (auto& c : cases) {
        const SddmmPlan plan = plan_sddmm(ctx, a, c->k, opt);
        const SddmmTime t = time_impl("dbsparse", s, objective_timing(samples), *c,
                                      [&] { plan.run(c->xp(), c->yp(), c->outp(), s.handle()); });
        if (!(t.err <= kTolF32))
          return {TrialStatus::WrongResult, 0, fmt::format("k {}: relative error {:.3e}", c->k, t.err)};
        times.push_back(t.us);
        detail += fmt::format(" k {}: {:.1f} us", c->k, t.us);
      }
      return {TrialStatus::Ok, geomean(times), detail};
    });
  }
};

std::vector<FixedCostCall> fixed_cost_calls(Context& ctx, const Stream& stream) {
  // 1000 rows of 8 entries, k = 32: a call whose work is a few microseconds at most.
  const auto a = generate("uniform:n=1000,d=8").cast<float>();
  auto plan = std::make_shared<SddmmPlan>(plan_sddmm(ctx, a, 32));
  auto x = filled<float>(size_t(a.rows) * 32, 1.f);
  auto y = filled<float>(size_t(a.cols) * 32, 1.f);
  auto out = filled<float>(size_t(a.nnz()), 0.f);
  return {{"sddmm, 1000 rows x 8 entries, k = 32",
           [plan, x, y, out, &stream](int64_t) { plan->run(*x, *y, *out, stream); }}};
}

OpDescriptor make() {
  OpDescriptor d;
  d.name = "sddmm";
  d.doc = "out = (X Y^T) on A's CSR pattern, X and Y dense row-major (k 1..512), f32 / f16 / bf16";
  d.config = config_info<SddmmConfig>();
  d.objective_doc = "f32 plan.run time, geomean over k = 32 and 128";
  d.space = make_space();
  d.bench_suite = [](const std::string& size) { return spmm_suite(size, "graphs"); };
  d.variants = [](bool opt_in) {
    std::vector<codegen::KernelSource> out;
    for (int w : {2, 4, 8})
      if (opt_in || w == SddmmConfig{}.warps)
        for (const auto& k : codegen::sddmm_keys(w)) out.push_back(codegen::make_source(k));
    return out;
  };
  d.objective = [](Context& ctx, const NamedMatrix& m, const ObjectiveOptions&) {
    auto obj = std::make_shared<SddmmObjective>(ctx, m);
    return std::make_unique<tuner::Objective>([obj](const nlohmann::json& c, int n) { return (*obj)(c, n); });
  };
  d.bench_options = {"--n", "--config", "--explain"};
  d.bench = bench;
  d.check_request = check_bench_request;
  d.explain = [](Context& ctx, const NamedMatrix& m) { return plan_sddmm(ctx, m.csr.cast<float>(), 32).explain(); };
  d.fixed_cost_calls = fixed_cost_calls;
  d.tuned_by_default = false;  // plans do not read the tuning DB yet
  return d;
}

}  // namespace

const OpDescriptor& sddmm_op() {
  static const OpDescriptor d = make();
  return d;
}

}  // namespace dbsparse::tools

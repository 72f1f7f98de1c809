// The SpMSpV op's registry entry: DB-SpMSpV (docs/DESIGN.md [1]), adaptive push/pull.
#include <fmt/format.h>

#include <list>

#include "codegen/keys/spmspv_key.hpp"
#include "dbsparse/reference.hpp"
#include "dbsparse/spmspv.hpp"
#include "tools/bench/bench_spmspv.hpp"
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

// The tuner's time is the geometric mean over these x densities (one config for all of them: the
// DB format is converted once per matrix, whatever x turns out to be).
constexpr double kTuneDensities[] = {0.1, 0.01, 0.001};

tuner::SearchSpace make_space() {
  tuner::SearchSpace s{"spmspv", {}, {}, config_to_json(SpmspvConfig{}), tuner::validate_as<SpmspvConfig>()};
  s.params = {
      ParamSpec::choice("th0", {8, 16, 32, 64}, "COO below this many nonzeros in a block"),
      ParamSpec::choice("th1", {64, 96, 128, 192}, "Dense above this many nonzeros in a block"),
      ParamSpec::choice("th2", {1.5, 2.0, 3.0, 4.0}, "skew ratio for ForceCSR / ForceCSC"),
      // Down to 0.0125: on small matrices with ~1 nonzero per block pull wins even at xb ~0.02
      // (docs/decisions/tuner-search-spaces.md).
      ParamSpec::range("th3", 0.0125, 3.2, 9, true, false,
                       "push while the x-block share < th3 / max(1, nonzeros per block)"),
      // 0 keeps every block; 4 moves the blocks smaller as residual; 16 keeps only Dense-ish
      // blocks; 257 (the default) makes all of it residual.
      ParamSpec::choice("residual_below", {0, 4, 16, 257}, "blocks with fewer nonzeros go to the residual"),
      ParamSpec::choice("residual_pull", {"off", "by_density"}, "whether the residual stores its rows and pulls"),
      ParamSpec::choice("pdl", {0, 1}, "programmatic dependent launch between a call's kernels"),
  };
  // th0 >= th1 makes the COO / Dense split degenerate: legal, but not worth a trial.
  s.constraints = {
      {"th0 < th1", [](const nlohmann::json& c) { return c.at("th0").get<int>() < c.at("th1").get<int>(); }}};
  return s;
}

struct SpmspvObjective {
  Context& ctx;
  CsrMatrix<float> a;
  struct Density {
    double d;
    std::vector<DeviceBuffer<float>> xs;
    std::vector<double> ref;
  };
  std::vector<Density> densities;

  SpmspvObjective(Context& c, const NamedMatrix& m, std::vector<double> ds) : ctx(c), a(m.csr.cast<float>()) {
    if (ds.empty()) ds.assign(std::begin(kTuneDensities), std::end(kTuneDensities));
    for (double d : ds) {
      // The bench's x (same columns and values for this matrix and density), in copies.
      auto x = make_sparse_x(a, m.name, d, static_cast<size_t>(a.cols));
      Density e{d, {}, std::move(x.ref)};
      for (int k = 0; k < kObjectiveXCopies; ++k) e.xs.emplace_back(std::span<const float>(x.dense));
      densities.push_back(std::move(e));
    }
  }

  // The last few plans, by config: the confirmation and evaluation measure the same configs in
  // turn, and converting a 100M-nonzero matrix takes seconds of CPU per plan.
  std::list<std::pair<std::string, SpmspvPlan<float>>> plans;
  const SpmspvPlan<float>& plan_for(const nlohmann::json& params) {
    const std::string key = params.dump();
    for (auto it = plans.begin(); it != plans.end(); ++it)
      if (it->first == key) {
        plans.splice(plans.begin(), plans, it);
        return plans.front().second;
      }
    if (plans.size() >= 3) plans.pop_back();  // before planning: the device memory is freed first
    Config cfg{"spmspv", params, ConfigSource::Explicit, "tuning candidate"};
    SpmspvOptions opt;
    opt.config = &cfg;
    plans.emplace_front(key, plan_spmspv(ctx, a, opt));
    return plans.front().second;
  }

  Measurement operator()(const nlohmann::json& params, int samples) {
    return guarded([&]() -> Measurement {
      const SpmspvPlan<float>& plan = plan_for(params);
      Stream s(ctx);
      DeviceBuffer<float> y(static_cast<size_t>(a.rows));
      std::vector<double> times;
      std::string detail = fmt::format("convert {:.1f} ms (once);", plan.stats().storage.convert_ms);
      for (auto& e : densities) {
        plan.run(e.xs[0], y, s);
        s.synchronize();
        auto got = y.download();
        const double err = reference::relative_error(std::span<const double>(e.ref), std::span<const float>(got));
        if (!(err <= 1e-5))
          return {TrialStatus::WrongResult, 0, fmt::format("density {}: relative error {:.3e}", e.d, err)};
        auto t = time_on_stream(s.handle(), objective_timing(samples),
                                [&](int64_t i) { plan.run(e.xs[i % kObjectiveXCopies], y, s); });
        times.push_back(t.median_us);
        detail += fmt::format(" {}: {:.1f} us", e.d, t.median_us);
      }
      return {TrialStatus::Ok, geomean(times), detail};
    });
  }
};

nlohmann::json bench(Context& ctx, const Stream& stream, const BenchRequest& r) {
  if (!r.strategies.empty()) throw UsageError("bench spmspv: --strategy applies to spmv (spmspv: --config)");
  SpmspvBenchOptions opt;
  opt.precisions = r.precisions;
  if (!r.densities.empty()) opt.densities = r.densities;
  opt.timing = r.timing;
  opt.baselines = r.baselines;
  opt.fused = r.fused;
  opt.recheck_rounds = r.recheck_rounds;
  if (r.config) {
    (void)config_from_json<SpmspvConfig>(*r.config);  // a bad key fails here, before any GPU work
    opt.config = r.config;
  }
  std::vector<SpmspvRow> rows;
  print_spmspv_header();
  for_each_matrix(r.specs, [&](const NamedMatrix& m, bool generated) {
    const size_t before = rows.size();
    bench_spmspv_matrix(ctx, stream, m, generated, opt, r.copy_gbs, rows);
    for (size_t i = before; i < rows.size(); ++i) print_spmspv_row(rows[i]);
  });
  auto summary = spmspv_summary(rows, opt.densities);
  print_spmspv_summary(summary);
  std::vector<const BenchRow*> base;
  nlohmann::json j;
  j["densities"] = opt.densities;
  j["results"] = nlohmann::json::array();
  for (const auto& row : rows) base.push_back(&row.base), j["results"].push_back(row.to_json());
  j["summary"] = summary;
  print_jit(base);
  return j;
}

// --check-auto: per (matrix, precision, x density), the auto row against push-only's and
// pull-only's (always timed); the sparse-output row is another output form, not a forced path.
std::vector<AutoCheck> auto_checks(const nlohmann::json& results) {
  std::vector<TimedRow> rows;
  for (const auto& r : results) {
    if (!r.value("available", true)) continue;
    const std::string setting =
        fmt::format("{} x {:g}", r.at("precision").get<std::string>(), r.at("density").get<double>());
    rows.push_back({r.at("matrix"), setting, r.at("impl"), r.value("time_us", 0.0), r.value("direction", ""),
                    r.contains("first_pass_us")});
  }
  return group_auto_checks("spmspv", rows, "dbsparse-auto",
                           [](const std::string& impl) { return impl == "dbsparse-push" || impl == "dbsparse-pull"; });
}

OpDescriptor make() {
  OpDescriptor d;
  d.name = "spmspv";
  d.doc = "y = A x, x sparse: DB format, push or pull chosen on the GPU per call";
  d.config = config_info<SpmspvConfig>();
  d.paper = config_to_json(SpmspvConfig::paper());
  d.objective_doc = "f32, geomean over x densities 0.1, 0.01, 0.001";
  d.space = make_space();
  d.bench_suite = [](const std::string& size) { return spmspv_suite(size); };
  d.variants = [](bool opt_in) {
    std::vector<codegen::KernelSource> out;
    for (const auto& k : codegen::spmspv_search_space(opt_in)) out.push_back(codegen::make_source(k));
    return out;
  };
  d.objective = [](Context& ctx, const NamedMatrix& m, const ObjectiveOptions& o) {
    auto obj = std::make_shared<SpmspvObjective>(ctx, m, o.densities);
    return std::make_unique<tuner::Objective>([obj](const nlohmann::json& c, int n) { return (*obj)(c, n); });
  };
  d.bench_options = {"--density", "--config", "--fused"};
  d.bench = bench;
  d.explain = [](Context& ctx, const NamedMatrix& m) { return plan_spmspv(ctx, m.csr.cast<float>()).explain(); };
  d.fixed_cost_calls = spmspv_fixed_cost_calls;
  d.first_call = spmspv_first_call;
  d.auto_checks = auto_checks;  // push-only and pull-only are timed on every run
  return d;
}

}  // namespace

const OpDescriptor& spmspv_op() {
  static const OpDescriptor d = make();
  return d;
}

}  // namespace dbsparse::tools

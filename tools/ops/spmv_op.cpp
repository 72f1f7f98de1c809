// The SpMV op's registry entry: adaptive CSR SpMV (docs/DESIGN.md [2]).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "codegen/keys/csr_view_key.hpp"
#include "codegen/keys/spmv_key.hpp"
#include "dbsparse/reference.hpp"
#include "dbsparse/spmv.hpp"
#include "runtime/spmv/spmv_spec.hpp"
#include "runtime/spmv/spmv_strategy.hpp"
#include "tools/bench/bench_spmv.hpp"
#include "tools/bench/random.hpp"
#include "tools/bench/suites.hpp"
#include "tools/ops/op_support.hpp"
#include "tools/ops/first_calls.hpp"
#include "tools/ops/fixed_cost_calls.hpp"
#include "tools/ops/registry.hpp"

namespace dbsparse::tools {
namespace {

using tuner::Measurement;
using tuner::ParamSpec;

tuner::SearchSpace make_space() {
  tuner::SearchSpace s{"spmv", {}, {}, config_to_json(SpmvConfig{}), tuner::validate_as<SpmvConfig>()};
  s.params = {
      ParamSpec::choice("strategy", {"classified", "uniform"}, "rows binned by length, or one strategy"),
      ParamSpec::choice("lane_entries_f32", {2, 4, 8, 16}, "f32: entries per lane before wider groups"),
      ParamSpec::choice("lane_entries_f64", {2, 4, 8}, "f64: entries per lane before wider groups"),
      ParamSpec::choice("block_size", {128, 256, 512}, "threads per block of every SpMV kernel"),
      ParamSpec::choice("v4_lanes", {16, 32}, "lanes of the widest vector bin"),
      ParamSpec::choice("block_max_len", {1024, 4096, 16384}, "longest row for one block per row"),
      ParamSpec::choice("longrow_chunk", {1024, 2048, 8192}, "entries per block of a split long row"),
      ParamSpec::choice("fold_share", {0.0, 0.02, 0.1}, "bins under this share of nonzeros join the next"),
      ParamSpec::choice("fill_threads", {-1, 0},
                        "classified, a small matrix: one vector kernel filling the device, or off"),
      ParamSpec::choice(
          "reorder", {"auto", "none", "degree"},
          "auto (degree where hub columns are skewed), A's columns as given, or by decreasing count (x gathered)"),
  };
  return s;
}

// One precision's inputs: the matrix in T, rotated x copies, the reference.
template <class T>
struct SpmvInputs {
  CsrMatrix<T> a;
  std::vector<DeviceBuffer<T>> xs;
  std::vector<double> ref;

  explicit SpmvInputs(const NamedMatrix& m) : a(m.csr.cast<T>()) {
    for (int k = 0; k < kObjectiveXCopies; ++k) {
      auto x = random_values<T>(static_cast<size_t>(a.cols), 11 + k);
      if (k == 0) ref = reference::spmv(a, std::span<const T>(x));
      xs.emplace_back(std::span<const T>(x));
    }
  }

  // Checked, then timed; time 0 and the error in `why` when the result is wrong.
  double measure(Context& ctx, const Config& cfg, int samples, std::string& why) {
    auto plan = plan_spmv(ctx, a, cfg);
    Stream s(ctx);
    DeviceBuffer<T> y(static_cast<size_t>(a.rows));
    y.fill_bytes(0xFF);
    plan.run(xs[0], y, s);
    s.synchronize();
    auto got = y.download();
    const double err = reference::relative_error(std::span<const double>(ref), std::span<const T>(got));
    const double tol = sizeof(T) == 4 ? 1e-5 : 1e-12;
    if (!(err <= tol)) {
      why = fmt::format("{}: relative error {:.3e}", sizeof(T) == 4 ? "f32" : "f64", err);
      return 0;
    }
    return time_on_stream(s.handle(), objective_timing(samples),
                          [&](int64_t i) { plan.run(xs[i % kObjectiveXCopies], y, s); })
        .median_us;
  }
};

// The geometric mean of f32 and f64: one config serves both precisions (its only per-precision
// keys are lane_entries_f32 / lane_entries_f64, which each precision reads alone).
struct SpmvObjective {
  Context& ctx;
  SpmvInputs<float> f32;
  SpmvInputs<double> f64;

  SpmvObjective(Context& c, const NamedMatrix& m) : ctx(c), f32(m), f64(m) {}

  Measurement operator()(const nlohmann::json& params, int samples) {
    return guarded([&]() -> Measurement {
      const Config cfg{"spmv", params, ConfigSource::Explicit, "tuning candidate"};
      std::string why;
      const double t32 = f32.measure(ctx, cfg, samples, why);
      if (!why.empty()) return {TrialStatus::WrongResult, 0, why};
      const double t64 = f64.measure(ctx, cfg, samples, why);
      if (!why.empty()) return {TrialStatus::WrongResult, 0, why};
      return {TrialStatus::Ok, std::sqrt(t32 * t64),
              fmt::format("f32 {:.1f} us, f64 {:.1f} us; {} samples", t32, t64, samples)};
    });
  }
};

nlohmann::json bench(Context& ctx, const Stream& stream, const BenchRequest& r) {
  if (!r.densities.empty()) throw UsageError("bench spmv: --density applies to ops with a sparse x (spmspv)");
  if (r.config) throw UsageError("bench spmv: --config is not supported; use --strategy for ablations");
  SpmvBenchOptions opt;
  opt.precisions = r.precisions;
  opt.timing = r.timing;
  opt.baselines = r.baselines;
  opt.strategies = r.strategies;
  opt.explain = r.explain;
  opt.recheck_rounds = r.recheck_rounds;
  std::vector<BenchRow> rows;
  print_bench_header();
  std::set<std::string> generated;
  for_each_matrix(r.specs, [&](const NamedMatrix& m, bool is_generated) {
    if (is_generated) generated.insert(m.name);
    const size_t before = rows.size();
    bench_spmv_matrix(ctx, stream, m, opt, r.copy_gbs, rows);
    for (size_t i = before; i < rows.size(); ++i) print_bench_row(rows[i]);
  });
  auto summary = spmv_summary(rows, generated);
  print_spmv_summary(summary);
  std::vector<const BenchRow*> base;
  nlohmann::json j;
  j["results"] = nlohmann::json::array();
  for (const auto& row : rows) base.push_back(&row), j["results"].push_back(row.to_json());
  j["summary"] = summary;
  print_jit(base);
  return j;
}

// --check-auto's forced rows: every strategy SpmvConfig takes, with the default reorder (classified
// without its small-matrix path), every vector width (that path's kernels), and the default
// strategy with each column order (the finer ablations, window-* and scalar-max-*, only when
// --strategy names them).
const std::vector<std::string> kForcedStrategies = {"classified", "uniform",   "scalar",     "vector",     "vector-l2",
                                                    "vector-l4",  "vector-l8", "vector-l16", "vector-l32", "block",
                                                    "longrow",    "cols-none", "cols-degree"};

// --check-auto: per (matrix, precision), the config look-up's row (dbsparse) against every forced
// strategy's row (dbsparse-<strategy>).
std::vector<AutoCheck> auto_checks(const nlohmann::json& results) {
  std::vector<TimedRow> rows;
  for (const auto& r : results)
    rows.push_back(
        {r.at("matrix"), r.at("precision"), r.at("impl"), r.value("time_us", 0.0), "", r.contains("first_pass_us")});
  return group_auto_checks("spmv", rows, "dbsparse",
                           [](const std::string& impl) { return impl.rfind("dbsparse-", 0) == 0; });
}

// The kernels one default-config plan of a shape loads: SpmvPlan's own layout and spec functions,
// with the column order either way and the rows in bin `only` (every bin when out of range).
void spmv_plan_keys(const SpmvConfig& cfg, const SpmvShape& shape, codegen::ValueType vt, size_t only,
                    std::set<codegen::SpmvKey>& keys) {
  const SpmvLayout layout = choose_spmv_layout(cfg, shape.rows, shape.nnz, vt);
  if (layout.classified) keys.insert(codegen::spmv_classify_key());
  std::vector<SpmvBinCount> counts(layout.bins.size());
  int32_t long_rows = 0;
  for (size_t b = 0; b < counts.size(); ++b) {
    if (only < counts.size() && b != only) continue;
    counts[b] = {shape.rows / static_cast<int64_t>(counts.size()), shape.nnz / static_cast<int64_t>(counts.size())};
    if (layout.bins[b].key.strategy == codegen::SpmvStrategy::LongRow) long_rows = 1;
  }
  const SpmvBins bins =
      layout.classified ? fold_spmv_bins(layout, counts, shape.nnz) : unclassified_spmv_bins(layout, shape);
  if (!layout.classified && layout.bins[0].key.strategy == codegen::SpmvStrategy::LongRow) long_rows = shape.rows;
  for (bool degree : {false, true}) {
    SpmvOrderChoice order;
    order.by_degree = degree;
    for (const auto& k : make_spmv_spec(cfg, shape, layout, order, bins, long_rows, long_rows).kernels) keys.insert(k);
  }
}

// The variants SpmvConfig's defaults reach (OpDescriptor::default_variants): the plans' layouts
// over both value types, mean row lengths from 1/8 to 2^17 and each bin alone or all filled; the
// small-matrix path's vector kernels; the 64-bit-offset plan's one kernel (classified takes
// uniform there, long rows a block, as SpmvPlan::build of a DeviceCsrView64 does); the 64-bit
// view's check.
std::vector<codegen::KernelSource> spmv_default_variants() {
  const SpmvConfig cfg;
  std::set<codegen::SpmvKey> keys;
  constexpr int32_t kRows = 1 << 20;
  for (auto vt : {codegen::ValueType::F32, codegen::ValueType::F64})
    for (int e = -3; e <= 17; ++e) {
      const int64_t nnz = e < 0 ? int64_t{kRows} >> -e : int64_t{kRows} << e;
      const SpmvShape shape{kRows, kRows, nnz};
      for (size_t only = 0; only <= abi::kSpmvClassBins; ++only) spmv_plan_keys(cfg, shape, vt, only, keys);
      SpmvConfig one = cfg;
      if (one.strategy == "classified") one.strategy = "uniform";
      codegen::SpmvKey k = choose_spmv_key(one, kRows, nnz, vt);
      if (k.strategy == codegen::SpmvStrategy::LongRow)
        k = codegen::SpmvKey{vt, codegen::SpmvStrategy::Block, one.block_size};
      k.offsets64 = true;
      keys.insert(k);
    }
  // The small-matrix path's one vector kernel (SpmvConfig::fill_threads), every width it takes.
  for (auto vt : {codegen::ValueType::F32, codegen::ValueType::F64})
    for (int lanes = 2; lanes <= 32; lanes *= 2) keys.insert(spmv_fill_layout(cfg, vt, lanes, 1, 1).bins[0].key);
  std::vector<codegen::KernelSource> out;
  for (const auto& k : keys) out.push_back(codegen::make_source(k));
  for (const auto& k : codegen::csr_view_space()) out.push_back(codegen::make_source(k));
  return out;
}

OpDescriptor make() {
  OpDescriptor d;
  d.name = "spmv";
  d.doc = "y = A x, A in CSR, x dense: adaptive row binning";
  d.config = config_info<SpmvConfig>();
  d.objective_doc = "geomean of f32 and f64";
  d.space = make_space();
  d.bench_suite = [](const std::string& size) { return generated_suite(size); };
  d.variants = [](bool) {
    std::vector<codegen::KernelSource> out;
    for (const auto& k : codegen::spmv_search_space()) out.push_back(codegen::make_source(k));
    // The check the plans of a caller's 64-bit device CSR run first (SpMV, SpMM, BFS): here so
    // that precompile and the NVRTC test cover it.
    for (const auto& k : codegen::csr_view_space()) out.push_back(codegen::make_source(k));
    return out;
  };
  d.default_variants = spmv_default_variants;
  d.objective = [](Context& ctx, const NamedMatrix& m, const ObjectiveOptions& o) -> std::unique_ptr<tuner::Objective> {
    if (!o.densities.empty()) throw UsageError("spmv: x is dense; --density does not apply");
    auto obj = std::make_shared<SpmvObjective>(ctx, m);
    return std::make_unique<tuner::Objective>([obj](const nlohmann::json& c, int n) { return (*obj)(c, n); });
  };
  d.bench_options = {"--strategy", "--explain"};
  d.bench = bench;
  d.explain = [](Context& ctx, const NamedMatrix& m) { return plan_spmv(ctx, m.csr.cast<float>()).explain(); };
  d.fixed_cost_calls = spmv_fixed_cost_calls;
  d.first_call = spmv_first_call;
  d.auto_checks = auto_checks;
  // The auto row and every forced strategy; strategies the user named are kept, with auto first.
  d.auto_check_request = [](BenchRequest& r) {
    if (r.strategies.empty()) r.strategies = kForcedStrategies;
    if (std::find(r.strategies.begin(), r.strategies.end(), "auto") == r.strategies.end())
      r.strategies.insert(r.strategies.begin(), "auto");
  };
  return d;
}

}  // namespace

const OpDescriptor& spmv_op() {
  static const OpDescriptor d = make();
  return d;
}

}  // namespace dbsparse::tools

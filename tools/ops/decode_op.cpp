// The decode op's registry entry: pruned linear layers at batch 1 (DecodeLinearPlan), W in the
// column bitmap layout or dense, x thresholded by magnitude in the product kernel.
//
// dbtune tunes it on LLM layer shapes (tools/bench/suites.hpp's decode_suite) per activation-density
// bucket, its rows keyed by the layer's problem key (decode_problem_key), not its structure: the
// plans look them up without a pass over the weights. The objective times each config's plan as a
// model's layer runs (f16, CUDA graph replay, the weights past the L2). No matrix bench:
// `dbsparse decode-bench --model ...` times the layers of a model's shapes instead.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "codegen/keys/decode_key.hpp"
#include "codegen/keys/sparse_linear_key.hpp"
#include "dbsparse/compact_weights.hpp"
#include "dbsparse/decode_linear.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/pruning.hpp"
#include "runtime/decode/decode_timing.hpp"
#include "tools/bench/suites.hpp"
#include "tools/ops/first_calls.hpp"
#include "tools/ops/fixed_cost_calls.hpp"
#include "tools/ops/op_support.hpp"
#include "tools/ops/registry.hpp"

namespace dbsparse::tools {
namespace {

// `bench decode` (with or without matrices) says where the decoding layers are timed, before any
// GPU work where no matrix is named.
[[noreturn]] void no_matrix_bench() {
  throw UsageError(
      "bench decode: the decoding layers are timed by `dbsparse decode-bench --model NAME` (a model's layer "
      "shapes, dtype and activation densities); there is no matrix bench of them yet");
}

double weight_density(const NamedMatrix& m) {
  return static_cast<double>(m.csr.nnz()) / std::max(1.0, static_cast<double>(m.csr.rows) * m.csr.cols);
}

// The space: every mapping, the blocks an SM where the mapping has splits, the words a block where
// it has row blocks; the others at their defaults (21 points: the exhaustive strategy). Tiles takes
// its own splits only: one block an SM fits its stages.
tuner::SearchSpace make_space() {
  using tuner::ParamSpec;
  tuner::SearchSpace s{"decode", {}, {}, config_to_json(DecodeConfig{}), tuner::validate_as<DecodeConfig>()};
  s.params = {ParamSpec::choice("mapping", {"auto", "ring", "dense-columns", "dense", "columns", "row-blocks", "tiles"},
                                "how the product's work is cut; auto: the calibrated cost model's choice"),
              ParamSpec::choice("blocks_per_sm", {0, 1, 2, 4, 8}, "ring, dense, dense-columns: blocks an SM"),
              ParamSpec::choice("row_block_words", {1, 2, 4}, "row-blocks: mask words a block")};
  s.constraints = {
      {"row_block_words 1 unless mapping row-blocks",
       [](const nlohmann::json& c) { return c.at("mapping") == "row-blocks" || c.at("row_block_words") == 1; }},
      {"blocks_per_sm 0 unless mapping ring, dense or dense-columns", [](const nlohmann::json& c) {
         const auto& m = c.at("mapping");
         return c.at("blocks_per_sm") == 0 || m == "ring" || m == "dense" || m == "dense-columns";
       }}};
  return s;
}

// What one layer's objectives (one a bucket) share: W once in f16, as the plans hold it (column
// bitmap) and as CSR for the reference; x; and each plan built so far with the copies that carry a
// graph's calls past the L2, so that the buckets time the same plans.
struct DecodeTrials {
  DecodeTrials(Context& c, const NamedMatrix& m) : ctx(c), stream(c) {
    ctx.make_current();
    w16 = m.csr.cast<float>();
    for (auto& v : w16.values) v = half_to_float(float_to_half(v));
    layer = make_compact_layer(m.name, w16, DecodeDtype::F16);
    // normal(0, 1) activations, exact in f16: thresholds at a bucket's density keep that share.
    std::mt19937 rng(11);
    std::normal_distribution<float> nd(0.f, 1.f);
    x.resize(static_cast<size_t>(w16.cols));
    for (auto& v : x) v = half_to_float(float_to_half(nd(rng)));
    const auto xh = floats_to_half(x);
    xd = DeviceBuffer<uint16_t>(std::span<const uint16_t>(xh));
    yd = DeviceBuffer<uint16_t>(static_cast<size_t>(std::max(w16.rows, 1)));
    hold_limit = std::min<int64_t>(int64_t{8} << 30, ctx.device().memory_bytes / 4);
  }

  // The reference at tau and sum |w x| per row (the error's yardstick), computed once per tau.
  const std::pair<std::vector<double>, std::vector<double>>& reference(float tau) {
    auto it = refs.find(tau);
    if (it != refs.end()) return it->second;
    const std::vector<float> xs = threshold_activations(x, tau);
    std::vector<double> ref(static_cast<size_t>(w16.rows)), scale(ref.size());
    for (int32_t i = 0; i < w16.rows; ++i)
      for (int32_t p = w16.row_ptr[i]; p < w16.row_ptr[i + 1]; ++p) {
        const double t = double{w16.values[p]} * xs[static_cast<size_t>(w16.col_idx[p])];
        ref[static_cast<size_t>(i)] += t;
        scale[static_cast<size_t>(i)] += std::fabs(t);
      }
    return refs.emplace(tau, std::pair{std::move(ref), std::move(scale)}).first->second;
  }

  Context& ctx;
  Stream stream;
  CsrMatrix<float> w16;
  CompactLayer layer;
  std::vector<float> x;
  DeviceBuffer<uint16_t> xd, yd;
  std::map<std::string, std::vector<DecodeLinearPlan>> plans;
  std::set<std::string> checked;  // (plan, tau) pairs whose y matched the reference
  std::map<float, std::pair<std::vector<double>, std::vector<double>>> refs;
  int64_t held = 0, hold_limit = 0;
};

// The worst row's |y - ref| / sum |w x| of copies[0] at its tau (f16 y: 1e-3 is the decoding
// tests' bound).
double max_rel_err(DecodeTrials& t, const DecodeLinearPlan& plan) {
  plan.run(t.xd.ptr(), t.yd.ptr(), t.stream.handle());  // twice: split paths reset their sums themselves
  plan.run(t.xd.ptr(), t.yd.ptr(), t.stream.handle());
  t.stream.synchronize();
  const auto got = half_to_floats(t.yd.download());
  const auto& [ref, scale] = t.reference(plan.tau());
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - ref[i]) / std::max(scale[i], 1e-30));
  return worst;
}

// The density the objective times: the bucket's, else the one density asked for (explore), else 1.
double objective_density(const ObjectiveOptions& o) {
  if (o.densities.size() > 1) throw UsageError("decode: the objective times one activation density at a time");
  if (!o.densities.empty()) return o.densities.front();
  const auto& b = decode_density_buckets();
  return std::find(b.begin(), b.end(), o.bucket) != b.end() ? decode_bucket_density(o.bucket) : 1.0;
}

// One config at `density`: its plan (built once, shared between buckets; auto's per bucket, since
// the model's choice follows the density), checked against the reference once per tau, then timed.
tuner::Measurement measure(DecodeTrials& t, const nlohmann::json& params, double density, float tau, int samples) {
  const DecodeConfig cfg = config_from_json<DecodeConfig>(params);
  const Config given{"decode", config_to_json(cfg), ConfigSource::Explicit, "tuner"};
  DecodeLinearOptions o;
  o.dtype = DecodeDtype::F16;
  o.tau = tau;
  o.act_density = density;
  o.config = &given;
  const std::string key = given.params.dump() + (cfg.mapping == "auto" ? fmt::format("@{}", density) : "");
  auto it = t.plans.find(key);
  if (it == t.plans.end()) {
    if (t.held > t.hold_limit) t.plans.clear(), t.held = 0;
    auto copies = decode_copies_past_l2(t.ctx, plan_decode_linear(t.ctx, t.layer, o));
    t.held += static_cast<int64_t>(copies.size()) * copies[0].device_bytes();
    it = t.plans.emplace(key, std::move(copies)).first;
  }
  auto& copies = it->second;
  for (auto& p : copies) p.set_tau(tau);
  const std::string what = fmt::format("{} at {:.2f} of x", to_string(copies[0].mapping()), density);
  if (!t.checked.count(fmt::format("{}|{}", key, tau))) {
    const double err = max_rel_err(t, copies[0]);
    if (!(err <= 1e-3)) return {TrialStatus::WrongResult, 0, fmt::format("{}: max rel err {:.2e}", what, err)};
    t.checked.insert(fmt::format("{}|{}", key, tau));
  }
  return {TrialStatus::Ok, decode_graph_call_us(copies, t.xd.ptr(), t.yd.ptr(), t.stream, std::max(samples, 3)), what};
}

std::unique_ptr<tuner::Objective> make_objective(Context& ctx, const NamedMatrix& m, const ObjectiveOptions& o) {
  const double density = objective_density(o);
  auto trials = o.state ? std::static_pointer_cast<DecodeTrials>(o.state) : std::make_shared<DecodeTrials>(ctx, m);
  const float tau = density >= 1.0 ? 0.0f : topk_threshold(trials->x, density);
  return std::make_unique<tuner::Objective>([trials, density, tau](const nlohmann::json& c, int samples) {
    try {
      return guarded([&] { return measure(*trials, c, density, tau, samples); });
    } catch (const Error& e) {  // what guarded leaves (device memory...): recorded as failed, dbtune goes on
      return tuner::Measurement{TrialStatus::LaunchFailed, 0, e.what()};
    }
  });
}

OpDescriptor make() {
  OpDescriptor d;
  d.name = "decode";
  d.doc = "y = W x at batch 1, W a pruned linear layer (column bitmap or dense), x thresholded by magnitude";
  d.config = config_info<DecodeConfig>();
  d.objective_doc = "us a call, f16, at the bucket's activation density, graph replay with W past the L2";
  d.space = make_space();
  d.buckets = decode_density_buckets();
  d.bench_suite = [](const std::string&) -> std::vector<std::string> { no_matrix_bench(); };
  d.tune_suite = decode_suite;
  // Two budgets a bucket: the first bucket builds most of the plans (host conversion and upload of
  // W for each of the space's 21 points), which the others then only time.
  d.budget_units = 2.0 * static_cast<double>(decode_density_buckets().size());
  d.variants = [](bool) {
    std::vector<codegen::KernelSource> out;
    for (const auto& k : codegen::decode_search_space()) out.push_back(codegen::make_source(k));
    // DB-Decoding's sparsifier (SparseLinearPlan's SpMSpV layout) goes with the decoding layers.
    for (const auto& k : codegen::sparse_linear_search_space()) out.push_back(codegen::make_source(k));
    return out;
  };
  d.objective = make_objective;
  d.objective_state = [](Context& ctx, const NamedMatrix& m) -> std::shared_ptr<void> {
    return std::make_shared<DecodeTrials>(ctx, m);
  };
  // Tuned and looked up in f16, the dtype the objective times.
  d.problem_key = [](const NamedMatrix& m) {
    return decode_problem_key(m.csr.rows, m.csr.cols, DecodeDtype::F16, weight_density(m));
  };
  d.problem_features = [](const NamedMatrix& m) {
    return decode_problem_features(m.csr.rows, m.csr.cols, weight_density(m));
  };
  d.bench = [](Context&, const Stream&, const BenchRequest&) -> nlohmann::json { no_matrix_bench(); };
  d.explain = [](Context& ctx, const NamedMatrix& m) {
    return plan_decode_linear(ctx, m.csr.cast<float>(), DecodeLinearOptions{}).explain();
  };
  d.fixed_cost_calls = decode_fixed_cost_calls;
  d.first_call = decode_first_call;
  d.calibrate = [](Context& ctx, DeviceProfile& p, const std::function<void(const std::string&)>& progress) {
    calibrate_decode(ctx, p, progress);
  };
  return d;
}

}  // namespace

const OpDescriptor& decode_op() {
  static const OpDescriptor d = make();
  return d;
}

}  // namespace dbsparse::tools

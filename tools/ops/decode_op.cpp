// The decode op's registry entry: pruned linear layers at batch 1 (DecodeLinearPlan), W in the
// column bitmap layout or dense, x thresholded by magnitude in the product kernel.
//
// What the registry has of it so far: its config (the plan options a tuner would set), its kernel
// variants (precompile, dbtune's kernel pass and the nvrtc tier compile them: the decoding kernels
// and DB-Decoding's sparsifier) and explain. Not yet: tuning (an empty search space, an objective
// that skips every config, and dbtune leaves it out unless --ops names it) and a matrix bench
// (`dbsparse decode-bench --model ...` times the layers of a model's shapes instead).
#include <fmt/format.h>

#include "codegen/keys/decode_key.hpp"
#include "codegen/keys/sparse_linear_key.hpp"
#include "dbsparse/decode_linear.hpp"
#include "tools/ops/fixed_cost_calls.hpp"
#include "tools/ops/registry.hpp"

namespace dbsparse::tools {
namespace {

// DecodeLinearOptions' tunable part, its defaults the options' own. dtype, tau, keep and
// act_density describe the problem (the model's dtype, its calibrated thresholds), not a choice a
// tuner makes: they stay the caller's.
struct DecodeConfig {
  static constexpr const char* kOp = "decode";
  static constexpr bool kBlockFeatures = false;

  std::string mapping = to_string(DecodeLinearOptions{}.mapping);
  int row_block_words = DecodeLinearOptions{}.row_block_words;
  int blocks_per_sm = DecodeLinearOptions{}.blocks_per_sm;
  int allow_dense = DecodeLinearOptions{}.allow_dense ? 1 : 0;

  template <class V>
  void visit(V& v) {
    v.choice("mapping", mapping, {"auto", "ring", "dense-columns", "dense", "columns", "row-blocks"},
             "how the product's work is cut (DecodeMapping); auto: the cheapest by the cost model");
    v.integer("row_block_words", row_block_words, 1, 4, "row-blocks: mask words (32 rows each) a block");
    v.integer("blocks_per_sm", blocks_per_sm, 0, 64, "ring, dense, dense-columns: blocks an SM (0: as many as fit)");
    v.integer("allow_dense", allow_dense, 0, 1, "auto may hold W dense where that is estimated faster");
  }
  void check() const {
    if (row_block_words == 3) throw UsageError("decode config: 'row_block_words' must be 1, 2 or 4, got 3");
  }
};

const char* kNoTuning = "decode is not tuned yet: its search space and objective are still to come";

// `bench decode` (with or without matrices) says where the decoding layers are timed, before any
// GPU work where no matrix is named.
[[noreturn]] void no_matrix_bench() {
  throw UsageError(
      "bench decode: the decoding layers are timed by `dbsparse decode-bench --model NAME` (a model's layer "
      "shapes, dtype and activation densities); there is no matrix bench of them yet");
}

OpDescriptor make() {
  OpDescriptor d;
  d.name = "decode";
  d.doc = "y = W x at batch 1, W a pruned linear layer (column bitmap or dense), x thresholded by magnitude";
  d.config = config_info<DecodeConfig>();
  d.objective_doc = "none yet (decode is not tuned)";
  d.space = tuner::SearchSpace{"decode", {}, {}, config_to_json(DecodeConfig{}), tuner::validate_as<DecodeConfig>()};
  d.bench_suite = [](const std::string&) -> std::vector<std::string> { no_matrix_bench(); };
  d.variants = [](bool) {
    std::vector<codegen::KernelSource> out;
    for (const auto& k : codegen::decode_search_space()) out.push_back(codegen::make_source(k));
    // DB-Decoding's sparsifier (SparseLinearPlan's SpMSpV layout) goes with the decoding layers.
    for (const auto& k : codegen::sparse_linear_search_space()) out.push_back(codegen::make_source(k));
    return out;
  };
  d.objective = [](Context&, const NamedMatrix&, const ObjectiveOptions&) {
    return std::make_unique<tuner::Objective>([](const nlohmann::json&, int) {
      return tuner::Measurement{TrialStatus::Skipped, 0, kNoTuning};
    });
  };
  d.bench = [](Context&, const Stream&, const BenchRequest&) -> nlohmann::json { no_matrix_bench(); };
  d.explain = [](Context& ctx, const NamedMatrix& m) {
    return plan_decode_linear(ctx, m.csr.cast<float>(), DecodeLinearOptions{}).explain();
  };
  d.fixed_cost_calls = decode_fixed_cost_calls;
  d.calibrate = [](Context& ctx, DeviceProfile& p, const std::function<void(const std::string&)>& progress) {
    calibrate_decode(ctx, p, progress);
  };
  d.tuned_by_default = false;
  return d;
}

}  // namespace

const OpDescriptor& decode_op() {
  static const OpDescriptor d = make();
  return d;
}

}  // namespace dbsparse::tools

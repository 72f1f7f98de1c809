#pragma once
// The op registry (docs/DESIGN.md §9): each op declares, in its own file under tools/ops/, everything the
// tools need to know of it: name, config defaults and the paper's, search space, kernel variants,
// tuner objective, bench and explain. dbtune, `dbsparse` (bench, explain, explore, precompile) and
// the nvrtc test tier iterate over ops(); nothing else compares op names. Adding an op is one line
// in registry.cpp plus the op's own files.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/kernel_source.hpp"
#include "dbsparse/context.hpp"
#include "dbsparse/device_profile.hpp"
#include "dbsparse/features.hpp"
#include "dbsparse/io.hpp"
#include "dbsparse/op_config.hpp"
#include "tools/bench/check_auto.hpp"
#include "tools/bench/fixed_cost.hpp"
#include "tools/bench/timing.hpp"
#include "tuner/search.hpp"
#include "tuner/search_space.hpp"

namespace dbsparse::tools {

// What `dbsparse bench OP` was asked for; each op reads the options that apply to it and rejects,
// with a UsageError naming the option, those that do not.
struct BenchRequest {
  std::vector<std::string> specs;  // matrices, in order
  std::vector<std::string> precisions{"f32"};
  std::vector<double> densities;  // empty: the op's default densities
  std::vector<std::string> strategies;
  std::optional<nlohmann::json> config;  // params for dbsparse's rows instead of the tuning DB's
  TimingOptions timing;
  bool baselines = true;
  bool fused = false;  // spmspv: plans made with SpmspvOptions::fused (one cooperative launch)
  bool explain = false;
  // --check-auto's second look (time_interleaved): rounds of auto and the forced paths near the
  // best, timed in turn; 0: none. Benches that do not take it ignore it.
  int recheck_rounds = 0;
  std::vector<int> n_cols;            // spmm: the widths N of B and C (empty: the op's own, 32,64,128,256)
  std::vector<std::string> reorders;  // spmm: row orders timed beside the CSR row (reorder.hpp names)
  // spmm: SpmmEpilogue of dbsparse's rows ("none" or "relu"); with relu, cuSPARSE's rows add the
  // relu pass a user of it needs (its SpMM has no epilogue), and every row is checked against ReLU(A B).
  std::string epilogue = "none";
  std::vector<std::string> reduces;  // spmm: reductions (mean, max, min) timed beside the sum's CSR row
  double copy_gbs = 0;
  int32_t contract_k = 0;    // spgemm: k of the contraction rows (0: rows / 64)
  int mcl_iters = 5;         // spgemm: expansions of the MCL rows (0: none)
  bool two_pass = false;     // spgemm: every first run with its symbolic phase (SpgemmOptions::one_pass off)
  bool transpose_b = false;  // spgemm: C = A·Aᵀ for square matrices too
};

struct ObjectiveOptions {
  std::vector<double> densities;  // ops with a sparse x: the densities timed (empty: the op's own)
  std::string bucket;             // one of OpDescriptor::buckets: time that class of problem only
  // OpDescriptor::objective_state's for this matrix, shared by its buckets' objectives; null: the
  // objective makes its own.
  std::shared_ptr<void> state;
};

struct OpDescriptor {
  std::string name;
  std::string doc;            // one line, for help texts
  OpConfigInfo config;        // complete defaults; which features predict its configs
  nlohmann::json paper;       // the paper's published config, where it differs; else empty
  std::string objective_doc;  // what the tuner's time is, for dbtune's tables
  tuner::SearchSpace space;   // defaults == config.defaults; validate == the typed config's
  // The generated suite `bench` runs when no matrix is named ("quick" or "full").
  std::function<std::vector<std::string>(const std::string& size)> bench_suite;
  // An op whose suite comes in named parts (spmm: graphs, moderate) names them here, and `bench
  // --set NAME` runs bench_suite_set(size, NAME) instead (NAME "all": bench_suite). Empty: --set
  // does not apply.
  std::vector<std::string> suite_sets;
  std::function<std::vector<std::string>(const std::string& size, const std::string& set)> bench_suite_set;
  // Every kernel variant (with opt_in, also those only an explicit config selects): what
  // `precompile` and dbtune compile ahead and the nvrtc tier compiles.
  std::function<std::vector<codegen::KernelSource>(bool opt_in)> variants;
  // The variants that the default configs and the plans' auto choices can reach, derived from the
  // plans' own problem -> key functions: what `precompile --aot` ships. Empty: variants(false).
  std::function<std::vector<codegen::KernelSource>()> default_variants;
  std::function<std::unique_ptr<tuner::Objective>(Context&, const NamedMatrix&, const ObjectiveOptions&)> objective;
  // What the objectives of one matrix's buckets share (decode: the layer converted once and the
  // plans built so far), made once per matrix by dbtune and passed in ObjectiveOptions::state.
  // Empty: nothing shared.
  std::function<std::shared_ptr<void>(Context&, const NamedMatrix&)> objective_state;
  // The key the tuning DB stores the op's rows under instead of the matrix's structure fingerprint,
  // and the features prediction compares under it (both set or both empty): for an op whose plans
  // cannot afford a pass over the matrix (decode: hashing a model's weights costs seconds a layer).
  // Empty: structure_fingerprint and compute_features.
  std::function<std::string(const NamedMatrix&)> problem_key;
  std::function<MatrixFeatures(const NamedMatrix&)> problem_features;
  // The matrices dbtune tunes the op on when --matrices is not given ("quick" or "full"), instead
  // of the common suite. Empty: the common suite (generated, then the shared matrices).
  std::function<std::vector<std::string>(const std::string& size)> tune_suite;
  // A (matrix, op) unit's share of dbtune's budget, in per-unit budgets: more than 1 for an op whose
  // buckets each need a search of their own (decode: one budget a bucket). Default 1.
  double budget_units = 1;
  // The op-specific options its bench takes, of "--density", "--strategy", "--config", "--explain",
  // "--fused", "--n";
  // the CLI rejects the others before any GPU work.
  std::vector<std::string> bench_options;
  // Runs the suite, prints the table and summary, returns {"results": [...], "summary": ...}.
  std::function<nlohmann::json(Context&, const Stream&, const BenchRequest&)> bench;
  // The plan this matrix gets on this device (config from the tuning DB), explained.
  std::function<std::string(Context&, const NamedMatrix&)> explain;
  // Problem classes tuned and stored apart (the tuning DB's bucket; plans look theirs up), e.g.
  // spmm's N classes. Empty: one config per matrix, bucket "".
  std::vector<std::string> buckets;
  // The op's smallest calls (its fixed cost), set up on this context: every `bench` of
  // the op times them next to an empty kernel's launch (tools/bench/fixed_cost.hpp). Empty: none.
  std::function<std::vector<FixedCostCall>(Context&, const Stream&)> fixed_cost_calls;
  // A user's first call of the op (`dbsparse first-call`): the input made (untimed), then plan()
  // builds the plan and returns its first call. Empty: the op has none.
  std::function<FirstCall(Context&, const Stream&)> first_call;
  // The op's own device constants (DeviceProfile::calibrations), measured on ctx's device and
  // added to the profile; progress gets a line per measurement. Empty: the op's models need none.
  std::function<void(Context&, DeviceProfile&, const std::function<void(const std::string&)>&)> calibrate;
  // `bench --check-auto`: auto against every forced path, per matrix and setting, read from the
  // "results" array bench returned (tools/bench/check_auto.hpp). Empty: the op has no forced path
  // to compare with, and the CLI refuses --check-auto before any GPU work.
  std::function<std::vector<AutoCheck>(const nlohmann::json& results)> auto_checks;
  // What bench refuses in a request (UsageError), run by the CLI before it opens the device so that
  // a bad combination of options fails on a machine without a GPU too. Empty: only the CLI's checks.
  std::function<void(const BenchRequest&)> check_request;
  // What --check-auto needs of the request so that bench times the forced paths beside auto (a
  // UsageError where an option the user gave rules them out). Empty: nothing to change.
  std::function<void(BenchRequest&)> auto_check_request;
  // dbtune tunes it unless --ops leaves it out; false for an op whose plan does not read the DB yet,
  // so that a default run spends none of its budget on configs nothing would use.
  bool tuned_by_default = true;
};

const std::vector<const OpDescriptor*>& ops();
// The device's profile measured (measure_device_profile) with every op's calibrations added, about
// ten seconds; progress gets a line per step.
DeviceProfile measure_profile(Context& ctx, const std::function<void(const std::string&)>& progress);
std::vector<std::string> op_names();
// The ops dbtune tunes when --ops is not given (tuned_by_default).
std::vector<std::string> default_tuned_op_names();
// The tuning DB's key of m for op (problem_key, else the structure fingerprint) and the features
// stored with it (problem_features, else compute_features).
std::string db_key(const OpDescriptor& op, const NamedMatrix& m);
MatrixRecord db_record(const OpDescriptor& op, const NamedMatrix& m);
// op.default_variants(), else op.variants(false).
std::vector<codegen::KernelSource> default_variants(const OpDescriptor& op);
// UsageError naming the known ops for any other name.
const OpDescriptor& find_op(const std::string& name);

}  // namespace dbsparse::tools

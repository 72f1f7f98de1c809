// `dbsparse bench OP [MATRIX...]`: times an op on a suite against cuSPARSE; table and JSON.
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "dbsparse/io.hpp"
#include "dbsparse/json_limits.hpp"
#include "tools/bench/suites.hpp"
#include "tools/dbsparse/commands.hpp"
#include "tools/ops/registry.hpp"
#include "support/atomic_file.hpp"
#include "tools/cli_checks.hpp"

namespace dbsparse::cli {

struct BenchArgs {
  std::string op;
  std::vector<std::string> matrices;
  std::string suite = "full";
  std::string set = "all";  // ops whose suite has parts (OpDescriptor::suite_sets): which to run
  bool no_shared = false, no_baselines = false, fused = false;
  std::vector<std::string> precisions{"f32"};
  std::vector<double> densities;  // empty: the op's own
  std::vector<std::string> strategies;
  std::vector<int> n_cols;            // spmm: widths of B and C
  std::vector<std::string> reorders;  // spmm: the row orders timed beside the CSR row
  std::string epilogue = "none";      // spmm: SpmmEpilogue of dbsparse's rows
  std::vector<std::string> reduces;   // spmm: SpmmReduce rows timed beside the CSR row
  int32_t contract_k = 0;             // spgemm: k of the contraction rows (0: rows / 64)
  int mcl_iters = 5;                  // spgemm: MCL expansions (0: no MCL rows)
  bool contract_k_set = false, mcl_iters_set = false;
  bool two_pass = false;     // spgemm: SpgemmOptions::one_pass off
  bool transpose_b = false;  // spgemm: A·Aᵀ for square matrices too
  bool explain = false;
  bool check_auto = false;  // auto against every forced path (OpDescriptor::auto_checks)
  int recheck_rounds = 5;   // with check_auto: the second look's rounds (spmv, spmspv)
  std::string config;       // JSON params for the dbsparse rows instead of the tuning DB's
  tools::TimingOptions timing;
  std::string json_path;
};

namespace {

// The parser's own words where the text is not JSON at all ('1e999' is "number overflow", not
// "not an object").
nlohmann::json parse_config(const std::string& text) {
  if (auto why = json_too_deep(text)) throw UsageError(fmt::format("--config: expected {}", *why));
  nlohmann::json c;
  try {
    c = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for 1e999
    throw UsageError(fmt::format("--config '{}': not JSON ({})", text, e.what()));
  }
  if (!c.is_object())
    throw UsageError(fmt::format("--config '{}': expected a JSON object such as '{{\"pull_coo\":\"warp\"}}'", text));
  return c;
}

// This process's command line, for the JSON record (Linux: /proc/self/cmdline; empty elsewhere).
std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  std::replace(raw.begin(), raw.end(), '\0', ' ');
  return raw;
}

std::vector<std::string> resolve_specs(const BenchArgs& a) {
  std::vector<std::string> specs;
  for (const auto& m : a.matrices) specs.push_back(tools::resolve_shared_name(m));
  if (specs.empty()) {
    const auto& op = tools::find_op(a.op);
    if (a.suite != "none") specs = a.set == "all" ? op.bench_suite(a.suite) : op.bench_suite_set(a.suite, a.set);
    if (!a.no_shared) {
      auto shared = tools::shared_matrix_files();
      if (shared.empty()) fmt::print("note: no ../shared/matrices found; generated suite only\n");
      specs.insert(specs.end(), shared.begin(), shared.end());
    }
  }
  if (specs.empty()) throw UsageError("no matrices to run: name some, or use --suite quick|full");
  return specs;
}

std::vector<std::string> ops_with_auto_checks() {
  std::vector<std::string> names;
  for (const auto* op : tools::ops())
    if (op->auto_checks) names.push_back(op->name);
  return names;
}

// The op's pairs of auto and forced rows, printed worst first; their JSON section.
nlohmann::json check_auto(const tools::OpDescriptor& op, const nlohmann::json& results) {
  std::vector<tools::AutoCheck> checks = op.auto_checks(results.at("results"));
  tools::sort_worst_first(checks);
  fmt::print("{}", tools::auto_check_report(checks));
  return tools::auto_check_json(checks);
}

}  // namespace

Runner add_bench(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto a = std::make_shared<BenchArgs>();
  sub->add_option("op", a->op, "The op to time")->required()->check(CLI::IsMember(tools::op_names()));
  sub->add_option("matrices", a->matrices,
                  "Matrix Market files (.mtx, .mtx.gz) or generator strings, e.g. "
                  "rmat:scale=19,ef=8; default: the --suite plus ../shared/matrices");
  sub->add_option("--suite", a->suite, "Generated suite when no matrices are named: quick, full or none")
      ->check(CLI::IsMember({"quick", "full", "none"}));
  sub->add_option("--set", a->set,
                  "Part of the generated suite, for ops whose suite has parts (spmm: graphs, >99% sparse graphs of "
                  "20K-2M rows; moderate, 50-90% sparse pruned weights; gnn, graphs sized as GNN datasets, PubMed to "
                  "Reddit); default all (graphs and moderate)");
  sub->add_flag("--no-shared", a->no_shared, "Leave out ../shared/matrices ($DBSPARSE_MATRICES)");
  sub->add_flag("--no-baselines", a->no_baselines, "Skip cuSPARSE");
  sub->add_flag("--fused", a->fused,
                "spmspv only: the dbsparse rows use one cooperative launch (mask pass, grid barrier, compute)");
  sub->add_option("--precision", a->precisions,
                  "f32, f64 or both (repeat or comma-separate); spmm: f32 (alias tf32), f16, bf16")
      ->delimiter(',')
      ->check(CLI::IsMember({"f32", "f64", "tf32", "f16", "bf16"}));
  sub->add_option("--density", a->densities,
                  "ops with a sparse x (spmspv): shares of x's entries that are nonzero (comma-separate); "
                  "default 0.1,0.01,0.001,0.0001")
      ->delimiter(',')
      ->check(finite_range(0.0, 1.0));
  sub->add_option("--strategy", a->strategies,
                  "spmv only: dbsparse strategies to time, one row each, for ablation (comma-separate: "
                  "classified, classified-split (one kernel per bin), uniform, scalar, vector, vector-l2 .. vector-l32 "
                  "(fixed lanes), block, longrow (each with the default reorder, auto), cols-degree / cols-none "
                  "(classified, A's columns in degree order / as given: the reorder A/B), window-8 .. window-256 "
                  "(classified with window_max_len 8, 16, 32, 64 or 256: rows up to that length in memory order, "
                  "32 a warp), scalar-max-2 .. scalar-max-6 (classified, one thread a row up to that length, "
                  "the vector bins after it), uniform-scalar-max-4 (uniform, scalar only up to a mean of 4)); "
                  "auto: the tuning DB's config, the row named dbsparse; default: that row alone")
      ->delimiter(',')
      ->check(CLI::IsMember(
          {"auto",      "classified",  "classified-split", "uniform",      "scalar",       "vector",
           "vector-l2", "vector-l4",   "vector-l8",        "vector-l16",   "vector-l32",   "block",
           "longrow",   "cols-degree", "cols-none",        "window-8",     "window-16",    "window-32",
           "window-64", "window-256",  "scalar-max-2",     "scalar-max-4", "scalar-max-6", "uniform-scalar-max-4"}));
  sub->add_option("--config", a->config,
                  "config params (JSON object) for the dbsparse rows instead of the tuning DB's (spmspv); "
                  "keys left out take the defaults, e.g. '{\"pull_coo\":\"warp\"}'");
  sub->add_option("--n", a->n_cols,
                  "spmm: columns N of the dense B and C to time (comma-separate, 1 .. 4096; default 32,64,128,256); "
                  "sddmm: k, the width of X and Y (1 .. 512; default 32,128)")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  sub->add_option("--reorder", a->reorders,
                  "spmm only: also time the CSR path with A's rows walked in these orders (comma-separate: degree, "
                  "rcm, community, degree-gpu: A as a 64-bit device view, the order made on the GPU), one row each "
                  "with the ordering's time and the calls that pay it back")
      ->delimiter(',')
      ->check(CLI::IsMember({"degree", "rcm", "community", "degree-gpu"}));
  sub->add_option("--reduce", a->reduces,
                  "spmm only: also time these reductions (comma-separate: mean, max, min; the CSR path, max and min "
                  "writing the winning entries too), one row each checked against a CPU reference, against the sum's "
                  "CSR row of the same run")
      ->delimiter(',')
      ->check(CLI::IsMember({"mean", "max", "min"}));
  sub->add_option("--epilogue", a->epilogue,
                  "spmm only: C = relu(A B) (relu): dbsparse's plans apply it (fused into the CSR path's stores), "
                  "cuSPARSE's rows add the separate relu pass its users need; default none")
      ->check(CLI::IsMember({"none", "relu"}));
  sub->add_option("--contract-k", a->contract_k,
                  "spgemm only: k, the classes of the contraction rows' random labels (C = S G S^T is k x k); "
                  "default rows/64")
      ->check(CLI::Range(1, std::numeric_limits<int32_t>::max()))
      ->each([a](const std::string&) { a->contract_k_set = true; });
  sub->add_option("--mcl-iters", a->mcl_iters,
                  "spgemm only: expansions of the MCL rows (fixed: tolerance 0); 0 leaves MCL out; default 5")
      ->check(CLI::Range(0, 1000))
      ->each([a](const std::string&) { a->mcl_iters_set = true; });
  sub->add_flag("--two-pass", a->two_pass,
                "spgemm only: every fresh product runs its symbolic phase before the numeric one (the "
                "default skips it where no row can overflow: SpgemmOptions::one_pass)");
  sub->add_flag("--transpose-b", a->transpose_b,
                "spgemm only: the product rows compute C = A*A^T for every matrix (a directed graph's co-citation "
                "counts; its rows differ from A*A's), not only for the rectangular ones; default A*A where square");
  sub->add_flag("--explain", a->explain, "spmv only: print each plan's bins and kernels to stderr");
  sub->add_option("--reps", a->timing.samples,
                  "Timed samples; the median is reported (spgemm: also the most fresh products timed)")
      ->check(CLI::Range(1, 10000));
  sub->add_option("--batch", a->timing.batch, "Back-to-back calls per timed sample")->check(CLI::Range(1, 10000));
  sub->add_option("--warmup", a->timing.warmup, "Untimed calls first")->check(CLI::Range(0, 10000));
  sub->add_flag("--graph", a->timing.graph,
                "Time every implementation (baselines too) by replaying a CUDA graph of each sample's "
                "calls, instead of launching them on a stream");
  sub->add_flag("--check-auto", a->check_auto,
                "Also time every forced path the op has (spmm: brp, condensed, csr; bfs and spmspv: push, pull; spmv: "
                "each strategy) and report auto / the best forced path per matrix and setting, worst first; with "
                "--json, under \"check_auto\"");
  sub->add_option("--recheck-rounds", a->recheck_rounds,
                  "With --check-auto (spmv, spmspv): after the first pass, time auto and the forced paths within 10% "
                  "of the best forced one again, in turn, this many rounds, and report those medians (the first "
                  "pass's stays in the JSON as first_pass_us); 0: no second look")
      ->check(CLI::Range(0, 100));
  sub->add_option("--json", a->json_path, "Write every row, the device and the command as JSON");
  return [a]() {
    const auto& op = tools::find_op(a->op);
    auto given = [&](const char* opt, bool set) {
      if (set && std::find(op.bench_options.begin(), op.bench_options.end(), opt) == op.bench_options.end())
        throw UsageError(fmt::format("{} does not apply to bench {} (it takes: {})", opt, op.name,
                                     fmt::join(op.bench_options, ", ")));
    };
    given("--density", !a->densities.empty());
    given("--strategy", !a->strategies.empty());
    given("--config", !a->config.empty());
    given("--explain", a->explain);
    given("--fused", a->fused);
    given("--n", !a->n_cols.empty());
    given("--reorder", !a->reorders.empty());
    given("--reduce", !a->reduces.empty());
    given("--epilogue", a->epilogue != "none");
    given("--contract-k", a->contract_k_set);
    given("--mcl-iters", a->mcl_iters_set);
    given("--two-pass", a->two_pass);
    given("--transpose-b", a->transpose_b);
    if (a->set != "all") {
      if (op.suite_sets.empty())
        throw UsageError(fmt::format("--set does not apply to bench {} (its suite has no parts)", op.name));
      if (std::find(op.suite_sets.begin(), op.suite_sets.end(), a->set) == op.suite_sets.end())
        throw UsageError(
            fmt::format("--set '{}': bench {} has the sets {}, all", a->set, op.name, fmt::join(op.suite_sets, ", ")));
      if (!a->matrices.empty())
        throw UsageError("--set picks part of the generated suite; it does not apply when matrices are named");
    }
    tools::BenchRequest req;
    req.specs = resolve_specs(*a);
    req.precisions = a->precisions;
    req.densities = a->densities;
    req.strategies = a->strategies;
    req.n_cols = a->n_cols;
    req.reorders = a->reorders;
    req.reduces = a->reduces;
    req.epilogue = a->epilogue;
    req.contract_k = a->contract_k;
    req.mcl_iters = a->mcl_iters;
    req.two_pass = a->two_pass;
    req.transpose_b = a->transpose_b;
    if (!a->config.empty()) {
      req.config = parse_config(a->config);
      op.space.validate(*req.config);  // a bad key or value fails here, before any GPU work
    }
    req.timing = a->timing;
    req.baselines = !a->no_baselines;
    req.fused = a->fused;
    req.explain = a->explain;
    if (a->check_auto) {
      if (!op.auto_checks)
        throw UsageError(fmt::format(
            "--check-auto does not apply to bench {}: its bench times no forced path beside auto (ops with one: {})",
            op.name, fmt::join(ops_with_auto_checks(), ", ")));
      if (op.auto_check_request) op.auto_check_request(req);
      req.recheck_rounds = a->recheck_rounds;
    }
    if (op.check_request) op.check_request(req);
    Context ctx;  // throws NoDeviceError with the reason when there is no GPU
    Stream stream(ctx);
    const auto& d = ctx.device();
    req.copy_gbs = tools::measure_copy_bandwidth(stream.handle());
    const double copy_gbs = req.copy_gbs;
    fmt::print("device {} ({}), copy bandwidth {:.0f} GB/s (read+write); {} samples x {} calls, {}\n", d.name, d.arch(),
               copy_gbs, a->timing.samples, a->timing.batch,
               a->timing.graph ? "each sample one CUDA graph replay" : "stream launches");
    nlohmann::json results = op.bench(ctx, stream, req);
    // The op's smallest calls next to an empty launch, in the same harness.
    if (op.fixed_cost_calls)
      results["fixed_cost"] = tools::fixed_cost_section(ctx, stream, req.timing, op.fixed_cost_calls(ctx, stream));
    if (a->check_auto) results["check_auto"] = check_auto(op, results);
    if (!a->json_path.empty()) {
      nlohmann::json j;
      j["tool"] = "dbsparse bench";
      j["op"] = a->op;
      j["version"] = DBSPARSE_VERSION;
      j["date"] = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
      j["command"] = command_line();
      j["device"] = {{"name", d.name},
                     {"arch", d.arch()},
                     {"sm_count", d.sm_count},
                     {"l2_bytes", d.l2_bytes},
                     {"fingerprint", d.record().fingerprint}};
      j["copy_bandwidth_gbs"] = copy_gbs;
      j["timing"] = {{"samples", a->timing.samples},
                     {"batch", a->timing.batch},
                     {"warmup", a->timing.warmup},
                     {"warmup_ms", tools::effective_warmup_ms(a->timing)},
                     {"recheck_rounds", a->check_auto ? a->recheck_rounds : 0},
                     {"statistic", "median per call"},
                     {"launch", a->timing.graph ? "graph" : "stream"}};
      j.update(results);
      support::write_file_atomic(a->json_path, j.dump(2) + "\n");  // an unwritable path is an error, not exit 0
      fmt::print("wrote {}\n", a->json_path);
    }
    return 0;
  };
}

}  // namespace dbsparse::cli

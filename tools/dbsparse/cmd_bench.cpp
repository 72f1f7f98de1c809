// `dbsparse bench OP [MATRIX...]`: times an op on a suite against cuSPARSE; table and JSON.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "dbsparse/io.hpp"
#include "tools/common/bench_spmspv.hpp"
#include "tools/common/bench_spmv.hpp"
#include "tools/common/suites.hpp"
#include "tools/dbsparse/commands.hpp"

namespace dbsparse::cli {

struct BenchArgs {
  std::string op;
  std::vector<std::string> matrices;
  std::string suite = "full";
  bool no_shared = false, no_baselines = false;
  std::vector<std::string> precisions{"f32"};
  std::vector<double> densities{0.1, 0.01, 0.001, 0.0001};
  std::vector<std::string> strategies;
  bool explain = false;
  std::string config;  // spmspv: JSON params for the dbsparse rows instead of the tuning DB's
  tools::TimingOptions timing;
  std::string json_path;
};

namespace {

nlohmann::json parse_config(const std::string& text) {
  nlohmann::json c = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!c.is_object())
    throw UsageError(fmt::format("--config '{}': expected a JSON object such as '{{\"pull_coo\":\"warp\"}}'", text));
  return c;
}

std::vector<std::string> resolve_specs(const BenchArgs& a) {
  std::vector<std::string> specs = a.matrices;
  if (specs.empty()) {
    if (a.suite != "none")
      specs = a.op == "spmspv" ? tools::spmspv_suite(a.suite) : tools::generated_suite(a.suite);
    if (!a.no_shared) {
      auto shared = tools::shared_matrix_files();
      if (shared.empty()) fmt::print("note: no ../shared/matrices found; generated suite only\n");
      specs.insert(specs.end(), shared.begin(), shared.end());
    }
  }
  if (specs.empty()) throw UsageError("no matrices to run: name some, or use --suite quick|full");
  return specs;
}

// Loads each matrix in turn (one in memory at a time) and reports progress on stderr.
void for_each_matrix(const std::vector<std::string>& specs,
                     const std::function<void(const NamedMatrix&, bool generated)>& bench) {
  for (size_t i = 0; i < specs.size(); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    NamedMatrix m = load_matrix(specs[i]);
    bench(m, is_generator_spec(specs[i]));
    auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(stderr, "[{}/{}] {} done in {:.1f} s\n", i + 1, specs.size(), m.name, secs);
  }
}

// How the kernels were obtained: the JIT cost a user pays once per process.
void print_jit(const std::vector<const tools::BenchRow*>& rows) {
  std::set<std::string> shown;  // rows of one plan repeat its kernel: one line per key
  for (const auto* r : rows)
    if (!r->key.empty() && r->kernel_origin != "loaded" && r->kernel_origin != "memory" &&
        shown.insert(r->key).second)
      fmt::print("jit: {} from {}: {:.2f} ms + module load {:.2f} ms\n", r->key, r->kernel_origin,
                 r->acquire_ms, r->load_ms);
}

// Each op runs the suite, prints its table, and returns its part of the JSON.
nlohmann::json run_spmv(const BenchArgs& a, Context& ctx, const Stream& stream,
                        const std::vector<std::string>& specs, double copy_gbs) {
  tools::SpmvBenchOptions opt;
  opt.precisions = a.precisions;
  opt.timing = a.timing;
  opt.baselines = !a.no_baselines;
  opt.strategies = a.strategies;
  opt.explain = a.explain;
  std::vector<tools::BenchRow> rows;
  tools::print_bench_header();
  std::set<std::string> generated;
  for_each_matrix(specs, [&](const NamedMatrix& m, bool is_generated) {
    if (is_generated) generated.insert(m.name);
    size_t before = rows.size();
    tools::bench_spmv_matrix(ctx, stream, m, opt, copy_gbs, rows);
    for (size_t r = before; r < rows.size(); ++r) tools::print_bench_row(rows[r]);
  });
  auto summary = tools::spmv_summary(rows, generated);
  tools::print_spmv_summary(summary);
  std::vector<const tools::BenchRow*> base;
  nlohmann::json j;
  j["results"] = nlohmann::json::array();
  for (const auto& r : rows) base.push_back(&r), j["results"].push_back(r.to_json());
  j["summary"] = summary;
  print_jit(base);
  return j;
}

nlohmann::json run_spmspv(const BenchArgs& a, Context& ctx, const Stream& stream,
                          const std::vector<std::string>& specs, double copy_gbs) {
  tools::SpmspvBenchOptions opt;
  opt.precisions = a.precisions;
  opt.densities = a.densities;
  opt.timing = a.timing;
  opt.baselines = !a.no_baselines;
  if (!a.config.empty()) opt.config = parse_config(a.config);
  std::vector<tools::SpmspvRow> rows;
  tools::print_spmspv_header();
  for_each_matrix(specs, [&](const NamedMatrix& m, bool generated) {
    size_t before = rows.size();
    tools::bench_spmspv_matrix(ctx, stream, m, generated, opt, copy_gbs, rows);
    for (size_t r = before; r < rows.size(); ++r) tools::print_spmspv_row(rows[r]);
  });
  auto summary = tools::spmspv_summary(rows, opt.densities);
  tools::print_spmspv_summary(summary);
  std::vector<const tools::BenchRow*> base;
  nlohmann::json j;
  j["densities"] = opt.densities;
  j["results"] = nlohmann::json::array();
  for (const auto& r : rows) base.push_back(&r.base), j["results"].push_back(r.to_json());
  j["summary"] = summary;
  print_jit(base);
  return j;
}

}  // namespace

Runner add_bench(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto a = std::make_shared<BenchArgs>();
  sub->add_option("op", a->op, "The op to time")->required()->check(CLI::IsMember({"spmv", "spmspv"}));
  sub->add_option("matrices", a->matrices,
                  "Matrix Market files (.mtx, .mtx.gz) or generator strings, e.g. "
                  "rmat:scale=19,ef=8; default: the --suite plus ../shared/matrices");
  sub->add_option("--suite", a->suite, "Generated suite when no matrices are named: quick, full or none")
      ->check(CLI::IsMember({"quick", "full", "none"}));
  sub->add_flag("--no-shared", a->no_shared, "Leave out ../shared/matrices ($DBSPARSE_MATRICES)");
  sub->add_flag("--no-baselines", a->no_baselines, "Skip cuSPARSE");
  sub->add_option("--precision", a->precisions, "f32, f64 or both (repeat or comma-separate)")
      ->delimiter(',')
      ->check(CLI::IsMember({"f32", "f64"}));
  sub->add_option("--density", a->densities,
                  "spmspv only: shares of x's entries that are nonzero (comma-separate); "
                  "default 0.1,0.01,0.001,0.0001")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--strategy", a->strategies,
                  "spmv only: dbsparse strategies to time, one row each, for ablation (comma-separate: "
                  "classified, classified-split (one kernel per bin), uniform, scalar, vector, vector-l2 .. vector-l32 "
                  "(fixed lanes), block, longrow); "
                  "default: the tuning DB's config")
      ->delimiter(',')
      ->check(CLI::IsMember({"classified", "classified-split", "uniform", "scalar", "vector", "vector-l2", "vector-l4",
                             "vector-l8", "vector-l16", "vector-l32", "block", "longrow"}));
  sub->add_option("--config", a->config,
                  "spmspv only: config params (JSON object) for the dbsparse rows instead of the tuning DB's; "
                  "keys left out take the defaults, e.g. '{\"pull_coo\":\"warp\"}'");
  sub->add_flag("--explain", a->explain, "spmv only: print each plan's bins and kernels to stderr");
  sub->add_option("--reps", a->timing.samples, "Timed samples; the median is reported")
      ->check(CLI::Range(1, 10000));
  sub->add_option("--batch", a->timing.batch, "Back-to-back calls per timed sample")
      ->check(CLI::Range(1, 10000));
  sub->add_option("--warmup", a->timing.warmup, "Untimed calls first")->check(CLI::Range(0, 10000));
  sub->add_option("--json", a->json_path, "Write every row, the device and the command as JSON");
  return [a]() {
    std::vector<std::string> specs = resolve_specs(*a);
    if (!a->config.empty()) {
      if (a->op != "spmspv") throw UsageError("--config applies to bench spmspv only (spmv: --strategy)");
      parse_config(a->config);  // a malformed one fails here, before any GPU work
    }
    Context ctx;  // throws NoDeviceError with the reason when there is no GPU
    Stream stream(ctx);
    const auto& d = ctx.device();
    double copy_gbs = tools::measure_copy_bandwidth(stream.handle());
    fmt::print("device {} ({}), copy bandwidth {:.0f} GB/s (read+write); {} samples x {} calls\n",
               d.name, d.arch(), copy_gbs, a->timing.samples, a->timing.batch);
    nlohmann::json results = a->op == "spmspv" ? run_spmspv(*a, ctx, stream, specs, copy_gbs)
                                               : run_spmv(*a, ctx, stream, specs, copy_gbs);
    if (!a->json_path.empty()) {
      nlohmann::json j;
      j["tool"] = "dbsparse bench";
      j["op"] = a->op;
      j["version"] = DBSPARSE_VERSION;
      j["date"] = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
      j["device"] = {{"name", d.name}, {"arch", d.arch()}, {"sm_count", d.sm_count},
                     {"l2_bytes", d.l2_bytes}, {"fingerprint", d.record().fingerprint}};
      j["copy_bandwidth_gbs"] = copy_gbs;
      j["timing"] = {{"samples", a->timing.samples}, {"batch", a->timing.batch},
                     {"warmup", a->timing.warmup}, {"statistic", "median per call"}};
      j.update(results);
      std::ofstream(a->json_path) << j.dump(2) << "\n";
      fmt::print("wrote {}\n", a->json_path);
    }
    return 0;
  };
}

}  // namespace dbsparse::cli

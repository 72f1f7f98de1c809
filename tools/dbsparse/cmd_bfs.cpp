// `dbsparse bfs GRAPH`: DB-BFS from a few sources, GTEPS, levels, per-level directions and the
// Graph500 validation of every result.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "dbsparse/io.hpp"
#include "dbsparse/json_limits.hpp"
#include "tools/bench/bench_bfs.hpp"
#include "tools/dbsparse/commands.hpp"
#include "support/atomic_file.hpp"

namespace dbsparse::cli {

struct BfsArgs {
  std::string graph;
  int sources = 16;
  std::vector<int32_t> source;
  bool validate = false, baselines = false, levels = false, directed = false;
  uint64_t seed = 1;
  int reps = 3;
  std::string config, json_path;
};

Runner add_bfs(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto a = std::make_shared<BfsArgs>();
  sub->add_option("graph", a->graph,
                  "A square Matrix Market file (.mtx, .mtx.gz) or a generator string, e.g. "
                  "rmat:scale=20,ef=16,scramble=1; vertex i is reached from j when A(i,j) != 0")
      ->required();
  auto* n = sub->add_option("--sources", a->sources, "Vertex 0 plus this many seeded random non-isolated sources")
                ->check(CLI::Range(0, 1 << 20));
  sub->add_option("--source", a->source, "Search from these vertices only (comma-separate)")
      ->delimiter(',')
      ->excludes(n);
  sub->add_option("--seed", a->seed, "Seed of the random sources");
  sub->add_flag("--validate", a->validate, "Check every result by Graph500's rules against a CPU BFS");
  sub->add_flag("--baselines", a->baselines, "Also time push-only, pull-only and the cuSPARSE-SpMV loop");
  sub->add_flag("--levels", a->levels,
                "Print the per-level table (direction, frontier, blocks, edges) of the first source");
  sub->add_flag("--directed", a->directed, "Search A as it is when it is not symmetric (default: A + A^T)");
  sub->add_option("--reps", a->reps, "Runs per source; the median is reported")->check(CLI::Range(1, 1000));
  sub->add_option("--config", a->config, "bfs config params (JSON), e.g. '{\"alpha\":8}', instead of the tuning DB's");
  sub->add_option("--json", a->json_path, "Write the record (per source times, GTEPS, levels, validation) as JSON");
  return [a]() {
    tools::BfsBenchOptions opt;
    opt.random_sources = a->sources;
    opt.sources = a->source;
    opt.seed = a->seed;
    opt.reps = a->reps;
    opt.baselines = a->baselines;
    opt.validate = a->validate;
    opt.validate_sources = -1;  // every source the user asked for
    opt.levels_table = a->levels;
    opt.symmetrise = !a->directed;
    if (!a->config.empty()) {
      if (auto why = json_too_deep(a->config)) throw UsageError(fmt::format("--config: expected {}", *why));
      nlohmann::json c = nlohmann::json::parse(a->config, nullptr, false);
      if (!c.is_object())
        throw UsageError(fmt::format("--config '{}': expected a JSON object such as '{{\"alpha\":8}}'", a->config));
      (void)config_from_json<BfsConfig>(c);
      opt.config = c;
    }
    NamedMatrix m = load_matrix(a->graph);  // InputError names the file and line
    Context ctx;
    Stream stream(ctx);
    fmt::print("device {} ({})\n", ctx.device().name, ctx.device().arch());
    tools::print_bfs_header();
    nlohmann::json rec = tools::bench_bfs_graph(ctx, stream, m, opt);
    if (rec.contains("skipped")) return 2;
    for (const auto& r : rec["results"]) {
      fmt::print("{}: GTEPS per source:", r["impl"].get<std::string>());
      for (double g : r["gteps"]) fmt::print(" {:.3f}", g);
      fmt::print("; geomean {:.3f}\n", r["gteps_geomean"].get<double>());
    }
    int failed = 0;
    for (const auto& v : rec["validation"]) failed += v["ok"].get<bool>() ? 0 : 1;
    if (a->validate)
      fmt::print("validation: {} of {} sources valid\n", rec["validation"].size() - failed, rec["validation"].size());
    fmt::print("storage: {} device bytes ({:.2f} per entry; CSR with f32 values: {} bytes), conversion {:.1f} ms, {}\n",
               rec["bytes_device"].get<int64_t>(),
               rec["bytes_format"].get<double>() / std::max<double>(1.0, rec["entries"].get<double>()),
               rec["bytes_csr"].get<int64_t>(), rec["convert_ms"].get<double>(), rec["launch"].get<std::string>());
    if (!a->json_path.empty()) {
      rec["tool"] = "dbsparse bfs";
      rec["date"] = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
      rec["device"] = ctx.device().name;
      support::write_file_atomic(a->json_path, rec.dump(2) + "\n");  // an unwritable path is an error, not exit 0
      fmt::print("wrote {}\n", a->json_path);
    }
    return failed ? 4 : 0;
  };
}

}  // namespace dbsparse::cli

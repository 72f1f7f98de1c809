// `dbsparse gcn GRAPH`: a 2-layer GCN forward pass with dbsparse's SpMM against the same pipeline
// with cuSPARSE SpMM (tools/apps/gcn.hpp); end-to-end and per-stage times, setup apart, a check.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "dbsparse/io.hpp"
#include "tools/apps/gcn.hpp"
#include "tools/bench/suites.hpp"
#include "tools/dbsparse/commands.hpp"
#include "support/atomic_file.hpp"

namespace dbsparse::cli {

struct GcnArgs {
  std::string graph, json_path;
  tools::GcnBenchOptions opt;
};

Runner add_gcn(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto a = std::make_shared<GcnArgs>();
  sub->add_option("graph", a->graph,
                  "A square Matrix Market file (.mtx, .mtx.gz), a name in ../shared/matrices or a generator string, "
                  "e.g. rmat:scale=18,ef=16; its pattern is the graph (symmetrised when it is not symmetric)")
      ->required();
  sub->add_option("--features", a->opt.dims.features, "Columns of X (input features)")->check(CLI::Range(1, 65536));
  sub->add_option("--hidden", a->opt.dims.hidden, "Columns of W1: the first SpMM's width")->check(CLI::Range(1, 4096));
  sub->add_option("--classes", a->opt.dims.classes, "Columns of W2: the second SpMM's width")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--reps", a->opt.reps, "Timed forward passes (and passes of each stage); the median is reported")
      ->check(CLI::Range(1, 10000));
  sub->add_option("--warmup", a->opt.warmup, "Untimed passes first")->check(CLI::Range(0, 1000));
  sub->add_option("--seed", a->opt.seed, "Seed of X, W1 and W2");
  sub->add_option(
         "--path", a->opt.path,
         "dbsparse's SpMM path: config (the tuning DB's or the default), auto (by the condensed windows' fill), "
         "brp, csr or condensed")
      ->check(CLI::IsMember({"config", "auto", "brp", "csr", "condensed"}));
  sub->add_option("--reorder", a->opt.reorder,
                  "dbsparse's row order for the SpMMs: config (the tuning DB's or the default), none, degree, rcm or "
                  "community (its host time is reported and amortised over 100 passes)")
      ->check(CLI::IsMember({"config", "none", "degree", "rcm", "community"}));
  sub->add_flag("--fuse-relu,!--no-fuse-relu", a->opt.fuse_relu,
                "dbsparse's first SpMM applies the ReLU in its stores (SpmmEpilogue::Relu; on by default); "
                "--no-fuse-relu runs it as the separate pass cuSPARSE's pipeline needs (the ablation)");
  sub->add_flag("--cpu-check", a->opt.cpu_check,
                "Also check both outputs against a double-precision forward pass on the CPU (slow on large graphs)");
  sub->add_option("--json", a->json_path, "Write the record (setup, per-stage and end-to-end times, check) as JSON");
  return [a]() {
    NamedMatrix m = load_matrix(tools::resolve_shared_name(a->graph));  // InputError names the file and line
    if (m.csr.rows != m.csr.cols)
      throw UsageError(
          fmt::format("gcn: {} is {} x {}; a graph's adjacency matrix is square", m.name, m.csr.rows, m.csr.cols));
    Context ctx;  // throws NoDeviceError with the reason when there is no GPU
    Stream stream(ctx);
    fmt::print("device {} ({})\n", ctx.device().name, ctx.device().arch());
    nlohmann::json rec = tools::bench_gcn(ctx, stream, m, a->opt);
    if (!a->json_path.empty()) {
      rec["tool"] = "dbsparse gcn";
      rec["version"] = DBSPARSE_VERSION;
      rec["date"] = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
      rec["device"] = {{"name", ctx.device().name}, {"arch", ctx.device().arch()}};
      support::write_file_atomic(a->json_path, rec.dump(2) + "\n");  // an unwritable path is an error, not exit 0
      fmt::print("wrote {}\n", a->json_path);
    }
    return rec["ok"].get<bool>() ? 0 : 4;
  };
}

}  // namespace dbsparse::cli

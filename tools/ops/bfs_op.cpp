// The BFS op's registry entry: DB-BFS (docs/DESIGN.md [1] §4.2), direction chosen on the GPU
// every level, the whole search one cooperative launch.
#include <fmt/format.h>

#include "codegen/keys/bfs_key.hpp"
#include "dbsparse/bfs.hpp"
#include "dbsparse/graph.hpp"
#include "tools/bench/bench_bfs.hpp"
#include "tools/bench/stats.hpp"
#include "tools/ops/op_support.hpp"
#include "tools/ops/first_calls.hpp"
#include "tools/ops/fixed_cost_calls.hpp"
#include "tools/ops/registry.hpp"

namespace dbsparse::tools {
namespace {

using tuner::Measurement;
using tuner::ParamSpec;

tuner::SearchSpace make_space() {
  tuner::SearchSpace s{"bfs", {}, {}, config_to_json(BfsConfig{}), tuner::validate_as<BfsConfig>()};
  s.params = {
      ParamSpec::choice("alpha", {2.0, 4.0, 8.0, 14.0, 32.0, 64.0},
                        "pull once frontier out-edges * alpha > unexplored edges"),
      ParamSpec::choice("beta", {4.0, 12.0, 24.0, 64.0, 128.0}, "push again once frontier vertices * beta < n"),
      ParamSpec::choice("bfs_th3", {0.02, 0.1, 0.3, 1.0}, "pull while the active-block share exceeds this"),
      ParamSpec::choice("block_warps", {8, 32}, "warps per thread block"),
      ParamSpec::choice("solo_tasks", {0, 64, 256, 1024}, "push levels with at most this many tasks on one block"),
  };
  return s;
}

// The tuner's time: the geomean over vertex 0 and four seeded sources of one whole search (its
// levels checked against the CPU BFS first). Non-square matrices are skipped; a directed graph is
// searched as it is.
struct BfsObjective {
  Context& ctx;
  PatternGraph g;
  std::vector<int32_t> sources;
  std::vector<BfsLevels> ref;
  bool square;

  BfsObjective(Context& c, const NamedMatrix& m) : ctx(c), square(m.csr.rows == m.csr.cols) {
    if (!square) return;
    g = pattern_of(m.csr);
    sources = pick_sources(g, 4, 1);
    for (int32_t s : sources) ref.push_back(bfs_reference(g, s));
  }

  Measurement operator()(const nlohmann::json& params, int samples) {
    return guarded([&]() -> Measurement {
      if (!square || g.n == 0) return {TrialStatus::Skipped, 0, "bfs needs a square, non-empty matrix"};
      Config cfg{"bfs", params, ConfigSource::Explicit, "tuning candidate"};
      BfsOptions opt;
      opt.config = &cfg;
      BfsPlan plan = plan_bfs(ctx, g, opt);
      Stream s(ctx);
      DeviceBuffer<int32_t> levels(static_cast<size_t>(g.n));
      std::vector<double> times;
      std::string detail;
      for (size_t i = 0; i < sources.size(); ++i) {
        plan.run(sources[i], levels, s);
        s.synchronize();
        if (levels.download() != ref[i].level)
          return {TrialStatus::WrongResult, 0, fmt::format("source {}: levels differ from the CPU BFS", sources[i])};
        auto t = time_on_stream(s.handle(), TimingOptions{1, samples < 1 ? 1 : samples, 1},
                                [&](int64_t) { plan.run(sources[i], levels, s); });
        times.push_back(t.median_us);
        detail += fmt::format(" {}: {:.1f} us", sources[i], t.median_us);
      }
      return {TrialStatus::Ok, geomean(times), detail};
    });
  }
};

nlohmann::json bench(Context& ctx, const Stream& stream, const BenchRequest& r) {
  if (!r.strategies.empty()) throw UsageError("bench bfs: --strategy applies to spmv (bfs: --config)");
  BfsBenchOptions opt;
  opt.baselines = r.baselines;
  if (r.config) {
    (void)config_from_json<BfsConfig>(*r.config);  // a bad key fails here, before any GPU work
    opt.config = r.config;
  }
  std::vector<nlohmann::json> graphs;
  print_bfs_header();
  for_each_matrix(r.specs, [&](const NamedMatrix& m, bool) { graphs.push_back(bench_bfs_graph(ctx, stream, m, opt)); });
  nlohmann::json j;
  j["results"] = graphs;
  j["summary"] = bfs_summary(graphs);
  j["gteps"] =
      "undirected edges within the source's component / seconds from the call to the finished levels "
      "array (host wait included), median of 3 runs per source; geomean over vertex 0 and 16 seeded sources";
  return j;
}

// A search's time in µs, geomean over the sources whose component has an edge (the sources the
// GTEPS figures count; all of them when none has one).
double search_us(const nlohmann::json& impl, const std::vector<int64_t>& edges) {
  const auto seconds = impl.at("seconds").get<std::vector<double>>();
  std::vector<double> us, all;
  for (size_t i = 0; i < seconds.size(); ++i) {
    all.push_back(seconds[i] * 1e6);
    if (i < edges.size() && edges[i] > 0) us.push_back(seconds[i] * 1e6);
  }
  return geomean(us.empty() ? all : us);
}

// --check-auto: per graph, auto's search against push-only's and pull-only's over the same sources
// (the ratio of their times is that of their GTEPS).
std::vector<AutoCheck> auto_checks(const nlohmann::json& results) {
  std::vector<TimedRow> rows;
  for (const auto& g : results) {
    if (g.contains("skipped")) continue;
    const auto edges = g.value("component_edges", std::vector<int64_t>{});
    const std::string setting = fmt::format("{} sources", edges.size());
    for (const auto& impl : g.at("results"))
      rows.push_back(
          {g.at("graph"), setting, impl.at("impl"), search_us(impl, edges), g.value("directions_vertex0", "")});
  }
  return group_auto_checks("bfs", rows, "dbsparse-auto",
                           [](const std::string& impl) { return impl == "dbsparse-push" || impl == "dbsparse-pull"; });
}

OpDescriptor make() {
  OpDescriptor d;
  d.name = "bfs";
  d.doc = "breadth-first search: Boolean SpMSpV per level, push or pull chosen on the GPU, one launch per search";
  d.config = config_info<BfsConfig>();
  d.objective_doc = "whole-search time, geomean over vertex 0 and 4 seeded sources";
  d.space = make_space();
  d.bench_suite = [](const std::string& size) { return bfs_suite(size); };
  d.variants = [](bool) {
    std::vector<codegen::KernelSource> out;
    for (const auto& k : codegen::bfs_search_space()) out.push_back(codegen::make_source(k));
    return out;
  };
  d.objective = [](Context& ctx, const NamedMatrix& m, const ObjectiveOptions&) {
    auto obj = std::make_shared<BfsObjective>(ctx, m);
    return std::make_unique<tuner::Objective>([obj](const nlohmann::json& c, int n) { return (*obj)(c, n); });
  };
  d.bench_options = {"--config"};
  d.bench = bench;
  d.explain = [](Context& ctx, const NamedMatrix& m) { return plan_bfs(ctx, m.csr).explain(); };
  d.fixed_cost_calls = bfs_fixed_cost_calls;
  d.first_call = bfs_first_call;
  d.auto_checks = auto_checks;
  d.auto_check_request = [](BenchRequest& r) {
    if (!r.baselines)
      throw UsageError("--check-auto: bench bfs times push-only and pull-only with its baselines; drop --no-baselines");
  };
  return d;
}

}  // namespace

const OpDescriptor& bfs_op() {
  static const OpDescriptor d = make();
  return d;
}

}  // namespace dbsparse::tools

#include "tools/bench/bench_bfs.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "dbsparse/graph.hpp"
#include "tools/baselines/cusparse_bfs.hpp"
#include "tools/bench/timing.hpp"
#include "tools/bench/stats.hpp"

namespace dbsparse::tools {
namespace {

// Host wall-clock seconds of `f` up to the stream's completion: Graph500's time, host wait included.
template <class F>
double wall_s(const Stream& s, F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  s.synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string direction_string(const BfsRunStats& st) {
  std::string d;
  for (const auto& l : st.per_level) d += l.direction == BfsDirection::Pull ? 'L' : 'P';
  if (st.levels > static_cast<int32_t>(st.per_level.size())) d += "...";
  return d;
}

struct ImplResult {
  std::string impl;
  std::vector<double> seconds, gteps;
  std::vector<int> levels;
  nlohmann::json to_json() const {
    return {{"impl", impl},
            {"seconds", seconds},
            {"gteps", gteps},
            {"levels", levels},
            {"gteps_geomean", geomean(gteps)},
            {"median_s", median(seconds)}};
  }
};

}  // namespace

std::vector<std::string> bfs_suite(const std::string& size) {
  if (size == "quick")
    return {"rmat:scale=16,ef=16,scramble=1", "stencil2d:n=512", "stencil3d:n=40,points=27",
            "uniform:n=262144,d=16,seed=1", "powerlaw:n=200000,avg=8,alpha=1.5,max=20000,seed=1"};
  return {"rmat:scale=20,ef=16,scramble=1",
          "rmat:scale=21,ef=16,scramble=1",
          "rmat:scale=22,ef=16,scramble=1",
          "stencil2d:n=2048",
          "stencil3d:n=100,points=27",
          "uniform:n=4194304,d=16,seed=1",
          "powerlaw:n=2000000,avg=8,alpha=1.5,max=100000,seed=1"};
}

void print_bfs_header() {
  fmt::print("{:<40} {:>9} {:>11} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8}  {}\n", "graph", "vertices",
             "entries", "levels", "auto", "push", "pull", "cusparse", "us/level", "auto/pp", "auto/cs",
             "directions (vertex 0: P push, L pull)");
  fmt::print("{:<40} {:>9} {:>11} {:>6} {:>9} {:>9} {:>9} {:>9}\n", "", "", "", "", "GTEPS", "GTEPS", "GTEPS", "GTEPS");
}

nlohmann::json bench_bfs_graph(Context& ctx, const Stream& stream, const NamedMatrix& m, const BfsBenchOptions& opt) {
  nlohmann::json rec;
  rec["graph"] = m.name;
  if (m.csr.rows != m.csr.cols) {
    fmt::print("{:<40} skipped: not square ({}x{})\n", m.name.substr(0, 40), m.csr.rows, m.csr.cols);
    rec["skipped"] = "not square";
    return rec;
  }
  PatternGraph g = pattern_of(m.csr);
  const bool was_symmetric = is_symmetric(g);
  const bool symmetrised = opt.symmetrise && !was_symmetric;
  if (symmetrised) g = symmetrize(g, false);
  const bool symmetric = was_symmetric || symmetrised;
  rec["symmetrised"] = symmetrised;
  rec["vertices"] = g.n;
  rec["entries"] = g.entries();
  std::vector<int32_t> sources = opt.sources.empty() ? pick_sources(g, opt.random_sources, opt.seed) : opt.sources;
  for (int32_t s : sources)
    if (s < 0 || s >= g.n)
      throw UsageError(fmt::format("source {} is not a vertex of {} ({} vertices)", s, m.name, g.n));
  rec["sources"] = sources;

  Config cfg{"bfs", opt.config.value_or(nlohmann::json::object()), ConfigSource::Explicit, "--config"};
  std::vector<ImplResult> results;
  std::vector<int64_t> edges(sources.size(), 0);
  nlohmann::json validation = nlohmann::json::array();
  std::string directions;
  std::vector<BfsDirection> dirs = {BfsDirection::Auto};
  if (opt.baselines) dirs.push_back(BfsDirection::Push), dirs.push_back(BfsDirection::Pull);
  // $DBSPARSE_BENCH_AUTO_LAST=1: auto after the forced directions (an order effect's check).
  if (auto_timed_last()) std::rotate(dirs.begin(), dirs.begin() + 1, dirs.end());
  DeviceBuffer<int32_t> levels(static_cast<size_t>(std::max(g.n, 1))), parents(static_cast<size_t>(std::max(g.n, 1)));
  for (BfsDirection d : dirs) {
    BfsOptions bo;
    bo.direction = d;
    if (opt.config) bo.config = &cfg;
    BfsPlan plan = plan_bfs(ctx, g, bo);
    if (d == BfsDirection::Auto) {
      const BfsStats& st = plan.stats();
      rec["convert_ms"] = st.convert_ms;
      rec["bytes_device"] = st.bytes_device;
      rec["bytes_format"] = st.bytes_format;
      rec["bytes_csr"] = st.bytes_csr;
      rec["kernel"] = plan.kernel().key;
      rec["launch"] = to_string(plan.launch());
      rec["config"] = plan.config().params;
    }
    ImplResult r{std::string("dbsparse-") + to_string(d), {}, {}, {}};
    rec["plans"][r.impl] = plan.explain();          // the trial's note, the launch and grid of each row
    plan.run(sources[0], levels, parents, stream);  // warm-up
    stream.synchronize();
    for (size_t i = 0; i < sources.size(); ++i) {
      std::vector<double> t;
      // One untimed search first: auto's rows check each search on the host, and the GPU's
      // clocks fall while it waits; the forced rows get the same.
      plan.run(sources[i], levels, parents, stream);
      for (int k = 0; k < opt.reps; ++k)
        t.push_back(wall_s(stream, [&] { plan.run(sources[i], levels, parents, stream); }));
      const BfsRunStats st = plan.last_stats();
      if (d == BfsDirection::Auto) {
        const auto lv = levels.download();
        edges[i] = component_edges(g, lv, symmetric);
        if (opt.validate && (opt.validate_sources < 0 || static_cast<int>(i) < opt.validate_sources)) {
          const BfsValidation v = validate_bfs(g, sources[i], lv, parents.download());
          validation.push_back({{"source", sources[i]}, {"ok", v.ok}, {"summary", v.summary()}});
          if (!v.ok) fmt::print("VALIDATION FAILED: {} source {}: {}\n", m.name, sources[i], v.summary());
        }
        if (i == 0) {
          directions = direction_string(st);
          rec["per_level_vertex0"] = nlohmann::json::array();
          for (const auto& l : st.per_level)
            rec["per_level_vertex0"].push_back({{"level", l.level},
                                                {"dir", to_string(l.direction)},
                                                {"frontier", l.frontier},
                                                {"blocks", l.blocks},
                                                {"edges", l.edges}});
          if (opt.levels_table) fmt::print("{}", st.to_text());
        }
      }
      r.seconds.push_back(median(t));
      r.levels.push_back(st.levels);
    }
    results.push_back(std::move(r));
  }
  if (opt.baselines) {
    CusparseBfs cs(ctx, g, stream);
    ImplResult r{"cusparse-spmv-loop", {}, {}, {}};
    cs.run(sources[0], levels);
    for (size_t i = 0; i < sources.size(); ++i) {
      std::vector<double> t;
      int lv = 0;
      cs.run(sources[i], levels);  // untimed, as the dbsparse rows
      for (int k = 0; k < opt.reps; ++k) t.push_back(wall_s(stream, [&] { lv = cs.run(sources[i], levels); }));
      r.seconds.push_back(median(t));
      r.levels.push_back(lv);
    }
    results.push_back(std::move(r));
  }
  // A source with no edge in its component (vertex 0 of a scrambled R-MAT may be isolated) has no
  // TEPS: it is timed and listed, but left out of the GTEPS figures.
  for (auto& r : results)
    for (size_t i = 0; i < sources.size(); ++i)
      if (edges[i] > 0) r.gteps.push_back(static_cast<double>(edges[i]) / r.seconds[i] * 1e-9);
  rec["sources_without_edges"] = std::count(edges.begin(), edges.end(), int64_t{0});

  rec["component_edges"] = edges;
  rec["validation"] = validation;
  rec["directions_vertex0"] = directions;
  rec["results"] = nlohmann::json::array();
  for (const auto& r : results) rec["results"].push_back(r.to_json());
  auto gt = [&](const char* impl) -> double {
    for (const auto& r : results)
      if (r.impl == impl) return r.gteps.empty() ? NAN : geomean(r.gteps);
    return NAN;
  };
  const double a = gt("dbsparse-auto"), pu = gt("dbsparse-push"), pl = gt("dbsparse-pull"),
               cs = gt("cusparse-spmv-loop");
  // Per-level cost: auto's median time over the levels of the search, averaged over sources.
  double us_per_level = 0;
  for (size_t i = 0; i < sources.size(); ++i)
    us_per_level += results[0].seconds[i] * 1e6 / std::max(1, results[0].levels[i]);
  us_per_level /= static_cast<double>(sources.size());
  rec["auto_us_per_level"] = us_per_level;
  rec["auto_over_best_forced"] = a / std::max(pu, pl);
  rec["auto_over_cusparse"] = a / cs;
  auto num = [](double v) { return std::isfinite(v) ? fmt::format("{:.3f}", v) : std::string("-"); };
  fmt::print("{:<40} {:>9} {:>11} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9.1f} {:>8} {:>8}  {}\n", m.name.substr(0, 40), g.n,
             g.entries(), results[0].levels[0], num(a), num(pu), num(pl), num(cs), us_per_level,
             num(a / std::max(pu, pl)), num(a / cs),
             directions.size() > 60 ? directions.substr(0, 57) + "..." : directions);
  return rec;
}

nlohmann::json bfs_summary(const std::vector<nlohmann::json>& graphs) {
  std::vector<double> over_cs, over_forced;
  nlohmann::json s;
  std::string worst;
  double worst_cs = INFINITY;
  for (const auto& g : graphs) {
    if (g.contains("skipped")) continue;
    const double c = g.value("auto_over_cusparse", NAN), f = g.value("auto_over_best_forced", NAN);
    if (std::isfinite(c)) {
      over_cs.push_back(c);
      if (c < worst_cs) worst_cs = c, worst = g["graph"].get<std::string>();
    }
    if (std::isfinite(f)) over_forced.push_back(f);
  }
  s["auto_over_cusparse_geomean"] = over_cs.empty() ? NAN : geomean(over_cs);
  s["auto_over_cusparse_worst"] = worst_cs;
  s["auto_over_cusparse_worst_graph"] = worst;
  s["auto_over_best_forced_geomean"] = over_forced.empty() ? NAN : geomean(over_forced);
  // Storage and conversion per graph (the plan's stats; `dbsparse convert --bfs` prints the same).
  fmt::print("\n{:<40} {:>12} {:>10} {:>10} {:>9} {:>10}\n", "graph (storage)", "device MB", "views B/e", "device B/e",
             "CSR B/e", "convert ms");
  for (const auto& g : graphs) {
    if (g.contains("skipped") || !g.contains("bytes_device")) continue;
    const double e = std::max(1.0, g["entries"].get<double>());
    fmt::print("{:<40} {:>12.1f} {:>10.2f} {:>10.2f} {:>9.2f} {:>10.1f}\n", g["graph"].get<std::string>().substr(0, 40),
               g["bytes_device"].get<double>() / 1e6, g["bytes_format"].get<double>() / e,
               g["bytes_device"].get<double>() / e, g["bytes_csr"].get<double>() / e, g["convert_ms"].get<double>());
  }
  if (!over_cs.empty())
    fmt::print(
        "summary: auto / cuSPARSE-loop GTEPS geomean {:.2f}x over {} graphs (worst {:.2f}x, {}); "
        "auto / better of push-only and pull-only {:.2f}x\n",
        geomean(over_cs), over_cs.size(), worst_cs, worst, geomean(over_forced));
  return s;
}

}  // namespace dbsparse::tools

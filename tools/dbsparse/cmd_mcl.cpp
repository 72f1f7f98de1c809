// `dbsparse mcl GRAPH`: Markov clustering on the GPU by mcl() (expansion by hash SpGEMM, inflation,
// pruning and the convergence measure by templates/apps/mcl.cuh): time per iteration and in total,
// clusters, iterations, converged; the labels checked against mcl_cpu's when the graph is small.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "dbsparse/io.hpp"
#include "dbsparse/spgemm_apps.hpp"
#include "tools/bench/spgemm_apps_check.hpp"
#include "tools/dbsparse/commands.hpp"

namespace dbsparse::cli {
namespace {

// Larger graphs are not checked by default: mcl_cpu runs every expansion on one CPU thread.
constexpr int64_t kCheckNnzLimit = 200'000;

struct MclArgs {
  std::string graph, precision = "f64", json_path, labels_out;
  MclOptions o;
  bool no_self_loops = false, no_check = false;
};

template <class T>
int run_mcl(const MclArgs& a, const NamedMatrix& m) {
  const CsrMatrix<T> g = m.csr.cast<T>();
  MclOptions o = a.o;
  o.add_self_loops = !a.no_self_loops;
  o.check();
  Context ctx;
  fmt::print("device {} ({})\n", ctx.device().name, ctx.device().arch());
  fmt::print(
      "{}: {} vertices, nnz(G) {}; inflation {}, prune below {}, top-k {}, at most {} iterations, tolerance "
      "{}, {}{}{}\n",
      m.name, g.rows, g.nnz(), o.inflation, o.prune_below, o.keep_top_k, o.max_iterations, o.tolerance, a.precision,
      o.weighted ? ", weighted" : "", o.add_self_loops ? "" : ", no self loops");
  // One iteration first, so that the timed run's first iteration does not load the kernels (later
  // iterations may still use a SpGEMM group the first did not).
  MclOptions once = o;
  once.max_iterations = 1;
  const auto w0 = std::chrono::steady_clock::now();
  (void)mcl(ctx, g, once);
  const double warm_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
  fmt::print("  warm-up iteration (kernels loaded): {:.3f} ms\n", warm_ms);

  const auto t0 = std::chrono::steady_clock::now();
  const MclResult r = mcl(ctx, g, o);
  const double total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("  {:>5} {:>11} {:>11} {:>12} {:>11} {:>11}\n", "iter", "ms", "expand ms", "nnz(P*P)", "nnz(P)", "change");
  nlohmann::json trace = nlohmann::json::array();
  double iter_sum = 0;
  for (size_t i = 0; i < r.trace.size(); ++i) {
    const MclIteration& it = r.trace[i];
    iter_sum += it.ms;
    fmt::print("  {:>5} {:>11.3f} {:>11.3f} {:>12} {:>11} {:>11.3e}\n", i + 1, it.ms, it.expand_ms, it.nnz_expanded,
               it.nnz, it.change);
    trace.push_back({{"ms", it.ms},
                     {"expand_ms", it.expand_ms},
                     {"nnz_expanded", it.nnz_expanded},
                     {"nnz", it.nnz},
                     {"change", it.change}});
  }
  std::vector<int64_t> sizes(static_cast<size_t>(r.clusters), 0);
  for (int32_t l : r.labels) ++sizes[l];
  const int64_t largest = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
  const auto singletons = std::count(sizes.begin(), sizes.end(), int64_t{1});
  fmt::print("  total {:.3f} ms ({:.3f} in the iterations; the rest: the start matrix and the labels, on the host)\n",
             total_ms, iter_sum);
  fmt::print("  {} iterations, {}; {} clusters (largest {} vertices, {} singletons)\n", r.iterations,
             r.converged ? "converged" : "not converged (stopped at --max-iter)", r.clusters, largest, singletons);

  nlohmann::json rec = {{"tool", "dbsparse mcl"},
                        {"date", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)))},
                        {"device", ctx.device().name},
                        {"graph", m.name},
                        {"precision", a.precision},
                        {"vertices", g.rows},
                        {"nnz_g", g.nnz()},
                        {"options",
                         {{"inflation", o.inflation},
                          {"prune_below", o.prune_below},
                          {"keep_top_k", o.keep_top_k},
                          {"max_iterations", o.max_iterations},
                          {"tolerance", o.tolerance},
                          {"weighted", o.weighted},
                          {"add_self_loops", o.add_self_loops}}},
                        {"warmup_ms", warm_ms},
                        {"total_ms", total_ms},
                        {"iterations", r.iterations},
                        {"converged", r.converged},
                        {"clusters", r.clusters},
                        {"largest_cluster", largest},
                        {"singletons", singletons},
                        {"trace", trace}};
  int rc = 0;
  if (tools::wants_check(rec, a.no_check, "G", g.nnz(), kCheckNnzLimit, "mcl_cpu")) {
    const MclResult cpu = mcl_cpu(g, o);
    const tools::LabelCheck chk = tools::check_labels(r.labels, cpu.labels);
    rec["check"] = chk.ok ? "ok" : "MISMATCH";
    rec["check_note"] = fmt::format("{}; mcl_cpu: {} clusters, {} iterations, {}", chk.note, cpu.clusters,
                                    cpu.iterations, cpu.converged ? "converged" : "not converged");
    rec["check_differ"] = chk.differ;
    rc = chk.ok ? 0 : 4;
  }
  tools::print_check(rec, "mcl_cpu's labels (CPU)");
  if (!a.labels_out.empty()) {
    write_labels(a.labels_out, r.labels);
    fmt::print("wrote {} labels to {}\n", r.labels.size(), a.labels_out);
  }
  tools::write_record(a.json_path, rec);
  return rc;
}

}  // namespace

Runner add_mcl(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto a = std::make_shared<MclArgs>();
  sub->add_option("graph", a->graph,
                  "A square Matrix Market file (.mtx, .mtx.gz) or a generator string; vertex i is reached from j "
                  "when A(i,j) != 0")
      ->required();
  sub->add_option("--inflation", a->o.inflation, "Inflation power r (>= 1; default 2)");
  sub->add_option("--prune", a->o.prune_below, "Drop entries below this after inflation (in [0, 1); default 1e-4)");
  sub->add_option("--top-k", a->o.keep_top_k, "Keep at most this many entries per column of M (default 50)");
  sub->add_option("--max-iter", a->o.max_iterations, "Stop after this many iterations (default 100)");
  sub->add_option("--tolerance", a->o.tolerance,
                  "Converged when no entry moved by more than this in an iteration (default 1e-6)");
  sub->add_flag("--weighted", a->o.weighted, "Edge weights |A(i,j)| (default: every stored entry weighs 1)");
  sub->add_flag("--no-self-loops", a->no_self_loops, "Do not add a self loop to each vertex");
  sub->add_option("--precision", a->precision, "f64 (default, as mcl_cpu) or f32")
      ->check(CLI::IsMember({"f32", "f64"}));
  sub->add_flag(
      "--no-check", a->no_check,
      fmt::format("Do not compare the labels with mcl_cpu's (done by default when nnz(G) <= {})", kCheckNnzLimit));
  sub->add_option("--labels-out", a->labels_out,
                  "Write the cluster of each vertex, one per line (contract --labels reads it)");
  sub->add_option("--json", a->json_path, "Write the record (options, per-iteration trace, clusters, check) as JSON");
  return [a]() {
    const NamedMatrix m = load_matrix(a->graph);  // InputError names the file and line
    return a->precision == "f32" ? run_mcl<float>(*a, m) : run_mcl<double>(*a, m);
  };
}

}  // namespace dbsparse::cli

// `dbsparse triangles GRAPH`: the triangles of a graph (the undirected graph of A: the pattern of
// A + Aᵀ without loops) by the masked product C<L> = L·L on the GPU, timed from the graph on the
// device (median of --reps), checked against the CPU count when A is small enough.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>
#include <memory>

#include <nlohmann/json.hpp>

#include "dbsparse/graph.hpp"
#include "dbsparse/io.hpp"
#include "dbsparse/spgemm_apps.hpp"
#include "tools/bench/spgemm_apps_check.hpp"
#include "tools/bench/stats.hpp"
#include "tools/bench/timing.hpp"
#include "tools/dbsparse/commands.hpp"

namespace dbsparse::cli {
namespace {

constexpr int64_t kCheckNnzLimit = 20'000'000;  // the CPU count is linear in the products, one thread

struct TriangleArgs {
  std::string graph, json_path;
  bool no_check = false;
  int reps = 20;
};

int run_triangles(const TriangleArgs& a, const NamedMatrix& m) {
  const CsrMatrix<float> g = ones_matrix<float>(symmetrize(pattern_of(m.csr), true));
  Context ctx;
  Stream stream(ctx);
  fmt::print("device {} ({})\n", ctx.device().name, ctx.device().arch());
  fmt::print("{}: {} vertices, {} undirected edges (A + A^T, no loops)\n", m.name, g.rows, g.nnz() / 2);
  const DeviceCsr<float> dg(g);
  int64_t count = 0;
  const double cold_ms = tools::wall_ms([&] { count = triangle_count(ctx, dg.view(), stream.handle()); });
  const double ms = tools::median(
      tools::time_products(a.reps, 10.0, [&] { count = triangle_count(ctx, dg.view(), stream.handle()); }));
  fmt::print(
      "  {} triangles; {:.3f} ms a count (median of up to {}, graph on the device; the first, with the "
      "kernel loaded: {:.3f} ms)\n",
      count, ms, a.reps, cold_ms);
  nlohmann::json rec = {{"tool", "dbsparse triangles"},
                        {"date", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)))},
                        {"device", ctx.device().name},
                        {"matrix", m.name},
                        {"vertices", g.rows},
                        {"edges", g.nnz() / 2},
                        {"triangles", count},
                        {"ms", ms},
                        {"cold_ms", cold_ms}};
  int rc = 0;
  if (tools::wants_check(rec, a.no_check, "A + A^T", g.nnz(), kCheckNnzLimit, "the CPU count")) {
    const int64_t want = triangle_count_cpu(g);
    rec["check"] = want == count ? "ok" : "MISMATCH";
    if (want != count) {
      rec["check_note"] = fmt::format("the CPU counts {}", want);
      rc = 4;  // as the other subcommands' mismatches (tools::record_check)
    }
  }
  tools::print_check(rec, "triangle_count_cpu");
  tools::write_record(a.json_path, rec);
  return rc;
}

}  // namespace

Runner add_triangles(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto a = std::make_shared<TriangleArgs>();
  sub->add_option("graph", a->graph,
                  "Matrix Market file (.mtx, .mtx.gz) or a generator string, e.g. rmat:scale=16,ef=8; taken as the "
                  "undirected graph of A + A^T")
      ->required();
  sub->add_option("--reps", a->reps, "Counts timed; the median is reported")->check(CLI::Range(1, 100000));
  sub->add_flag(
      "--no-check", a->no_check,
      fmt::format("Do not check against the CPU count (done by default when nnz(A + A^T) <= {})", kCheckNnzLimit));
  sub->add_option("--json", a->json_path, "Write the record (count, times, check) as JSON");
  return [a]() {
    const NamedMatrix m = load_matrix(a->graph);  // InputError names the file and line
    if (m.csr.rows != m.csr.cols)
      throw UsageError(
          fmt::format("triangles: {} is {}x{}; a graph's adjacency matrix is square", m.name, m.csr.rows, m.csr.cols));
    return run_triangles(*a, m);
  };
}

}  // namespace dbsparse::cli

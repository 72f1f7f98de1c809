// `dbsparse contract GRAPH`: C = S·G·Sᵀ for a label per vertex (S(labels[j], j) = 1), as in graph
// coarsening, by contract() (S and Sᵀ on the host, two hash SpGEMM products on the GPU); labels
// from a file or drawn at random. Time, GFLOP/s (2 IP of both products), nnz(C), and C checked
// against contract_cpu when the graph is small enough for it.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>

#include <nlohmann/json.hpp>

#include "dbsparse/io.hpp"
#include "dbsparse/spgemm_apps.hpp"
#include "tools/bench/spgemm_apps_check.hpp"
#include "tools/bench/stats.hpp"
#include "tools/dbsparse/commands.hpp"

namespace dbsparse::cli {
namespace {

// Larger graphs are not checked by default: contract_cpu is one CPU thread.
constexpr int64_t kCheckNnzLimit = 2'000'000;

struct ContractArgs {
  std::string graph, labels_path, precision = "f32", json_path;
  int32_t random_k = 0, k = -1;
  uint64_t seed = 1;
  bool no_check = false;
};

double wall_ms(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

template <class T>
int run_contract(const ContractArgs& a, const NamedMatrix& m, const std::vector<int32_t>& labels, int32_t k,
                 const std::string& source) {
  const CsrMatrix<T> g = m.csr.cast<T>();
  std::vector<char> used(static_cast<size_t>(k), 0);
  for (int32_t l : labels) used[l] = 1;
  const auto groups = std::count(used.begin(), used.end(), 1);
  Context ctx;
  fmt::print("device {} ({})\n", ctx.device().name, ctx.device().arch());
  fmt::print("{}: {} vertices, nnz(G) {}, {}; k = {} ({} labels used), {}\n", m.name, g.rows, g.nnz(), source, k,
             groups, a.precision);
  ContractResult<T> r;
  // The first call of the process also loads the kernels (NVRTC or the disk cache): timed apart.
  const double cold_ms = wall_ms([&] { r = contract(ctx, g, labels, k); });
  std::vector<double> warm;
  for (int i = 0; i < 3; ++i) warm.push_back(wall_ms([&] { r = contract(ctx, g, labels, k); }));
  const double ms = tools::median(warm);
  const double gflops = ms > 0 ? static_cast<double>(r.flops) / (ms * 1e6) : 0.0;
  fmt::print("  contract, cold (kernels loaded): {:.3f} ms\n", cold_ms);
  fmt::print(
      "  contract (median of 3; S and S^T built on the host, two one-shot products with their uploads, "
      "host syncs and downloads): {:.3f} ms, {:.2f} GFLOP/s (IP {} = nnz(G) + nnz(S*G))\n",
      ms, gflops, r.flops / 2);
  fmt::print("  nnz(S*G) {}, nnz(C) {}\n", r.nnz_sg, r.c.nnz());
  nlohmann::json rec = {{"tool", "dbsparse contract"},
                        {"date", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)))},
                        {"device", ctx.device().name},
                        {"graph", m.name},
                        {"precision", a.precision},
                        {"vertices", g.rows},
                        {"nnz_g", g.nnz()},
                        {"labels", source},
                        {"k", k},
                        {"labels_used", groups},
                        {"nnz_sg", r.nnz_sg},
                        {"nnz_c", r.c.nnz()},
                        {"flops", r.flops},
                        {"cold_ms", cold_ms},
                        {"ms", ms},
                        {"gflops", gflops}};
  int rc = 0;
  if (tools::wants_check(rec, a.no_check, "G", g.nnz(), kCheckNnzLimit, "the CPU reference")) {
    const tools::SpgemmCheck chk = tools::check_contraction(r.c, g, labels, k, tools::spgemm_tolerance(a.precision));
    rc = tools::record_check(rec, chk);
  }
  tools::print_check(rec, "contract_cpu (CPU)");
  tools::write_record(a.json_path, rec);
  return rc;
}

}  // namespace

Runner add_contract(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto a = std::make_shared<ContractArgs>();
  sub->add_option("graph", a->graph, "A square Matrix Market file (.mtx, .mtx.gz) or a generator string")->required();
  auto* file = sub->add_option("--labels", a->labels_path,
                               "Labels file: one integer in [0, 2^31-1) per line, a line per vertex "
                               "(blank lines and '#' lines skipped)");
  auto* rnd = sub->add_option("--random-labels", a->random_k, "Draw each vertex's label uniformly from [0, K)")
                  ->check(CLI::Range(1, 2147483647));
  file->excludes(rnd);
  sub->add_option("--seed", a->seed, "Seed of --random-labels");
  sub->add_option("--k", a->k, "Labels in [0, k) (default: the largest label + 1, or K of --random-labels)")
      ->check(CLI::Range(0, 2147483647));
  sub->add_option("--precision", a->precision, "f32 (default) or f64")->check(CLI::IsMember({"f32", "f64"}));
  sub->add_flag("--no-check", a->no_check,
                fmt::format("Do not check C against contract_cpu (done by default when nnz(G) <= {})", kCheckNnzLimit));
  sub->add_option("--json", a->json_path, "Write the record (time, GFLOP/s, nnz, check) as JSON");
  return [a]() {
    if (a->labels_path.empty() == (a->random_k == 0))
      throw UsageError("contract: give the labels, either --labels FILE or --random-labels K");
    const NamedMatrix m = load_matrix(a->graph);  // InputError names the file and line
    std::vector<int32_t> labels;
    std::string source;
    int32_t k = a->k;
    if (!a->labels_path.empty()) {
      labels = read_labels(a->labels_path);
      if (labels.size() != static_cast<size_t>(m.csr.rows))
        throw InputError(a->labels_path, 0,
                         fmt::format("{} labels, one per vertex of {}, got {}", m.csr.rows, m.name, labels.size()));
      const int32_t largest = labels.empty() ? -1 : *std::max_element(labels.begin(), labels.end());
      if (k < 0) k = largest + 1;
      if (largest >= k)
        throw UsageError(fmt::format("contract: --k {} but {} has label {}", k, a->labels_path, largest));
      source = fmt::format("labels from {}", a->labels_path);
    } else {
      if (k < 0) k = a->random_k;
      if (k < a->random_k)
        throw UsageError(fmt::format("contract: --k {} is below --random-labels {}", k, a->random_k));
      labels = tools::random_labels(m.csr.rows, a->random_k, a->seed);
      source = fmt::format("random labels in [0, {}), seed {}", a->random_k, a->seed);
    }
    return a->precision == "f64" ? run_contract<double>(*a, m, labels, k, source)
                                 : run_contract<float>(*a, m, labels, k, source);
  };
}

}  // namespace dbsparse::cli

// `dbsparse bench OP [MATRIX...]`: times an op on a suite against cuSPARSE; table and JSON.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "dbsparse/io.hpp"
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
  tools::TimingOptions timing;
  std::string json_path;
};

Runner add_bench(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto a = std::make_shared<BenchArgs>();
  sub->add_option("op", a->op, "The op to time")->required()->check(CLI::IsMember({"spmv"}));
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
  sub->add_option("--reps", a->timing.samples, "Timed samples; the median is reported")
      ->check(CLI::Range(1, 10000));
  sub->add_option("--batch", a->timing.batch, "Back-to-back calls per timed sample")
      ->check(CLI::Range(1, 10000));
  sub->add_option("--warmup", a->timing.warmup, "Untimed calls first")->check(CLI::Range(0, 10000));
  sub->add_option("--json", a->json_path, "Write every row, the device and the command as JSON");
  return [a]() {
    std::vector<std::string> specs = a->matrices;
    if (specs.empty()) {
      if (a->suite != "none") specs = tools::generated_suite(a->suite);
      if (!a->no_shared) {
        auto shared = tools::shared_matrix_files();
        if (shared.empty()) fmt::print("note: no ../shared/matrices found; generated suite only\n");
        specs.insert(specs.end(), shared.begin(), shared.end());
      }
    }
    if (specs.empty()) throw UsageError("no matrices to run: name some, or use --suite quick|full");
    Context ctx;  // throws NoDeviceError with the reason when there is no GPU
    Stream stream(ctx);
    const auto& d = ctx.device();
    double copy_gbs = tools::measure_copy_bandwidth(stream.handle());
    fmt::print("device {} ({}), copy bandwidth {:.0f} GB/s (read+write); {} samples x {} calls\n",
               d.name, d.arch(), copy_gbs, a->timing.samples, a->timing.batch);
    tools::SpmvBenchOptions opt;
    opt.precisions = a->precisions;
    opt.timing = a->timing;
    opt.baselines = !a->no_baselines;
    std::vector<tools::BenchRow> rows;
    tools::print_bench_header();
    for (size_t i = 0; i < specs.size(); ++i) {
      auto t0 = std::chrono::steady_clock::now();
      NamedMatrix m = load_matrix(specs[i]);
      size_t before = rows.size();
      tools::bench_spmv_matrix(ctx, stream, m, opt, copy_gbs, rows);
      for (size_t r = before; r < rows.size(); ++r) tools::print_bench_row(rows[r]);
      auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      fmt::print(stderr, "[{}/{}] {} done in {:.1f} s\n", i + 1, specs.size(), m.name, secs);
    }
    // How the kernels were obtained: the JIT cost a user pays once per process.
    for (const auto& r : rows)
      if (!r.key.empty() && r.kernel_origin != "loaded" && r.kernel_origin != "memory")
        fmt::print("jit: {} from {}: {:.2f} ms + module load {:.2f} ms\n", r.key, r.kernel_origin,
                   r.acquire_ms, r.load_ms);
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
      for (const auto& r : rows) j["results"].push_back(r.to_json());
      std::ofstream(a->json_path) << j.dump(2) << "\n";
      fmt::print("wrote {}\n", a->json_path);
    }
    return 0;
  };
}

}  // namespace dbsparse::cli

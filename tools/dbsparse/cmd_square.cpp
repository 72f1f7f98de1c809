// `dbsparse square MATRIX`: C = A² (A·Aᵀ with --transpose, or when A is not square) by hash
// SpGEMM through plan_square: the first run (plan, symbolic phase, host sync, numeric phase) and
// the steady run (numeric phase only, C's structure reused), GFLOP/s (2 IP / time), nnz(C), and C
// checked against reference::spgemm on the CPU when A is small enough for it.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "dbsparse/io.hpp"
#include "dbsparse/spgemm_apps.hpp"
#include "tools/bench/spgemm_apps_check.hpp"
#include "tools/bench/stats.hpp"
#include "tools/bench/timing.hpp"
#include "tools/dbsparse/commands.hpp"

namespace dbsparse::cli {
namespace {

// Larger matrices are not checked by default: reference::spgemm is one CPU thread.
constexpr int64_t kCheckNnzLimit = 2'000'000;

struct SquareArgs {
  std::string matrix, precision = "f32", json_path;
  bool transpose = false, no_check = false;
  int reps = 20;
};

double wall_ms(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

template <class T>
int run_square(const SquareArgs& a, const NamedMatrix& m) {
  const CsrMatrix<T> am = m.csr.cast<T>();
  const bool t = square_uses_transpose(am, a.transpose);
  const std::string product = t ? "A*A^T" : "A*A";
  std::optional<CsrMatrix<T>> at;
  if (t) at = transpose(am);
  const CsrMatrix<T>& b = t ? *at : am;
  const int64_t flops = spgemm_flops(intermediate_products(am, b));
  auto gflops = [&](double ms) { return ms > 0 ? static_cast<double>(flops) / (ms * 1e6) : 0.0; };

  Context ctx;
  Stream stream(ctx);
  fmt::print("device {} ({})\n", ctx.device().name, ctx.device().arch());
  fmt::print("{}: {} ({}), A {}x{}, nnz(A) {}, IP {} ({:.6f} GFLOP)\n", m.name, product, a.precision, am.rows, am.cols,
             am.nnz(), flops / 2, flops * 1e-9);
  // The first product of the process also loads the kernels (NVRTC or the disk cache): timed apart.
  const double cold_ms = wall_ms([&] {
    SpgemmPlan<T> p = plan_square(ctx, am, a.transpose);
    p.run(stream.handle());
    stream.synchronize();
  });
  // A fresh product: host transpose (A·Aᵀ), analysis and upload, symbolic phase, the host sync
  // that sizes C, numeric phase. The median of three.
  std::optional<SpgemmPlan<T>> plan;
  std::vector<double> first;
  for (int i = 0; i < 3; ++i) {
    plan.reset();
    first.push_back(wall_ms([&] {
      plan.emplace(plan_square(ctx, am, a.transpose));
      plan->run(stream.handle());
      stream.synchronize();
    }));
  }
  const double first_ms = tools::median(first);
  // Steady: the numeric phase alone, event-timed one run a sample.
  tools::TimingOptions topt;
  topt.warmup = 2;
  topt.samples = a.reps;
  topt.batch = 1;
  const tools::TimingResult steady =
      tools::time_on_stream(stream.handle(), topt, [&](int64_t) { plan->run(stream.handle()); });
  const double steady_ms = steady.median_us / 1e3;
  fmt::print("  cold product (kernels loaded): {:.3f} ms\n", cold_ms);
  fmt::print("  first run (plan, symbolic, host sync, numeric; median of 3): {:.3f} ms, {:.2f} GFLOP/s\n", first_ms,
             gflops(first_ms));
  fmt::print("  steady run (numeric only; median of {}): {:.3f} ms, {:.2f} GFLOP/s\n", a.reps, steady_ms,
             gflops(steady_ms));
  fmt::print("  nnz(C) {}, {} row(s) overflowed to a global table\n", plan->nnz(), plan->overflow_rows());

  nlohmann::json rec = {{"tool", "dbsparse square"},
                        {"date", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)))},
                        {"device", ctx.device().name},
                        {"matrix", m.name},
                        {"precision", a.precision},
                        {"product", product},
                        {"rows", am.rows},
                        {"cols", am.cols},
                        {"nnz_a", am.nnz()},
                        {"ip", flops / 2},
                        {"flops", flops},
                        {"nnz_c", plan->nnz()},
                        {"cold_ms", cold_ms},
                        {"first_ms", first_ms},
                        {"first_gflops", gflops(first_ms)},
                        {"steady_ms", steady_ms},
                        {"steady_gflops", gflops(steady_ms)},
                        {"steady_samples", a.reps}};
  int rc = 0;
  if (tools::wants_check(rec, a.no_check, "A", am.nnz(), kCheckNnzLimit, "the CPU reference")) {
    const CsrMatrix<T> c = plan->download();
    const tools::SpgemmCheck chk = tools::check_product(c, am, b, tools::spgemm_tolerance(a.precision));
    rc = tools::record_check(rec, chk);
  }
  tools::print_check(rec, "reference::spgemm (CPU)");
  tools::write_record(a.json_path, rec);
  return rc;
}

}  // namespace

Runner add_square(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto a = std::make_shared<SquareArgs>();
  sub->add_option("matrix", a->matrix,
                  "Matrix Market file (.mtx, .mtx.gz) or a generator string, e.g. rmat:scale=16,ef=8")
      ->required();
  sub->add_flag("--transpose", a->transpose, "C = A·Aᵀ (Aᵀ built on the host); the default for a non-square A");
  sub->add_option("--precision", a->precision, "f32 (default) or f64")->check(CLI::IsMember({"f32", "f64"}));
  sub->add_option("--reps", a->reps, "Steady runs timed; the median is reported")->check(CLI::Range(1, 100000));
  sub->add_flag(
      "--no-check", a->no_check,
      fmt::format("Do not check C against the CPU reference (done by default when nnz(A) <= {})", kCheckNnzLimit));
  sub->add_option("--json", a->json_path, "Write the record (times, GFLOP/s, nnz(C), check) as JSON");
  return [a]() {
    const NamedMatrix m = load_matrix(a->matrix);  // InputError names the file and line
    return a->precision == "f64" ? run_square<double>(*a, m) : run_square<float>(*a, m);
  };
}

}  // namespace dbsparse::cli

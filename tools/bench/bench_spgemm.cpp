#include "tools/bench/bench_spgemm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include "runtime/gpu/cuda_driver.hpp"
#include "tools/baselines/cusparse_pipelines.hpp"
#include "tools/baselines/cusparse_spgemm.hpp"
#include "tools/bench/random.hpp"
#include "tools/bench/spgemm_apps_check.hpp"
#include "tools/bench/stats.hpp"

namespace dbsparse::tools {
namespace {

// Past this many products the table-access count (a single-threaded CPU pass) is left out.
constexpr int64_t kAccessesMaxProducts = 200'000'000;

// The steady run: a sample holds about kBatchMs of runs, and the samples about kSteadyBudgetMs, so
// that a product of seconds is not repeated hundreds of times.
constexpr double kBatchMs = 20;
constexpr double kSteadyBudgetMs = 2000;

// Free device memory now (cuMemGetInfo): the difference across an implementation's allocations is
// what it took, allocation granularity and library workspaces included.
int64_t device_free_bytes() {
  size_t free = 0, total = 0;
  DBS_CU(cuMemGetInfo(&free, &total));
  return static_cast<int64_t>(free);
}

template <class T>
std::vector<T> abs_values(const std::vector<T>& v) {
  std::vector<T> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = std::fabs(v[i]);
  return out;
}

double mb(int64_t bytes) { return static_cast<double>(bytes) / 1e6; }

std::string short_name(const std::string& s, size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 2) + "..";
}

double num(const nlohmann::json& j, const char* key) { return j.contains(key) ? j.at(key).get<double>() : 0.0; }

void print_row(const nlohmann::json& r) {
  const std::string name =
      r.at("product") == "A*A" ? r.at("matrix").get<std::string>() : r.at("matrix").get<std::string>() + " (A*A^T)";
  const double first = num(r, "dbsparse_first_ms"), steady = num(r, "dbsparse_steady_ms"), cs = num(r, "cusparse_ms");
  const double flops = num(r, "flops");
  auto gf = [&](double ms) { return ms > 0 ? flops / (ms * 1e6) : 0.0; };
  auto ms_text = [](double ms) { return ms > 0 ? fmt::format("{:.3f}", ms) : std::string("-"); };
  const int64_t nnz_c = r.contains("nnz_c")            ? r.at("nnz_c").get<int64_t>()
                        : r.contains("cusparse_nnz_c") ? r.at("cusparse_nnz_c").get<int64_t>()
                                                       : -1;
  std::string check = r.value("check", std::string("-"));
  if (r.contains("cusparse_alg")) check += "; " + r.at("cusparse_alg").get<std::string>();
  fmt::print(
      "{:<34} {:>4} {:>9} {:>10} {:>12} {:>11} {:>10} {:>10} {:>10} {:>7} {:>8.2f} {:>8.2f} {:>8.2f} {:>8.0f} "
      "{:>8.0f}  {}\n",
      short_name(name, 34), r.at("precision").get<std::string>(), r.at("rows").get<int64_t>(),
      r.at("nnz_a").get<int64_t>(), r.at("ip").get<int64_t>(), nnz_c >= 0 ? fmt::format("{}", nnz_c) : "-",
      ms_text(first), ms_text(steady), ms_text(cs), first > 0 && cs > 0 ? fmt::format("{:.2f}", cs / first) : "-",
      gf(first), gf(steady), gf(cs), mb(r.value("dbsparse_peak_bytes", int64_t{0})),
      mb(r.value("cusparse_peak_bytes", int64_t{0})), check);
  for (const char* key : {"dbsparse_error", "cusparse_error"})
    if (r.contains(key)) fmt::print("  {}: {}\n", key, r.at(key).get<std::string>());
  if (r.contains("cusparse_note") && !r.contains("cusparse_error"))
    fmt::print("  cusparse_note: {}\n", r.at("cusparse_note").get<std::string>());
  if (r.contains("dbsparse_accesses_per_product"))
    fmt::print("  table accesses a product (numeric phase, CPU spec of the kernels): {:.3f}\n",
               r.at("dbsparse_accesses_per_product").get<double>());
  if (r.contains("dbsparse_fresh_parts_ms")) {
    const auto& f = r.at("dbsparse_fresh_parts_ms");
    if (r.value("dbsparse_one_pass", false))
      fmt::print(
          "  fresh parts ms (medians; one pass): plan {:.3f} (analysis + wait {:.3f}), numeric to scratch + "
          "wait {:.3f}, C alloc {:.3f}, copy launch {:.3f}, then the sync {:.3f}\n",
          num(f, "plan"), num(f, "analysis_wait"), num(f, "symbolic_wait"), num(f, "alloc_c"), num(f, "numeric_launch"),
          num(f, "rest"));
    else
      fmt::print(
          "  fresh parts ms (medians): plan {:.3f} (analysis + wait {:.3f}), symbolic + wait {:.3f}, C alloc "
          "{:.3f}, numeric launch {:.3f}, then the sync {:.3f}\n",
          num(f, "plan"), num(f, "analysis_wait"), num(f, "symbolic_wait"), num(f, "alloc_c"), num(f, "numeric_launch"),
          num(f, "rest"));
  }
}

// A product line's check columns: C against cuSPARSE's (record_check's fields and check_ok), or
// why there is none ("-" without baselines).
template <class T>
void record_product_check(nlohmann::json& rec, bool baselines, bool have_ours, bool have_theirs,
                          const CsrMatrix<T>& ours, CsrMatrix<T> theirs, const CsrMatrix<T>& scale,
                          const std::string& precision) {
  if (!baselines) {
    rec["check"] = "-";
  } else if (!have_ours || !have_theirs) {
    rec["check"] = have_ours ? "no cuSPARSE C" : "no dbsparse C";
    rec["check_ok"] = false;
  } else {
    const SpgemmCheck c = compare_spgemm(ours, std::move(theirs), scale, spgemm_tolerance(precision));
    record_check(rec, c);
    rec["check_ok"] = c.ok;
  }
}

template <class T>
nlohmann::json bench_one(Context& ctx, const Stream& stream, const NamedMatrix& m, bool generated,
                         const std::string& precision, const SpgemmBenchOptions& opt) {
  void* h = stream.handle();
  const CsrMatrix<T> a = m.csr.cast<T>();
  const bool square = a.rows == a.cols && !opt.transpose_b;  // B = A
  CsrMatrix<T> at;
  if (!square) at = transpose(a);
  const CsrMatrix<T>& b = square ? a : at;
  const std::vector<int64_t> ips = intermediate_products(a, b);
  const int64_t flops = spgemm_flops(ips);
  nlohmann::json rec;
  rec["matrix"] = m.name;
  rec["precision"] = precision;
  rec["generated"] = generated;
  rec["product"] = square ? "A*A" : "A*A^T";
  rec["rows"] = a.rows;
  rec["cols"] = a.cols;
  rec["nnz_a"] = a.nnz();
  rec["nnz_b"] = b.nnz();
  rec["ip"] = flops / 2;
  rec["flops"] = flops;
  rec["nnz_c_upper_bound"] = spgemm_nnz_upper_bound(ips, b.cols);
  auto gflops = [&](double ms) { return ms > 0 ? static_cast<double>(flops) / (ms * 1e6) : 0.0; };
  SpgemmOptions so;
  so.config = opt.config;
  so.one_pass = opt.one_pass;
  const int reps = std::max(1, opt.timing.samples);

  CsrMatrix<T> ours, scale;
  bool have_ours = false;
  try {
    // A and B on the device before any timing, as cuSPARSE's are: the fresh product is planned from
    // device CSR (read in place), so neither side pays for uploads.
    const DeviceCsr<T> da(a);
    std::optional<DeviceCsr<T>> db_own;
    if (!square) db_own.emplace(b);
    const DeviceCsrView<T> va = da.view(), vb = square ? va : db_own->view();
    const int64_t input_bytes = da.device_bytes() + (square ? 0 : db_own->device_bytes());
    // The first plan for a matrix also pays for kernels this process has not loaded yet (NVRTC or
    // the disk cache); the timed products after it do not.
    rec["dbsparse_cold_ms"] = wall_ms([&] {
      SpgemmPlan<T> p = plan_spgemm(ctx, va, vb, so, h);
      p.run(h);
      stream.synchronize();
    });
    std::optional<SpgemmPlan<T>> plan;
    std::vector<double> first;
    std::array<std::vector<double>, 6> parts;  // plan, analysis_wait, symbolic_wait, alloc_c, numeric_launch, rest
    int64_t measured = 0;
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) {
      plan.reset();
      const int64_t before = i == 0 ? device_free_bytes() : 0;
      // GPU analysis (one wait), symbolic phase and C's row_ptr (the second wait), numeric phase.
      first.push_back(wall_ms([&] {
        plan.emplace(plan_spgemm(ctx, va, vb, so, h));
        plan->run(h);
        stream.synchronize();
      }));
      const SpgemmFreshTimes& ft = plan->fresh_times();
      const double known[] = {ft.plan_ms, ft.analysis_wait_ms, ft.symbolic_wait_ms, ft.alloc_c_ms,
                              ft.numeric_launch_ms};
      for (int q = 0; q < 5; ++q) parts[q].push_back(known[q]);
      parts[5].push_back(first.back() - ft.plan_ms - ft.symbolic_wait_ms - ft.alloc_c_ms - ft.numeric_launch_ms);
      if (i == 0) measured = before - device_free_bytes();  // nothing is freed before the plan is
      if (seconds_since(t0) > opt.product_budget_s) break;
    }
    const double first_ms = median(first);
    rec["dbsparse_first_ms"] = first_ms;
    rec["dbsparse_first_runs"] = first.size();
    // Where the fresh product's wall clock goes (SpgemmFreshTimes), each part's median.
    rec["dbsparse_fresh_parts_ms"] = {{"plan", median(parts[0])},           {"analysis_wait", median(parts[1])},
                                      {"symbolic_wait", median(parts[2])},  {"alloc_c", median(parts[3])},
                                      {"numeric_launch", median(parts[4])}, {"rest", median(parts[5])}};
    rec["dbsparse_first_gflops"] = gflops(first_ms);
    rec["nnz_c"] = plan->nnz();
    rec["dbsparse_overflow_rows"] = plan->overflow_rows();
    rec["dbsparse_global_slots"] = plan->global_slots();
    nlohmann::json groups = nlohmann::json::array();
    for (int g = 0; g < kSpgemmGroups; ++g) groups.push_back(plan->grouping().count(g));
    rec["dbsparse_group_rows"] = groups;
    // Table slots read a product (OpSparse's measure), from the kernels' CPU spec with the plan's
    // config: one CPU pass over the products, so only up to kAccessesMaxProducts.
    if (rec.at("ip").get<int64_t>() <= kAccessesMaxProducts) {
      const HashSpgemmResult<T> spec = hash_spgemm_cpu(a, b, plan->config());
      rec["dbsparse_table_accesses"] = spec.table_accesses;
      rec["dbsparse_accesses_per_product"] =
          static_cast<double>(spec.table_accesses) / static_cast<double>(std::max<int64_t>(plan->products(), 1));
    }
    // The plan reads A and B in place: they count as cuSPARSE's inputs do.
    rec["dbsparse_input_bytes"] = input_bytes;
    rec["dbsparse_device_bytes"] = plan->device_bytes() + input_bytes;
    rec["dbsparse_measured_bytes"] = measured + input_bytes;
    // The pool keeps what plans free, so `measured` (free memory before and after) can miss the
    // first run's scratch: the plan's own count of its peak covers it.
    rec["dbsparse_peak_bytes"] = std::max(plan->peak_device_bytes(), measured) + input_bytes;
    rec["dbsparse_one_pass"] = plan->fresh_times().one_pass;

    // Steady state: the numeric phase alone, as after values_changed(). Batches shrink for long runs.
    const double one_ms = std::max(wall_ms([&] {
                                     plan->run(h);
                                     stream.synchronize();
                                   }),
                                   1e-3);
    TimingOptions t = opt.timing;
    t.warmup = std::min(t.warmup, std::max(1, static_cast<int>(kBatchMs / one_ms)));
    t.batch = static_cast<int>(std::clamp(kBatchMs / one_ms, 1.0, static_cast<double>(std::max(t.batch, 1))));
    t.samples = static_cast<int>(std::clamp(kSteadyBudgetMs / (one_ms * t.batch),
                                            static_cast<double>(std::min(3, reps)), static_cast<double>(reps)));
    const TimingResult steady = time_on_stream(h, t, [&](int64_t) { plan->run(h); });
    rec["dbsparse_steady_ms"] = steady.median_us / 1e3;
    rec["dbsparse_steady_gflops"] = gflops(steady.median_us / 1e3);
    rec["dbsparse_steady_timing"] = {{"samples", t.samples},
                                     {"batch", t.batch},
                                     {"warmup", t.warmup},
                                     {"min_ms", steady.min_us / 1e3},
                                     {"max_ms", steady.max_us / 1e3}};
    ours = plan->download();
    if (opt.baselines) {
      // sum |a||b| per entry of C for the check: the same plan on |A| and |B|.
      plan->values_changed(abs_values(a.values), abs_values(b.values));
      plan->run(h);
      scale = plan->download();
    }
    plan.reset();
    have_ours = true;
    // From host CSR (uploads of A and B included), timed once: what planning from the host adds.
    rec["dbsparse_from_host_ms"] = wall_ms([&] {
      SpgemmPlan<T> p = plan_spgemm(ctx, a, b, so);
      p.run(h);
      stream.synchronize();
    });
    // What a caller of the one-shot spgemm() waits for: a plan from host CSR, one run and C
    // downloaded to the host. Timed once.
    rec["dbsparse_oneshot_ms"] = wall_ms([&] { (void)spgemm(ctx, a, b, so); });
  } catch (const Error& e) {
    rec["dbsparse_error"] = e.what();
  }

  CsrMatrix<T> theirs;
  bool have_theirs = false;
  if (opt.baselines) {
    try {
      const int64_t before = device_free_bytes();
      CusparseSpgemm<T> cs(a, b, h);
      const bool ok = cs.prepare();
      const int64_t measured = before - device_free_bytes();  // buffers and C held: the peak of the sequence
      rec["cusparse_alg"] = to_string(cs.alg());
      if (!cs.why().empty()) rec["cusparse_note"] = cs.why();
      if (!ok) {
        rec["cusparse_alg"] = "failed";
        rec["cusparse_error"] = cs.why();
      } else {
        const std::vector<double> ms = time_products(reps, opt.product_budget_s, [&] { cs.run(); });
        const double cs_ms = median(ms);
        rec["cusparse_ms"] = cs_ms;
        rec["cusparse_runs"] = ms.size();
        rec["cusparse_gflops"] = gflops(cs_ms);
        rec["cusparse_nnz_c"] = cs.nnz();
        const int64_t counted = cs.input_bytes() + cs.buffer_bytes() + cs.c_bytes();
        rec["cusparse_bytes"] = {{"inputs", cs.input_bytes()}, {"buffers", cs.buffer_bytes()}, {"c", cs.c_bytes()}};
        rec["cusparse_device_bytes"] = counted;
        rec["cusparse_measured_bytes"] = measured;
        rec["cusparse_peak_bytes"] = std::max(counted, measured);
        theirs = cs.download();
        have_theirs = true;
      }
    } catch (const Error& e) {
      rec["cusparse_error"] = e.what();
    }
  }

  record_product_check(rec, opt.baselines, have_ours, have_theirs, ours, std::move(theirs), scale, precision);
  if (rec.contains("dbsparse_first_ms") && rec.contains("cusparse_ms")) {
    rec["speedup_first"] = num(rec, "cusparse_ms") / num(rec, "dbsparse_first_ms");
    if (num(rec, "dbsparse_steady_ms") > 0)
      rec["speedup_steady"] = num(rec, "cusparse_ms") / num(rec, "dbsparse_steady_ms");
  }
  print_row(rec);
  if (rec.contains("check_note") && !rec.at("check_ok").get<bool>())
    fmt::print("  MISMATCH: {}\n", rec.at("check_note").get<std::string>());
  std::fflush(stdout);
  return rec;
}

// Reps of a whole pipeline: the median of up to `reps` wall times, stopping after `budget_s`.
template <class F>
double median_ms(int reps, double budget_s, F&& run, int* runs) {
  const std::vector<double> ms = time_products(reps, budget_s, std::forward<F>(run));
  *runs = static_cast<int>(ms.size());
  return median(ms);
}

// The contraction rows' labels (k recorded with them in rec).
std::vector<int32_t> contract_bench_labels(int32_t n, int32_t k, nlohmann::json& rec) {
  rec["k"] = k;
  rec["labels"] = "uniform random in [0, k), seed 1";
  return contract_labels(n, k);
}

// sum |G(i, j)| per entry of C (S's entries are 1): the check's tolerance scale.
template <class T>
CsrMatrix<T> contraction_scale(Context& ctx, const CsrMatrix<T>& g, std::span<const int32_t> labels, int32_t k) {
  CsrMatrix<T> abs_g = g;
  for (auto& v : abs_g.values) v = std::fabs(v);
  return contract(ctx, abs_g, labels, k).c;
}

nlohmann::json contract_parts(const ContractTimes& t) {
  return {{"upload", t.upload_ms}, {"factors", t.factors_ms}, {"plan_sg", t.plan_sg_ms},  {"run_sg", t.run_sg_ms},
          {"plan_c", t.plan_c_ms}, {"run_c", t.run_c_ms},     {"download", t.download_ms}};
}

template <class T>
nlohmann::json bench_contract(Context& ctx, const Stream& stream, const CsrMatrix<T>& g, nlohmann::json rec,
                              const std::string& precision, const SpgemmBenchOptions& opt) {
  const int32_t k = contract_k_for(g.rows, opt.contract_k);
  const std::vector<int32_t> labels = contract_bench_labels(g.rows, k, rec);
  const int reps = std::max(1, opt.app_reps);
  ContractResult<T> ours;
  CsrMatrix<T> scale;
  bool have_ours = false;
  try {
    (void)contract(ctx, g, labels, k);  // warm-up: loads the kernels
    int runs = 0;
    rec["dbsparse_ms"] = median_ms(
        reps, opt.product_budget_s, [&] { ours = contract(ctx, g, labels, k); }, &runs);
    rec["dbsparse_runs"] = runs;
    rec["nnz_sg"] = ours.nnz_sg;
    rec["nnz_c"] = ours.c.nnz();
    rec["flops"] = ours.flops;
    rec["dbsparse_parts_ms"] = contract_parts(ours.times);  // of the last timed contract()
    if (opt.baselines) scale = contraction_scale(ctx, g, labels, k);
    have_ours = true;
  } catch (const Error& e) {
    rec["dbsparse_error"] = e.what();
  }
  CusparseContractResult<T> theirs;
  bool have_theirs = false;
  if (opt.baselines) {
    try {
      CusparseHandle handle;
      void* h = stream.handle();
      (void)cusparse_contract(ctx, g, labels, k, h, handle.get());  // warm-up
      int runs = 0;
      rec["cusparse_ms"] = median_ms(
          reps, opt.product_budget_s, [&] { theirs = cusparse_contract(ctx, g, labels, k, h, handle.get()); }, &runs);
      rec["cusparse_runs"] = runs;
      rec["cusparse_algs"] = theirs.algs;
      if (!theirs.note.empty()) rec["cusparse_note"] = theirs.note;
      rec["cusparse_nnz_sg"] = theirs.nnz_sg;
      have_theirs = true;
    } catch (const Error& e) {
      rec["cusparse_error"] = e.what();
    }
  }
  record_product_check(rec, opt.baselines, have_ours, have_theirs, ours.c, std::move(theirs.c), scale, precision);
  return rec;
}

// Contraction inside a GPU pipeline: G and the labels already on the device (uploads untimed), C
// left there; each timed run ends with a wait for the stream and frees the previous run's result.
// C is downloaded once, untimed, for the check.
template <class T>
nlohmann::json bench_contract_device(Context& ctx, const Stream& stream, const CsrMatrix<T>& g, nlohmann::json rec,
                                     const std::string& precision, const SpgemmBenchOptions& opt) {
  const int32_t k = contract_k_for(g.rows, opt.contract_k);
  const std::vector<int32_t> labels = contract_bench_labels(g.rows, k, rec);
  const int reps = std::max(1, opt.app_reps);
  void* h = stream.handle();
  const DeviceCsr<T> dg(g);
  const DeviceBuffer<int32_t> dl_buf = labels.empty() ? DeviceBuffer<int32_t>(1) : DeviceBuffer<int32_t>(labels);
  const auto* dl = reinterpret_cast<const int32_t*>(dl_buf.ptr());
  CsrMatrix<T> ours_c, theirs_c, scale;
  bool have_ours = false, have_theirs = false;
  try {
    std::optional<DeviceContraction<T>> ours;
    ours.emplace(contract(ctx, dg.view(), dl, k, h));  // warm-up: loads the kernels
    int runs = 0;
    rec["dbsparse_ms"] = median_ms(
        reps, opt.product_budget_s,
        [&] {
          ours.reset();
          ours.emplace(contract(ctx, dg.view(), dl, k, h));  // waits for its stream
        },
        &runs);
    rec["dbsparse_runs"] = runs;
    rec["nnz_sg"] = ours->sg.nnz();
    rec["nnz_c"] = ours->c.nnz();
    rec["dbsparse_parts_ms"] = contract_parts(ours->times);
    ours_c = ours->c.download();
    if (opt.baselines) scale = contraction_scale(ctx, g, labels, k);
    have_ours = true;
  } catch (const Error& e) {
    rec["dbsparse_error"] = e.what();
  }
  if (opt.baselines) {
    try {
      CusparseHandle handle;
      std::optional<CusparseDeviceContraction<T>> theirs;
      theirs.emplace(cusparse_contract(ctx, dg.view(), dl, k, h, handle.get()));  // warm-up
      int runs = 0;
      rec["cusparse_ms"] = median_ms(
          reps, opt.product_budget_s,
          [&] {
            theirs.reset();
            theirs.emplace(cusparse_contract(ctx, dg.view(), dl, k, h, handle.get()));  // prepare() waits
          },
          &runs);
      rec["cusparse_runs"] = runs;
      rec["cusparse_algs"] = theirs->algs;
      if (!theirs->note.empty()) rec["cusparse_note"] = theirs->note;
      rec["cusparse_nnz_sg"] = theirs->sg->nnz();
      theirs_c = theirs->c->download();
      have_theirs = true;
    } catch (const Error& e) {
      rec["cusparse_error"] = e.what();
    }
  }
  record_product_check(rec, opt.baselines, have_ours, have_theirs, ours_c, std::move(theirs_c), scale, precision);
  return rec;
}

// Of the last timed run.
nlohmann::json mcl_parts(const MclResult& r) {
  const auto& t = r.times;
  return {{"start", t.start_ms}, {"iterations", t.iterations_ms}, {"labels", t.labels_ms}};
}

template <class T>
nlohmann::json bench_mcl(Context& ctx, const CsrMatrix<T>& g, nlohmann::json rec, const SpgemmBenchOptions& opt) {
  const MclOptions o = bench_mcl_options(opt.mcl_iters);
  rec["mcl_options"] = {{"max_iterations", o.max_iterations}, {"tolerance", o.tolerance},
                        {"inflation", o.inflation},           {"prune_below", o.prune_below},
                        {"keep_top_k", o.keep_top_k},         {"add_self_loops", o.add_self_loops}};
  const int reps = std::max(1, opt.app_reps);
  // The sum of the iterations' own times (MclIteration::ms: expansion and elementwise steps, P on
  // the device), per iteration; the whole call (mcl_start, upload, labels) is the *_ms field.
  auto per_iter = [](const MclResult& r) {
    double sum = 0;
    for (const auto& it : r.trace) sum += it.ms;
    return r.iterations > 0 ? sum / r.iterations : 0.0;
  };
  auto expand_ms = [](const MclResult& r) {
    double sum = 0;
    for (const auto& it : r.trace) sum += it.expand_ms;
    return sum;
  };
  MclResult ours, theirs;
  bool have_ours = false, have_theirs = false;
  try {
    (void)mcl(ctx, g, o);  // warm-up: loads the kernels
    std::vector<double> iter_ms;
    int runs = 0;
    rec["dbsparse_ms"] = median_ms(
        reps, opt.product_budget_s,
        [&] {
          ours = mcl(ctx, g, o);
          iter_ms.push_back(per_iter(ours));
        },
        &runs);
    rec["dbsparse_runs"] = runs;
    rec["dbsparse_iter_ms"] = median(iter_ms);
    rec["dbsparse_expand_ms"] = expand_ms(ours);
    rec["dbsparse_iterations"] = ours.iterations;
    rec["dbsparse_parts_ms"] = mcl_parts(ours);
    rec["dbsparse_clusters"] = ours.clusters;
    nlohmann::json nnz = nlohmann::json::array();
    for (const auto& it : ours.trace) nnz.push_back({{"expanded", it.nnz_expanded}, {"pruned", it.nnz}});
    rec["dbsparse_nnz_per_iteration"] = nnz;
    have_ours = true;
  } catch (const Error& e) {
    rec["dbsparse_error"] = e.what();
  }
  if (opt.baselines) {
    try {
      CusparseHandle handle;
      CusparseMclStats stats;
      // Warm-up, untimed: loads the library's MCL kernels and cuSPARSE's, and checks that every Q
      // cuSPARSE returns has sorted rows (mcl_prune needs them; timed runs do not check again).
      (void)cusparse_mcl(ctx, g, o, handle.get(), /*check_sorted=*/true, &stats);
      std::vector<double> iter_ms;
      int runs = 0;
      rec["cusparse_ms"] = median_ms(
          reps, opt.product_budget_s,
          [&] {
            theirs = cusparse_mcl(ctx, g, o, handle.get(), /*check_sorted=*/false);
            iter_ms.push_back(per_iter(theirs));
          },
          &runs);
      rec["cusparse_runs"] = runs;
      rec["cusparse_iter_ms"] = median(iter_ms);
      rec["cusparse_expand_ms"] = expand_ms(theirs);
      rec["cusparse_iterations"] = theirs.iterations;
      rec["cusparse_parts_ms"] = mcl_parts(theirs);
      rec["cusparse_clusters"] = theirs.clusters;
      rec["cusparse_alg3_products"] = stats.alg3_products;
      rec["cusparse_algs"] = stats.alg3_products == 0 ? "cusparse-default" : "cusparse-alg3 on some products";
      if (!stats.note.empty()) rec["cusparse_note"] = stats.note;
      have_theirs = true;
    } catch (const Error& e) {
      rec["cusparse_error"] = e.what();
    }
  }
  if (!opt.baselines) {
    rec["check"] = "-";
  } else if (!have_ours || !have_theirs) {
    rec["check"] = have_ours ? "no cuSPARSE labels" : "no dbsparse labels";
    rec["check_ok"] = false;
  } else {
    rec["check_ok"] = ours.iterations == theirs.iterations && ours.labels == theirs.labels;
    rec["check"] = rec["check_ok"].get<bool>() ? "ok" : "MISMATCH";
    if (ours.iterations != theirs.iterations) {
      rec["check_note"] = fmt::format("{} iterations against {}", ours.iterations, theirs.iterations);
    } else {
      size_t differ = 0;
      for (size_t i = 0; i < ours.labels.size() && i < theirs.labels.size(); ++i)
        differ += ours.labels[i] != theirs.labels[i];
      rec["check_note"] = differ == 0 && ours.labels.size() == theirs.labels.size()
                              ? fmt::format("labels equal ({} clusters)", ours.clusters)
                              : fmt::format("{} of {} labels differ ({} clusters against {})", differ,
                                            ours.labels.size(), ours.clusters, theirs.clusters);
    }
  }
  return rec;
}

void print_app_line(const nlohmann::json& r) {
  auto ms_text = [&](const char* key) {
    return r.contains(key) ? fmt::format("{:.3f}", num(r, key)) : std::string("-");
  };
  const std::string app = r.at("app").get<std::string>();
  const std::string what =
      app == "triangles" ? fmt::format("triangles {} (nnz(L) {}, products {})", r.value("triangles", int64_t{-1}),
                                       r.value("nnz_l", int64_t{-1}), r.value("products", int64_t{-1}))
      : app != "mcl" ? fmt::format("{} k={} nnz(C) {}", app, r.at("k").get<int32_t>(), r.value("nnz_c", int64_t{-1}))
                     : fmt::format("mcl {} it, per it dbs {} ms, cusp {} ms", r.value("dbsparse_iterations", 0),
                                   ms_text("dbsparse_iter_ms"), ms_text("cusparse_iter_ms"));
  fmt::print("  {}: dbsparse {} ms, cuSPARSE {} ms{}, x {}  {}{}\n", what, ms_text("dbsparse_ms"),
             ms_text("cusparse_ms"),
             r.contains("cusparse_algs") ? " (" + r.at("cusparse_algs").get<std::string>() + ")" : "",
             r.contains("speedup") ? fmt::format("{:.2f}", num(r, "speedup")) : "-", r.value("check", std::string("-")),
             r.contains("check_note") ? "; " + r.at("check_note").get<std::string>() : "");
  for (const char* side : {"dbsparse", "cusparse"}) {
    const std::string key = std::string(side) + "_parts_ms";
    if (!r.contains(key)) continue;
    std::string parts;
    for (const auto& [name, ms] : r.at(key).items())
      parts += fmt::format("{}{} {:.3f}", parts.empty() ? "" : ", ", name, ms.get<double>());
    fmt::print("    {} parts ms (last run): {}\n", side, parts);
  }
  for (const char* key : {"dbsparse_error", "cusparse_error"})
    if (r.contains(key)) fmt::print("    {} {}: {}\n", app, key, r.at(key).get<std::string>());
}

template <class T>
nlohmann::json bench_apps(Context& ctx, const Stream& stream, const NamedMatrix& m, bool generated,
                          const std::string& precision, const SpgemmBenchOptions& opt) {
  nlohmann::json out = nlohmann::json::object();
  if (!opt.apps || m.csr.rows != m.csr.cols) return out;
  const CsrMatrix<T> g = m.csr.cast<T>();
  nlohmann::json base;
  base["matrix"] = m.name;
  base["precision"] = precision;
  base["generated"] = generated;
  base["rows"] = g.rows;
  base["nnz_a"] = g.nnz();
  auto finish = [&](nlohmann::json r) {
    if (r.contains("dbsparse_ms") && r.contains("cusparse_ms") && num(r, "dbsparse_ms") > 0)
      r["speedup"] = num(r, "cusparse_ms") / num(r, "dbsparse_ms");
    print_app_line(r);
    return r;
  };
  nlohmann::json c = base;
  c["app"] = "contract";
  out["contract"] = finish(bench_contract<T>(ctx, stream, g, std::move(c), precision, opt));
  nlohmann::json cd = base;
  cd["app"] = "contract_device";
  out["contract_device"] = finish(bench_contract_device<T>(ctx, stream, g, std::move(cd), precision, opt));
  nlohmann::json t = base;
  t["app"] = "triangles";
  out["triangles"] = finish(bench_triangles<T>(ctx, stream, g, std::move(t), opt));
  if (opt.mcl_iters > 0) {
    nlohmann::json r = base;
    r["app"] = "mcl";
    out["mcl"] = finish(bench_mcl<T>(ctx, g, std::move(r), opt));
  }
  std::fflush(stdout);
  return out;
}

}  // namespace

int32_t contract_k_for(int32_t rows, int32_t requested) {
  if (requested < 0) throw UsageError(fmt::format("--contract-k must be >= 0 (0: rows / 64), got {}", requested));
  if (requested > 0) return requested;
  return std::max<int32_t>(1, rows / 64);
}

std::vector<int32_t> contract_labels(int32_t n, int32_t k, uint64_t seed) {
  if (k < 1) throw UsageError(fmt::format("contract_labels: k must be >= 1, got {}", k));
  Lcg rng{seed};
  std::vector<int32_t> labels(static_cast<size_t>(std::max(n, 0)));
  for (auto& l : labels) l = static_cast<int32_t>(rng.below(static_cast<uint32_t>(k)));
  return labels;
}

MclOptions bench_mcl_options(int iters) {
  if (iters < 1) throw UsageError(fmt::format("bench_mcl_options: iterations must be >= 1, got {}", iters));
  MclOptions o;
  o.max_iterations = iters;
  o.tolerance = 0;
  return o;
}

nlohmann::json bench_spgemm_apps_matrix(Context& ctx, const Stream& stream, const NamedMatrix& m, bool generated,
                                        const std::string& precision, const SpgemmBenchOptions& opt) {
  if (precision == "f32") return bench_apps<float>(ctx, stream, m, generated, precision, opt);
  if (precision == "f64") return bench_apps<double>(ctx, stream, m, generated, precision, opt);
  throw UsageError(fmt::format("bench spgemm: precision '{}' (expected f32 or f64)", precision));
}

std::string spgemm_apps_text() {
  return "Applications (indented lines under each square matrix; wall clock of the whole pipeline, median of up to "
         "3 runs after a warm-up; cuSPARSE: the same pipeline with its SpGEMM for every product):\n"
         "  contract  C = S G S^T, random labels, k = --contract-k (default rows/64); C checked against C;\n"
         "            G and labels uploaded, S and S^T built on the device, C downloaded, all timed\n"
         "  contract_device  the same with G and the labels already on the device and C left there\n"
         "  triangles triangle counting on the undirected graph of A: dbsparse's masked product (no L or C built) from A\n"
         "            on the device, against cuSPARSE SpGEMM L*L (fresh, buffers preallocated) + mask and sum; counts equal\n"
         "  mcl       --mcl-iters expansions (default 5, tolerance 0); per-iteration times; labels checked equal\n";
}

nlohmann::json spgemm_app_summary(const std::vector<nlohmann::json>& records, const std::string& app) {
  struct Acc {
    std::vector<double> all;
    std::pair<double, std::string> worst{std::numeric_limits<double>::infinity(), ""};
    int mismatches = 0, cusparse_failed = 0, dbsparse_failed = 0, matrices = 0;
  };
  std::map<std::string, Acc> by;
  for (const auto& r : records) {
    if (r.value("app", std::string()) != app) continue;
    Acc& a = by[r.at("precision").get<std::string>()];
    ++a.matrices;
    if (r.contains("dbsparse_error")) ++a.dbsparse_failed;
    if (r.contains("cusparse_error")) ++a.cusparse_failed;
    if (r.contains("check_ok") && !r.at("check_ok").get<bool>() && !r.contains("dbsparse_error") &&
        !r.contains("cusparse_error"))
      ++a.mismatches;
    if (!r.contains("speedup") || !r.value("check_ok", false)) continue;  // only where the results agreed
    const double s = r.at("speedup").get<double>();
    a.all.push_back(s);
    if (s < a.worst.first) a.worst = {s, r.at("matrix").get<std::string>()};
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [prec, a] : by) {
    nlohmann::json j = {{"matrices", a.matrices},
                        {"compared", a.all.size()},
                        {"geomean_speedup", geomean(a.all)},
                        {"mismatches", a.mismatches},
                        {"cusparse_failed", a.cusparse_failed},
                        {"dbsparse_failed", a.dbsparse_failed}};
    if (!a.all.empty()) {
      j["worst_speedup"] = a.worst.first;
      j["worst_matrix"] = a.worst.second;
    }
    out[prec] = j;
    fmt::print(
        "{} {} summary: dbsparse pipeline over the cuSPARSE-based one: geomean {:.2f}x over {} compared "
        "matrices{}; {} mismatch(es), cuSPARSE failed on {}, dbsparse on {}\n",
        prec, app, geomean(a.all), a.all.size(),
        a.all.empty() ? "" : fmt::format(", worst {:.2f}x ({})", a.worst.first, a.worst.second), a.mismatches,
        a.cusparse_failed, a.dbsparse_failed);
  }
  return out;
}

double spgemm_tolerance(const std::string& precision) { return precision == "f64" ? 1e-12 : 1e-5; }

std::string spgemm_columns_text() {
  return "Columns (wall clock unless said; A and B already on the device for both libraries, uploads untimed):\n"
         "  first ms   dbsparse fresh product: plan_spgemm(ctx, ...) from device CSR (GPU analysis, one wait and a small "
         "read-back, group lists and global tables allocated; kernels already loaded) + the first run() (symbolic "
         "phase, C's row_ptr on the GPU, a second wait and read-back of nnz(C), C allocated, numeric phase) + "
         "stream sync; median over up to --reps products, stopping after 3 s\n"
         "  steady ms  dbsparse plan.run() with C's structure known (numeric phase only, no allocation, no sync), "
         "event-timed median per call\n"
         "  cusp ms    cuSPARSE fresh product: cusparseSpGEMM's whole sequence (descriptors, workEstimation, "
         "[ALG3 estimateMemory], compute, SpMatGetSize, CsrSetPointers, copy) + stream sync, with its buffers and C "
         "allocated beforehand by an untimed first sequence; median as for first ms\n"
         "  x first    cusp ms / first ms (both compute structure and values afresh; cuSPARSE's allocations are "
         "outside its time, dbsparse's inside)\n"
         "  MB dbs / MB cusp  peak device bytes, A and B included for both\n"
         "  (JSON also has dbsparse_from_host_ms: the plan from host CSR, uploads included, and "
         "dbsparse_oneshot_ms: spgemm() with C downloaded)\n";
}

template <class T>
SpgemmCheck compare_spgemm(const CsrMatrix<T>& ours, CsrMatrix<T> theirs, const CsrMatrix<T>& scale, double tolerance) {
  SpgemmCheck r;
  if (ours.rows != theirs.rows || ours.cols != theirs.cols) {
    r.note = fmt::format("shape {}x{} against {}x{}", ours.rows, ours.cols, theirs.rows, theirs.cols);
    return r;
  }
  if (ours.nnz() != theirs.nnz()) {
    r.note = fmt::format("nnz {} against {}", ours.nnz(), theirs.nnz());
    return r;
  }
  if (scale.col_idx != ours.col_idx) {
    r.note = "the scale's structure is not C's";
    return r;
  }
  std::vector<std::pair<int32_t, T>> row;
  for (int32_t i = 0; i < ours.rows; ++i) {
    const int32_t lo = ours.row_ptr[i], hi = ours.row_ptr[i + 1];
    if (theirs.row_ptr[i] != lo || theirs.row_ptr[i + 1] != hi) {
      r.note = fmt::format("row {}: {} entries against {}", i, hi - lo, theirs.row_ptr[i + 1] - theirs.row_ptr[i]);
      return r;
    }
    if (!std::is_sorted(theirs.col_idx.begin() + lo, theirs.col_idx.begin() + hi)) {
      row.clear();
      for (int32_t p = lo; p < hi; ++p) row.emplace_back(theirs.col_idx[p], theirs.values[p]);
      std::sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      for (int32_t p = lo; p < hi; ++p) std::tie(theirs.col_idx[p], theirs.values[p]) = row[p - lo];
    }
    for (int32_t p = lo; p < hi; ++p) {
      if (theirs.col_idx[p] != ours.col_idx[p]) {
        r.note = fmt::format("row {}: column {} against {}", i, ours.col_idx[p], theirs.col_idx[p]);
        return r;
      }
      const double d = std::fabs(static_cast<double>(ours.values[p]) - static_cast<double>(theirs.values[p]));
      const double s = std::fabs(static_cast<double>(scale.values[p]));
      const double e = s > 0 ? d / s : (d == 0 ? 0.0 : std::numeric_limits<double>::infinity());
      if (std::isnan(e) || e > r.max_error) {
        if (std::isnan(r.max_error)) continue;  // a NaN stays the worst
        r.max_error = e;
        if (!(e <= tolerance) && r.note.empty())
          r.note = fmt::format("C({}, {}) = {} against {}: error {:.3e} of sum |a||b|", i, ours.col_idx[p],
                               ours.values[p], theirs.values[p], e);
      }
    }
  }
  r.ok = r.max_error <= tolerance;
  if (r.ok) r.note = fmt::format("ok (max error {:.2e} of sum |a||b|)", r.max_error);
  return r;
}

template SpgemmCheck compare_spgemm(const CsrMatrix<float>&, CsrMatrix<float>, const CsrMatrix<float>&, double);
template SpgemmCheck compare_spgemm(const CsrMatrix<double>&, CsrMatrix<double>, const CsrMatrix<double>&, double);

void print_spgemm_header() {
  fmt::print("{}", spgemm_columns_text());
  fmt::print("{:<34} {:>4} {:>9} {:>10} {:>12} {:>11} {:>10} {:>10} {:>10} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8}  {}\n",
             "matrix", "prec", "rows", "nnz(A)", "IP", "nnz(C)", "first ms", "steady ms", "cusp ms", "x first",
             "GF/s 1st", "GF/s st", "GF/s cs", "MB dbs", "MB cusp", "check; cuSPARSE alg");
}

nlohmann::json bench_spgemm_matrix(Context& ctx, const Stream& stream, const NamedMatrix& m, bool generated,
                                   const std::string& precision, const SpgemmBenchOptions& opt) {
  if (precision == "f32") return bench_one<float>(ctx, stream, m, generated, precision, opt);
  if (precision == "f64") return bench_one<double>(ctx, stream, m, generated, precision, opt);
  throw UsageError(fmt::format("bench spgemm: precision '{}' (expected f32 or f64)", precision));
}

nlohmann::json spgemm_summary(const std::vector<nlohmann::json>& records) {
  struct Acc {
    std::vector<double> first_gen, steady_gen, first_all;
    std::pair<double, std::string> worst{std::numeric_limits<double>::infinity(), ""};
    int mismatches = 0, cusparse_failed = 0, dbsparse_failed = 0, matrices = 0;
  };
  std::map<std::string, Acc> by;
  for (const auto& r : records) {
    Acc& a = by[r.at("precision").get<std::string>()];
    ++a.matrices;
    if (r.contains("dbsparse_error")) ++a.dbsparse_failed;
    if (r.contains("cusparse_error")) ++a.cusparse_failed;
    if (r.contains("check_ok") && !r.at("check_ok").get<bool>() && !r.contains("dbsparse_error") &&
        !r.contains("cusparse_error"))
      ++a.mismatches;
    // A speed-up counts only where cuSPARSE's C matched ours.
    if (!r.contains("speedup_first") || !r.value("check_ok", false)) continue;
    const double s = r.at("speedup_first").get<double>();
    a.first_all.push_back(s);
    if (!r.at("generated").get<bool>()) continue;
    a.first_gen.push_back(s);
    if (r.contains("speedup_steady")) a.steady_gen.push_back(r.at("speedup_steady").get<double>());
    if (s < a.worst.first) a.worst = {s, r.at("matrix").get<std::string>()};
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [prec, a] : by) {
    nlohmann::json j = {{"matrices", a.matrices},
                        {"generated_compared", a.first_gen.size()},
                        {"geomean_speedup_first_generated", geomean(a.first_gen)},
                        {"geomean_speedup_steady_generated", geomean(a.steady_gen)},
                        {"all_compared", a.first_all.size()},
                        {"geomean_speedup_first_all", geomean(a.first_all)},
                        {"mismatches", a.mismatches},
                        {"cusparse_failed", a.cusparse_failed},
                        {"dbsparse_failed", a.dbsparse_failed}};
    if (!a.first_gen.empty()) {
      j["worst_speedup_first_generated"] = a.worst.first;
      j["worst_matrix_generated"] = a.worst.second;
    }
    out[prec] = j;
    fmt::print(
        "{} summary: dbsparse fresh product over cuSPARSE's: geomean {:.2f}x over {} generated matrices{}; "
        "steady run (numeric only) over cuSPARSE's fresh product: geomean {:.2f}x; all {} compared matrices: "
        "geomean {:.2f}x; {} mismatch(es), cuSPARSE failed on {}, dbsparse on {}\n",
        prec, geomean(a.first_gen), a.first_gen.size(),
        a.first_gen.empty() ? "" : fmt::format(", worst {:.2f}x ({})", a.worst.first, a.worst.second),
        geomean(a.steady_gen), a.first_all.size(), geomean(a.first_all), a.mismatches, a.cusparse_failed,
        a.dbsparse_failed);
  }
  return out;
}

}  // namespace dbsparse::tools

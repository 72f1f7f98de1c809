// dbtune: run once per device. Records the device and the suite's matrices (fingerprint and
// features) in the tuning DB, precompiles every kernel variant, then searches each op's declared
// space per matrix (tuner/search.hpp) within a time budget, keeping every trial and the best
// config with its speed-up over the defaults. Idempotent: stored trials are recalled, not
// measured again, so a rerun or a run after Ctrl-C resumes. Without a GPU it does the parts that
// need none (matrices, features, kernels for --arch) and says so.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <map>
#include <thread>

#include <CLI/CLI.hpp>

#include "codegen/compile_pool.hpp"
#include "codegen/kernel_cache.hpp"
#include "dbsparse/dbsparse.hpp"
#include "tools/bench/suites.hpp"
#include "tools/dbtune/eta.hpp"
#include "tools/dbtune/tune_op.hpp"
#include "tools/ops/registry.hpp"
#include "tuner/search.hpp"
#include "tools/cli_checks.hpp"

using namespace dbsparse;

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) {
  g_stop = true;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

struct Args {
  bool quick = false, no_shared = false, evaluate = false, evaluate_only = false, reprofile = false,
       profile_only = false;
  bool ops_named = false;  // --ops given
  std::vector<std::string> matrices, ops = tools::default_tuned_op_names();
  std::string db_path = TuningDb::default_path();
  std::string arch;
  double budget_s = 0;  // 0: 2 s per (matrix, op) with --quick, else 6 s
  double total_s = 0;   // 0: 130 s with --quick, else 500 s, for the tuning phase
};

// The matrices `op` is tuned on: --matrices, else its own suite (OpDescriptor::tune_suite), else
// the common one (generated, then the shared matrices unless --no-shared). An op with a suite of its
// own (decode: LLM layer shapes) takes --matrices only when --ops names it: `dbtune --matrices
// my/*.mtx` tunes the graph ops on a user's graphs, not decode.
std::vector<std::string> suite(const Args& a, const tools::OpDescriptor& op) {
  if (!a.matrices.empty()) return op.tune_suite && !a.ops_named ? std::vector<std::string>{} : a.matrices;
  const std::string size = a.quick ? "quick" : "full";
  if (op.tune_suite) return op.tune_suite(size);
  auto specs = tools::generated_suite(size);
  if (!a.no_shared) {
    auto shared = tools::shared_matrix_files();
    specs.insert(specs.end(), shared.begin(), shared.end());
  }
  return specs;
}

// Each matrix once, with the ops tuned on it, in the order the suites name them.
struct Unit {
  std::string spec;
  std::vector<std::string> ops;
};
std::vector<Unit> units_of(const Args& a) {
  std::vector<Unit> out;
  for (const auto& op : a.ops)
    for (const auto& spec : suite(a, tools::find_op(op))) {
      auto it = std::find_if(out.begin(), out.end(), [&](const Unit& u) { return u.spec == spec; });
      if (it == out.end()) it = out.insert(out.end(), Unit{spec, {}});
      it->ops.push_back(op);
    }
  return out;
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The device profile first: the cost models of every plan timed below read it. Measured once per
// device (or again with --reprofile), then read from the DB.
void profile_step(Context& ctx, TuningDb& db, bool reprofile) {
  const std::string fp = ctx.device().record().fingerprint;
  if (auto stored = db.device_profile(fp); stored && !reprofile) {
    try {
      ctx.set_profile(DeviceProfile::from_json(*stored));
      fmt::print("device profile: {} (--reprofile measures it again)\n", ctx.profile().summary());
      return;
    } catch (const DbError& e) {
      fmt::print(stderr, "device profile in the DB unusable ({}): measuring it again\n", e.what());
    }
  }
  const double t0 = now_s();
  DeviceProfile p =
      tools::measure_profile(ctx, [](const std::string& line) { fmt::print(stderr, "  profile: {}\n", line); });
  db.set_device_profile(fp, p.to_json(), p.measured_at);
  ctx.set_profile(p);
  fmt::print("device profile: {} ({:.1f} s)\n", ctx.profile().summary(), now_s() - t0);
}

// Every variant of the tuned ops into the kernel cache on a pool of NVRTC threads: in the
// background (finish() joins it) or at once. Failures are printed as they come; finish() prints
// the tally and throws where every variant failed (a target NVRTC does not know, `--arch sm_1`):
// nothing could be tuned, and exit 0 would tell a script the device is ready.
class KernelPass {
 public:
  KernelPass(const std::vector<std::string>& ops, std::string arch, bool background) : arch_(std::move(arch)) {
    // Only the ops being tuned (--ops, else those tuned by default): `--ops spgemm` spent minutes
    // of a fresh host compiling the other ops' 200-odd kernels first.
    for (const auto* op : tools::ops())
      if (std::find(ops.begin(), ops.end(), op->name) != ops.end())
        for (auto& v : op->variants(/*opt_in=*/false)) sources_.push_back(std::move(v));
    t0_ = now_s();
    if (!background) {
      run(0, /*progress=*/true);
      finish();
      return;
    }
    fmt::print("kernels: compiling {} for {} in the background\n", sources_.size(), arch_);
    const int threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1);
    worker_ = std::thread([this, threads] { run(threads, /*progress=*/false); });
  }
  KernelPass(const KernelPass&) = delete;
  KernelPass& operator=(const KernelPass&) = delete;
  ~KernelPass() {  // on an early exit: the variants not started yet are left
    abandon_ = true;
    if (worker_.joinable()) worker_.join();
  }

  // The tuning is done (abandon_rest): the variants the searches never asked for are not waited
  // for, only those already compiling; a later plan that needs one compiles it then.
  void finish(bool abandon_rest = false) {
    if (abandon_rest) abandon_ = true;
    if (worker_.joinable()) worker_.join();
    if (reported_) return;
    reported_ = true;
    auto& cache = codegen::KernelCache::global();
    const int left = static_cast<int>(sources_.size()) - compiled_.load() - failed_.load();
    fmt::print("kernels: {} ready for {} in {} ({:.0f} s){}{}\n", compiled_.load(), arch_,
               cache.persistent() ? cache.dir() : "memory", now_s() - t0_,
               failed_ ? fmt::format(", {} failed", failed_.load()) : "",
               left > 0 ? fmt::format(", {} not needed by the searches left to compile on first use", left) : "");
    if (compiled_ == 0 && failed_ > 0)
      throw UsageError(
          fmt::format("no kernel compiled for {} ({} failed; the first error is above)", arch_, failed_.load()));
  }

 private:
  void run(int threads, bool progress) {
    size_t finished = 0;
    codegen::cache_all(
        codegen::KernelCache::global(), sources_, arch_, threads,
        [&](const codegen::PoolOutcome& o) {
          ++finished;
          if (progress) fmt::print(stderr, "\rkernels: {}/{} ", finished, sources_.size());
          if (o.error.empty()) {
            ++compiled_;
            return;
          }
          ++failed_;
          fmt::print(stderr, "\n  kernel {} failed: {}\n", sources_[o.index].key, o.error);
        },
        [this] { return g_stop.load() || abandon_.load(); });
    if (progress) fmt::print(stderr, "\n");
  }

  std::vector<codegen::KernelSource> sources_;
  std::string arch_;
  std::atomic<int> compiled_{0}, failed_{0};
  std::atomic<bool> abandon_{false};
  bool reported_ = false;
  double t0_ = 0;
  std::thread worker_;
};

int run(const Args& a) {
  const double t0 = now_s();
  const std::function<bool()> stop = [] {
    return g_stop.load();
  };  // --total counts from here: kernels, matrices, search
  std::string why;
  bool gpu = cuda_device_available(&why);
  std::unique_ptr<Context> ctx;
  std::string arch = a.arch;
  if (gpu) {
    ctx = std::make_unique<Context>();
    arch = arch.empty() ? ctx->device().arch() : arch;
    fmt::print("dbtune on {} ({})\n", ctx->device().name, ctx->device().arch());
  } else {
    if (arch.empty()) arch = "sm_90";
    fmt::print(
        "dbtune: no CUDA device found ({}).\n"
        "Running the parts that need none: matrix features into the DB and kernels for {}.\n",
        why, arch);
  }
  for (const auto& op : a.ops) tools::find_op(op);  // unknown ops fail before any work
  auto db = TuningDb::open(a.db_path);
  fmt::print("tuning DB: {}\n", db->path());
  if (ctx) db->upsert_device(ctx->device().record());
  if (ctx && !a.evaluate_only) profile_step(*ctx, *db, a.reprofile || a.profile_only);
  if (a.profile_only) {
    if (!ctx) throw UsageError("dbtune --profile-only measures the device and needs a GPU");
    return 0;
  }
  std::signal(SIGINT, on_sigint);
  const auto suite_of = [&a](const tools::OpDescriptor& op) { return suite(a, op); };
  if (a.evaluate_only) {
    if (!ctx) throw UsageError("dbtune --evaluate-only measures configs and needs a GPU");
    tools::evaluate(*ctx, *db, suite_of, a.ops, stop);
    return g_stop ? 130 : 0;
  }

  // The tuned ops' kernels: with a GPU on a background pool (one core left to the tuning) while
  // the search starts, so the first trials wait only for the kernels they need (KernelCache
  // shares a compile in flight); without one, here, before the matrix work.
  KernelPass kernels(a.ops, arch, /*background=*/ctx != nullptr);
  const auto units = units_of(a);
  const double budget = a.budget_s > 0 ? a.budget_s : a.quick ? 2.0 : 6.0;
  const double total = a.total_s > 0 ? a.total_s : a.quick ? 130.0 : 500.0;
  std::map<std::string, std::vector<tools::TuneRow>> rows;
  // Each (matrix, op) unit weighs its op's budget_units in the run's budget.
  double weight = 0, weight_done = 0;
  size_t pairs = 0, pairs_done = 0;  // (matrix, op) units
  double overhead_done = 0;          // their time outside the searches' budgets (tools/dbtune/eta.hpp)
  for (const auto& u : units)
    for (const auto& op : u.ops) weight += tools::find_op(op).budget_units, ++pairs;
  std::vector<std::string> skipped;
  const double tuning_t0 = now_s();
  for (size_t i = 0; i < units.size() && !g_stop; ++i) {
    try {
      const double load_t0 = now_s();
      NamedMatrix m = load_matrix(units[i].spec);
      std::map<std::string, MatrixRecord> records;  // by key: the structure's once for the ops keyed by it
      for (const auto& op : units[i].ops) {
        const auto& desc = tools::find_op(op);
        const std::string key = tools::db_key(desc, m);
        if (!records.count(key)) db->upsert_matrix(records[key] = tools::db_record(desc, m));
      }
      if (!ctx) {
        fmt::print(stderr, "[{}/{}] {}: features recorded\n", i + 1, units.size(), m.name);
        continue;
      }
      overhead_done += now_s() - load_t0;  // the matrix loaded or generated, its features recorded
      for (const auto& op : units[i].ops) {
        if (g_stop) break;
        const auto& desc = tools::find_op(op);
        const std::string eta =
            fmt::format("ETA {:.0f} s", tools::dbtune_eta_s({.tuning_elapsed_s = now_s() - tuning_t0,
                                                             .weight_done = weight_done,
                                                             .weight = weight,
                                                             .total_left_s = total - (now_s() - t0),
                                                             .unit_budget_s = budget,
                                                             .units_left = pairs - pairs_done,
                                                             .units_done = pairs_done,
                                                             .overhead_done_s = overhead_done}));
        auto status = [&](const std::string& what) {
          fmt::print(stderr, "\r[{}/{}] {:<40} {:<7} {:<10} {}   ", i + 1, units.size(), m.name.substr(0, 40), op, what,
                     eta);
        };
        status("starting");
        // The run as a whole keeps to --total: the units' time outside their searches (large
        // matrices spend seconds in plan-time conversion) is set aside first, as measured so far.
        const double left = total - (now_s() - t0);
        const double share = desc.budget_units / std::max(weight - weight_done, desc.budget_units);
        const double unit = tools::dbtune_unit_budget_s(left, share, budget * desc.budget_units, pairs - pairs_done,
                                                        tools::dbtune_unit_overhead_s(overhead_done, pairs_done));
        const double unit_t0 = now_s();
        for (auto& row : tools::tune_op(*ctx, *db, op, m, tools::db_key(desc, m), unit, stop, status)) {
          row.generated = is_generator_spec(units[i].spec);
          rows[op].push_back(std::move(row));
        }
        overhead_done += std::max(now_s() - unit_t0 - unit, 0.0);
        weight_done += desc.budget_units;
        ++pairs_done;
      }
    } catch (const InputError& e) {
      fmt::print(stderr, "\n  skipped: {}\n", e.what());
      skipped.push_back(units[i].spec);
    } catch (const std::bad_alloc&) {
      // A matrix larger than this host can hold: named, skipped, the run goes on.
      fmt::print(stderr, "\n  skipped: {}: out of host memory (larger than this machine can hold)\n", units[i].spec);
      skipped.push_back(units[i].spec);
    }
  }
  fmt::print(stderr, "\n");
  kernels.finish(/*abandon_rest=*/true);
  if (g_stop) fmt::print("interrupted: every finished trial is in the DB; run dbtune again to resume\n");
  // Nothing to tune is a failure, not a quiet success.
  if (!units.empty() && skipped.size() == units.size()) {
    fmt::print(stderr, "dbtune: error: every matrix was skipped ({}); nothing was tuned\n", skipped.size());
    return 1;
  }
  // Matrices the user named and did not get tuned make the run a partial failure (exit 2) after
  // the rest is stored; a suite's file that cannot be read is reported and the run goes on.
  const bool named = !a.matrices.empty();
  if (!skipped.empty())
    fmt::print(stderr, "dbtune: {}: {} of {} matrices skipped: {}\n", named ? "error" : "warning", skipped.size(),
               units.size(), fmt::join(skipped, ", "));
  const int partial = named && !skipped.empty() ? 2 : 0;
  auto c = db->counts();
  fmt::print("DB now holds {} devices, {} matrices, {} trials, {} configs ({:.0f} s)\n", c.devices, c.matrices,
             c.trials, c.configs, now_s() - t0);
  if (!ctx) {
    fmt::print("No GPU: nothing was timed. Run dbtune on the GPU machine to tune.\n");
    return partial;
  }
  for (const auto& op : a.ops) tools::print_table(op, rows[op]);
  if (a.evaluate && !g_stop) tools::evaluate(*ctx, *db, suite_of, a.ops, stop);
  return g_stop ? 130 : partial;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dbtune: tune dbsparse's kernels for this GPU (run once per device)"};
  app.set_version_flag("--version", std::string("dbtune ") + DBSPARSE_VERSION);
  Args a;
  app.add_flag("--quick", a.quick,
               "Small suite, 2 s per (matrix, op) and 130 s of tuning: 181-193 s measured on a fresh H100 machine "
               "(empty kernel cache and tuning DB, the installed precompiled kernels, profile included), most of "
               "the excess waiting for search-space kernels the installed set lacks");
  app.add_option("--matrices", a.matrices, "Matrix files or generator strings instead of the suite");
  app.add_flag("--no-shared", a.no_shared, "Leave out ../shared/matrices ($DBSPARSE_MATRICES)");
  auto* ops_option =
      app.add_option(
             "--ops", a.ops,
             "Ops to tune (comma-separate); default every op (decode on its own suite of LLM layer shapes, 4 buckets of "
             "activation density each, and on --matrices only when named here; spgemm skips matrices whose A^2 passes "
             "6e8 products)")
          ->delimiter(',')
          ->check(CLI::IsMember(tools::op_names()));
  app.add_option("--budget", a.budget_s, "Seconds of search per (matrix, op); default 2 with --quick, else 6")
      ->check(dbsparse::cli::finite_range(0.1, 3600.0));
  app.add_option("--total", a.total_s,
                 "Seconds for the tuning phase, wall clock: each (matrix, op)'s time outside its search (loading, "
                 "conversion, kernels), as measured so far, is set aside and the searches share the rest; default "
                 "130 with --quick, else 500 (the profile and the start come on top: the whole run within ten minutes)")
      ->check(dbsparse::cli::finite_range(1.0, 86400.0));
  app.add_flag("--evaluate", a.evaluate,
               "Afterwards, predict each tuned matrix's config from the others (leave-one-out) and report "
               "its time against the best config's");
  app.add_flag("--evaluate-only", a.evaluate_only,
               "Only the leave-one-out evaluation of the matrices this DB has tuned (no search)");
  app.add_flag(
      "--reprofile", a.reprofile,
      "Measure the device profile again (bandwidths, latencies, the ops' calibrations) even if the DB has one");
  app.add_flag("--profile-only", a.profile_only, "Only measure and store the device profile (about ten seconds)");
  app.add_option("--db", a.db_path, "Tuning DB (default $DBSPARSE_DB or $XDG_DATA_HOME/dbsparse/tuning.db)");
  app.add_option("--arch", a.arch, "Kernel target when there is no GPU (default sm_90)");
  CLI11_PARSE(app, argc, argv);
  a.ops_named = ops_option->count() > 0;
  try {
    return dbsparse::cli::exit_code_after_stdout("dbtune", run(a));
  } catch (const Error& e) {
    std::fprintf(stderr, "dbtune: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "dbtune: error: out of host memory\n");
    return 1;
  } catch (const std::exception& e) {
    // Never an abort: whatever escaped is reported and the tuning DB is left as the last commit left it.
    std::fprintf(stderr, "dbtune: internal error: %s\n", e.what());
    return 70;
  }
}

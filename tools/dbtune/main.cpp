// dbtune: run once per device. Records the device and the suite's matrices (fingerprint and
// features) in the tuning DB, precompiles every kernel variant, then searches each op's declared
// space per matrix (tuner/search.hpp) within a time budget, keeping every trial and the best
// config with its speed-up over the defaults. Idempotent: stored trials are recalled, not
// measured again, so a rerun or a run after Ctrl-C resumes. Without a GPU it does the parts that
// need none (matrices, features, kernels for --arch) and says so.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <map>

#include <CLI/CLI.hpp>

#include "codegen/catalog.hpp"
#include "codegen/kernel_cache.hpp"
#include "dbsparse/dbsparse.hpp"
#include "tools/common/suites.hpp"
#include "tools/common/objectives.hpp"
#include "tuner/search.hpp"

using namespace dbsparse;

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) {
  g_stop = true;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

struct Args {
  bool quick = false, no_shared = false, evaluate = false;
  std::vector<std::string> matrices, ops{"spmv", "spmspv"};
  std::string db_path = TuningDb::default_path();
  std::string arch;
  double budget_s = 0;  // 0: 2 s per (matrix, op) with --quick, else 6 s
  double total_s = 0;   // 0: 100 s with --quick, else 540 s, for the whole run
};

std::vector<std::string> suite(const Args& a) {
  if (!a.matrices.empty()) return a.matrices;
  auto specs = tools::generated_suite(a.quick ? "quick" : "full");
  if (!a.no_shared) {
    auto shared = tools::shared_matrix_files();
    specs.insert(specs.end(), shared.begin(), shared.end());
  }
  return specs;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Row {
  std::string matrix, strategy;
  bool generated = false;  // the targets are stated over the generated suite
  nlohmann::json best;
  double default_us = 0, best_us = 0;
  int measured = 0, recalled = 0, failed = 0;
};

// The keys where `c` differs from the defaults, as compact JSON.
std::string diff(const std::string& op, const nlohmann::json& c) {
  const auto d = default_params(op);
  nlohmann::json out = nlohmann::json::object();
  for (auto it = c.begin(); it != c.end(); ++it)
    if (!d.contains(it.key()) || d[it.key()] != it.value()) out[it.key()] = it.value();
  return out.empty() ? "(defaults)" : out.dump();
}

void print_table(const std::string& op, const std::vector<Row>& rows) {
  fmt::print("\n{} (f32{}): best config per matrix\n{:<36} {:>10} {:>10} {:>8} {:>6}  {}\n", op,
             op == "spmspv" ? ", geomean over x densities 0.1, 0.01, 0.001" : "", "matrix", "default us",
             "best us", "speedup", "trials", "best config (vs defaults)");
  double log_sum = 0, log_gen = 0;
  int n = 0, n_gen = 0;
  for (const auto& r : rows) {
    if (!(r.best_us > 0) || !(r.default_us > 0) || !std::isfinite(r.default_us)) {
      fmt::print("{:<36} no valid measurement ({} failed)\n", r.matrix.substr(0, 36), r.failed);
      continue;
    }
    const double s = r.default_us / r.best_us;
    log_sum += std::log(s);
    ++n;
    if (r.generated) log_gen += std::log(s), ++n_gen;
    fmt::print("{:<36} {:>10.1f} {:>10.1f} {:>7.2f}x {:>6}  {}\n", r.matrix.substr(0, 36), r.default_us, r.best_us, s,
               r.measured + r.recalled, diff(op, r.best));
  }
  if (n) fmt::print("{}: geometric-mean speed-up over the defaults {:.3f}x over {} matrices\n", op, std::exp(log_sum / n), n);
  if (n_gen)
    fmt::print("{}: over the {} generated matrices {:.3f}x\n", op, n_gen, std::exp(log_gen / n_gen));
}

Row tune(Context& ctx, TuningDb& db, const std::string& op, const NamedMatrix& m, const std::string& fp,
         double budget_s, const std::function<void(const std::string&)>& status) {
  const std::string dev = ctx.device().record().fingerprint;
  const auto& space = tuner::search_space(op);
  auto objective = tools::make_objective(ctx, op, m);
  std::map<std::string, tuner::Measurement> stored;  // the latest trial per config
  for (const auto& t : db.trials(dev, fp, op))
    if (t.bucket.empty()) stored[space.complete(t.params).dump()] = {t.status, t.time_us, t.detail};
  tuner::Recall recall = [&](const nlohmann::json& c) -> std::optional<tuner::Measurement> {
    auto it = stored.find(c.dump());
    if (it == stored.end()) return std::nullopt;
    return it->second;
  };
  int k = 0;
  tuner::Record record = [&](const nlohmann::json& c, const tuner::Measurement& r) {
    db.add_trial(Trial{dev, fp, op, "", c, r.status, r.time_us, r.detail});
    status(fmt::format("trial {}", ++k));
  };
  tuner::SearchOptions opt;
  opt.budget_s = budget_s;
  opt.stop = [] { return g_stop.load(); };
  auto r = tuner::search(space, *objective, recall, record, opt);
  Row row{m.name, r.strategy, r.best, r.default_us, r.best_us, r.measured, r.recalled, r.failed};
  if (!std::isfinite(r.best_us) || !(r.best_us > 0) || !std::isfinite(r.default_us)) return row;
  // The search's best is the minimum over many noisy measurements: confirm it against the defaults
  // head to head (alternating, more samples) before it becomes the config, and report those times.
  const auto defaults = space.complete(nlohmann::json::object());
  double def_us = INFINITY, best_us = INFINITY;
  for (int round = 0; round < 2 && r.best != defaults && !g_stop; ++round) {
    for (auto [c, out] : {std::pair{&defaults, &def_us}, std::pair<const nlohmann::json*, double*>{&r.best, &best_us}}) {
      auto t = (*objective)(*c, 24);
      db.add_trial(Trial{dev, fp, op, "", *c, t.status, t.time_us, t.detail + " (confirm)"});
      if (t.status == TrialStatus::Ok) *out = std::min(*out, t.time_us);
    }
  }
  if (r.best == defaults || !(best_us < def_us)) {
    row.best = defaults;
    row.default_us = row.best_us = std::isfinite(def_us) ? def_us : r.default_us;
  } else {
    row.default_us = def_us;
    row.best_us = best_us;
  }
  db.set_best(dev, fp, op, "", row.best, row.best_us, row.default_us / row.best_us);
  return row;
}

// Leave-one-out: each tuned matrix's config predicted from the others, timed (from its trials,
// else measured now), against its best config's time.
void evaluate(Context& ctx, TuningDb& db, const std::vector<std::string>& specs, const std::vector<std::string>& ops) {
  const std::string dev = ctx.device().record().fingerprint;
  for (const auto& op : ops) {
    const auto& space = tuner::search_space(op);
    fmt::print("\n{}: leave-one-out prediction\n{:<36} {:<24} {:>10} {:>12} {:>8}\n", op, "matrix", "nearest", "best us",
               "predicted us", "ratio");
    double log_sum = 0, worst = 1;
    int n = 0;
    for (const auto& spec : specs) {
      if (g_stop) return;
      NamedMatrix m = load_matrix(spec);
      const std::string fp = structure_fingerprint(m.csr);
      auto rec = db.find_matrix(fp);
      auto tuned = db.best(dev, fp, op, "");
      if (!rec || !tuned) continue;  // not tuned on this device
      auto p = db.predict(dev, op, "", rec->features, fp);
      if (!p) continue;
      // Both configs measured now, head to head (alternating, best of two): the stored times of
      // the search are minima over noisy runs and would flatter the tuned config.
      const auto best_config = space.complete(*tuned), config = space.complete(p->params);
      auto objective = tools::make_objective(ctx, op, m);
      std::optional<double> best_us, pred_us;
      for (int round = 0; round < 2; ++round)
        for (auto [c, out] : {std::pair{&best_config, &best_us}, std::pair{&config, &pred_us}}) {
          auto r = (*objective)(*c, 24);
          db.add_trial(Trial{dev, fp, op, "", *c, r.status, r.time_us, r.detail + " (evaluate)"});
          if (r.status == TrialStatus::Ok) *out = std::min(out->value_or(INFINITY), r.time_us);
        }
      if (!pred_us || !best_us) continue;
      const double ratio = *best_us / *pred_us;  // 1: the prediction is as fast as the best
      log_sum += std::log(ratio);
      worst = std::min(worst, ratio);
      ++n;
      fmt::print("{:<36} {:<24} {:>10.1f} {:>12.1f} {:>7.1f}%\n", m.name.substr(0, 36), p->neighbour.substr(0, 24), *best_us,
                 *pred_us, 100 * ratio);
    }
    if (n)
      fmt::print("{}: predicted configs reach {:.1f}% of the best config's speed (geomean), worst {:.1f}%, over {}\n", op,
                 100 * std::exp(log_sum / n), 100 * worst, n);
  }
}

int run(const Args& a) {
  const double t0 = now_s();  // --total counts from here: kernels, matrices, search
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
    fmt::print("dbtune: no CUDA device found ({}).\n"
               "Running the parts that need none: matrix features into the DB and kernels for {}.\n",
               why, arch);
  }
  for (const auto& op : a.ops) tuner::search_space(op);  // unknown ops fail before any work
  auto db = TuningDb::open(a.db_path);
  fmt::print("tuning DB: {}\n", db->path());
  if (ctx) db->upsert_device(ctx->device().record());
  std::signal(SIGINT, on_sigint);

  // Kernels first: a failing variant is reported here, before any matrix work.
  auto& cache = codegen::KernelCache::global();
  int compiled = 0, failed = 0;
  for (const auto& op : codegen::known_ops()) {
    auto variants = codegen::op_variants(op);
    for (size_t i = 0; i < variants.size() && !g_stop; ++i) {
      fmt::print(stderr, "\rkernels for {}: {}/{} ", op, i + 1, variants.size());
      try {
        cache.get(variants[i], arch);
        ++compiled;
      } catch (const Error& e) {
        ++failed;
        fmt::print(stderr, "\n  kernel {} failed: {}\n", variants[i].key, e.what());
      }
    }
    fmt::print(stderr, "\n");
  }
  fmt::print("kernels: {} ready for {} in {}{}\n", compiled, arch,
             cache.persistent() ? cache.dir() : "memory", failed ? fmt::format(", {} failed", failed) : "");

  const auto specs = suite(a);
  const double budget = a.budget_s > 0 ? a.budget_s : a.quick ? 2.0 : 6.0;
  const double total = a.total_s > 0 ? a.total_s : a.quick ? 100.0 : 540.0;
  std::map<std::string, std::vector<Row>> rows;
  const size_t units = specs.size() * a.ops.size();
  size_t done = 0;
  for (size_t i = 0; i < specs.size() && !g_stop; ++i) {
    try {
      NamedMatrix m = load_matrix(specs[i]);
      MatrixRecord rec{structure_fingerprint(m.csr), m.name, compute_features(m.csr)};
      db->upsert_matrix(rec);
      if (!ctx) {
        fmt::print(stderr, "[{}/{}] {}: features recorded\n", i + 1, specs.size(), m.name);
        continue;
      }
      for (const auto& op : a.ops) {
        if (g_stop) break;
        const double elapsed = now_s() - t0;
        const std::string eta =
            done ? fmt::format("ETA {:.0f} s", elapsed / static_cast<double>(done) * static_cast<double>(units - done))
                 : fmt::format("ETA <= {:.0f} s", budget * static_cast<double>(units));
        auto status = [&](const std::string& what) {
          fmt::print(stderr, "\r[{}/{}] {:<40} {:<7} {:<10} {}   ", i + 1, specs.size(), m.name.substr(0, 40), op, what, eta);
        };
        status("starting");
        // The run as a whole keeps to --total: later units get less when earlier ones overran
        // (large matrices spend seconds in plan-time conversion outside the search's budget).
        const double left = total - (now_s() - t0);
        const double unit = std::clamp(left / static_cast<double>(units - done), 0.2, budget);
        rows[op].push_back(tune(*ctx, *db, op, m, rec.fingerprint, unit, status));
        rows[op].back().generated = is_generator_spec(specs[i]);
        ++done;
      }
    } catch (const InputError& e) {
      fmt::print(stderr, "\n  skipped: {}\n", e.what());
    }
  }
  fmt::print(stderr, "\n");
  if (g_stop) fmt::print("interrupted: every finished trial is in the DB; run dbtune again to resume\n");
  auto c = db->counts();
  fmt::print("DB now holds {} devices, {} matrices, {} trials, {} configs ({:.0f} s)\n", c.devices, c.matrices,
             c.trials, c.configs, now_s() - t0);
  if (!ctx) {
    fmt::print("No GPU: nothing was timed. Run dbtune on the GPU machine to tune.\n");
    return 0;
  }
  for (const auto& op : a.ops) print_table(op, rows[op]);
  if (a.evaluate && !g_stop) evaluate(*ctx, *db, specs, a.ops);
  return g_stop ? 130 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dbtune: tune dbsparse's kernels for this GPU (run once per device)"};
  app.set_version_flag("--version", std::string("dbtune ") + DBSPARSE_VERSION);
  Args a;
  app.add_flag("--quick", a.quick, "Small suite and 2 s per (matrix, op): about two minutes");
  app.add_option("--matrices", a.matrices, "Matrix files or generator strings instead of the suite");
  app.add_flag("--no-shared", a.no_shared, "Leave out ../shared/matrices ($DBSPARSE_MATRICES)");
  app.add_option("--ops", a.ops, "Ops to tune (comma-separate): spmv, spmspv")
      ->delimiter(',')
      ->check(CLI::IsMember({"spmv", "spmspv"}));
  app.add_option("--budget", a.budget_s, "Seconds of search per (matrix, op); default 2 with --quick, else 6")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--total", a.total_s,
                 "Seconds for the whole run: the per-(matrix, op) budget shrinks to fit; default 100 with "
                 "--quick, else 540")
      ->check(CLI::Range(1.0, 86400.0));
  app.add_flag("--evaluate", a.evaluate,
               "Afterwards, predict each tuned matrix's config from the others (leave-one-out) and report "
               "its time against the best config's");
  app.add_option("--db", a.db_path, "Tuning DB (default $DBSPARSE_DB or $XDG_DATA_HOME/dbsparse/tuning.db)");
  app.add_option("--arch", a.arch, "Kernel target when there is no GPU (default sm_90)");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(a);
  } catch (const Error& e) {
    std::fprintf(stderr, "dbtune: error: %s\n", e.what());
    return 1;
  }
}

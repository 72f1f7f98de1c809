#include "tools/dbtune/spmv_search.hpp"

#include <fmt/format.h>

#include <cmath>

#include "codegen/spmv_key.hpp"
#include "dbsparse/reference.hpp"
#include "dbsparse/spmv.hpp"

namespace dbsparse::tools {
namespace {

struct Measured {
  TrialStatus status = TrialStatus::Ok;
  double time_us = 0;
  std::string detail;
};

Measured measure(Context& ctx, const CsrMatrix<float>& a, const std::vector<float>& x,
                 const std::vector<double>& ref, const nlohmann::json& params,
                 const TimingOptions& timing) {
  Measured out;
  Config cfg{"spmv", params, ConfigSource::Explicit, "tuning candidate"};
  try {
    Stream s(ctx);
    size_t bytes = (a.rows + 1) * 4ull + a.nnz() * 8ull + (a.rows + a.cols) * 4ull;
    int copies = rotation_copies(bytes, ctx.device().l2_bytes,
                                 static_cast<size_t>(ctx.device().memory_bytes / 8));
    std::vector<SpmvPlan<float>> plans;
    std::vector<DeviceBuffer<float>> xs, ys;
    for (int c = 0; c < copies; ++c) {
      plans.push_back(ctx.plan_spmv(a, cfg));
      xs.emplace_back(std::span<const float>(x));
      ys.emplace_back(static_cast<size_t>(a.rows));
    }
    ys[0].fill_bytes(0xFF);
    plans[0].run(xs[0], ys[0], s);
    s.synchronize();
    auto y = ys[0].download();
    double err = reference::relative_error(std::span<const double>(ref), std::span<const float>(y));
    if (!(err <= 1e-5)) {
      out.status = TrialStatus::WrongResult;
      out.detail = fmt::format("relative error {:.3e}", err);
      return out;
    }
    out.time_us = time_on_stream(s.handle(), timing, [&](int64_t i) {
                    plans[i % copies].run(xs[i % copies], ys[i % copies], s);
                  }).median_us;
  } catch (const CompileError& e) {
    out.status = TrialStatus::CompileFailed;
    out.detail = e.what();
  } catch (const CudaError& e) {
    out.status = TrialStatus::LaunchFailed;
    out.detail = e.what();
  }
  return out;
}

}  // namespace

SpmvTuneResult tune_spmv(Context& ctx, TuningDb& db, const NamedMatrix& m, const std::string& matrix_fp,
                         const TimingOptions& timing) {
  SpmvTuneResult r;
  r.matrix = m.name;
  const std::string device_fp = ctx.device().record().fingerprint;
  const auto defaults = default_params("spmv");
  auto a = m.csr.cast<float>();
  std::vector<float> x(a.cols);
  for (int32_t i = 0; i < a.cols; ++i) x[i] = static_cast<float>(std::sin(0.37 * i));
  auto ref = reference::spmv(a, std::span<const float>(x));

  // Trials already stored for this device and matrix are not measured again: a rerun resumes.
  auto previous = db.trials(device_fp, matrix_fp, "spmv");
  // A small fixed neighbourhood of the defaults until the generic tuner (issue 5) searches the
  // declared space: the two selection modes, wider groups, no folding, and the scalar baseline.
  std::vector<nlohmann::json> candidates{defaults};
  auto with = [&](const char* k, nlohmann::json v) {
    auto p = defaults;
    p[k] = std::move(v);
    candidates.push_back(p);
  };
  with("strategy", "uniform");
  with("lane_entries_f32", 4);
  with("lane_entries_f32", 16);
  with("fold_share", 0.0);
  with("strategy", "scalar");
  for (const auto& params : candidates) {
    Trial t{device_fp, matrix_fp, "spmv", "", params};
    bool reused = false;
    for (const auto& p : previous)
      if (p.params == params && p.bucket.empty()) {
        t = p;
        reused = true;
      }
    if (reused) {
      ++r.reused;
    } else {
      auto got = measure(ctx, a, x, ref, params, timing);
      t.status = got.status;
      t.time_us = got.time_us;
      t.detail = got.detail;
      db.add_trial(t);
    }
    ++r.trials;
    if (t.status != TrialStatus::Ok) {
      ++r.failed;
      continue;
    }
    if (params == defaults) r.default_us = t.time_us;
    if (r.best_us == 0 || t.time_us < r.best_us) {
      r.best_us = t.time_us;
      r.best = params;
    }
  }
  if (r.best_us > 0) {
    double speedup = r.default_us > 0 ? r.default_us / r.best_us : 1.0;
    db.set_best(device_fp, matrix_fp, "spmv", "", r.best, r.best_us, speedup);
  }
  return r;
}

void print_spmv_tune_table(const std::vector<SpmvTuneResult>& results) {
  fmt::print("\nspmv (f32): best config per matrix\n{:<40} {:>11} {:>11} {:>8}  {}\n", "matrix",
             "default us", "best us", "speedup", "best config");
  double log_sum = 0;
  int n = 0;
  for (const auto& r : results) {
    if (r.best_us <= 0 || r.default_us <= 0) {
      fmt::print("{:<40} no valid candidate ({} failed)\n", r.matrix, r.failed);
      continue;
    }
    double s = r.default_us / r.best_us;
    log_sum += std::log(s);
    ++n;
    fmt::print("{:<40} {:>11.1f} {:>11.1f} {:>7.2f}x  {}\n", r.matrix.substr(0, 40), r.default_us,
               r.best_us, s, r.best.dump());
  }
  if (n) fmt::print("geometric-mean speed-up over the defaults: {:.3f}x over {} matrices\n",
                    std::exp(log_sum / n), n);
}

}  // namespace dbsparse::tools

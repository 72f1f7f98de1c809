#include "tools/common/objectives.hpp"

#include <fmt/format.h>

#include <cmath>
#include <list>

#include "dbsparse/reference.hpp"
#include "dbsparse/spmspv.hpp"
#include "dbsparse/spmv.hpp"
#include "tools/common/bench_random.hpp"
#include "tools/common/bench_spmspv.hpp"
#include "tools/common/stats.hpp"
#include "tools/common/timing.hpp"

namespace dbsparse::tools {
namespace {

using tuner::Measurement;
constexpr int kXCopies = 4;  // x rotated across calls

// Runs `body`, turning the failures a candidate may hit into its trial status.
template <class F>
Measurement guarded(F&& body) {
  try {
    return body();
  } catch (const CompileError& e) {
    return {TrialStatus::CompileFailed, 0, e.what()};
  } catch (const CudaError& e) {
    return {TrialStatus::LaunchFailed, 0, e.what()};
  } catch (const UsageError& e) {
    return {TrialStatus::Skipped, 0, e.what()};
  }
}

TimingOptions timing_for(int samples) { return TimingOptions{2, std::max(1, samples), 10}; }

// One precision's inputs for the SpMV objective: the matrix in T, rotated x copies, the reference.
template <class T>
struct SpmvInputs {
  CsrMatrix<T> a;
  std::vector<DeviceBuffer<T>> xs;
  std::vector<double> ref;

  explicit SpmvInputs(const NamedMatrix& m) : a(m.csr.cast<T>()) {
    Lcg rng{11};
    std::vector<T> x0;
    for (int k = 0; k < kXCopies; ++k) {
      std::vector<T> x(static_cast<size_t>(a.cols));
      for (auto& v : x) v = static_cast<T>(rng.unit() * 2 - 1);
      if (k == 0) x0 = x;
      xs.emplace_back(std::span<const T>(x));
    }
    ref = reference::spmv(a, std::span<const T>(x0));
  }

  // Checked, then timed; time 0 and the error in `why` when the result is wrong.
  double measure(Context& ctx, const Config& cfg, int samples, std::string& why) {
    auto plan = ctx.plan_spmv(a, cfg);
    Stream s(ctx);
    DeviceBuffer<T> y(static_cast<size_t>(a.rows));
    y.fill_bytes(0xFF);
    plan.run(xs[0], y, s);
    s.synchronize();
    auto got = y.download();
    const double err = reference::relative_error(std::span<const double>(ref), std::span<const T>(got));
    const double tol = sizeof(T) == 4 ? 1e-5 : 1e-12;
    if (!(err <= tol)) {
      why = fmt::format("{}: relative error {:.3e}", sizeof(T) == 4 ? "f32" : "f64", err);
      return 0;
    }
    return time_on_stream(s.handle(), timing_for(samples), [&](int64_t i) { plan.run(xs[i % kXCopies], y, s); })
        .median_us;
  }
};

// SpMV's time is the geometric mean of f32 and f64: one config serves both precisions (its only
// per-precision keys are lane_entries_f32 / lane_entries_f64, which each precision reads alone).
struct SpmvObjective {
  Context& ctx;
  SpmvInputs<float> f32;
  SpmvInputs<double> f64;

  SpmvObjective(Context& c, const NamedMatrix& m) : ctx(c), f32(m), f64(m) {}

  Measurement operator()(const nlohmann::json& params, int samples) {
    return guarded([&]() -> Measurement {
      const Config cfg{"spmv", params, ConfigSource::Explicit, "tuning candidate"};
      std::string why;
      const double t32 = f32.measure(ctx, cfg, samples, why);
      if (!why.empty()) return {TrialStatus::WrongResult, 0, why};
      const double t64 = f64.measure(ctx, cfg, samples, why);
      if (!why.empty()) return {TrialStatus::WrongResult, 0, why};
      return {TrialStatus::Ok, std::sqrt(t32 * t64),
              fmt::format("f32 {:.1f} us, f64 {:.1f} us; {} samples", t32, t64, samples)};
    });
  }
};

struct SpmspvObjective {
  Context& ctx;
  CsrMatrix<float> a;
  struct Density {
    double d;
    std::vector<DeviceBuffer<float>> xs;
    std::vector<double> ref;
  };
  std::vector<Density> densities;

  SpmspvObjective(Context& c, const NamedMatrix& m, std::vector<double> ds) : ctx(c), a(m.csr.cast<float>()) {
    if (ds.empty()) ds.assign(std::begin(kSpmspvTuneDensities), std::end(kSpmspvTuneDensities));
    for (double d : ds) {
      // The bench's x (same columns and values for this matrix and density), in kXCopies copies.
      auto x = make_sparse_x(a, m.name, d, static_cast<size_t>(a.cols));
      Density e{d, {}, std::move(x.ref)};
      for (int k = 0; k < kXCopies; ++k) e.xs.emplace_back(std::span<const float>(x.dense));
      densities.push_back(std::move(e));
    }
  }

  // The last few plans, by config: the confirmation and evaluation measure the same configs in
  // turn, and converting a 100M-nonzero matrix takes seconds of CPU per plan.
  std::list<std::pair<std::string, SpmspvPlan<float>>> plans;
  const SpmspvPlan<float>& plan_for(const nlohmann::json& params) {
    const std::string key = params.dump();
    for (auto it = plans.begin(); it != plans.end(); ++it)
      if (it->first == key) {
        plans.splice(plans.begin(), plans, it);
        return plans.front().second;
      }
    if (plans.size() >= 3) plans.pop_back();  // before planning: the device memory is freed first
    Config cfg{"spmspv", params, ConfigSource::Explicit, "tuning candidate"};
    SpmspvOptions opt;
    opt.config = &cfg;
    plans.emplace_front(key, ctx.plan_spmspv(a, opt));
    return plans.front().second;
  }

  Measurement operator()(const nlohmann::json& params, int samples) {
    return guarded([&]() -> Measurement {
      const SpmspvPlan<float>& plan = plan_for(params);
      Stream s(ctx);
      DeviceBuffer<float> y(static_cast<size_t>(a.rows));
      std::vector<double> times;
      std::string detail = fmt::format("convert {:.1f} ms (once);", plan.stats().storage.convert_ms);
      for (auto& e : densities) {
        plan.run(e.xs[0], y, s);
        s.synchronize();
        auto got = y.download();
        const double err = reference::relative_error(std::span<const double>(e.ref), std::span<const float>(got));
        if (!(err <= 1e-5))
          return {TrialStatus::WrongResult, 0, fmt::format("density {}: relative error {:.3e}", e.d, err)};
        auto t = time_on_stream(s.handle(), timing_for(samples),
                                [&](int64_t i) { plan.run(e.xs[i % kXCopies], y, s); });
        times.push_back(t.median_us);
        detail += fmt::format(" {}: {:.1f} us", e.d, t.median_us);
      }
      return {TrialStatus::Ok, geomean(times), detail};
    });
  }
};

}  // namespace

std::unique_ptr<tuner::Objective> make_objective(Context& ctx, const std::string& op, const NamedMatrix& m,
                                                 const std::vector<double>& densities) {
  if (op == "spmv") {
    auto o = std::make_shared<SpmvObjective>(ctx, m);
    return std::make_unique<tuner::Objective>([o](const nlohmann::json& c, int n) { return (*o)(c, n); });
  }
  if (op == "spmspv") {
    auto o = std::make_shared<SpmspvObjective>(ctx, m, densities);
    return std::make_unique<tuner::Objective>([o](const nlohmann::json& c, int n) { return (*o)(c, n); });
  }
  throw UsageError(fmt::format("dbtune: no objective for op '{}'", op));
}

}  // namespace dbsparse::tools

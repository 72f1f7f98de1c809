#include "support/hash.hpp"
#include "tools/bench/bench_spmspv.hpp"
#include "tools/bench/random.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <span>

#include "dbsparse/reference.hpp"
#include "dbsparse/spmspv.hpp"
#include "tools/baselines/cusparse_bsr.hpp"
#include "tools/baselines/cusparse_spmv.hpp"

namespace dbsparse::tools {
namespace {

constexpr int kBsrDim = 16;  // the DB-SpMSpV paper's BSR baseline
constexpr const char* kAuto = "dbsparse-auto";
constexpr const char* kPush = "dbsparse-push";
constexpr const char* kPull = "dbsparse-pull";
// x given as (index, value) pairs and y returned as pairs (run_sparse_out): no pass over all of x
// or y. Not what the dense-x baselines compute, so not in the summary's ratios.
constexpr const char* kSparseIo = "dbsparse-sparse-io";
// One row's timing at most this long: BSR16 on a scattered matrix takes ~10 ms a call, and
// 15 samples × 20 calls of it per density would eat much of a 30-minute device session.
constexpr double kRowBudgetUs = 2e6;

uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Same x for a (matrix, density) in every run, every impl and both precisions.
uint64_t x_seed(const std::string& matrix, double density) {
  return splitmix64(Fnv1a64().add(matrix).value() ^ std::bit_cast<uint64_t>(density));
}

}  // namespace

template <class T>
SparseX<T> make_sparse_x(const CsrMatrix<T>& a, const std::string& name, double density, size_t x_len) {
  SparseX<T> x;
  x.density = density;
  int64_t k = std::llround(density * a.cols);
  if (density > 0) k = std::max<int64_t>(k, 1);
  k = std::min<int64_t>(k, a.cols);
  Lcg rng{x_seed(name, density)};
  x.idx = sample_indices(a.cols, k, rng);
  for (int64_t i = 0; i < k; ++i) {
    T v;
    do v = static_cast<T>(rng.unit() * 2.0 - 1.0);
    while (v == T(0));
    x.val.push_back(v);
  }
  x.dense.assign(x_len, T(0));
  std::vector<char> on(static_cast<size_t>(a.cols), 0);
  for (int64_t i = 0; i < k; ++i) x.dense[x.idx[i]] = x.val[i], on[x.idx[i]] = 1;
  for (int32_t c : a.col_idx) x.nnz_touched += on[c];
  x.ref = reference::spmspv(a, std::span<const int32_t>(x.idx), std::span<const T>(x.val));
  return x;
}
template SparseX<float> make_sparse_x(const CsrMatrix<float>&, const std::string&, double, size_t);
template SparseX<double> make_sparse_x(const CsrMatrix<double>&, const std::string&, double, size_t);

namespace {

using Launch = std::function<void(int copy, uint64_t x, uint64_t y)>;

template <class T>
struct Bench {
  Context& ctx;
  const Stream& stream;
  const NamedMatrix& m;
  bool generated;
  const SpmspvBenchOptions& opt;
  double copy_gbs;
  std::vector<SpmspvRow>& out;

  CsrMatrix<T> a{};
  size_t x_len = 0, y_len = 0;  // padded to whole 16-blocks: bsrmv reads and writes that far
  int64_t csr_bytes = 0;        // CSR arrays + x + y once: cuSPARSE CSR's GB/s numerator
  int64_t vec_bytes = 0;
  size_t budget = 0;  // device bytes one rotation set may take
  std::vector<SparseX<T>> xs{};
  std::vector<std::vector<DeviceBuffer<T>>> xd{};  // [density][copy]: uploaded once, for every impl
  std::vector<DeviceBuffer<T>> yd{};
  // Each dbsparse impl's plans, kept for the second look (opt.recheck_rounds > 0).
  std::vector<std::pair<std::string, std::vector<SpmspvPlan<T>>>> kept{};

  int copies_for(int64_t footprint) const {
    return rotation_copies(static_cast<size_t>(footprint), ctx.device().l2_bytes, budget);
  }

  double check_run(size_t di, const Launch& launch) {
    auto& y = yd[0];
    y.fill_bytes(0xFF);  // NaN: a row left unwritten cannot pass
    ctx.synchronize();   // the fill ran on the legacy stream, which `stream` does not wait for
    launch(0, xd[di][0].ptr(), y.ptr());
    stream.synchronize();
    auto got = y.download();
    return reference::relative_error(std::span<const double>(xs[di].ref),
                                     std::span<const T>(got).first(static_cast<size_t>(a.rows)));
  }

  TimingResult time_runs(size_t di, int mat_copies, const Launch& launch, int& batch) {
    const auto& xc = xd[di];
    const int64_t vc = static_cast<int64_t>(yd.size());
    auto call = [&](int64_t i) { launch(static_cast<int>(i % mat_copies), xc[i % vc].ptr(), yd[i % vc].ptr()); };
    TimingOptions o = opt.timing;
    const double probe_us = time_on_stream(stream.handle(), TimingOptions{0, 1, 1}, call).median_us;
    const double calls = o.warmup + static_cast<double>(o.samples) * o.batch;
    if (probe_us * calls > kRowBudgetUs)
      o.batch = std::max(1, static_cast<int>((kRowBudgetUs / probe_us - o.warmup) / o.samples));
    batch = o.batch;
    return time_on_stream(stream.handle(), o, call);
  }

  SpmspvRow row(size_t di, const std::string& impl) const {
    SpmspvRow r;
    r.base.matrix = m.name;
    r.base.precision = sizeof(T) == 4 ? "f32" : "f64";
    r.base.impl = impl;
    r.base.rows = a.rows;
    r.base.cols = a.cols;
    r.base.nnz = a.nnz();
    r.density = xs[di].density;
    r.x_nnz = static_cast<int64_t>(xs[di].idx.size());
    r.nnz_touched = xs[di].nnz_touched;
    r.generated = generated;
    return r;
  }

  void unavailable(const std::string& impl, const std::string& why) {
    for (size_t di = 0; di < xs.size(); ++di) {
      out.push_back(row(di, impl));
      out.back().unavailable = why;
    }
  }

  // Checks, then times, one impl at one density; fills the measured fields of a row.
  // Times one impl at one density into r's measured fields (r already checked).
  void time_row(SpmspvRow& r, size_t di, int mat_copies, int64_t bytes, const Launch& launch, int x_copies) {
    auto t = time_runs(di, mat_copies, launch, r.batch);
    r.base.time_us = t.median_us;
    r.base.min_us = t.min_us;
    r.base.max_us = t.max_us;
    r.base.host_us = t.host_us;
    r.base.gflops = 2.0 * static_cast<double>(r.nnz_touched) / (t.median_us * 1e3);
    r.base.gbps = static_cast<double>(bytes) / (t.median_us * 1e3);
    r.base.pct_bw = 100.0 * r.base.gbps / copy_gbs;
    r.base.copies = mat_copies;
    r.bytes = bytes;
    r.x_copies = x_copies;
  }

  // Checks, then times, one impl at one density; fills the measured fields of a row.
  SpmspvRow measure(size_t di, const std::string& impl, int mat_copies, int64_t bytes, const Launch& launch,
                    const std::function<void(SpmspvRow&)>& after_check = {}) {
    SpmspvRow r = row(di, impl);
    r.base.rel_err = check_run(di, launch);
    if (after_check) after_check(r);  // reads what the checked run left, before timing overwrites it
    time_row(r, di, mat_copies, bytes, launch, static_cast<int>(yd.size()));
    return r;
  }

  // The dbsparse plans for one impl (with --config's params when given), as many copies as the
  // rotation wants; none, with the impl's rows marked unavailable, when planning fails.
  std::vector<SpmspvPlan<T>> make_plans(SpmspvOptions o, const char* impl) {
    const Config forced{"spmspv", opt.config.value_or(nlohmann::json::object()), ConfigSource::Explicit,
                        "bench --config"};
    if (opt.config) o.config = &forced;
    std::vector<SpmspvPlan<T>> plans;
    try {
      plans.push_back(plan_spmspv(ctx, a, o));
      const int64_t db = std::max<int64_t>(plans[0].stats().storage.bytes_total, csr_bytes);
      const int copies = copies_for(db + vec_bytes);
      while (static_cast<int>(plans.size()) < copies) plans.push_back(plan_spmspv(ctx, a, o));
    } catch (const Error& e) {
      if (plans.empty()) unavailable(impl, e.what());
    }
    ctx.synchronize();
    return plans;
  }

  void set_kernel(SpmspvRow& r, const SpmspvPlan<T>& plan) const {
    const auto& k = plan.kernel();
    r.base.key = k.key;
    r.base.config_source = to_string(plan.config_source());
    r.base.kernel_origin = k.origin;
    r.base.acquire_ms = k.acquire_ms;
    r.base.load_ms = k.load_ms;
  }

  void dbsparse(SpmspvDirection dir, const char* impl) {
    SpmspvOptions o;
    o.direction = dir;
    o.fused = opt.fused;
    std::vector<SpmspvPlan<T>> plans = make_plans(o, impl);
    if (plans.empty()) return;
    const auto s = stream.handle();
    Launch launch = [&](int c, uint64_t x, uint64_t y) { plans[c].run(x, y, s); };
    for (size_t di = 0; di < xs.size(); ++di) {
      // The blocks' bytes as pulled and the residual's as pushed (SpmspvPlan::pull_bytes_visited);
      // an approximation where the blocks push.
      const int64_t bytes = plans[0].pull_bytes_visited(std::span<const int32_t>(xs[di].idx));
      auto r = measure(di, impl, static_cast<int>(plans.size()), bytes, launch, [&](SpmspvRow& checked) {
        checked.direction = to_string(plans[0].last_direction(stream));
        checked.xb = plans[0].last_xb(stream);
      });
      set_kernel(r, plans[0]);
      out.push_back(r);
    }
    if (opt.recheck_rounds > 0) kept.emplace_back(impl, std::move(plans));
  }

  // check-auto's second look, density by density (second_look), over the kept impls' rows from
  // `before` in out.
  void recheck(size_t before) {
    for (size_t di = 0; di < xs.size(); ++di) {
      std::vector<RecheckRow> rows;
      const auto& xc = xd[di];
      const int64_t vc = static_cast<int64_t>(yd.size());
      int batch = opt.timing.batch;
      for (auto& [impl, plans] : kept)
        for (size_t i = before; i < out.size(); ++i) {
          SpmspvRow& r = out[i];
          if (r.base.impl != impl || r.density != xs[di].density || !r.unavailable.empty()) continue;
          if (impl == kAuto) batch = r.batch;
          rows.push_back({&r.base, impl == kAuto, [&plans = plans, &xc, vc, this](int64_t c) {
                            plans[c % static_cast<int64_t>(plans.size())].run(xc[c % vc].ptr(), yd[c % vc].ptr(),
                                                                              stream.handle());
                          }});
        }
      if (rows.size() != kept.size()) continue;  // an impl without a row at this density
      TimingOptions o = opt.timing;
      o.batch = batch;
      second_look(stream.handle(), o, opt.recheck_rounds, rows);
    }
    kept.clear();
  }

  void dbsparse_sparse_io() {
    std::vector<SpmspvPlan<T>> plans = make_plans(SpmspvOptions{}, kSparseIo);
    if (plans.empty()) return;
    DeviceBuffer<int32_t> yi(static_cast<size_t>(std::max(a.rows, 1))), yn(1);
    DeviceBuffer<T> yv(static_cast<size_t>(std::max(a.rows, 1)));
    for (size_t di = 0; di < xs.size(); ++di) {
      const auto& x = xs[di];
      DeviceBuffer<int32_t> xi{std::span<const int32_t>(x.idx)};
      DeviceBuffer<T> xv{std::span<const T>(x.val)};
      const int32_t n = static_cast<int32_t>(x.idx.size());
      // Every plan's first call allocates its workspace's buffers: all of them before any timing.
      for (auto& p : plans) p.run_sparse_out(xi, xv, n, yi, yv, yn, stream);
      stream.synchronize();
      SpmspvRow r = row(di, kSparseIo);
      const int32_t got = yn.download()[0];
      const auto gi = yi.download();
      const auto gv = yv.download();
      std::vector<T> dense(static_cast<size_t>(a.rows), T(0));
      for (int32_t k = 0; k < got && k < a.rows; ++k) dense[gi[k]] = gv[k];
      r.base.rel_err = reference::relative_error(std::span<const double>(x.ref), std::span<const T>(dense));
      r.direction = "push";
      r.xb = -1;
      // Bytes: the touched entries (index + value), x's pairs, y's pairs (at most the touched rows).
      const int64_t bytes = r.nnz_touched * (4 + static_cast<int64_t>(sizeof(T))) * 2 + n * 8LL;
      time_row(
          r, di, static_cast<int>(plans.size()), bytes,
          [&](int c, uint64_t, uint64_t) { plans[c].run_sparse_out(xi, xv, n, yi, yv, yn, stream); }, 1);
      set_kernel(r, plans[0]);
      out.push_back(r);
    }
  }

  void cusparse_csr() {
    std::vector<std::unique_ptr<CusparseSpmv<T>>> sp;
    const int copies = copies_for(csr_bytes);
    for (int c = 0; c < copies; ++c) sp.push_back(std::make_unique<CusparseSpmv<T>>(a, stream.handle()));
    ctx.synchronize();
    const auto alg = CusparseSpmvAlg::CsrAlg1;
    Launch launch = [&](int c, uint64_t x, uint64_t y) { sp[c]->run(alg, x, y); };
    for (size_t di = 0; di < xs.size(); ++di) out.push_back(measure(di, to_string(alg), copies, csr_bytes, launch));
  }

  void cusparse_bsr() {
    const std::string impl = fmt::format("cusparse-bsr{}", kBsrDim);
    const BsrFootprint f = bsr_footprint(a, kBsrDim);
    if (auto why = bsr_unavailable_reason(f); !why.empty()) return unavailable(impl, why);
    const int64_t bytes = f.bytes + vec_bytes;
    const int copies = copies_for(bytes);
    std::vector<std::unique_ptr<CusparseBsr<T>>> bsr;
    try {
      for (int c = 0; c < copies; ++c) bsr.push_back(std::make_unique<CusparseBsr<T>>(a, stream.handle(), kBsrDim));
    } catch (const Error& e) {  // later copies may not fit: time with the ones that did
      if (bsr.empty()) return unavailable(impl, e.what());
    }
    ctx.synchronize();
    Launch launch = [&](int c, uint64_t x, uint64_t y) { bsr[c]->run(x, y); };
    for (size_t di = 0; di < xs.size(); ++di)
      out.push_back(measure(di, impl, static_cast<int>(bsr.size()), bytes, launch));
  }

  void run() {
    a = m.csr.cast<T>();
    x_len = (static_cast<size_t>(a.cols) + kBsrDim - 1) / kBsrDim * kBsrDim;
    y_len = (static_cast<size_t>(a.rows) + kBsrDim - 1) / kBsrDim * kBsrDim;
    csr_bytes = (a.rows + 1) * 4LL + a.nnz() * (4LL + static_cast<int64_t>(sizeof(T))) +
                (static_cast<int64_t>(a.cols) + a.rows) * static_cast<int64_t>(sizeof(T));
    vec_bytes = static_cast<int64_t>((x_len + y_len) * sizeof(T));
    budget = static_cast<size_t>(ctx.device().memory_bytes / 16);
    for (double d : opt.densities) xs.push_back(make_sparse_x(a, m.name, d, x_len));
    // Every density's x copies stay resident, so each rotation set gets 1/ndens of the budget.
    const size_t vc =
        rotation_copies(static_cast<size_t>(vec_bytes), ctx.device().l2_bytes, budget / std::max<size_t>(1, xs.size()));
    xd.resize(xs.size());
    for (size_t di = 0; di < xs.size(); ++di)
      for (size_t c = 0; c < vc; ++c) xd[di].emplace_back(std::span<const T>(xs[di].dense));
    for (size_t c = 0; c < vc; ++c) yd.emplace_back(y_len);
    ctx.synchronize();

    const size_t before = out.size();
    // One impl at a time, so only its copies of A occupy the device.
    // $DBSPARSE_BENCH_AUTO_LAST=1 times auto after the forced paths: the check that an order effect
    // (clocks, caches warming over a matrix's rows) does not decide auto against them.
    const bool auto_last = auto_timed_last();
    if (!auto_last) dbsparse(SpmspvDirection::Auto, kAuto);
    dbsparse(SpmspvDirection::Push, kPush);
    dbsparse(SpmspvDirection::Pull, kPull);
    if (auto_last) dbsparse(SpmspvDirection::Auto, kAuto);
    recheck(before);
    dbsparse_sparse_io();
    if (opt.baselines) {
      cusparse_bsr();
      cusparse_csr();
    }
    // Rows came out impl by impl; report them density by density.
    const auto& ds = opt.densities;
    auto pos = [&](double d) { return std::find(ds.begin(), ds.end(), d) - ds.begin(); };
    std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(before), out.end(),
                     [&](const SpmspvRow& p, const SpmspvRow& q) { return pos(p.density) < pos(q.density); });
  }
};

}  // namespace

nlohmann::json SpmspvRow::to_json() const {
  nlohmann::json j;
  if (unavailable.empty()) {
    j = base.to_json();
  } else {
    j = {{"matrix", base.matrix}, {"precision", base.precision}, {"impl", base.impl},
         {"rows", base.rows},     {"cols", base.cols},           {"nnz", base.nnz}};
  }
  j["density"] = density;
  j["x_nnz"] = x_nnz;
  j["nnz_touched"] = nnz_touched;
  j["generated"] = generated;
  j["available"] = unavailable.empty();
  if (!unavailable.empty()) {
    j["reason"] = unavailable;
    return j;
  }
  j["bytes"] = bytes;
  j["x_copies"] = x_copies;
  j["batch"] = batch;
  if (!direction.empty()) {
    j["direction"] = direction;
    j["xb"] = xb;
  }
  return j;
}

void bench_spmspv_matrix(Context& ctx, const Stream& stream, const NamedMatrix& m, bool generated,
                         const SpmspvBenchOptions& opt, double copy_gbs, std::vector<SpmspvRow>& out) {
  for (double d : opt.densities)
    if (!(d >= 0.0 && d <= 1.0)) throw UsageError(fmt::format("density {} is not in [0, 1]", d));
  for (const auto& prec : opt.precisions) {
    if (prec == "f32")
      Bench<float>{ctx, stream, m, generated, opt, copy_gbs, out}.run();
    else if (prec == "f64")
      Bench<double>{ctx, stream, m, generated, opt, copy_gbs, out}.run();
    else
      throw UsageError("unknown precision '" + prec + "' (expected f32 or f64)");
  }
}

void print_spmspv_header() {
  fmt::print("{:<34} {:>4} {:>8} {:>9} {:<17} {:>9} {:>8} {:>8} {:>6} {:>9} {:>4} {:>6}\n", "matrix", "prec", "density",
             "x.nnz", "impl", "us", "GFLOP/s", "GB/s", "%BW", "rel.err", "dir", "xb");
}

void print_spmspv_row(const SpmspvRow& r) {
  const auto& b = r.base;
  if (!r.unavailable.empty()) {
    fmt::print("{:<34} {:>4} {:>8g} {:>9} {:<17} n/a: {}\n", short_name(b.matrix), b.precision, r.density, r.x_nnz,
               b.impl, r.unavailable);
  } else {
    std::string xb = r.direction.empty() ? "" : fmt::format("{:.3f}", r.xb);
    fmt::print("{:<34} {:>4} {:>8g} {:>9} {:<17} {:>9.1f} {:>8.1f} {:>8.1f} {:>5.1f}% {:>9.2e} {:>4} {:>6}\n",
               short_name(b.matrix), b.precision, r.density, r.x_nnz, b.impl, b.time_us, b.gflops, b.gbps, b.pct_bw,
               b.rel_err, r.direction, xb);
  }
  std::fflush(stdout);
}

nlohmann::json spmspv_summary(const std::vector<SpmspvRow>& rows, const std::vector<double>& densities) {
  const bool any_generated = std::any_of(rows.begin(), rows.end(), [](const SpmspvRow& r) { return r.generated; });
  // precision -> density -> matrix -> impl -> median µs
  std::map<std::string, std::map<double, std::map<std::string, std::map<std::string, double>>>> t;
  for (const auto& r : rows)
    if ((r.generated || !any_generated) && r.unavailable.empty() && r.base.time_us > 0)
      t[r.base.precision][r.density][r.base.matrix][r.base.impl] = r.base.time_us;
  const std::string bsr = fmt::format("cusparse-bsr{}", kBsrDim), csr = to_string(CusparseSpmvAlg::CsrAlg1);
  auto geomean = [](double log_sum, int n) { return n ? nlohmann::json(std::exp(log_sum / n)) : nlohmann::json(); };

  nlohmann::json s = {{"matrices", any_generated ? "generated" : "all"}, {"within", 0.05}};
  s["per_density"] = nlohmann::json::array();
  s["overall"] = nlohmann::json::array();
  for (const auto& [prec, by_density] : t) {
    int within_all = 0, pairs_all = 0;
    for (double d : densities) {
      auto it = by_density.find(d);
      if (it == by_density.end()) continue;
      double log_bsr = 0, log_csr = 0;
      int n_bsr = 0, n_csr = 0, within = 0, pairs = 0;
      for (const auto& [matrix, times] : it->second) {
        auto get = [&](const std::string& impl) {
          auto f = times.find(impl);
          return f == times.end() ? 0.0 : f->second;
        };
        const double a = get(kAuto), b = get(bsr), c = get(csr), push = get(kPush), pull = get(kPull);
        if (a <= 0) continue;
        if (b > 0) log_bsr += std::log(b / a), ++n_bsr;
        if (c > 0) log_csr += std::log(c / a), ++n_csr;
        if (push > 0 && pull > 0) ++pairs, within += a <= 1.05 * std::min(push, pull);
      }
      within_all += within;
      pairs_all += pairs;
      s["per_density"].push_back({{"precision", prec},
                                  {"density", d},
                                  {"bsr16_over_auto_geomean", geomean(log_bsr, n_bsr)},
                                  {"bsr16_matrices", n_bsr},
                                  {"csr_over_auto_geomean", geomean(log_csr, n_csr)},
                                  {"csr_matrices", n_csr},
                                  {"auto_within", within},
                                  {"pairs", pairs}});
    }
    const auto share = pairs_all ? nlohmann::json(double(within_all) / pairs_all) : nlohmann::json();
    s["overall"].push_back({{"precision", prec}, {"auto_within", within_all}, {"pairs", pairs_all}, {"share", share}});
  }
  return s;
}

void print_spmspv_summary(const nlohmann::json& s) {
  auto ratio = [](const nlohmann::json& v, int n) {
    return v.is_null() ? std::string("-") : fmt::format("{:.2f}x ({})", v.get<double>(), n);
  };
  fmt::print("\nsummary over {} matrices (ratios above 1: auto is faster)\n", s["matrices"].get<std::string>());
  fmt::print("{:>4} {:>8} {:>16} {:>16} {:>26}\n", "prec", "density", "BSR16/auto", "CSR/auto",
             "auto within 5% of forced");
  for (const auto& e : s["per_density"])
    fmt::print("{:>4} {:>8g} {:>16} {:>16} {:>26}\n", e["precision"].get<std::string>(), e["density"].get<double>(),
               ratio(e["bsr16_over_auto_geomean"], e["bsr16_matrices"].get<int>()),
               ratio(e["csr_over_auto_geomean"], e["csr_matrices"].get<int>()),
               fmt::format("{}/{}", e["auto_within"].get<int>(), e["pairs"].get<int>()));
  for (const auto& e : s["overall"]) {
    const int w = e["auto_within"].get<int>(), p = e["pairs"].get<int>();
    fmt::print("{:>4} {:>8} {:>16} {:>16} {:>26}\n", e["precision"].get<std::string>(), "all", "", "",
               p ? fmt::format("{}/{} ({:.0f}%)", w, p, 100.0 * w / p) : std::string("-"));
  }
  std::fflush(stdout);
}

}  // namespace dbsparse::tools

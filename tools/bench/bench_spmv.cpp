#include "tools/bench/bench_spmv.hpp"
#include "tools/bench/random.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "dbsparse/reference.hpp"
#include "dbsparse/spmv.hpp"
#include "tools/baselines/cusparse_spmv.hpp"
#include "tools/bench/check_auto.hpp"
#include "tools/bench/stats.hpp"

namespace dbsparse::tools {
namespace {

template <class T>
struct Problem {
  CsrMatrix<T> a;
  std::vector<T> x;
  std::vector<double> ref;
  size_t bytes = 0;  // CSR arrays + x + y, each once: the floor's numerator
};

template <class T>
BenchRow make_row(const NamedMatrix& m, const Problem<T>& p, const std::string& impl, const TimingResult& t,
                  double copy_gbs, double rel_err, int copies) {
  BenchRow r;
  r.matrix = m.name;
  r.precision = sizeof(T) == 4 ? "f32" : "f64";
  r.impl = impl;
  r.rows = p.a.rows;
  r.cols = p.a.cols;
  r.nnz = p.a.nnz();
  r.time_us = t.median_us;
  r.min_us = t.min_us;
  r.max_us = t.max_us;
  r.host_us = t.host_us;
  r.gflops = 2.0 * static_cast<double>(r.nnz) / (t.median_us * 1e3);
  r.gbps = static_cast<double>(p.bytes) / (t.median_us * 1e3);
  r.pct_bw = 100.0 * r.gbps / copy_gbs;
  r.rel_err = rel_err;
  r.copies = copies;
  return r;
}

template <class T>
double check_result(const Problem<T>& p, const DeviceBuffer<T>& y) {
  auto got = y.download();
  return reference::relative_error(std::span<const double>(p.ref), std::span<const T>(got));
}

template <class T>
void bench_typed(Context& ctx, const Stream& stream, const NamedMatrix& m, const SpmvBenchOptions& opt, double copy_gbs,
                 std::vector<BenchRow>& out) {
  Problem<T> p;
  p.a = m.csr.cast<T>();
  auto xd = random_values<double>(static_cast<size_t>(p.a.cols), 42);
  p.x.assign(xd.begin(), xd.end());
  p.ref = reference::spmv(p.a, std::span<const T>(p.x));
  p.bytes = (p.a.rows + 1) * 4ull + p.a.nnz() * (4ull + sizeof(T)) + (p.a.cols + p.a.rows) * sizeof(T);
  const int copies =
      rotation_copies(p.bytes, ctx.device().l2_bytes, static_cast<size_t>(ctx.device().memory_bytes / 8));
  std::vector<DeviceBuffer<T>> xs, ys;
  for (int c = 0; c < copies; ++c) {
    xs.emplace_back(std::span<const T>(p.x));
    ys.emplace_back(static_cast<size_t>(p.a.rows));
  }
  std::vector<std::string> strategies = opt.strategies;
  if (strategies.empty()) strategies.push_back("auto");
  // Each strategy's plans and its row's index in `out`, kept for the second look.
  std::vector<std::pair<std::vector<SpmvPlan<T>>, size_t>> kept;
  for (const auto& named : strategies) {
    // "auto": the config look-up's choice, the row a caller's plan_spmv(ctx, a) gets ("dbsparse").
    const std::string strategy = named == "auto" ? "" : named;
    std::vector<SpmvPlan<T>> plans;
    Config forced{"spmv", config_to_json(SpmvConfig{}), ConfigSource::Explicit, "bench --strategy"};
    forced.params["strategy"] = strategy;
    if (strategy == "classified-split") {  // the classified bins, one kernel each
      forced.params["strategy"] = "classified";
      forced.params["fuse_bins"] = 0;
    }
    // The default strategy with A's columns in degree order, or as given: the reorder A/B (the
    // other strategies take the default reorder, auto).
    if (strategy == "cols-degree" || strategy == "cols-none") {
      forced.params["strategy"] = SpmvConfig{}.strategy;
      forced.params["reorder"] = strategy == "cols-degree" ? "degree" : "none";
    }
    if (strategy.rfind("window-", 0) == 0) {  // classified, rows up to N long in memory order, e.g. window-64
      forced.params["strategy"] = "classified";
      forced.params["window_max_len"] = std::stoi(strategy.substr(7));
    }
    if (strategy.rfind("scalar-max-", 0) == 0) {  // classified, the scalar bin up to N, e.g. scalar-max-4
      forced.params["strategy"] = "classified";
      forced.params["scalar_max_len"] = std::stoi(strategy.substr(11));
    }
    if (strategy.rfind("uniform-scalar-max-", 0) == 0) {
      forced.params["strategy"] = "uniform";
      forced.params["scalar_max_len"] = std::stoi(strategy.substr(19));
    }
    if (strategy.rfind("vector-l", 0) == 0) {  // vector with a fixed width, e.g. vector-l4
      forced.params["strategy"] = "vector";
      forced.params["lanes"] = std::stoi(strategy.substr(8));
    }
    // A forced classified row (and its window and scalar-bin ablations) runs the bins, never the
    // small-matrix path: vector-l<N> forces that one. cols-* keep the default config's path.
    if (forced.params["strategy"] == "classified" && strategy.rfind("cols-", 0) != 0) forced.params["fill_threads"] = 0;
    for (int c = 0; c < copies; ++c)
      plans.push_back(strategy.empty() ? plan_spmv(ctx, p.a) : plan_spmv(ctx, p.a, forced));
    if (opt.explain)
      fmt::print(stderr, "{} {} {}:\n{}", m.name, sizeof(T) == 4 ? "f32" : "f64",
                 strategy.empty() ? "config" : strategy, plans[0].explain());
    ys[0].fill_bytes(0xFF);  // NaN: an unwritten row cannot pass
    plans[0].run(xs[0], ys[0], stream);
    stream.synchronize();
    double err = check_result(p, ys[0]);
    auto t = time_on_stream(stream.handle(), opt.timing,
                            [&](int64_t i) { plans[i % copies].run(xs[i % copies], ys[i % copies], stream); });
    auto row = make_row(m, p, strategy.empty() ? "dbsparse" : "dbsparse-" + strategy, t, copy_gbs, err, copies);
    row.key = plans[0].kernel().key;
    for (size_t k = 1; k < plans[0].kernels().size(); ++k) row.key += "+" + plans[0].kernels()[k].key;
    row.config_source = to_string(plans[0].config_source());
    row.kernel_origin = plans[0].kernel().origin;
    row.acquire_ms = plans[0].kernel().acquire_ms;
    row.load_ms = plans[0].kernel().load_ms;
    row.reordered = plans[0].columns_reordered();
    row.reorder_ms = plans[0].reorder_ms();
    out.push_back(row);
    if (opt.recheck_rounds > 0) kept.emplace_back(std::move(plans), out.size() - 1);
  }
  if (!kept.empty()) {  // the second look: auto ("dbsparse") against the forced "dbsparse-<strategy>" rows
    std::vector<RecheckRow> again;
    for (auto& [plans, at] : kept) {
      BenchRow& r = out[at];
      if (r.impl != "dbsparse" && r.impl.rfind("dbsparse-", 0) != 0) continue;
      again.push_back({&r, r.impl == "dbsparse", [&plans = plans, &xs, &ys, &stream, copies](int64_t i) {
                         plans[i % plans.size()].run(xs[i % copies], ys[i % copies], stream);
                       }});
    }
    second_look(stream.handle(), opt.timing, opt.recheck_rounds, again);
  }
  note_order_payback(out, m.name, sizeof(T) == 4 ? "f32" : "f64");
  if (!opt.baselines) return;
  std::vector<std::unique_ptr<CusparseSpmv<T>>> sp;
  for (int c = 0; c < copies; ++c) sp.push_back(std::make_unique<CusparseSpmv<T>>(p.a, stream.handle()));
  for (auto alg : {CusparseSpmvAlg::CsrAlg1, CusparseSpmvAlg::CsrAlg2}) {
    ys[0].fill_bytes(0xFF);
    sp[0]->run(alg, xs[0].ptr(), ys[0].ptr());
    stream.synchronize();
    double err = check_result(p, ys[0]);
    auto t = time_on_stream(stream.handle(), opt.timing,
                            [&](int64_t i) { sp[i % copies]->run(alg, xs[i % copies].ptr(), ys[i % copies].ptr()); });
    auto row = make_row(m, p, to_string(alg), t, copy_gbs, err, copies);
    out.push_back(row);
  }
}

}  // namespace

// The reordered rows of this matrix and precision against its dbsparse-cols-none row, if any: the
// order's host time over the time it saves a call.
void note_order_payback(std::vector<BenchRow>& rows, const std::string& matrix, const std::string& prec) {
  const BenchRow* given = nullptr;
  for (const auto& r : rows)
    if (r.matrix == matrix && r.precision == prec && r.impl == "dbsparse-cols-none") given = &r;
  for (auto& r : rows) {
    if (r.matrix != matrix || r.precision != prec || !r.reordered) continue;
    r.note = fmt::format("columns in degree order: {:.1f} ms on the host at plan time", r.reorder_ms);
    if (!given) continue;
    const double saved_us = given->time_us - r.time_us;
    r.paid_back_after_calls = saved_us > 0 ? std::ceil(r.reorder_ms * 1e3 / saved_us) : 0;
    r.note += saved_us > 0
                  ? fmt::format(", {:.1f} us a call faster than dbsparse-cols-none: paid back after {:.0f} calls",
                                saved_us, r.paid_back_after_calls)
                  : fmt::format(", {:.1f} us a call slower than dbsparse-cols-none: never paid back", -saved_us);
  }
}

void BenchRow::retime(double us) {
  if (!(us > 0) || !(time_us > 0)) return;
  const double f = time_us / us;
  first_pass_us = time_us;
  time_us = us;
  gflops *= f;
  gbps *= f;
  pct_bw *= f;
}

void second_look(void* stream, const TimingOptions& opt, int rounds, const std::vector<RecheckRow>& rows) {
  if (rounds <= 0) return;
  std::vector<double> us;
  std::vector<bool> forced;
  size_t auto_index = rows.size();
  for (size_t k = 0; k < rows.size(); ++k) {
    us.push_back(rows[k].row->time_us);
    forced.push_back(!rows[k].is_auto);
    if (rows[k].is_auto) auto_index = k;
  }
  const auto pick = recheck_candidates(auto_index, us, forced);
  if (pick.size() < 2) return;
  std::vector<std::function<void(int64_t)>> launches;
  for (size_t k : pick) launches.push_back(rows[k].launch);
  const auto again = time_interleaved(stream, opt, launches, rounds);
  for (size_t j = 0; j < pick.size(); ++j) rows[pick[j]].row->retime(again[j]);
}

nlohmann::json BenchRow::to_json() const {
  nlohmann::json j = {
      {"matrix", matrix}, {"precision", precision}, {"impl", impl},          {"rows", rows},       {"cols", cols},
      {"nnz", nnz},       {"time_us", time_us},     {"min_us", min_us},      {"max_us", max_us},   {"host_us", host_us},
      {"gflops", gflops}, {"gbps", gbps},           {"pct_copy_bw", pct_bw}, {"rel_err", rel_err}, {"copies", copies}};
  if (first_pass_us > 0) j["first_pass_us"] = first_pass_us;
  if (reordered || reorder_ms > 0) {
    j["column_order"] = {{"degree", reordered}, {"host_ms", reorder_ms}};
    if (paid_back_after_calls >= 0) j["column_order"]["paid_back_after_calls"] = paid_back_after_calls;
  }
  if (!key.empty()) {
    j["key"] = key;
    j["config_source"] = config_source;
    j["kernel"] = {{"origin", kernel_origin}, {"acquire_ms", acquire_ms}, {"load_ms", load_ms}};
  }
  return j;
}

void bench_spmv_matrix(Context& ctx, const Stream& stream, const NamedMatrix& m, const SpmvBenchOptions& opt,
                       double copy_gbs, std::vector<BenchRow>& out) {
  for (const auto& prec : opt.precisions) {
    if (prec == "f32")
      bench_typed<float>(ctx, stream, m, opt, copy_gbs, out);
    else if (prec == "f64")
      bench_typed<double>(ctx, stream, m, opt, copy_gbs, out);
    else
      throw UsageError("unknown precision '" + prec + "' (expected f32 or f64)");
  }
}

namespace {

bool is_regular(const std::string& m) {
  return m.rfind("stencil", 0) == 0 || m.rfind("banded", 0) == 0 || m.rfind("fem", 0) == 0;
}

}  // namespace

nlohmann::json spmv_summary(const std::vector<BenchRow>& rows, const std::set<std::string>& generated) {
  // precision -> matrix -> impl -> row
  std::map<std::string, std::map<std::string, std::map<std::string, const BenchRow*>>> t;
  for (const auto& r : rows)
    if (generated.count(r.matrix) && r.time_us > 0) t[r.precision][r.matrix][r.impl] = &r;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [prec, mats] : t) {
    std::set<std::string> impls;
    for (const auto& [m, byimpl] : mats)
      for (const auto& [impl, r] : byimpl)
        if (impl.rfind("dbsparse", 0) == 0) impls.insert(impl);
    for (const auto& impl : impls) {
      std::vector<double> all, regular, irregular, bw_regular;
      for (const auto& [m, byimpl] : mats) {
        auto me = byimpl.find(impl), a1 = byimpl.find("cusparse-csr-alg1"), a2 = byimpl.find("cusparse-csr-alg2");
        if (me == byimpl.end() || a1 == byimpl.end() || a2 == byimpl.end()) continue;
        const double best = std::min(a1->second->time_us, a2->second->time_us);
        const double s = best / me->second->time_us;
        all.push_back(s);
        (is_regular(m) ? regular : irregular).push_back(s);
        if (is_regular(m) && me->second->nnz >= 10'000'000) bw_regular.push_back(me->second->pct_bw);
      }
      if (all.empty()) continue;  // no cuSPARSE rows to compare with (--no-baselines)
      double min_bw = bw_regular.empty() ? 0 : *std::min_element(bw_regular.begin(), bw_regular.end());
      out.push_back(
          {{"precision", prec},
           {"impl", impl},
           {"matrices", all.size()},
           {"speedup_vs_best_cusparse", geomean(all)},
           {"speedup_regular", geomean(regular)},
           {"speedup_irregular", geomean(irregular)},
           {"min_irregular_speedup", irregular.empty() ? 0 : *std::min_element(irregular.begin(), irregular.end())},
           {"pct_bw_regular_10m_min", min_bw},
           {"pct_bw_regular_10m_geomean", geomean(bw_regular)}});
    }
    // Classified against uniform where rows mix (power-law, RMAT).
    for (const auto& [m, byimpl] : mats) {
      if (m.rfind("powerlaw", 0) != 0 && m.rfind("rmat", 0) != 0) continue;
      auto c = byimpl.find("dbsparse-classified"), u = byimpl.find("dbsparse-uniform");
      if (c == byimpl.end() || u == byimpl.end()) continue;
      out.push_back(
          {{"precision", prec}, {"matrix", m}, {"classified_over_uniform", u->second->time_us / c->second->time_us}});
    }
  }
  return out;
}

void print_spmv_summary(const nlohmann::json& summary) {
  fmt::print("summary over generated matrices (speed-up = better of cuSPARSE ALG1/ALG2 time / ours)\n");
  fmt::print("{:<5} {:<22} {:>4} {:>9} {:>9} {:>9} {:>13} {:>16}\n", "prec", "impl", "n", "all", "regular", "irregular",
             "min irregular", "%BW reg>=10M min");
  for (const auto& s : summary)
    if (s.contains("impl"))
      fmt::print("{:<5} {:<22} {:>4} {:>8.2f}x {:>8.2f}x {:>8.2f}x {:>12.2f}x {:>15.1f}%\n",
                 s["precision"].get<std::string>(), s["impl"].get<std::string>(), s["matrices"].get<size_t>(),
                 s["speedup_vs_best_cusparse"].get<double>(), s["speedup_regular"].get<double>(),
                 s["speedup_irregular"].get<double>(), s["min_irregular_speedup"].get<double>(),
                 s["pct_bw_regular_10m_min"].get<double>());
  for (const auto& s : summary)
    if (s.contains("classified_over_uniform"))
      fmt::print("{:<5} classified / uniform on {}: {:.2f}x\n", s["precision"].get<std::string>(),
                 s["matrix"].get<std::string>(), s["classified_over_uniform"].get<double>());
}

void print_bench_header() {
  fmt::print("{:<34} {:>4} {:>10} {:>11} {:<18} {:>9} {:>8} {:>8} {:>6} {:>9}\n", "matrix", "prec", "rows", "nnz",
             "impl", "us", "GFLOP/s", "GB/s", "%BW", "rel.err");
}

std::string short_name(const std::string& s) { return s.size() > 34 ? s.substr(0, 31) + "..." : s; }

void print_bench_row(const BenchRow& r) {
  std::string name = short_name(r.matrix);
  fmt::print("{:<34} {:>4} {:>10} {:>11} {:<18} {:>9.1f} {:>8.1f} {:>8.1f} {:>5.1f}% {:>9.2e}\n", name, r.precision,
             r.rows, r.nnz, r.impl, r.time_us, r.gflops, r.gbps, r.pct_bw, r.rel_err);
  if (!r.note.empty()) fmt::print("{:<34} {}\n", "", r.note);
  std::fflush(stdout);
}

}  // namespace dbsparse::tools

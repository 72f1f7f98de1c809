#include "tools/common/bench_spmv.hpp"
#include "tools/common/bench_random.hpp"

#include <fmt/format.h>

#include <memory>

#include "dbsparse/reference.hpp"
#include "dbsparse/spmv.hpp"
#include "tools/common/cusparse_spmv.hpp"

namespace dbsparse::tools {
namespace {

std::vector<double> random_x(int32_t n, uint64_t seed) {
  std::vector<double> x(n);
  Lcg rng{seed};
  for (auto& v : x) v = rng.unit() * 2.0 - 1.0;
  return x;
}

template <class T>
struct Problem {
  CsrMatrix<T> a;
  std::vector<T> x;
  std::vector<double> ref;
  size_t bytes = 0;  // CSR arrays + x + y, each once: the floor's numerator
};

template <class T>
BenchRow make_row(const NamedMatrix& m, const Problem<T>& p, const std::string& impl,
                  const TimingResult& t, double copy_gbs, double rel_err, int copies) {
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
void bench_typed(Context& ctx, const Stream& stream, const NamedMatrix& m, const SpmvBenchOptions& opt,
                 double copy_gbs, std::vector<BenchRow>& out) {
  Problem<T> p;
  p.a = m.csr.cast<T>();
  auto xd = random_x(p.a.cols, 42);
  p.x.assign(xd.begin(), xd.end());
  p.ref = reference::spmv(p.a, std::span<const T>(p.x));
  p.bytes = (p.a.rows + 1) * 4ull + p.a.nnz() * (4ull + sizeof(T)) + (p.a.cols + p.a.rows) * sizeof(T);
  const int copies = rotation_copies(p.bytes, ctx.device().l2_bytes,
                                     static_cast<size_t>(ctx.device().memory_bytes / 8));
  std::vector<DeviceBuffer<T>> xs, ys;
  for (int c = 0; c < copies; ++c) {
    xs.emplace_back(std::span<const T>(p.x));
    ys.emplace_back(static_cast<size_t>(p.a.rows));
  }
  {
    std::vector<SpmvPlan<T>> plans;
    Config forced{"spmv", default_params("spmv"), ConfigSource::Explicit, "bench --strategy"};
    forced.params["strategy"] = opt.strategy;
    for (int c = 0; c < copies; ++c)
      plans.push_back(opt.strategy.empty() ? ctx.plan_spmv(p.a) : ctx.plan_spmv(p.a, forced));
    ys[0].fill_bytes(0xFF);  // NaN: an unwritten row cannot pass
    plans[0].run(xs[0], ys[0], stream);
    stream.synchronize();
    double err = check_result(p, ys[0]);
    auto t = time_on_stream(stream.handle(), opt.timing, [&](int64_t i) {
      plans[i % copies].run(xs[i % copies], ys[i % copies], stream);
    });
    auto row = make_row(m, p, opt.strategy.empty() ? "dbsparse" : "dbsparse-" + opt.strategy, t,
                        copy_gbs, err, copies);
    row.key = plans[0].kernel().key;
    row.config_source = to_string(plans[0].config_source());
    row.kernel_origin = plans[0].kernel().origin;
    row.acquire_ms = plans[0].kernel().acquire_ms;
    row.load_ms = plans[0].kernel().load_ms;
    out.push_back(row);
  }
  if (!opt.baselines) return;
  std::vector<std::unique_ptr<CusparseSpmv<T>>> sp;
  for (int c = 0; c < copies; ++c) sp.push_back(std::make_unique<CusparseSpmv<T>>(p.a, stream.handle()));
  for (auto alg : {CusparseSpmvAlg::CsrAlg1, CusparseSpmvAlg::CsrAlg2}) {
    ys[0].fill_bytes(0xFF);
    sp[0]->run(alg, xs[0].ptr(), ys[0].ptr());
    stream.synchronize();
    double err = check_result(p, ys[0]);
    auto t = time_on_stream(stream.handle(), opt.timing, [&](int64_t i) {
      sp[i % copies]->run(alg, xs[i % copies].ptr(), ys[i % copies].ptr());
    });
    auto row = make_row(m, p, to_string(alg), t, copy_gbs, err, copies);
    out.push_back(row);
  }
}

}  // namespace

nlohmann::json BenchRow::to_json() const {
  nlohmann::json j = {{"matrix", matrix},   {"precision", precision}, {"impl", impl},
                      {"rows", rows},       {"cols", cols},           {"nnz", nnz},
                      {"time_us", time_us}, {"min_us", min_us},       {"max_us", max_us},
                      {"gflops", gflops},   {"gbps", gbps},           {"pct_copy_bw", pct_bw},
                      {"rel_err", rel_err}, {"copies", copies}};
  if (!key.empty()) {
    j["key"] = key;
    j["config_source"] = config_source;
    j["kernel"] = {{"origin", kernel_origin}, {"acquire_ms", acquire_ms}, {"load_ms", load_ms}};
  }
  return j;
}

void bench_spmv_matrix(Context& ctx, const Stream& stream, const NamedMatrix& m,
                       const SpmvBenchOptions& opt, double copy_gbs, std::vector<BenchRow>& out) {
  for (const auto& prec : opt.precisions) {
    if (prec == "f32") bench_typed<float>(ctx, stream, m, opt, copy_gbs, out);
    else if (prec == "f64") bench_typed<double>(ctx, stream, m, opt, copy_gbs, out);
    else throw UsageError("unknown precision '" + prec + "' (expected f32 or f64)");
  }
}

void print_bench_header() {
  fmt::print("{:<34} {:>4} {:>10} {:>11} {:<18} {:>9} {:>8} {:>8} {:>6} {:>9}\n", "matrix", "prec",
             "rows", "nnz", "impl", "us", "GFLOP/s", "GB/s", "%BW", "rel.err");
}

std::string short_name(const std::string& s) { return s.size() > 34 ? s.substr(0, 31) + "..." : s; }

void print_bench_row(const BenchRow& r) {
  std::string name = short_name(r.matrix);
  fmt::print("{:<34} {:>4} {:>10} {:>11} {:<18} {:>9.1f} {:>8.1f} {:>8.1f} {:>5.1f}% {:>9.2e}\n", name,
             r.precision, r.rows, r.nnz, r.impl, r.time_us, r.gflops, r.gbps, r.pct_bw, r.rel_err);
  std::fflush(stdout);
}

}  // namespace dbsparse::tools

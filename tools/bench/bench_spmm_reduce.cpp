#include "tools/bench/bench_spmm_reduce.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "dbsparse/half.hpp"
#include "tools/bench/random.hpp"

namespace dbsparse::tools {
namespace {

std::vector<float> rounded(const std::vector<float>& x, SpmmDtype d) {
  if (d == SpmmDtype::F32) return x;
  return d == SpmmDtype::F16 ? half_to_floats(floats_to_half(x)) : bf16_to_floats(floats_to_bf16(x));
}

// The reduction of row i's products at column j in double, and the yardstick of its error: the
// largest |product| for max / min, sum |products| / length for the mean (0 for an empty row).
struct ReduceRef {
  std::vector<double> c, scale;
};

ReduceRef reduce_reference(const CsrMatrix<float>& a, const std::vector<float>& b, int n, SpmmReduce op) {
  ReduceRef r;
  r.c.assign(size_t(a.rows) * n, 0.0);
  r.scale.assign(size_t(a.rows) * n, 0.0);
  for (int32_t i = 0; i < a.rows; ++i) {
    const int32_t len = a.row_ptr[i + 1] - a.row_ptr[i];
    for (int j = 0; j < n; ++j) {
      double acc = 0, mag = 0;
      bool first = true;
      for (int32_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
        const double p = double(a.values[e]) * b[size_t(a.col_idx[e]) * n + j];
        if (op == SpmmReduce::Mean) {
          acc += p;
          mag += std::fabs(p);
        } else {
          if (first || (op == SpmmReduce::Max ? p > acc : p < acc)) acc = p;
          mag = std::max(mag, std::fabs(p));
          first = false;
        }
      }
      const size_t k = size_t(i) * n + j;
      r.c[k] = op == SpmmReduce::Mean && len > 0 ? acc / len : acc;
      r.scale[k] = op == SpmmReduce::Mean && len > 0 ? mag / len : mag;
    }
  }
  return r;
}

double worst_error(const std::vector<float>& got, const ReduceRef& ref) {
  double worst = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const double d = std::fabs(double(got[k]) - ref.c[k]);
    const double e = ref.scale[k] > 0 ? d / ref.scale[k] : (d == 0 ? 0.0 : std::numeric_limits<double>::infinity());
    if (!(e <= worst)) worst = e;  // NaN is the worst
  }
  return worst;
}

}  // namespace

nlohmann::json bench_spmm_reductions(Context& ctx, const Stream& stream, const CsrMatrix<float>& a, SpmmDtype dtype,
                                     int n, const std::vector<std::string>& reduces, const TimingOptions& timing,
                                     const Config* config, double sum_csr_us) {
  nlohmann::json out = nlohmann::json::array();
  if (reduces.empty()) return out;
  const std::vector<float> hb = rounded(random_values<float>(size_t(a.cols) * n, 307 + n), dtype);
  CsrMatrix<float> ar = a;
  ar.values = rounded(a.values, dtype);  // as the plan rounds A (the mean's scaling aside)
  const bool f32 = dtype == SpmmDtype::F32;
  DeviceBuffer<float> b, c;
  DeviceBuffer<uint16_t> b16, c16;
  if (f32) {
    b = DeviceBuffer<float>(std::span<const float>(hb));
    c = DeviceBuffer<float>(size_t(a.rows) * n);
  } else {
    const auto h = dtype == SpmmDtype::F16 ? floats_to_half(hb) : floats_to_bf16(hb);
    b16 = DeviceBuffer<uint16_t>(std::span<const uint16_t>(h));
    c16 = DeviceBuffer<uint16_t>(size_t(a.rows) * n);
  }
  DeviceBuffer<int32_t> arg(size_t(a.rows) * n);
  const double tol = f32 ? 1e-5 : 1e-2;
  for (const std::string& name : reduces) {
    const SpmmReduce op = parse_spmm_reduce(name);
    SpmmOptions o;
    o.dtype = dtype;
    o.reduce = op;
    o.config = config;
    const SpmmPlan plan = plan_spmm(ctx, a, n, o);
    const bool with_arg = op == SpmmReduce::Max || op == SpmmReduce::Min;
    const uint64_t bp = f32 ? b.ptr() : b16.ptr(), cp = f32 ? c.ptr() : c16.ptr();
    auto launch = [&] { plan.run_arg(bp, cp, with_arg ? arg.ptr() : 0, stream.handle()); };
    f32 ? c.fill_bytes(0xFF) : c16.fill_bytes(0xFF);
    launch();
    stream.synchronize();
    const std::vector<float> got = f32                       ? c.download()
                                   : dtype == SpmmDtype::F16 ? half_to_floats(c16.download())
                                                             : bf16_to_floats(c16.download());
    const double err = worst_error(got, reduce_reference(ar, hb, n, op));
    const double us = time_on_stream(stream.handle(), timing, [&](int64_t) { launch(); }).median_us;
    const double over_sum = us > 0 ? sum_csr_us / us : 0.0;
    fmt::print("  dbsparse-csr-{:<22} {:>4} {:>5} {:>8.1f}us  {:.2f}x the sum's CSR time{}{}\n", name, to_string(dtype),
               n, us, over_sum, with_arg ? " (with arg)" : "",
               err <= tol ? "" : fmt::format(" WRONG: error {:.3e} (tolerance {:.0e})", err, tol));
    out.push_back({{"reduce", name},
                   {"us", us},
                   {"over_sum", over_sum},
                   {"with_arg", with_arg},
                   {"error", err},
                   {"tolerance", tol},
                   {"correct", err <= tol}});
  }
  return out;
}

}  // namespace dbsparse::tools

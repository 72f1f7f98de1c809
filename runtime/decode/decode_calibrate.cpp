// calibrate_decode (include/dbsparse/decode_linear.hpp): each dense-or-bitmap mapping timed on two
// synthetic layers of LLM shapes, its fixed cost and its share of the copy bandwidth solved from
// the cost model's own terms, so that the model reproduces both times on this device.
#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "dbsparse/compact_weights.hpp"
#include "dbsparse/cuda_graph.hpp"
#include "dbsparse/decode_linear.hpp"
#include "dbsparse/half.hpp"
#include "runtime/decode/decode_timing.hpp"
#include "runtime/gpu/event_timing.hpp"

namespace dbsparse {
namespace {

// Three projections of a 7-8B model (its k, q and MLP gate), f16, each weight kept with probability
// 1/2: their bytes differ by 4x and 3.5x, which separates the fixed cost from the bandwidth in
// each of the two segments between them.
constexpr int32_t kCols = 4096, kSmallRows = 1024, kMiddleRows = 4096, kLargeRows = 14336;

CompactLayer synthetic_layer(int32_t rows) {
  CompactLayer l;
  l.name = "calibration";
  l.dtype = DecodeDtype::F16;
  auto& w = l.w;
  w.rows = rows;
  w.cols = kCols;
  w.strips = (rows + kBitmapStripRows - 1) / kBitmapStripRows;
  std::mt19937 rng(7);
  const size_t segments = static_cast<size_t>(w.cols) * w.strips;
  w.masks.resize(segments * 32);
  for (auto& m : w.masks) m = static_cast<uint32_t>(rng());
  w.seg_ptr.assign(segments + 1, 0);
  w.word_off.resize(w.masks.size());
  for (size_t s = 0; s < segments; ++s) {
    int32_t at = 0;
    for (int p = 0; p < 32; ++p) {
      w.word_off[s * 32 + p] = static_cast<uint16_t>(at);
      at += std::popcount(w.masks[s * 32 + p]);
    }
    w.seg_ptr[s + 1] = w.seg_ptr[s] + at;
  }
  std::vector<float> v(static_cast<size_t>(w.seg_ptr.back()));
  std::uniform_real_distribution<float> val(-0.05f, 0.05f);
  for (auto& x : v) x = val(rng);
  w.values = floats_to_half(v);
  return l;
}

}  // namespace

std::vector<DecodeLinearPlan> decode_copies_past_l2(Context& ctx, DecodeLinearPlan plan) {
  std::vector<DecodeLinearPlan> copies;
  copies.push_back(std::move(plan));
  const int64_t per_call = std::max<int64_t>(copies[0].weight_bytes(), 1);
  const int n = static_cast<int>(std::clamp<int64_t>((3 * ctx.device().l2_bytes + per_call - 1) / per_call, 1, 16));
  while (static_cast<int>(copies.size()) < n) copies.push_back(copies[0].clone());
  return copies;
}

double decode_graph_call_us(const std::vector<DecodeLinearPlan>& copies, uint64_t x, uint64_t y, const Stream& s,
                            int replays) {
  const CudaGraph g = CudaGraph::capture(s, [&] {
    for (int i = 0; i < kDecodeCallsPerGraph; ++i) copies[static_cast<size_t>(i) % copies.size()].run(x, y, s.handle());
  });
  return detail::median_event_us(s, std::max(replays, 1), [&] { g.replay(s); }) / kDecodeCallsPerGraph;
}

namespace {

struct Point {
  DecodeMapping mapping;
  const char* name;
  double act_density;
};

// Per call, us, of the mapping on `layer` at the point's activation density.
double time_point(Context& ctx, const CompactLayer& layer, const Point& pt, float tau_half, uint64_t x,
                  const Stream& s) {
  DecodeLinearOptions o;
  o.dtype = DecodeDtype::F16;
  o.mapping = pt.mapping;
  o.tau = pt.act_density < 1 ? tau_half : 0.0f;
  const std::vector<DecodeLinearPlan> copies = decode_copies_past_l2(ctx, plan_decode_linear(ctx, layer, o));
  DeviceBuffer<uint16_t> y(static_cast<size_t>(layer.w.rows));
  return decode_graph_call_us(copies, x, y.ptr(), s);
}

// The fixed cost and share that put the model through both measured points (f, s from
// t = f + bytes / (s * fill * bw), fill 1 at both shapes when their grids fill the GPU); the
// default fixed cost and the large point's share where the two do not give a sane pair.
std::pair<double, double> solve_fixed_and_share(const DecodeModelTerms& small, double t_small,
                                                const DecodeModelTerms& large, double t_large, const DeviceProfile& d) {
  const double bw = d.copy_bytes_per_s * 1e-6;  // bytes per us
  const double ws = decode_model_work(small, d), wl = decode_model_work(large, d);
  double share = (wl - ws) / ((t_large - t_small) * bw), fixed = t_small - ws / (share * bw);
  if (!(t_large > t_small && share > 0.05 && share < 2.0 && fixed > 0.3 && fixed < 30.0)) {
    fixed = large.fixed_us;
    share = wl / (std::max(t_large - fixed, 0.5) * bw);
  }
  return {fixed, std::clamp(share, 0.05, 2.0)};
}

}  // namespace

void calibrate_decode(Context& ctx, DeviceProfile& device, const std::function<void(const std::string&)>& progress) {
  ctx.make_current();
  const CompactLayer small = synthetic_layer(kSmallRows), middle = synthetic_layer(kMiddleRows),
                     large = synthetic_layer(kLargeRows);
  // x: every entry nonzero; tau at the median |x| keeps half of them.
  std::vector<float> xf(kCols);
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto& v : xf) v = nd(rng);
  std::vector<float> mag(xf.size());
  std::transform(xf.begin(), xf.end(), mag.begin(), [](float v) { return std::fabs(v); });
  std::nth_element(mag.begin(), mag.begin() + kCols / 2, mag.end());
  const float tau_half = mag[kCols / 2];
  const std::vector<uint16_t> xh = floats_to_half(xf);
  DeviceBuffer<uint16_t> x{std::span<const uint16_t>(xh)};
  Stream s(ctx);
  for (const Point& pt : {Point{DecodeMapping::Ring, "ring", 1.0}, Point{DecodeMapping::Ring, "ring", 0.5},
                          Point{DecodeMapping::DenseColumns, "dense_columns", 1.0},
                          Point{DecodeMapping::DenseColumns, "dense_columns", 0.5},
                          Point{DecodeMapping::Dense, "dense", 1.0}, Point{DecodeMapping::Tiles, "tiles", 1.0}}) {
    const double t_small = time_point(ctx, small, pt, tau_half, x.ptr(), s);
    const double t_middle = time_point(ctx, middle, pt, tau_half, x.ptr(), s);
    const double t_large = time_point(ctx, large, pt, tau_half, x.ptr(), s);
    auto terms = [&](const CompactLayer& l) {
      const double wd = static_cast<double>(l.w.nnz()) / (static_cast<double>(l.w.rows) * kCols);
      return decode_model_terms(pt.mapping, l.w.rows, kCols, DecodeDtype::F16, wd, pt.act_density);
    };
    const auto [fixed, share] = solve_fixed_and_share(terms(middle), t_middle, terms(large), t_large, device);
    const auto [fixed_s, share_s] = solve_fixed_and_share(terms(small), t_small, terms(middle), t_middle, device);
    // The mma paths read all of W whatever x is: one calibration, not one per density.
    const bool whole = pt.mapping == DecodeMapping::Dense || pt.mapping == DecodeMapping::Tiles;
    const std::string base = fmt::format("decode.{}", pt.name);
    const std::string at = whole ? "" : pt.act_density < 1 ? ".half" : ".full";
    device.calibrations[base + ".share" + at] = share;
    device.calibrations[base + ".fixed_us" + at] = fixed;
    device.calibrations[base + ".share" + at + ".small"] = share_s;
    device.calibrations[base + ".fixed_us" + at + ".small"] = fixed_s;
    device.calibrations[base + ".split_bytes" + at] = decode_model_work(terms(middle), device);
    if (progress)
      progress(
          fmt::format("{}{}: {:.1f} / {:.1f} / {:.1f} us at {} / {} / {} x {}: fixed {:.2f} / {:.2f} us, share "
                      "{:.3f} / {:.3f} (small / large segment)",
                      base, at, t_small, t_middle, t_large, kSmallRows, kMiddleRows, kLargeRows, kCols, fixed_s, fixed,
                      share_s, share));
  }
}

}  // namespace dbsparse

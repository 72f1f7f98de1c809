// calibrate_decode (include/dbsparse/decode_linear.hpp): each dense-or-bitmap mapping timed on a
// synthetic layer, its share of the copy bandwidth solved from the cost model's own terms, so that
// the model reproduces the time measured at that point on this device.
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

namespace dbsparse {
namespace {

// An LLM projection's shape (8192 x 4096: between a 7-8B model's q and its MLP), f16, each weight
// kept with probability 1/2: large enough that every mapping fills the GPU.
constexpr int32_t kRows = 8192, kCols = 4096;
constexpr int kCallsPerGraph = 20;

CompactLayer synthetic_layer() {
  CompactLayer l;
  l.name = "calibration";
  l.dtype = DecodeDtype::F16;
  auto& w = l.w;
  w.rows = kRows;
  w.cols = kCols;
  w.strips = (kRows + kBitmapStripRows - 1) / kBitmapStripRows;
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

// Per call, us: kCallsPerGraph calls over the plan's copies in one graph, the median of 7 replays.
double time_call_us(const std::vector<DecodeLinearPlan>& copies, uint64_t x, uint64_t y, const Stream& s) {
  const CudaGraph g = CudaGraph::capture(s, [&] {
    for (int i = 0; i < kCallsPerGraph; ++i) copies[static_cast<size_t>(i) % copies.size()].run(x, y, s.handle());
  });
  Event a, b;
  g.replay(s);
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) {
    a.record(s);
    g.replay(s);
    b.record(s);
    b.synchronize();
    t.push_back(double{b.elapsed_ms_since(a)} * 1e3 / kCallsPerGraph);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

void calibrate_decode(Context& ctx, DeviceProfile& device, const std::function<void(const std::string&)>& progress) {
  ctx.make_current();
  const CompactLayer layer = synthetic_layer();
  const double weight_density = static_cast<double>(layer.w.nnz()) / (double{kRows} * kCols);
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
  DeviceBuffer<uint16_t> x{std::span<const uint16_t>(xh)}, y(kRows);
  Stream s(ctx);

  struct Point {
    DecodeMapping mapping;
    const char* name;
    double act_density;
  };
  for (const Point& pt :
       {Point{DecodeMapping::Ring, "ring", 1.0}, Point{DecodeMapping::Ring, "ring", 0.5},
        Point{DecodeMapping::DenseColumns, "dense_columns", 1.0},
        Point{DecodeMapping::DenseColumns, "dense_columns", 0.5}, Point{DecodeMapping::Dense, "dense", 1.0}}) {
    DecodeLinearOptions o;
    o.dtype = DecodeDtype::F16;
    o.mapping = pt.mapping;
    o.tau = pt.act_density < 1 ? tau_half : 0.0f;
    std::vector<DecodeLinearPlan> copies;
    copies.push_back(plan_decode_linear(ctx, layer, o));
    // Enough copies that a graph's calls read three L2s: the weights come from device memory.
    const int64_t per_call = std::max<int64_t>(copies[0].weight_bytes(), 1);
    const int n = static_cast<int>(std::clamp<int64_t>((3 * ctx.device().l2_bytes + per_call - 1) / per_call, 1, 16));
    while (static_cast<int>(copies.size()) < n) copies.push_back(copies[0].clone());
    const double us = time_call_us(copies, x.ptr(), y.ptr(), s);
    const DecodeModelTerms t =
        decode_model_terms(pt.mapping, kRows, kCols, DecodeDtype::F16, weight_density, pt.act_density);
    const double fill = std::min(1.0, t.blocks / std::max(device.sm_count, 1));
    const double moving = us - t.fixed_us;
    const std::string name = pt.mapping == DecodeMapping::Dense
                                 ? std::string("decode.dense.share")
                                 : fmt::format("decode.{}.share.{}", pt.name, pt.act_density < 1 ? "half" : "full");
    if (moving <= 0.5) {
      // Faster than the fixed cost alone: the model's terms do not describe this device; keep the
      // fallback rather than store a share it cannot use.
      if (progress) progress(fmt::format("{}: {:.1f} us per call, below the fixed cost; not calibrated", name, us));
      continue;
    }
    const double share = std::clamp(t.bytes / (moving * 1e-6 * fill * device.copy_bytes_per_s), 0.05, 1.5);
    device.calibrations[name] = share;
    if (progress) progress(fmt::format("{}: {:.1f} us per call, share {:.3f}", name, us, share));
  }
}

}  // namespace dbsparse

#include "tools/ops/fixed_cost_calls.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "dbsparse/bfs.hpp"
#include "dbsparse/decode_linear.hpp"
#include "dbsparse/device_csr.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/graph.hpp"
#include "dbsparse/spgemm.hpp"
#include "dbsparse/spmm.hpp"
#include "dbsparse/spmspv.hpp"
#include "dbsparse/spmv.hpp"

namespace dbsparse::tools {
namespace {

// 1000 rows of 8 entries: a problem whose work is a few hundred nanoseconds.
constexpr const char* kSmall = "uniform:n=1000,d=8";

}  // namespace

std::vector<FixedCostCall> spmv_fixed_cost_calls(Context& ctx, const Stream& stream) {
  const auto a = generate(kSmall).cast<float>();
  auto plan = std::make_shared<SpmvPlan<float>>(plan_spmv(ctx, a));
  auto x = filled<float>(static_cast<size_t>(a.cols), 1.f);
  auto y = filled<float>(static_cast<size_t>(a.rows), 0.f);
  return {{"spmv, 1000 rows x 8 entries", [plan, x, y, &stream](int64_t) { plan->run(*x, *y, stream); }}};
}

std::vector<FixedCostCall> spmspv_fixed_cost_calls(Context& ctx, const Stream& stream) {
  // A large matrix and a one-entry x: what a call costs beyond its work, where the work is ~8
  // entries (a call that never touches n entries).
  const auto a = generate("uniform:n=1000000,d=8").cast<float>();
  auto plan = std::make_shared<SpmspvPlan<float>>(plan_spmspv(ctx, a));
  std::vector<float> xh(static_cast<size_t>(a.cols), 0.f);
  xh[12345] = 1.f;
  auto x = std::make_shared<DeviceBuffer<float>>(xh);
  auto y = filled<float>(static_cast<size_t>(a.rows), 0.f);
  auto xi = std::make_shared<DeviceBuffer<int32_t>>(std::vector<int32_t>{12345});
  auto xv = filled<float>(1, 1.f);
  auto yi = filled<int32_t>(static_cast<size_t>(a.rows), 0);
  auto yv = filled<float>(static_cast<size_t>(a.rows), 0.f);
  auto yn = filled<int32_t>(1, 0);
  plan->run_sparse_out(*xi, *xv, 1, *yi, *yv, *yn, stream);  // its first call allocates: not timed
  stream.synchronize();
  return {{"spmspv, 1M rows x 8, x with 1 entry: dense x and y (run)",
           [plan, x, y, &stream](int64_t) { plan->run(*x, *y, stream); }},
          {"spmspv, same, sparse x, dense y (run_sparse)",
           [plan, xi, xv, y, &stream](int64_t) { plan->run_sparse(*xi, *xv, 1, *y, stream); }},
          {"spmspv, same, sparse x, sparse y (run_sparse_out)",
           [plan, xi, xv, yi, yv, yn, &stream](int64_t) { plan->run_sparse_out(*xi, *xv, 1, *yi, *yv, *yn, stream); }}};
}

std::vector<FixedCostCall> bfs_fixed_cost_calls(Context& ctx, const Stream& stream) {
  // A 300 x 300 grid searched from a corner: 599 levels of at most 300 vertices each, so a level's
  // time is nearly all fixed cost.
  const PatternGraph g = pattern_of(generate("stencil2d:n=300"));
  auto plan = std::make_shared<BfsPlan>(plan_bfs(ctx, g, BfsOptions{}));
  auto levels = filled<int32_t>(static_cast<size_t>(g.n), 0);
  plan->run(0, *levels, stream);
  const int32_t depth = plan->last_stats().levels;
  return {{fmt::format("bfs, 300 x 300 grid from a corner, a level ({} levels)", depth),
           [plan, levels, &stream](int64_t) { plan->run(0, *levels, stream); },
           static_cast<double>(std::max(depth, 1))}};
}

std::vector<FixedCostCall> spmm_fixed_cost_calls(Context& ctx, const Stream& stream) {
  const auto a = generate(kSmall).cast<float>();
  const int n = 32;
  auto plan = std::make_shared<SpmmPlan>(plan_spmm(ctx, a, n));
  auto b = filled<float>(static_cast<size_t>(a.cols) * n, 1.f);
  auto c = filled<float>(static_cast<size_t>(a.rows) * n, 0.f);
  return {{"spmm, 1000 rows x 8 entries, N = 32", [plan, b, c, &stream](int64_t) { plan->run(*b, *c, stream); }}};
}

std::vector<FixedCostCall> spgemm_fixed_cost_calls(Context& ctx, const Stream& stream) {
  const auto a = generate(kSmall).cast<float>();
  auto da = std::make_shared<DeviceCsr<float>>(a);
  auto plan =
      std::make_shared<SpgemmPlan<float>>(plan_spgemm(ctx, da->view(), da->view(), SpgemmOptions{}, stream.handle()));
  plan->run(stream.handle());  // sizes C: the numeric run is what is timed
  stream.synchronize();
  return {{"spgemm numeric run (C's structure known), A^2 of 1000 rows x 8",
           [plan, da, &stream](int64_t) { plan->run(stream.handle()); }}};
}

std::vector<FixedCostCall> decode_fixed_cost_calls(Context& ctx, const Stream& stream) {
  // A 1000 x 1000 layer of 8 weights a row in f16, every activation kept: the product's launch
  // and its tickets, with next to no bytes to read.
  const auto w = generate(kSmall).cast<float>();
  auto plan = std::make_shared<DecodeLinearPlan>(plan_decode_linear(ctx, w, DecodeLinearOptions{}));
  auto x = filled<uint16_t>(static_cast<size_t>(w.cols), 0x3c00);  // 1.0 in fp16
  auto y = filled<uint16_t>(static_cast<size_t>(w.rows), 0);
  return {{fmt::format("decode, 1000 x 1000 layer, 8 weights a row, f16, {}", to_string(plan->mapping())),
           [plan, x, y, &stream](int64_t) { plan->run(x->ptr(), y->ptr(), stream.handle()); }}};
}

}  // namespace dbsparse::tools

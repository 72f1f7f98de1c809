#include "tools/ops/first_calls.hpp"

#include <memory>
#include <vector>

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

constexpr const char* kGraph = "rmat:scale=14,ef=8,scramble=1";
constexpr const char* kGraphText = "R-MAT 16K vertices x 8";

std::shared_ptr<const CsrMatrix<float>> graph() {
  return std::make_shared<const CsrMatrix<float>>(generate(kGraph).cast<float>());
}

}  // namespace

FirstCall spmv_first_call(Context& ctx, const Stream& stream) {
  auto a = graph();
  auto x = filled<float>(static_cast<size_t>(a->cols), 1.f);
  auto y = filled<float>(static_cast<size_t>(a->rows), 0.f);
  return {std::string("spmv, ") + kGraphText, [&ctx, &stream, a, x, y]() -> std::function<void()> {
            auto plan = std::make_shared<SpmvPlan<float>>(plan_spmv(ctx, *a));
            return [plan, x, y, &stream] { plan->run(*x, *y, stream); };
          }};
}

FirstCall spmspv_first_call(Context& ctx, const Stream& stream) {
  auto a = graph();
  std::vector<float> xh(static_cast<size_t>(a->cols), 0.f);
  for (size_t i = 0; i < xh.size(); i += 100) xh[i] = 1.f;  // 1% of x
  auto x = std::make_shared<DeviceBuffer<float>>(xh);
  auto y = filled<float>(static_cast<size_t>(a->rows), 0.f);
  return {std::string("spmspv, ") + kGraphText + ", x 1% nonzero", [&ctx, &stream, a, x, y]() -> std::function<void()> {
            auto plan = std::make_shared<SpmspvPlan<float>>(plan_spmspv(ctx, *a));
            return [plan, x, y, &stream] { plan->run(*x, *y, stream); };
          }};
}

FirstCall bfs_first_call(Context& ctx, const Stream& stream) {
  auto g = std::make_shared<const PatternGraph>(pattern_of(generate(kGraph)));
  auto levels = filled<int32_t>(static_cast<size_t>(g->n), 0);
  return {std::string("bfs, ") + kGraphText + ", one search", [&ctx, &stream, g, levels]() -> std::function<void()> {
            auto plan = std::make_shared<BfsPlan>(plan_bfs(ctx, *g, BfsOptions{}));
            return [plan, levels, &stream] { plan->run(0, *levels, stream); };
          }};
}

FirstCall spmm_first_call(Context& ctx, const Stream& stream) {
  auto a = graph();
  constexpr int kN = 32;
  auto b = filled<float>(static_cast<size_t>(a->cols) * kN, 1.f);
  auto c = filled<float>(static_cast<size_t>(a->rows) * kN, 0.f);
  return {std::string("spmm, ") + kGraphText + ", N = 32", [&ctx, &stream, a, b, c]() -> std::function<void()> {
            auto plan = std::make_shared<SpmmPlan>(plan_spmm(ctx, *a, kN));
            return [plan, b, c, &stream] { plan->run(*b, *c, stream); };
          }};
}

FirstCall spgemm_first_call(Context& ctx, const Stream& stream) {
  auto da = std::make_shared<DeviceCsr<float>>(*graph());
  return {std::string("spgemm, A^2 of ") + kGraphText, [&ctx, &stream, da]() -> std::function<void()> {
            auto plan = std::make_shared<SpgemmPlan<float>>(
                plan_spgemm(ctx, da->view(), da->view(), SpgemmOptions{}, stream.handle()));
            return [plan, da, &stream] { plan->run(stream.handle()); };
          }};
}

FirstCall decode_first_call(Context& ctx, const Stream& stream) {
  auto w = std::make_shared<const CsrMatrix<float>>(
      generate("pruned:rows=1024,cols=1024,density=0.5,block=1,seed=1").cast<float>());
  auto x = filled<uint16_t>(static_cast<size_t>(w->cols), 0x3c00);  // 1.0 in fp16
  auto y = filled<uint16_t>(static_cast<size_t>(w->rows), 0);
  return {"decode, 1024 x 1024 layer, half the weights, f16", [&ctx, &stream, w, x, y]() -> std::function<void()> {
            auto plan = std::make_shared<DecodeLinearPlan>(plan_decode_linear(ctx, *w, DecodeLinearOptions{}));
            return [plan, x, y, &stream] { plan->run(x->ptr(), y->ptr(), stream.handle()); };
          }};
}

}  // namespace dbsparse::tools

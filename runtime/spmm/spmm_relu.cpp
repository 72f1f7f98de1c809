#include "runtime/spmm/spmm_relu.hpp"

#include <algorithm>
#include <utility>

#include "codegen/keys/spmm_key.hpp"
#include "runtime/gpu/module_registry.hpp"

namespace dbsparse::detail {
namespace {
constexpr int kReluWarps = 8;
}  // namespace

ReluPass::ReluPass(CUfunction fn, KernelInfo kernel, SpmmDtype d, long long count, int sm_count)
    : fn_(fn), kernel_(std::move(kernel)), count_(count) {
  const long long items = d == SpmmDtype::F32 ? (count + 3) / 4 : count;
  grid_ = static_cast<unsigned>(
      std::clamp<long long>((items + kReluWarps * 32 - 1) / (kReluWarps * 32), 1, 16LL * std::max(sm_count, 1)));
}

void ReluPass::run(uint64_t x, CUstream stream) const {
  long long count = count_;
  void* params[] = {&x, &count};
  DBS_CU(cuLaunchKernel(fn_, grid_, 1, 1, kReluWarps * 32, 1, 1, 0, stream, params, nullptr));
}

ReluPass relu_pass(const Context& ctx, SpmmDtype d, long long count) {
  const codegen::SpmmKey key{codegen::SpmmKernelPath::Csr, 1, 4, kReluWarps, 1, 32, static_cast<codegen::SpmmValue>(d)};
  const auto loaded = ctx.modules().get(codegen::make_source(key), ctx.device().arch());
  return ReluPass(loaded.entry("relu"), loaded.info, d, count, ctx.device().sm_count);
}

}  // namespace dbsparse::detail

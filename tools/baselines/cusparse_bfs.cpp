#include "tools/baselines/cusparse_bfs.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "codegen/keys/bfs_key.hpp"
#include "dbsparse/abi/bfs.h"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/module_registry.hpp"

namespace dbsparse::tools {

struct CusparseBfs::State {
  int32_t n = 0;
  CUstream stream = nullptr;
  std::unique_ptr<CusparseSpmv<float>> spmv;
  DeviceBuffer<float> f, y;
  DeviceBuffer<uint32_t> count;
  CUfunction update = nullptr;
  unsigned grid = 1;
};

CusparseBfs::CusparseBfs(Context& ctx, const PatternGraph& g, const Stream& stream) : s_(std::make_unique<State>()) {
  ctx.make_current();
  s_->n = g.n;
  s_->stream = static_cast<CUstream>(stream.handle());
  s_->spmv = std::make_unique<CusparseSpmv<float>>(ones_matrix<float>(g), stream.handle());
  s_->f = DeviceBuffer<float>(static_cast<size_t>(std::max(g.n, 1)));
  s_->y = DeviceBuffer<float>(static_cast<size_t>(std::max(g.n, 1)));
  s_->count = DeviceBuffer<uint32_t>(1);
  // The frontier update comes from the same template file as DB-BFS (any variant carries it).
  auto loaded = ctx.modules().get(codegen::make_source(codegen::BfsKey{}), ctx.device().arch());
  s_->update = loaded.entry("dense_update");
  s_->grid = static_cast<unsigned>(std::clamp<int64_t>((int64_t{g.n} + 255) / 256, 1, ctx.device().sm_count * 8));
}

CusparseBfs::~CusparseBfs() = default;

int CusparseBfs::run(int32_t source, DeviceBuffer<int32_t>& levels) {
  State& s = *s_;
  if (source < 0 || source >= s.n) throw UsageError(fmt::format("CusparseBfs::run: source {} out of range", source));
  const auto h = s.stream;
  DBS_CU(cuMemsetD32Async(levels.ptr(), 0xffffffffu, static_cast<size_t>(s.n), h));
  DBS_CU(cuMemsetD32Async(s.f.ptr(), 0, static_cast<size_t>(s.n), h));
  const float one = 1.0f;
  const int32_t zero = 0;
  DBS_CU(cuStreamSynchronize(h));
  DBS_CU(cuMemcpyHtoD(s.f.ptr() + sizeof(float) * static_cast<size_t>(source), &one, sizeof one));
  DBS_CU(cuMemcpyHtoD(levels.ptr() + sizeof(int32_t) * static_cast<size_t>(source), &zero, sizeof zero));
  int level = 0;
  for (;; ++level) {
    s.spmv->run(CusparseSpmvAlg::CsrAlg1, s.f.ptr(), s.y.ptr());
    DBS_CU(cuMemsetD32Async(s.count.ptr(), 0, 1, h));
    uint64_t y = s.y.ptr(), f = s.f.ptr(), lv = levels.ptr(), c = s.count.ptr();
    int32_t n = s.n, next = level + 1;
    void* params[] = {&y, &f, &lv, &n, &next, &c};
    DBS_CU(cuLaunchKernel(s.update, s.grid, 1, 1, abi::kBfsWarps * 32, 1, 1, 0, h, params, nullptr));
    uint32_t joined = 0;
    DBS_CU(cuStreamSynchronize(h));
    DBS_CU(cuMemcpyDtoH(&joined, s.count.ptr(), sizeof joined));
    if (joined == 0) break;
  }
  return level + 1;
}

}  // namespace dbsparse::tools

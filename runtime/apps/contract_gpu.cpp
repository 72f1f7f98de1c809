// Graph contraction on the device (include/dbsparse/spgemm_apps.hpp): the factors S and Sᵀ from
// labels on the device (templates/apps/contract_factors.cuh, compiled into the SpGEMM analysis module
// whose scan they share) and C = S·G·Sᵀ by two hash SpGEMM plans from device CSR. The host-CSR
// contract() in runtime/apps/spgemm_apps_gpu.cpp uploads G and the labels and calls this one.
#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "codegen/keys/spgemm_key.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/spgemm_apps.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/module_registry.hpp"
#include "runtime/spgemm/spgemm_gpu_analysis.hpp"

namespace dbsparse {
namespace {

constexpr int kBlock = 256;  // the analysis module's (SpgemmAnalysisKey{}): not tuned, O(n) work

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kBlock - 1) / kBlock); }

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

template <class T>
std::pair<DeviceCsr<T>, DeviceCsr<T>> contraction_factors(Context& ctx, const int32_t* labels, int32_t n, int32_t k,
                                                          void* stream) {
  if (k < 0) throw UsageError(fmt::format("contract: k must be >= 0, got {}", k));
  if (n < 0) throw UsageError(fmt::format("contract: a graph of {} vertices", n));
  if (n > 0 && labels == nullptr) throw UsageError(fmt::format("contract: no labels (null) for {} vertices", n));
  const auto h = static_cast<CUstream>(stream);
  // From the pool on h, as the plans' buffers (docs/decisions/spgemm-pool-allocations.md).
  const PoolSlot pool = ctx.pool_on(h);
  DeviceCsr<T> s, st;
  s.rows = k;
  s.cols = n;
  st.rows = n;
  st.cols = k;
  s.nnz = st.nnz = n;
  // As DeviceCsr's from the host: every array at least one element (no null kernel parameter).
  const size_t nn = static_cast<size_t>(std::max(n, 1));
  s.row_ptr = DeviceBuffer<int32_t>(static_cast<size_t>(k) + 1, pool);
  s.col_idx = DeviceBuffer<int32_t>(nn, pool);
  s.values = DeviceBuffer<T>(nn, pool);
  st.row_ptr = DeviceBuffer<int32_t>(static_cast<size_t>(n) + 1, pool);
  st.col_idx = DeviceBuffer<int32_t>(nn, pool);
  st.values = DeviceBuffer<T>(nn, pool);
  if (n == 0) {
    DBS_CU(cuMemsetD32Async(s.row_ptr.ptr(), 0, static_cast<size_t>(k) + 1, h));
    DBS_CU(cuMemsetD32Async(st.row_ptr.ptr(), 0, 1, h));
    return {std::move(s), std::move(st)};
  }
  const auto mod = ctx.modules().get(codegen::make_source(codegen::SpgemmAnalysisKey{kBlock}), ctx.device().arch());
  DeviceBuffer<int32_t> counts(static_cast<size_t>(std::max(k, 1)), pool);
  DeviceBuffer<uint32_t> check(2, pool);
  uint64_t lp = reinterpret_cast<uint64_t>(labels), cp = counts.ptr(), ck = check.ptr();
  if (k > 0) DBS_CU(cuMemsetD32Async(cp, 0, static_cast<size_t>(k), h));
  DBS_CU(cuMemsetD32Async(ck, 0xffffffffu, 1, h));
  DBS_CU(cuMemsetD32Async(ck + sizeof(uint32_t), 0, 1, h));
  {
    void* params[] = {&n, &lp, &k, &cp, &ck};
    DBS_CU(cuLaunchKernel(mod.entry("contract_count"), blocks_for(n), 1, 1, kBlock, 1, 1, 0, h, params, nullptr));
  }
  uint32_t got[2] = {0, 0};
  DBS_CU(cuStreamSynchronize(h));
  DBS_CU(cuMemcpyDtoH(got, ck, sizeof got));
  if (got[0] != std::numeric_limits<uint32_t>::max()) {
    int32_t label = 0;
    DBS_CU(cuMemcpyDtoH(&label, lp + uint64_t{got[0]} * sizeof(int32_t), sizeof label));
    throw UsageError(fmt::format("contract: vertex {} has label {}, outside [0, {})", got[0], label, k));
  }
  detail::scan_lengths(ctx, cp, k, s.row_ptr.ptr(), h);
  DBS_CU(cuMemsetD32Async(cp, 0, static_cast<size_t>(k), h));  // the counts become the rows' cursors
  uint64_t sp = s.row_ptr.ptr(), sc = s.col_idx.ptr(), stp = st.row_ptr.ptr(), sv = s.values.ptr(),
           stv = st.values.ptr();
  int val_bytes = static_cast<int>(sizeof(T));
  {
    void* params[] = {&n, &lp, &sp, &cp, &sc, &stp, &sv, &stv, &val_bytes};
    DBS_CU(cuLaunchKernel(mod.entry("contract_scatter"), blocks_for(int64_t{n} + 1), 1, 1, kBlock, 1, 1, 0, h, params,
                          nullptr));
  }
  DBS_CU(cuMemcpyDtoDAsync(st.col_idx.ptr(), lp, static_cast<size_t>(n) * sizeof(int32_t), h));
  // Each row of S sorted: the scatter placed its vertices in atomic order.
  DeviceBuffer<int32_t> other(nn, pool);
  uint64_t in = sc, out = other.ptr();
  for (int w = 1; static_cast<uint32_t>(w) < got[1]; w *= 2) {
    void* params[] = {&n, &lp, &sp, &in, &out, &w};
    DBS_CU(cuLaunchKernel(mod.entry("contract_merge"), blocks_for(n), 1, 1, kBlock, 1, 1, 0, h, params, nullptr));
    std::swap(in, out);
  }
  if (in != sc) std::swap(s.col_idx, other);
  other.release(h);
  counts.release(h);
  check.release(h);
  return {std::move(s), std::move(st)};
}

template <class T>
DeviceContraction<T> contract(Context& ctx, const DeviceCsrView<T>& g, const int32_t* labels, int32_t k, void* stream,
                              const SpgemmOptions& options) {
  if (g.rows != g.cols) throw UsageError(fmt::format("contract: the graph must be square, is {}x{}", g.rows, g.cols));
  const auto h = static_cast<CUstream>(stream);
  auto mark = Clock::now();
  const auto lap = [&mark](double& into) {
    into = ms_since(mark);
    mark = Clock::now();
  };
  ContractTimes t;
  auto [s, st] = contraction_factors<T>(ctx, labels, g.rows, k, stream);
  lap(t.factors_ms);
  SpgemmPlan<T> sg = plan_spgemm(ctx, s.view(), g, options, stream);
  lap(t.plan_sg_ms);
  sg.run(stream);
  lap(t.run_sg_ms);
  // (S·G)·Sᵀ from S·G where the first run left it: its analysis follows that run on the same stream.
  SpgemmPlan<T> c = plan_spgemm(ctx, sg.result(), st.view(), options, stream);
  lap(t.plan_c_ms);
  c.run(stream);
  DBS_CU(cuStreamSynchronize(h));
  lap(t.run_c_ms);
  return DeviceContraction<T>{std::move(s), std::move(st), std::move(sg), std::move(c), t};
}

#define DBS_CONTRACT_GPU(T)                                                                                      \
  template std::pair<DeviceCsr<T>, DeviceCsr<T>> contraction_factors(Context&, const int32_t*, int32_t, int32_t, \
                                                                     void*);                                     \
  template DeviceContraction<T> contract(Context&, const DeviceCsrView<T>&, const int32_t*, int32_t, void*,      \
                                         const SpgemmOptions&);
DBS_CONTRACT_GPU(float)
DBS_CONTRACT_GPU(double)
#undef DBS_CONTRACT_GPU

}  // namespace dbsparse

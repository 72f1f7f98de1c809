// Triangle counting (include/dbsparse/spgemm_apps.hpp): the CPU reference by marking, and the GPU's
// masked product C<L> = L·L summed without building L or C (templates/apps/triangles.cuh).
#include <algorithm>
#include <climits>
#include <vector>

#include <fmt/format.h>

#include "codegen/keys/triangle_key.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/spgemm_apps.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/module_registry.hpp"

namespace dbsparse {
namespace {

constexpr int kBlock = 256;

void check_square(int32_t rows, int32_t cols, const char* what) {
  if (rows != cols) throw UsageError(fmt::format("{}: the graph must be square, A is {}x{}", what, rows, cols));
}

// Blocks for a grid-stride kernel: enough to fill the GPU several times over, never more than the work.
unsigned grid_for(int64_t warps_of_work, Context& ctx) {
  const int64_t want = std::max<int64_t>(1, (warps_of_work + kBlock / 32 - 1) / (kBlock / 32));
  const int64_t cap = int64_t{ctx.device().sm_count} * 16;
  return static_cast<unsigned>(std::min(want, cap));
}

}  // namespace

template <class T>
int64_t triangle_count_cpu(const CsrMatrix<T>& a) {
  check_square(a.rows, a.cols, "triangle_count_cpu");
  std::vector<int32_t> mark(static_cast<size_t>(a.rows), -1);
  int64_t total = 0;
  for (int32_t i = 0; i < a.rows; ++i) {
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] < i) mark[a.col_idx[p]] = i;
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const int32_t k = a.col_idx[p];
      if (k >= i) continue;
      for (int32_t q = a.row_ptr[k]; q < a.row_ptr[k + 1]; ++q) {
        const int32_t j = a.col_idx[q];
        total += j < k && mark[j] == i;
      }
    }
  }
  return total;
}

template <class T>
int64_t triangle_count(Context& ctx, const DeviceCsrView<T>& a, void* stream) {
  check_square(a.rows, a.cols, "triangle_count");
  if (a.nnz > INT32_MAX || a.nnz < 0)
    throw UsageError(fmt::format("triangle_count: {} nonzeros (int32 indices)", a.nnz));
  if (a.nnz == 0) return 0;
  if (!a.row_ptr || !a.col_idx) throw UsageError("triangle_count: A has nonzeros but a null row_ptr or col_idx");
  ctx.make_current();
  const auto h = static_cast<CUstream>(stream);
  const auto mod = ctx.modules().get(codegen::make_source(codegen::TriangleKey{kBlock}), ctx.device().arch());
  DeviceBuffer<uint64_t> out(2, ctx.pool_on(h));  // the count, then the first bad row (int32) in word 1
  uint64_t total = out.ptr(), bad = out.ptr() + sizeof(uint64_t);
  DBS_CU(cuMemsetD32Async(total, 0, 4, h));  // both words whole: the host reads 16 bytes back
  DBS_CU(cuMemsetD32Async(bad, INT32_MAX, 1, h));
  uint64_t rp = reinterpret_cast<uint64_t>(a.row_ptr), ci = reinterpret_cast<uint64_t>(a.col_idx);
  int n = a.rows;
  long long nnz = a.nnz;
  void* params[] = {&rp, &ci, &n, &nnz, &total, &bad};
  DBS_CU(
      cuLaunchKernel(mod.entry("count"), grid_for((a.nnz + 31) / 32, ctx), 1, 1, kBlock, 1, 1, 0, h, params, nullptr));
  uint64_t got[2] = {0, 0};
  DBS_CU(cuStreamSynchronize(h));
  DBS_CU(cuMemcpyDtoH(got, total, sizeof got));
  const auto bad_row = static_cast<int32_t>(got[1] & 0xffffffffu);
  if (bad_row != INT32_MAX)
    throw UsageError(fmt::format("triangle_count: row {} of A is not sorted by column with distinct columns in [0, {})",
                                 bad_row, a.cols));
  return static_cast<int64_t>(got[0]);
}

template <class T>
int64_t triangle_count(Context& ctx, const CsrMatrix<T>& a) {
  check_square(a.rows, a.cols, "triangle_count");
  if (a.col_idx.empty()) return 0;
  ctx.make_current();
  DeviceCsr<T> d(a);
  Stream s(ctx);
  return triangle_count(ctx, d.view(), s.handle());
}

template <class T>
double triangle_mask_sum(Context& ctx, const DeviceCsrView<T>& c, const DeviceCsrView<T>& l, void* stream) {
  if (c.rows != l.rows) throw UsageError(fmt::format("triangle_mask_sum: C has {} rows, L {}", c.rows, l.rows));
  if (c.rows == 0 || c.nnz == 0 || l.nnz == 0) return 0;
  ctx.make_current();
  const auto h = static_cast<CUstream>(stream);
  const auto mod = ctx.modules().get(codegen::make_source(codegen::TriangleKey{kBlock}), ctx.device().arch());
  DeviceBuffer<double> out(1, ctx.pool_on(h));
  uint64_t total = out.ptr();
  DBS_CU(cuMemsetD32Async(total, 0, 2, h));
  uint64_t cp = reinterpret_cast<uint64_t>(c.row_ptr), cc = reinterpret_cast<uint64_t>(c.col_idx),
           cv = reinterpret_cast<uint64_t>(c.values), lp = reinterpret_cast<uint64_t>(l.row_ptr),
           lc = reinterpret_cast<uint64_t>(l.col_idx);
  int n = c.rows;
  void* params[] = {&cp, &cc, &cv, &lp, &lc, &n, &total};
  DBS_CU(cuLaunchKernel(mod.entry(sizeof(T) == 4 ? "mask_sum_f32" : "mask_sum_f64"), grid_for(n, ctx), 1, 1, kBlock, 1,
                        1, 0, h, params, nullptr));
  double got = 0;
  DBS_CU(cuStreamSynchronize(h));
  DBS_CU(cuMemcpyDtoH(&got, total, sizeof got));
  return got;
}

#define DBS_INSTANTIATE(T)                                                   \
  template int64_t triangle_count_cpu(const CsrMatrix<T>&);                  \
  template int64_t triangle_count(Context&, const DeviceCsrView<T>&, void*); \
  template int64_t triangle_count(Context&, const CsrMatrix<T>&);            \
  template double triangle_mask_sum(Context&, const DeviceCsrView<T>&, const DeviceCsrView<T>&, void*);
DBS_INSTANTIATE(float)
DBS_INSTANTIATE(double)
#undef DBS_INSTANTIATE

}  // namespace dbsparse

#include "runtime/gpu/device_csr_view.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "codegen/keys/csr_view_key.hpp"
#include "dbsparse/abi/csr_view.h"
#include "dbsparse/error.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/module_registry.hpp"

namespace dbsparse::detail {
namespace {

// One pass of csr_check over m: the counts start at 0, the firsts at ~0.
abi::CsrCheck run_pass(Context& ctx, CUfunction fn, const DeviceCsrArrays& m, int pass) {
  abi::CsrCheck init{};
  init.first_bad_row = init.first_bad_entry = init.first_unsorted = ~uint64_t{0};
  const int64_t threads = pass == 1 ? m.nnz : pass == 2 ? int64_t{m.rows} * 32 : m.rows;
  uint64_t ptr = m.row_ptr, idx = m.col_idx;
  int rows = m.rows, cols = m.cols, which = pass;
  long long nnz = m.nnz;
  return run_check_kernel(ctx, fn, threads, {&ptr, &idx, &rows, &nnz, &cols, &which}, init);
}

int64_t read_offset(const DeviceCsrArrays& m, int64_t row) {
  if (m.offsets64) {
    int64_t o = 0;
    DBS_CU(cuMemcpyDtoH(&o, m.row_ptr + static_cast<uint64_t>(row) * 8, sizeof o));
    return o;
  }
  int32_t o = 0;
  DBS_CU(cuMemcpyDtoH(&o, m.row_ptr + static_cast<uint64_t>(row) * 4, sizeof o));
  return o;
}

}  // namespace

void check_device_csr(Context& ctx, const std::string& who, const std::string& name, const DeviceCsrArrays& m,
                      bool sorted) {
  if (m.rows < 0 || m.cols < 0 || m.nnz < 0)
    throw UsageError(
        fmt::format("{}: {} is {}x{} with {} entries; none may be negative", who, name, m.rows, m.cols, m.nnz));
  if (m.rows == 0 && m.nnz == 0 && !m.row_ptr) return;  // nothing to read, nothing to check
  if (!m.row_ptr || (m.nnz > 0 && !m.col_idx))
    throw UsageError(fmt::format("{}: {} has a null array (row_ptr needs rows + 1 entries, col_idx nnz)", who, name));
  ctx.make_current();
  const auto fn =
      ctx.modules().get(codegen::make_source(codegen::CsrViewKey{m.offsets64}), ctx.device().arch()).entry("check");
  DBS_CU(cuCtxSynchronize());  // the arrays may have been written on any stream
  const auto rows = run_pass(ctx, fn, m, 0);
  if (rows.bad_rows) {
    const int64_t r = static_cast<int64_t>(rows.first_bad_row);
    const std::string next = r + 1 <= m.rows ? fmt::format(", row_ptr[{}] = {}", r + 1, read_offset(m, r + 1)) : "";
    throw UsageError(fmt::format(
        "{}: {}'s row_ptr is not a valid offset array at row {} (row_ptr[{}] = {}{}): offsets must rise from 0 to "
        "nnz = {}; {} rows in all",
        who, name, r, r, read_offset(m, r), next, m.nnz, rows.bad_rows));
  }
  const auto cols = run_pass(ctx, fn, m, 1);
  if (cols.bad_cols) {
    const int64_t e = static_cast<int64_t>(cols.first_bad_entry);
    int32_t j = 0;
    DBS_CU(cuMemcpyDtoH(&j, m.col_idx + static_cast<uint64_t>(e) * 4, sizeof j));
    throw UsageError(fmt::format("{}: {}'s col_idx[{}] = {} is outside [0, {}); {} entries in all", who, name, e, j,
                                 m.cols, cols.bad_cols));
  }
  if (!sorted) return;
  const auto order = run_pass(ctx, fn, m, 2);
  if (order.unsorted)
    throw UsageError(
        fmt::format("{}: {}'s columns are not sorted and unique in each row: {} entries are not above "
                    "the one before them, the first in row {}",
                    who, name, order.unsorted, order.first_unsorted));
}

namespace {

codegen::KernelSource view_source(const DeviceCsrArrays& m) {
  return codegen::make_source(codegen::CsrViewKey{m.offsets64});
}

unsigned grid_for(int64_t threads, int sms) {
  return static_cast<unsigned>(std::clamp<int64_t>((threads + 255) / 256, 1, int64_t{std::max(sms, 1)} * 8));
}

}  // namespace

DeviceRowLengths device_row_lengths(Context& ctx, const DeviceCsrArrays& m) {
  ctx.make_current();
  const CUfunction histogram = ctx.modules().get(view_source(m), ctx.device().arch()).entry("length_histogram");
  DeviceBuffer<uint32_t> counts(abi::kDegreeBuckets);
  DeviceBuffer<abi::CsrLengthMoments> moments(1);
  counts.fill_bytes(0);
  moments.fill_bytes(0);
  uint64_t ptr = m.row_ptr, c = counts.ptr(), mo = moments.ptr();
  int rows = m.rows;
  void* params[] = {&ptr, &rows, &c, &mo};
  DBS_CU(
      cuLaunchKernel(histogram, grid_for(m.rows, ctx.device().sm_count), 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
  DeviceRowLengths out;
  out.counts = counts.download();
  const abi::CsrLengthMoments mom = moments.download().at(0);
  if (m.rows > 0 && mom.sum > 0) {
    const double mean = mom.sum / m.rows;
    out.cv = std::sqrt(std::max(0.0, mom.sum_sq / m.rows - mean * mean)) / mean;
  }
  return out;
}

DeviceBuffer<int32_t> device_degree_order(Context& ctx, const DeviceCsrArrays& m, const DeviceRowLengths& lengths) {
  ctx.make_current();
  const CUfunction scatter = ctx.modules().get(view_source(m), ctx.device().arch()).entry("degree_scatter");
  std::vector<uint32_t> start(lengths.counts.size(), 0);
  uint64_t total = 0;
  for (size_t b = 0; b < start.size(); ++b) {
    start[b] = static_cast<uint32_t>(total);
    total += lengths.counts[b];
  }
  if (total != static_cast<uint64_t>(m.rows))
    throw std::logic_error(fmt::format("device_degree_order: the buckets hold {} rows, A has {}", total, m.rows));
  DeviceBuffer<uint32_t> cursor{std::span<const uint32_t>(start)};
  DeviceBuffer<int32_t> order(static_cast<size_t>(std::max(m.rows, 1)));
  uint64_t ptr = m.row_ptr, cur = cursor.ptr(), ord = order.ptr();
  int rows = m.rows;
  void* params[] = {&ptr, &rows, &cur, &ord};
  DBS_CU(
      cuLaunchKernel(scatter, grid_for(m.rows, ctx.device().sm_count), 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
  DBS_CU(cuStreamSynchronize(nullptr));
  return order;
}

}  // namespace dbsparse::detail

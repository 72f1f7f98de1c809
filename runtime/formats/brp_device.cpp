// CSR -> BRP on the GPU (include/dbsparse/brp_device.hpp; kernels templates/formats/brp_convert.cuh and
// brp_scan.cuh). Passes, on one stream:
//   1. slots: each condensed column's full slots at its head; scan  -> slot numbers
//   2. groups: each window's full groups at its first entry; scan   -> group numbers, total groups
//   3. classify: residual flags by CSR position; scan               -> residual places, total
//   read the two totals (host sync), allocate the TC arrays and residual entries
//   4. fill: every entry to its group place or residual place
//   5. row heads (into slot_scan, free by now); scan                 -> residual rows, total
//   read it (host sync), allocate res_rows_id / res_row_offset
//   6. fill rows.
// Scratch: slot_scan, group_scan, res_scan (nnz + 1 ints each) and the scans' tile sums, all
// metered; nothing sized by rows or windows, so the peak stays a multiple of nnz.
#include "dbsparse/brp_device.hpp"

#include <algorithm>
#include <chrono>
#include <span>
#include <type_traits>

#include <fmt/format.h>

#include "codegen/keys/brp_convert_key.hpp"
#include "dbsparse/abi/brp_convert.h"
#include "runtime/formats/brp_stats.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/module_registry.hpp"

namespace dbsparse {
namespace {

constexpr int kBlock = abi::kBrpConvertBlock;
constexpr int64_t kTile = abi::kBrpScanTile;

// Every scratch array of one conversion: the live bytes and their peak, the figure reported.
class ScratchMeter {
 public:
  DeviceBuffer<int32_t> take(size_t n) {
    DeviceBuffer<int32_t> b(n);
    live_ += static_cast<int64_t>(n * sizeof(int32_t));
    peak_ = std::max(peak_, live_);
    return b;
  }
  void give_back(DeviceBuffer<int32_t>& b) {
    live_ -= static_cast<int64_t>(b.size() * sizeof(int32_t));
    b = DeviceBuffer<int32_t>();
  }
  int64_t peak() const { return peak_; }

 private:
  int64_t live_ = 0, peak_ = 0;
};

// The tile sums of a scan of `len` ints, level by level (a level of one tile needs none).
std::vector<int64_t> scan_levels(int64_t len) {
  std::vector<int64_t> out;
  for (int64_t s = len; s > kTile;) {
    s = (s + kTile - 1) / kTile;
    out.push_back(s);
  }
  return out;
}

unsigned blocks_for(int64_t items) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((items + kBlock - 1) / kBlock, INT32_MAX)));
}

struct Kernels {
  CUfunction slots, groups, classify, fill, row_heads, fill_rows, scan_reduce, scan_apply;
};

class Converter {
 public:
  Converter(const Kernels& k, CUstream h, uint64_t partials) : k_(k), h_(h), partials_(partials) {}

  void launch(CUfunction fn, int64_t items, abi::BrpConvertArgs& args) const {
    void* params[] = {&args};
    DBS_CU(cuLaunchKernel(fn, blocks_for(items), 1, 1, kBlock, 1, 1, 0, h_, params, nullptr));
  }

  // In place, exclusive; `partials` has room for every level of scan_levels(len) from `level` on.
  void scan(uint64_t data, int64_t len, uint64_t partials) const {
    const int64_t tiles = (len + kTile - 1) / kTile;
    int n = static_cast<int>(len);
    uint64_t offsets = 0;
    if (tiles > 1) {
      offsets = partials;
      void* reduce[] = {&data, &n, &offsets};
      DBS_CU(cuLaunchKernel(k_.scan_reduce, static_cast<unsigned>(tiles), 1, 1, kBlock, 1, 1, 0, h_, reduce, nullptr));
      scan(offsets, tiles, partials + static_cast<uint64_t>(tiles) * sizeof(int32_t));
    }
    void* apply[] = {&data, &n, &offsets};
    DBS_CU(cuLaunchKernel(k_.scan_apply, static_cast<unsigned>(tiles), 1, 1, kBlock, 1, 1, 0, h_, apply, nullptr));
  }
  void scan(uint64_t data, int64_t len) const { scan(data, len, partials_); }

  // One int32 of a device array, once the stream has reached it.
  int32_t read(uint64_t array, int64_t index) const {
    DBS_CU(cuStreamSynchronize(h_));
    int32_t v = 0;
    DBS_CU(
        cuMemcpyDtoH(&v, static_cast<CUdeviceptr>(array + static_cast<uint64_t>(index) * sizeof(int32_t)), sizeof v));
    return v;
  }

 private:
  Kernels k_;
  CUstream h_;
  uint64_t partials_;
};

template <class U>
void* dptr(const DeviceBuffer<U>& b) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(b.ptr()));
}

}  // namespace

template <class T>
BrpMatrix<T> BrpDeviceMatrix<T>::download() const {
  BrpMatrix<T> m;
  m.rows = rows;
  m.cols = cols;
  m.f = f;
  m.g = g;
  m.value_stride = value_stride;
  m.local_stride = local_stride;
  m.group_window_id = group_window_id.download();
  m.old_col_id = old_col_id.download();
  m.local_id = local_id.download();
  m.values = values.download();
  m.res_rows_id = res_rows_id.download();
  m.res_row_offset = res_row_offset.download();
  m.res_col_id = res_col_id.download();
  m.res_values = res_values.download();
  return m;
}

template <class T>
BrpDeviceMatrix<T> csr_to_brp_device(Context& ctx, const DeviceCsrView<T>& a, const BrpParams& p,
                                     const Stream& stream) {
  validate(p);
  if (a.rows < 0 || a.cols < 0 || a.nnz < 0)
    throw UsageError(fmt::format("csr_to_brp_device: bad shape {}x{} with {} nonzeros", a.rows, a.cols, a.nnz));
  // The scans run over nnz + 1 ints, indexed by int.
  if (a.nnz >= INT32_MAX) throw UsageError("csr_to_brp_device: nnz must be below 2^31 - 1");
  if (a.nnz > 0 && (!a.row_ptr || !a.col_idx || !a.values))
    throw UsageError("csr_to_brp_device: row_ptr, col_idx and values must be device pointers");
  ctx.make_current();
  BrpDeviceMatrix<T> m;
  m.rows = a.rows;
  m.cols = a.cols;
  m.f = p.f;
  m.g = p.g;
  m.value_stride = brp_value_stride(p.f, p.g, sizeof(T));
  m.local_stride = brp_local_stride(p.f, p.g);
  const auto h = static_cast<CUstream>(stream.handle());
  auto t0 = std::chrono::steady_clock::now();
  auto stop_clock = [&] {
    m.convert_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  if (a.nnz == 0 || a.rows == 0) {  // no groups, no residual: res_row_offset = {0}
    m.res_row_offset = DeviceBuffer<int32_t>(1);
    DBS_CU(cuMemsetD32Async(static_cast<CUdeviceptr>(m.res_row_offset.ptr()), 0, 1, h));
    DBS_CU(cuStreamSynchronize(h));
    stop_clock();
    return m;
  }
  const auto loaded = ctx.modules().get(
      codegen::make_source(codegen::BrpConvertKey{codegen::value_type_of<T>(), p.f, p.g}), ctx.device().arch());
  const Kernels k{loaded.entry("slots"),       loaded.entry("groups"),    loaded.entry("classify"),
                  loaded.entry("fill"),        loaded.entry("row_heads"), loaded.entry("fill_rows"),
                  loaded.entry("scan_reduce"), loaded.entry("scan_apply")};
  t0 = std::chrono::steady_clock::now();  // JIT is the plan's cost, once per process and key, not the conversion's

  const int64_t n = a.nnz, len = n + 1;
  const auto levels = scan_levels(len);
  int64_t partial_ints = 0;
  for (int64_t s : levels) partial_ints += s;
  ScratchMeter meter;
  DeviceBuffer<int32_t> slot_scan = meter.take(static_cast<size_t>(len));
  DeviceBuffer<int32_t> group_scan = meter.take(static_cast<size_t>(len));
  DeviceBuffer<int32_t> res_scan = meter.take(static_cast<size_t>(len));
  DeviceBuffer<int32_t> partials = meter.take(static_cast<size_t>(partial_ints));
  const Converter run(k, h, partials.ptr());

  abi::BrpConvertArgs args{};
  args.row_ptr = a.row_ptr;
  args.col_idx = a.col_idx;
  args.vals = a.values;
  args.slot_scan = slot_scan.data();
  args.group_scan = group_scan.data();
  args.res_scan = res_scan.data();
  args.row_scan = slot_scan.data();  // pass 5, once slot_scan is no longer read
  args.rows = a.rows;
  args.nnz = static_cast<int32_t>(a.nnz);  // below 2^31 - 1, checked above
  args.local_stride = m.local_stride;
  args.value_stride = m.value_stride;

  // Only the heads are written: the rest must read as 0 in the scans.
  DBS_CU(cuMemsetD32Async(static_cast<CUdeviceptr>(slot_scan.ptr()), 0, static_cast<size_t>(len), h));
  DBS_CU(cuMemsetD32Async(static_cast<CUdeviceptr>(group_scan.ptr()), 0, static_cast<size_t>(len), h));
  run.launch(k.slots, n, args);
  run.scan(slot_scan.ptr(), len);
  const int64_t windows = (int64_t{a.rows} + kBrpWindowRows - 1) / kBrpWindowRows;
  run.launch(k.groups, windows, args);
  run.scan(group_scan.ptr(), len);
  run.launch(k.classify, n, args);
  run.scan(res_scan.ptr(), len);

  m.groups = run.read(group_scan.ptr(), n);
  m.residual_nnz = run.read(res_scan.ptr(), n);
  check_brp_counts(m.groups, p, sizeof(T));
  const auto groups = static_cast<size_t>(m.groups);
  m.group_window_id = DeviceBuffer<int32_t>(groups);
  m.old_col_id = DeviceBuffer<int32_t>(groups * kBrpBlockSlots * static_cast<size_t>(p.g));
  m.local_id = DeviceBuffer<uint8_t>(groups * static_cast<size_t>(m.local_stride));
  m.values = DeviceBuffer<T>(groups * static_cast<size_t>(m.value_stride));
  m.res_col_id = DeviceBuffer<int32_t>(static_cast<size_t>(m.residual_nnz));
  m.res_values = DeviceBuffer<T>(static_cast<size_t>(m.residual_nnz));
  // The padding after each group's run; the fill overwrites the rest.
  if (groups) {
    DBS_CU(cuMemsetD8Async(static_cast<CUdeviceptr>(m.local_id.ptr()), kBrpPadLocalId, m.local_id.size(), h));
    DBS_CU(cuMemsetD8Async(static_cast<CUdeviceptr>(m.values.ptr()), 0, m.values.size() * sizeof(T), h));
  }
  args.group_window = m.group_window_id.data();
  args.old_col = m.old_col_id.data();
  args.local_id = m.local_id.data();
  args.group_vals = dptr(m.values);
  args.res_col = m.res_col_id.data();
  args.res_vals = dptr(m.res_values);
  run.launch(k.fill, n, args);

  run.launch(k.row_heads, n, args);
  run.scan(slot_scan.ptr(), len);
  m.residual_rows = run.read(slot_scan.ptr(), n);
  m.res_rows_id = DeviceBuffer<int32_t>(static_cast<size_t>(m.residual_rows));
  m.res_row_offset = DeviceBuffer<int32_t>(static_cast<size_t>(m.residual_rows) + 1);
  args.res_rows_id = m.res_rows_id.data();
  args.res_row_offset = m.res_row_offset.data();
  args.res_rows = static_cast<int32_t>(m.residual_rows);
  run.launch(k.fill_rows, n, args);
  DBS_CU(cuStreamSynchronize(h));
  stop_clock();
  // Freed only now: the stream has passed every kernel that reads them.
  meter.give_back(partials);
  meter.give_back(res_scan);
  meter.give_back(group_scan);
  meter.give_back(slot_scan);
  m.peak_extra_bytes = meter.peak();
  return m;
}

template <class T>
BrpDeviceMatrix<T> csr_to_brp_device(Context& ctx, const CsrMatrix<T>& a, const BrpParams& p) {
  validate(a);
  validate(p);
  ctx.make_current();
  const DeviceBuffer<int32_t> row_ptr{std::span<const int32_t>(a.row_ptr)};
  const DeviceBuffer<int32_t> col_idx{std::span<const int32_t>(a.col_idx)};
  const DeviceBuffer<T> values{std::span<const T>(a.values)};
  const Stream stream(ctx);
  DeviceCsrView<T> view;
  view.rows = a.rows;
  view.cols = a.cols;
  view.nnz = a.nnz();
  view.row_ptr = reinterpret_cast<const int32_t*>(row_ptr.ptr());
  view.col_idx = reinterpret_cast<const int32_t*>(col_idx.ptr());
  view.values = reinterpret_cast<const T*>(values.ptr());
  return csr_to_brp_device(ctx, view, p, stream);
}

template <class T>
BrpStats brp_stats(const BrpDeviceMatrix<T>& m) {
  detail::BrpCounts c;
  c.rows = m.rows;
  c.f = m.f;
  c.g = m.g;
  c.value_stride = m.value_stride;
  c.local_stride = m.local_stride;
  c.value_bytes = sizeof(T);
  c.groups = m.groups;
  c.residual_nnz = m.residual_nnz;
  c.residual_rows = m.residual_rows;
  const std::vector<int32_t> window = m.group_window_id.download();
  for (size_t q = 0; q < window.size(); ++q) c.tc_windows += q == 0 || window[q] != window[q - 1];
  BrpStats s = detail::brp_stats_of(c);
  s.on_device = true;
  s.convert_ms = m.convert_ms;
  s.peak_extra_bytes = m.peak_extra_bytes;
  return s;
}

#define DBS_INSTANTIATE(T)                                                                                           \
  template struct BrpDeviceMatrix<T>;                                                                                \
  template BrpDeviceMatrix<T> csr_to_brp_device(Context&, const DeviceCsrView<T>&, const BrpParams&, const Stream&); \
  template BrpDeviceMatrix<T> csr_to_brp_device(Context&, const CsrMatrix<T>&, const BrpParams&);                    \
  template BrpStats brp_stats(const BrpDeviceMatrix<T>&);
DBS_INSTANTIATE(float)
DBS_INSTANTIATE(double)
#undef DBS_INSTANTIATE

}  // namespace dbsparse

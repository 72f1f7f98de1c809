#pragma once
// A CSR matrix the caller keeps on the device with 64-bit offsets (DeviceCsrView64,
// DeviceGraphView64) is checked on the GPU before a plan reads it in place: a plan trusts its
// offsets and columns to index memory, and a torch or CuPy CSR tensor is not checked by its
// framework unless asked. A bad array would otherwise be an illegal address, which kills the CUDA
// context for the whole process. (SpGEMM checks its DeviceCsrViews in its own analysis pass.)
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "dbsparse/context.hpp"
#include "dbsparse/device_csr.hpp"
#include "runtime/gpu/cuda_driver.hpp"

namespace dbsparse::detail {

struct DeviceCsrArrays {
  uint64_t row_ptr = 0;  // CUdeviceptr: rows + 1 offsets, int32 or (offsets64) int64
  bool offsets64 = false;
  uint64_t col_idx = 0;  // nnz int32 columns
  int32_t rows = 0, cols = 0;
  int64_t nnz = 0;
};

// A DeviceCsrView64's arrays, as the checks and the degree order read them.
template <class T>
DeviceCsrArrays arrays_of(const DeviceCsrView64<T>& a) {
  return {reinterpret_cast<uintptr_t>(a.row_ptr), true, reinterpret_cast<uintptr_t>(a.col_idx), a.rows, a.cols, a.nnz};
}

// UsageError "<who>: <name>'s row_ptr ... at row r", "<name>'s col_idx[k] = j is outside [0, cols)"
// or (sorted: columns sorted and unique in each row, where the plan needs it) "<name>'s columns
// are not sorted and unique in each row", with the counts. Waits for the context first (the
// arrays may have been written on any stream), then runs on the legacy stream and waits.
void check_device_csr(Context& ctx, const std::string& who, const std::string& name, const DeviceCsrArrays& m,
                      bool sorted);

// A check kernel's run: `init` copied to the device, fn launched on the legacy stream with `args`
// and a pointer to that copy last (256 threads a block; `threads` of work, at most 16 blocks an SM:
// the checks loop grid-stride), and what the kernel left there read back. One mechanism for
// csr_check and BFS's own view check.
template <class Out>
Out run_check_kernel(Context& ctx, CUfunction fn, int64_t threads, std::vector<void*> args, Out init) {
  DeviceAllocation out(sizeof(Out));
  out.upload(&init, sizeof init);
  uint64_t at = out.ptr();
  args.push_back(&at);
  const int64_t most = int64_t{16} * std::max(ctx.device().sm_count, 1);
  const auto grid = static_cast<unsigned>(std::clamp<int64_t>((threads + 255) / 256, 1, most));
  DBS_CU(cuLaunchKernel(fn, grid, 1, 1, 256, 1, 1, 0, nullptr, args.data(), nullptr));
  out.download(&init, sizeof init);  // synchronous after the launch on the legacy stream
  return init;
}

// The rows' lengths, counted where A is: rows per degree bucket (abi::kDegreeBuckets, bucket 0
// the longest) and the lengths' CV (standard deviation over mean; what SpMM's reorder auto
// weighs, as row_length_cv does on the host). Legacy stream, waited for.
struct DeviceRowLengths {
  std::vector<uint32_t> counts;
  double cv = 0;
};
DeviceRowLengths device_row_lengths(Context& ctx, const DeviceCsrArrays& m);

// A's rows by decreasing length (lengths past abi::kDegreeCap first, together), made on the
// device from those counts: warp k of an SpMM plan takes row order[k]. Legacy stream, waited for.
DeviceBuffer<int32_t> device_degree_order(Context& ctx, const DeviceCsrArrays& m, const DeviceRowLengths& lengths);

}  // namespace dbsparse::detail

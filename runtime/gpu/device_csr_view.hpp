#pragma once
// A CSR matrix the caller keeps on the device with 64-bit offsets (DeviceCsrView64,
// DeviceGraphView64) is checked on the GPU before a plan reads it in place: a plan trusts its
// offsets and columns to index memory, and a torch or CuPy CSR tensor is not checked by its
// framework unless asked. A bad array would otherwise be an illegal address, which kills the CUDA
// context for the whole process. (SpGEMM checks its DeviceCsrViews in its own analysis pass.)
#include <cstdint>
#include <string>
#include <vector>

#include "dbsparse/context.hpp"

namespace dbsparse::detail {

struct DeviceCsrArrays {
  uint64_t row_ptr = 0;  // CUdeviceptr: rows + 1 offsets, int32 or (offsets64) int64
  bool offsets64 = false;
  uint64_t col_idx = 0;  // nnz int32 columns
  int32_t rows = 0, cols = 0;
  int64_t nnz = 0;
};

// UsageError "<who>: <name>'s row_ptr ... at row r", "<name>'s col_idx[k] = j is outside [0, cols)"
// or (sorted: columns sorted and unique in each row, where the plan needs it) "<name>'s columns
// are not sorted and unique in each row", with the counts. Runs on `stream` (null: the legacy
// stream) and waits for it; the caller orders the stream after whatever wrote the arrays.
void check_device_csr(Context& ctx, const std::string& who, const std::string& name, const DeviceCsrArrays& m,
                      bool sorted, void* stream);

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

#pragma once
// BRP-SpMM's format (brp.hpp) converted from CSR on the GPU: the same eight arrays as csr_to_brp,
// bitwise, left on the device. The conversion keeps only arrays over the nonzeros as scratch
// (three int32 arrays of nnz + 1 and the scans' tile sums, about 12 bytes a nonzero), and
// measures their peak: BrpStats::peak_extra_bytes, against the bound 4 * nnz * (4 + sizeof(T)).
#include <cstdint>

#include "dbsparse/brp.hpp"
#include "dbsparse/context.hpp"
#include "dbsparse/device_csr.hpp"

namespace dbsparse {

// The input is a DeviceCsrView (device_csr.hpp). It must be what validate(CsrMatrix) accepts
// (columns sorted and unique in each row); nothing on the device checks it.
template <class T>
struct BrpDeviceMatrix {
  int32_t rows = 0, cols = 0;
  int f = 1, g = 4;
  int32_t value_stride = 0, local_stride = 0;
  int64_t groups = 0, residual_nnz = 0, residual_rows = 0;
  // As BrpMatrix's, with the same lengths (an empty array is an empty buffer; res_row_offset holds
  // residual_rows + 1 entries).
  DeviceBuffer<int32_t> group_window_id, old_col_id;
  DeviceBuffer<uint8_t> local_id;
  DeviceBuffer<T> values;
  DeviceBuffer<int32_t> res_rows_id, res_row_offset, res_col_id;
  DeviceBuffer<T> res_values;
  // The conversion's cost: its time (kernels, the output's allocation and the two host reads of
  // the totals; JIT compilation excluded) and its scratch at the peak, in bytes requested.
  double convert_ms = 0;
  int64_t peak_extra_bytes = 0;

  BrpMatrix<T> download() const;
};

// CSR -> BRP on the device, on `stream`; returns once the output is complete (it reads the totals
// back twice to size the output). Throws UsageError for bad (f, g) or counts past int32
// (check_brp_counts), CudaError from the driver.
template <class T>
BrpDeviceMatrix<T> csr_to_brp_device(Context& ctx, const DeviceCsrView<T>& a, const BrpParams& p, const Stream& stream);
// The same from a host matrix (validated, then uploaded; the upload is the input, not scratch, and
// not timed).
template <class T>
BrpDeviceMatrix<T> csr_to_brp_device(Context& ctx, const CsrMatrix<T>& a, const BrpParams& p = {});

// brp_stats' figures for a device matrix, with on_device, convert_ms and peak_extra_bytes filled
// (reads group_window_id back to count the windows with groups).
template <class T>
BrpStats brp_stats(const BrpDeviceMatrix<T>& m);

}  // namespace dbsparse

// The GPU conversion's per-nonzero kernels (templates/formats/brp_convert.cuh) compiled by the host
// compiler and run as one thread that walks each grid-stride loop alone, with the scans done by a
// plain loop: their arrays must equal csr_to_brp's, bitwise, at every (f, g). This checks the
// kernels' index math where there is no GPU; the gpu tier runs the same cases on the device,
// scans and launches included (BrpDeviceConversionMatchesHostConversion).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cases/brp_convert_cases.hpp"
#include "dbsparse/abi/brp_convert.h"
#include "dbsparse/brp.hpp"

namespace brp_host_grid {
struct Dim {
  unsigned x = 0;
};
// One block of one thread: each grid-stride loop covers every index in turn.
inline Dim blockIdx{0}, threadIdx{0}, gridDim{1}, blockDim{1};
}  // namespace brp_host_grid
using brp_host_grid::blockDim;
using brp_host_grid::blockIdx;
using brp_host_grid::gridDim;
using brp_host_grid::threadIdx;
using std::min;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#include "templates/formats/brp_convert.cuh"
#undef __launch_bounds__
#undef __forceinline__
#undef __device__
#undef __global__

using namespace dbsparse;

namespace {

void exclusive_scan_in_place(std::vector<int32_t>& v) {
  int32_t sum = 0;
  for (int32_t& x : v) {
    const int32_t here = x;
    x = sum;
    sum += here;
  }
}

// runtime/formats/brp_device.cpp's passes, in its order, on host vectors.
template <class T, int F, int G>
BrpMatrix<T> convert_with_kernels(const CsrMatrix<T>& a) {
  BrpMatrix<T> m;
  m.rows = a.rows;
  m.cols = a.cols;
  m.f = F;
  m.g = G;
  m.value_stride = brp_value_stride(F, G, sizeof(T));
  m.local_stride = brp_local_stride(F, G);
  const auto n = static_cast<int32_t>(a.nnz());
  if (n == 0 || a.rows == 0) return m;
  std::vector<int32_t> slot(static_cast<size_t>(n) + 1, 0), group(slot.size(), 0), res(slot.size(), -1);
  abi::BrpConvertArgs args{};
  args.row_ptr = a.row_ptr.data();
  args.col_idx = a.col_idx.data();
  args.vals = a.values.data();
  args.slot_scan = slot.data();
  args.group_scan = group.data();
  args.res_scan = res.data();
  args.row_scan = slot.data();
  args.rows = a.rows;
  args.nnz = n;
  args.local_stride = m.local_stride;
  args.value_stride = m.value_stride;
  dbs::brp_conv_slots<F, G>(args);
  exclusive_scan_in_place(slot);
  dbs::brp_conv_groups<F, G>(args);
  exclusive_scan_in_place(group);
  dbs::brp_conv_classify<F, G>(args);
  exclusive_scan_in_place(res);
  const int32_t groups = group[static_cast<size_t>(n)], residual = res[static_cast<size_t>(n)];
  m.group_window_id.assign(static_cast<size_t>(groups), -1);
  m.old_col_id.assign(static_cast<size_t>(groups) * kBrpBlockSlots * G, -1);
  m.local_id.assign(static_cast<size_t>(groups) * m.local_stride, kBrpPadLocalId);
  m.values.assign(static_cast<size_t>(groups) * m.value_stride, T(0));
  m.res_col_id.assign(static_cast<size_t>(residual), -1);
  m.res_values.assign(static_cast<size_t>(residual), T(-1));
  args.group_window = m.group_window_id.data();
  args.old_col = m.old_col_id.data();
  args.local_id = m.local_id.data();
  args.group_vals = m.values.data();
  args.res_col = m.res_col_id.data();
  args.res_vals = m.res_values.data();
  dbs::brp_conv_fill<T, F, G>(args);
  std::fill(slot.begin(), slot.end(), -1);  // row_heads must write every entry
  dbs::brp_conv_row_heads<abi::kBrpConvertBlock>(args);
  exclusive_scan_in_place(slot);
  const int32_t rows = slot[static_cast<size_t>(n)];
  m.res_rows_id.assign(static_cast<size_t>(rows), -1);
  m.res_row_offset.assign(static_cast<size_t>(rows) + 1, -1);
  args.res_rows_id = m.res_rows_id.data();
  args.res_row_offset = m.res_row_offset.data();
  args.res_rows = rows;
  dbs::brp_conv_fill_rows<abi::kBrpConvertBlock>(args);
  return m;
}

template <class T, int F>
BrpMatrix<T> convert_with_kernels(const CsrMatrix<T>& a, int g) {
  switch (g) {
    case 1:
      return convert_with_kernels<T, F, 1>(a);
    case 2:
      return convert_with_kernels<T, F, 2>(a);
    case 4:
      return convert_with_kernels<T, F, 4>(a);
    default:
      return convert_with_kernels<T, F, 8>(a);
  }
}

template <class T>
BrpMatrix<T> convert_with_kernels(const CsrMatrix<T>& a, int f, int g) {
  switch (f) {
    case 1:
      return convert_with_kernels<T, 1>(a, g);
    case 2:
      return convert_with_kernels<T, 2>(a, g);
    case 4:
      return convert_with_kernels<T, 4>(a, g);
    default:
      return convert_with_kernels<T, 8>(a, g);
  }
}

}  // namespace

TEST_CASE("BrpConvertKernelsOnTheHostMatchCsrToBrp") {
  int64_t tc_cases = 0;
  for (const auto& [name, a64] : dbs_test::brp_convert_cases()) {
    CAPTURE(name);
    const CsrMatrix<float> a = a64.cast<float>();
    for (int f : {1, 2, 4, 8})
      for (int g : {1, 2, 4, 8}) {
        CAPTURE(f);
        CAPTURE(g);
        const BrpMatrix<float> want = csr_to_brp(a, BrpParams{f, g});
        tc_cases += want.groups() > 0;
        CHECK(dbs_test::brp_difference(convert_with_kernels(a, f, g), want) == "");
      }
    // f64 values through the same kernels (the fill's only type-dependent step).
    CHECK(dbs_test::brp_difference(convert_with_kernels(a64, 2, 2), csr_to_brp(a64, BrpParams{2, 2})) == "");
  }
  CHECK(tc_cases > 50);  // the cases reach the TC part, not only the residual
}

// CSR -> BRP on the GPU (csr_to_brp_device) against csr_to_brp: the eight arrays bitwise at every
// (f, g) on the shared cases (tests/cases/brp_convert_cases.hpp: generated matrices, empty rows and
// windows, M not a multiple of 16, K not a multiple of 8, windows with thousands of distinct
// columns, hypersparse, empty), the peak extra device memory within 4 * nnz * (4 + sizeof(T)),
// and plan_spmm's default (device) conversion against its host one.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "cases/brp_convert_cases.hpp"
#include "dbsparse/brp.hpp"
#include "dbsparse/brp_device.hpp"
#include "dbsparse/spmm.hpp"
#include "gpu/gpu_support.hpp"

namespace {

// The device matrix's counts and stats agree with the host's, and its scratch is within the bound.
template <class T>
void check_conversion(const CsrMatrix<T>& a, const BrpParams& p) {
  const BrpMatrix<T> want = csr_to_brp(a, p);
  const BrpDeviceMatrix<T> got = csr_to_brp_device(ctx(), a, p);
  CHECK(dbs_test::brp_difference(got.download(), want) == "");
  CHECK(got.groups == want.groups());
  CHECK(got.residual_nnz == want.residual_nnz());
  CHECK(got.residual_rows == static_cast<int64_t>(want.res_rows_id.size()));
  const BrpStats s = brp_stats(got), h = brp_stats(want);
  CHECK(s.on_device);
  CHECK(s.tc_windows == h.tc_windows);
  CHECK(s.bytes == h.bytes);
  CHECK(s.padding_bytes == h.padding_bytes);
  CHECK(s.peak_extra_bytes == got.peak_extra_bytes);
  CHECK(got.convert_ms >= 0);
  if (a.nnz() > 0) {
    CAPTURE(got.peak_extra_bytes);
    CHECK(got.peak_extra_bytes > 0);
    CHECK(got.peak_extra_bytes <= 4 * a.nnz() * (4 + int64_t{sizeof(T)}));
    CHECK(got.peak_extra_bytes <= 4 * a.nnz() * 8);
  } else {
    CHECK(got.peak_extra_bytes == 0);
  }
}

}  // namespace

TEST_CASE("BrpDeviceConversionMatchesHostConversion") {
  int64_t with_groups = 0;
  for (const auto& [name, a64] : dbs_test::brp_convert_cases()) {
    CAPTURE(name);
    const CsrMatrix<float> a = a64.cast<float>();
    for (int f : {1, 2, 4, 8})
      for (int g : {1, 2, 4, 8}) {
        CAPTURE(f);
        CAPTURE(g);
        check_conversion(a, BrpParams{f, g});
        with_groups += csr_to_brp(a, BrpParams{f, g}).groups() > 0;
      }
    // f64 values: the fill copies 8 bytes; the bound is 4 * nnz * 12 (checked against 8 as well).
    for (int f : {1, 8}) {
      CAPTURE(f);
      check_conversion(a64, BrpParams{f, 2});
    }
  }
  CHECK(with_groups > 50);  // the cases reach the TC part, not only the residual
}

// A matrix large enough for the scans' second level (nnz + 1 > 1024 * 1024 items: tile sums of
// tile sums) and for many blocks per kernel.
TEST_CASE("BrpDeviceConversionMatchesHostConversionOnALargeMatrix") {
  const CsrMatrix<float> a = generate("uniform:n=200000,d=8").cast<float>();
  REQUIRE(a.nnz() > 1024 * 1024);
  for (auto [f, g] : {std::pair{1, 4}, std::pair{2, 1}, std::pair{8, 8}}) {
    CAPTURE(f);
    CAPTURE(g);
    check_conversion(a, BrpParams{f, g});
  }
}

// The view overload on a caller's stream, from device pointers (what plan_spmm's callers with a
// device CSR would pass).
TEST_CASE("BrpDeviceConversionFromADeviceCsrView") {
  ctx();  // the context current before the first DeviceBuffer (the case may run alone: -tc)
  const CsrMatrix<float> a = generate("stencil2d:n=40").cast<float>();
  const DeviceBuffer<int32_t> rp{std::span<const int32_t>(a.row_ptr)}, ci{std::span<const int32_t>(a.col_idx)};
  const DeviceBuffer<float> v{std::span<const float>(a.values)};
  DeviceCsrView<float> view;
  view.rows = a.rows;
  view.cols = a.cols;
  view.nnz = a.nnz();
  view.row_ptr = reinterpret_cast<const int32_t*>(rp.ptr());
  view.col_idx = reinterpret_cast<const int32_t*>(ci.ptr());
  view.values = reinterpret_cast<const float*>(v.ptr());
  Stream s(ctx());
  const BrpDeviceMatrix<float> got = csr_to_brp_device(ctx(), view, BrpParams{2, 2}, s);
  CHECK(dbs_test::brp_difference(got.download(), csr_to_brp(a, BrpParams{2, 2})) == "");
}

// plan_spmm converts on the device by default; its product equals the host-converted plan's.
TEST_CASE("SpmmPlanConvertsOnTheDeviceLikeOnTheHost") {
  const CsrMatrix<float> a = generate("fem:nodes=600,k=3,blocks=4").cast<float>();
  const int n = 32;
  SpmmOptions dev{SpmmPath::Brp, 2, 2};
  SpmmOptions host = dev;
  host.convert_on_host = true;
  const SpmmPlan pd = plan_spmm(ctx(), a, n, dev), ph = plan_spmm(ctx(), a, n, host);
  CHECK(pd.explain().find("converted on the GPU") != std::string::npos);
  CHECK(ph.explain().find("converted on the host") != std::string::npos);
  CHECK(pd.device_bytes() == ph.device_bytes());
  CHECK(pd.tc_share() == ph.tc_share());
  const std::vector<float> b = dbs_test::random_vector<float>(static_cast<size_t>(a.cols) * n, 5);
  Stream s(ctx());
  DeviceBuffer<float> db{std::span<const float>(b)}, c1(static_cast<size_t>(a.rows) * n), c2(c1.size());
  pd.run(db, c1, s);
  ph.run(db, c2, s);
  s.synchronize();
  const std::vector<float> x = c1.download(), y = c2.download();
  double worst = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    worst = std::max(worst, std::fabs(double(x[i]) - double(y[i])));
    scale = std::max(scale, std::fabs(double(y[i])));
  }
  // Same arrays, same kernels: only the order of the long windows' atomic additions can differ.
  CHECK(worst <= 1e-5 * std::max(scale, 1.0));
}

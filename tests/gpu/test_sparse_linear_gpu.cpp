// DB-Decoding's layer on the GPU against the CPU: y = W · (x where |x| >= tau), W pruned, for each
// layer shape of the three models and odd shapes, at activation densities 1, 0.5, 0.1 and 0.01.
#include <doctest/doctest.h>

#include <cmath>

#include "dbsparse/dbsparse.hpp"
#include "dbsparse/decode_linear.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/pruning.hpp"
#include "dbsparse/sparse_linear.hpp"

using namespace dbsparse;

namespace {
Context& ctx() {
  static Context c;
  return c;
}

// Max over rows of |y - ref| / sum_j |w_ij x_j|: the error the f32 accumulation may make.
double check_layer(int32_t rows, int32_t cols, double density, uint64_t seed,
                   SparseLinearLayout layout = SparseLinearLayout::Spmspv) {
  const std::vector<float> w = synthetic_weights(rows, cols, seed);
  const std::vector<float> x = synthetic_weights(1, cols, seed + 1);
  const float tau = density >= 1.0 ? 0.0f : topk_threshold(x, density);
  const std::vector<float> xs = threshold_activations(x, tau);
  const CsrMatrix<float> pw = prune_magnitude(w, rows, cols, 0.5);
  SparseLinearOptions o;
  o.tau = tau;
  o.layout = layout;
  SparseLinearPlan<float> plan = ctx().plan_sparse_linear(pw, o);
  Stream s(ctx());
  DeviceBuffer<float> xd{std::span<const float>(x)}, y{static_cast<size_t>(rows)};
  // Twice: the column bitmap path resets its list count and tickets for the next call itself.
  plan.run(xd, y, s);
  plan.run(xd, y, s);
  s.synchronize();
  const auto got = y.download();
  const auto ref = reference::spmv(pw, std::span<const float>(xs));
  double worst = 0;
  for (int32_t i = 0; i < rows; ++i) {
    double scale = 0;
    for (int32_t p = pw.row_ptr[i]; p < pw.row_ptr[i + 1]; ++p) scale += std::fabs(pw.values[p] * xs[pw.col_idx[p]]);
    worst = std::max(worst, std::fabs(got[static_cast<size_t>(i)] - ref[static_cast<size_t>(i)]) / std::max(scale, 1e-30));
  }
  return worst;
}
}  // namespace

TEST_CASE("SparseLinearMatchesReferenceOnModelShapes") {
  for (const auto& model : known_models())
    for (const auto& shape : model_shapes(model).linear)
      for (double d : {1.0, 0.5, 0.1, 0.01}) {
        CAPTURE(model);
        CAPTURE(shape.kind);
        CAPTURE(d);
        CHECK(check_layer(shape.out, shape.in, d, 3) <= 1e-5);
        CHECK(check_layer(shape.out, shape.in, d, 3, SparseLinearLayout::ColumnBitmap) <= 1e-5);
      }
}

TEST_CASE("SparseLinearMatchesReferenceOnOddShapes") {
  for (auto [r, c] : {std::pair{1, 1}, {17, 33}, {1000, 7}, {7, 1000}, {4099, 515}})
    for (double d : {1.0, 0.1, 0.01}) {
      CAPTURE(r);
      CAPTURE(c);
      CAPTURE(d);
      CHECK(check_layer(r, c, d, 9) <= 1e-5);
      CHECK(check_layer(r, c, d, 9, SparseLinearLayout::ColumnBitmap) <= 1e-5);
    }
  SparseLinearOptions bad;
  bad.tau = -1.0f;
  CHECK_THROWS_AS(ctx().plan_sparse_linear(prune_magnitude(synthetic_weights(4, 4, 1), 4, 4, 0.5), bad), UsageError);
}

// The dtype path: y against the CPU on the same rounded inputs, relative to sum |w||x| of the row:
// 1e-3 for fp16 output, 8e-3 for bf16 (the output's rounding), 1e-5 for f32.
TEST_CASE("DecodeLinearMatchesReferenceInEveryDtype") {
  Stream s(ctx());
  for (DecodeDtype dt : {DecodeDtype::F16, DecodeDtype::BF16, DecodeDtype::F32})
    for (auto [rows, cols] : {std::pair{2048, 2048}, {512, 2048}, {8192, 2048}, {2048, 8192}, {1000, 7}, {1, 1}, {3000, 1537}})
      for (double d : {1.0, 0.5, 0.1, 0.01}) {
        CAPTURE(to_string(dt));
        CAPTURE(rows);
        CAPTURE(cols);
        CAPTURE(d);
        const auto round = [&](float v) {
          return dt == DecodeDtype::F16 ? half_to_float(float_to_half(v))
                 : dt == DecodeDtype::BF16 ? bf16_to_float(float_to_bf16(v))
                                           : v;
        };
        const std::vector<float> w = synthetic_weights(rows, cols, 21);
        std::vector<float> x = synthetic_weights(1, cols, 22);
        for (auto& v : x) v = round(v);
        const float tau = d >= 1.0 ? 0.0f : topk_threshold(x, d);
        const CsrMatrix<float> pw = prune_magnitude(w, rows, cols, 0.5);
        DecodeLinearOptions o;
        o.dtype = dt;
        o.tau = tau;
        DecodeLinearPlan plan = ctx().plan_decode_linear(pw, o);
        // Saves memory against the dense matrix in the same dtype (tiny shapes pay 128 B of masks per column).
        if (rows >= 512) CHECK(plan.weight_bytes() < int64_t{2} * rows * cols * (dt == DecodeDtype::F32 ? 2 : 1));
        std::vector<float> got;
        if (dt == DecodeDtype::F32) {
          DeviceBuffer<float> xd{std::span<const float>(x)}, y{static_cast<size_t>(rows)};
          plan.run(xd.ptr(), y.ptr(), s.handle());
          plan.run(xd.ptr(), y.ptr(), s.handle());
          s.synchronize();
          got = y.download();
        } else {
          const auto xh = dt == DecodeDtype::F16 ? floats_to_half(x) : floats_to_bf16(x);
          DeviceBuffer<uint16_t> xd{std::span<const uint16_t>(xh)}, y{static_cast<size_t>(rows)};
          plan.run(xd.ptr(), y.ptr(), s.handle());
          plan.run(xd.ptr(), y.ptr(), s.handle());
          s.synchronize();
          const auto yh = y.download();
          got = dt == DecodeDtype::F16 ? half_to_floats(yh) : bf16_to_floats(yh);
        }
        double worst = 0;
        for (int32_t i = 0; i < rows; ++i) {
          double ref = 0, scale = 0;
          for (int32_t p = pw.row_ptr[i]; p < pw.row_ptr[i + 1]; ++p) {
            const float xv = x[static_cast<size_t>(pw.col_idx[p])];
            if (!(std::fabs(xv) >= tau) || xv == 0.0f) continue;
            ref += double(round(pw.values[p])) * xv;
            scale += std::fabs(double(round(pw.values[p])) * xv);
          }
          worst = std::max(worst, std::fabs(got[static_cast<size_t>(i)] - ref) / std::max(scale, 1e-30));
        }
        CHECK(worst <= (dt == DecodeDtype::F16 ? 1e-3 : dt == DecodeDtype::BF16 ? 8e-3 : 1e-5));
      }
}

TEST_CASE("DecodeLinearCloneComputesTheSameProduct") {
  Stream s(ctx());
  const std::vector<float> w = synthetic_weights(3000, 700, 31), x = synthetic_weights(1, 700, 32);
  DecodeLinearOptions o;
  o.dtype = DecodeDtype::F32;
  o.tau = topk_threshold(x, 0.1);
  DecodeLinearPlan a = ctx().plan_decode_linear(prune_magnitude(w, 3000, 700, 0.5), o);
  DecodeLinearPlan b = a.clone();
  DeviceBuffer<float> xd{std::span<const float>(x)}, ya{size_t(3000)}, yb{size_t(3000)};
  a.run(xd.ptr(), ya.ptr(), s.handle());
  b.run(xd.ptr(), yb.ptr(), s.handle());
  b.run(xd.ptr(), yb.ptr(), s.handle());
  s.synchronize();
  // Shared-memory atomics add in no fixed order: equal up to the last bits, not bitwise.
  const auto ra = ya.download(), rb = yb.download();
  for (size_t i = 0; i < ra.size(); ++i) CHECK(std::fabs(ra[i] - rb[i]) <= 1e-5f * (1.0f + std::fabs(ra[i])));
  CHECK(b.weight_bytes() == a.weight_bytes());
}

// Top-k on the GPU keeps exactly what topk_threshold on the CPU keeps (ties included).
TEST_CASE("DecodeLinearTopKMatchesTheCpuThreshold") {
  Stream s(ctx());
  for (int32_t cols : {1, 7, 2048, 8960, 16384})
    for (double keep : {1.0, 0.5, 0.1, 0.01}) {
      CAPTURE(cols);
      CAPTURE(keep);
      const int32_t rows = 1500;
      const std::vector<float> w = synthetic_weights(rows, cols, 41);
      std::vector<float> x = synthetic_weights(1, cols, 42);
      if (cols > 100) x[3] = x[4] = x[5];  // a tie
      DecodeLinearOptions o;
      o.dtype = DecodeDtype::F32;
      o.keep = keep;
      const CsrMatrix<float> pw = prune_magnitude(w, rows, cols, 0.5);
      DecodeLinearPlan plan = ctx().plan_decode_linear(pw, o);
      DeviceBuffer<float> xd{std::span<const float>(x)}, y{static_cast<size_t>(rows)};
      plan.run(xd.ptr(), y.ptr(), s.handle());
      const float tau = topk_threshold(x, keep);
      CHECK(plan.last_tau(s.handle()) == tau);
      const auto got = y.download();
      const std::vector<float> xs = threshold_activations(x, tau);
      const auto ref = reference::spmv(pw, std::span<const float>(xs));
      double worst = 0;
      for (int32_t i = 0; i < rows; ++i) {
        double scale = 0;
        for (int32_t p = pw.row_ptr[i]; p < pw.row_ptr[i + 1]; ++p) scale += std::fabs(pw.values[p] * xs[pw.col_idx[p]]);
        worst = std::max(worst, std::fabs(got[static_cast<size_t>(i)] - ref[static_cast<size_t>(i)]) / std::max(scale, 1e-30));
      }
      CHECK(worst <= 1e-5);
    }
  DecodeLinearOptions too_wide;
  too_wide.keep = 0.1;
  CHECK_THROWS_AS(ctx().plan_decode_linear(prune_magnitude(synthetic_weights(4, 16385, 1), 4, 16385, 0.5), too_wide),
                  UsageError);
}

// DB-Decoding's layer on the GPU against the CPU: y = W · (x where |x| >= tau), W pruned, for each
// layer shape of the three models and odd shapes, at activation densities 1, 0.5, 0.1 and 0.01.
#include <doctest/doctest.h>

#include <cmath>

#include "dbsparse/dbsparse.hpp"
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

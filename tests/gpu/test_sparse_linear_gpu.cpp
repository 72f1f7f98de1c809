// DB-Decoding's layer on the GPU against the CPU: y = W · (x where |x| >= tau), W pruned, for each
// layer shape of the three models and odd shapes, at activation densities 1, 0.5, 0.1 and 0.01.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "dbsparse/compact_weights.hpp"
#include "dbsparse/decode_linear.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/pruning.hpp"
#include "dbsparse/sparse_linear.hpp"
#include "gpu/gpu_support.hpp"

namespace {

// Max over rows of |y - ref| / sum_j |w_ij x_j|, at each density: the error the f32 accumulation
// may make. W is generated, pruned and converted once per shape (the CPU side dominated: 45 s were
// not enough for the model shapes on the H200 host), the densities set through set_tau.
double check_layer(int32_t rows, int32_t cols, const std::vector<double>& densities, uint64_t seed,
                   SparseLinearLayout layout = SparseLinearLayout::Spmspv) {
  const std::vector<float> w = synthetic_weights(rows, cols, seed);
  const std::vector<float> x = synthetic_weights(1, cols, seed + 1);
  const CsrMatrix<float> pw = prune_magnitude(w, rows, cols, 0.5);
  SparseLinearOptions o;
  o.layout = layout;
  SparseLinearPlan<float> plan = plan_sparse_linear(ctx(), pw, o);
  Stream s(ctx());
  DeviceBuffer<float> xd{std::span<const float>(x)}, y{static_cast<size_t>(rows)};
  double worst = 0;
  for (double density : densities) {
    CAPTURE(density);
    const float tau = density >= 1.0 ? 0.0f : topk_threshold(x, density);
    plan.set_tau(tau);
    const std::vector<float> xs = threshold_activations(x, tau);
    // Twice: the column bitmap path resets its tickets and sums for the next call itself.
    plan.run(xd, y, s);
    plan.run(xd, y, s);
    s.synchronize();
    const auto got = y.download();
    const auto ref = reference::spmv(pw, std::span<const float>(xs));
    double at_density = 0;
    for (int32_t i = 0; i < rows; ++i) {
      double scale = 0;
      for (int32_t p = pw.row_ptr[i]; p < pw.row_ptr[i + 1]; ++p) scale += std::fabs(pw.values[p] * xs[pw.col_idx[p]]);
      at_density = std::max(
          at_density, std::fabs(got[static_cast<size_t>(i)] - ref[static_cast<size_t>(i)]) / std::max(scale, 1e-30));
    }
    CHECK(at_density <= 1e-5);
    worst = std::max(worst, at_density);
  }
  return worst;
}

// Max over rows of |y - ref| / sum_j |w_ij x_j| for y = W (x where |x| >= tau), W's values rounded
// to the 16-bit dtype as the plan holds them (x is already in it): the decoding plans' yardstick.
double masked_rel_err(const CsrMatrix<float>& pw, const std::vector<float>& x, float tau, const std::vector<float>& got,
                      DecodeDtype dt) {
  double worst = 0;
  for (int32_t i = 0; i < pw.rows; ++i) {
    double ref = 0, scale = 0;
    for (int32_t p = pw.row_ptr[i]; p < pw.row_ptr[i + 1]; ++p) {
      const float xv = x[static_cast<size_t>(pw.col_idx[p])];
      if (!(std::fabs(xv) >= tau) || xv == 0.0f) continue;
      const double wv = dt == DecodeDtype::F16    ? half_to_float(float_to_half(pw.values[p]))
                        : dt == DecodeDtype::BF16 ? bf16_to_float(float_to_bf16(pw.values[p]))
                                                  : pw.values[p];
      ref += wv * xv;
      scale += std::fabs(wv * xv);
    }
    worst = std::max(worst, std::fabs(got[static_cast<size_t>(i)] - ref) / std::max(scale, 1e-30));
  }
  return worst;
}
}  // namespace

// The distinct (out, in) shapes of the small models' linear layers (k/v and gate/up repeat). The
// 7-8B shapes have a test of their own in f16 (DecodeLinearMatchesReferenceOn8bShapes): their CPU
// side (pruning and references of 59M weights) would take minutes in every dtype and mapping.
static std::vector<std::pair<int32_t, int32_t>> model_layer_shapes() {
  std::vector<std::pair<int32_t, int32_t>> v;
  for (const auto& model : {"llama-3.2-1b", "qwen2.5-1.5b", "qwen3-0.6b"})
    for (const auto& shape : model_shapes(model).linear)
      if (std::find(v.begin(), v.end(), std::pair{shape.out, shape.in}) == v.end()) v.emplace_back(shape.out, shape.in);
  return v;
}

TEST_CASE("SparseLinearMatchesReferenceOnModelShapes") {
  for (auto [rows, cols] : model_layer_shapes()) {
    CAPTURE(rows);
    CAPTURE(cols);
    check_layer(rows, cols, {1.0, 0.5, 0.1, 0.01}, 3);
    check_layer(rows, cols, {1.0, 0.5, 0.1, 0.01}, 3, SparseLinearLayout::ColumnBitmap);
  }
}

TEST_CASE("SparseLinearMatchesReferenceOnOddShapes") {
  for (auto [r, c] : {std::pair{1, 1}, {17, 33}, {1000, 7}, {7, 1000}, {4099, 515}}) {
    CAPTURE(r);
    CAPTURE(c);
    check_layer(r, c, {1.0, 0.1, 0.01}, 9);
    check_layer(r, c, {1.0, 0.1, 0.01}, 9, SparseLinearLayout::ColumnBitmap);
  }
  SparseLinearOptions bad;
  bad.tau = -1.0f;
  CHECK_THROWS_AS(plan_sparse_linear(ctx(), prune_magnitude(synthetic_weights(4, 4, 1), 4, 4, 0.5), bad), UsageError);
}

// The dtype path: y against the CPU on the same rounded inputs, relative to sum |w||x| of the row:
// 1e-3 for fp16 output, 8e-3 for bf16 (the output's rounding), 1e-5 for f32.
TEST_CASE("DecodeLinearMatchesReferenceInEveryDtype") {
  Stream s(ctx());
  auto shapes = model_layer_shapes();
  for (auto odd : {std::pair{1000, 7}, {1, 1}, {3000, 1537}, {1025, 33}}) shapes.push_back(odd);
  dbs_test::Shard shard;  // a shape a shard under a sanitizer (hardening_run.sh SAN_SHARDS)
  for (auto [rows, cols] : shapes) {
    if (!shard.next()) continue;
    const std::vector<float> w = synthetic_weights(rows, cols, 21);
    const std::vector<float> x0 = synthetic_weights(1, cols, 22);
    const CsrMatrix<float> pw = prune_magnitude(w, rows, cols, 0.5);
    for (DecodeDtype dt : {DecodeDtype::F16, DecodeDtype::BF16, DecodeDtype::F32}) {
      CAPTURE(to_string(dt));
      CAPTURE(rows);
      CAPTURE(cols);
      const auto round = [&](float v) {
        return dt == DecodeDtype::F16    ? half_to_float(float_to_half(v))
               : dt == DecodeDtype::BF16 ? bf16_to_float(float_to_bf16(v))
                                         : v;
      };
      std::vector<float> x = x0;
      for (auto& v : x) v = round(v);
      // Every mapping (row blocks of 1 and 4 words) on the same inputs and the same reference.
      std::vector<DecodeLinearPlan> plans;
      for (auto [mapping, words] : {std::pair{DecodeMapping::Ring, 1},
                                    {DecodeMapping::Auto, 1},
                                    {DecodeMapping::Lanes, 1},
                                    {DecodeMapping::Columns, 1},
                                    {DecodeMapping::RowBlocks, 1},
                                    {DecodeMapping::RowBlocks, 4},
                                    {DecodeMapping::DenseColumns, 1}}) {
        DecodeLinearOptions o;
        o.dtype = dt;
        o.mapping = mapping;
        o.row_block_words = words;
        plans.push_back(plan_decode_linear(ctx(), pw, o));
      }
      // The bitmap saves memory against the dense matrix in the same dtype (tiny shapes pay 128 B of masks per column).
      if (rows >= 512) CHECK(plans[0].weight_bytes() < int64_t{2} * rows * cols * (dt == DecodeDtype::F32 ? 2 : 1));
      const auto xh = dt == DecodeDtype::F16 ? floats_to_half(x) : floats_to_bf16(x);
      DeviceBuffer<float> xf{std::span<const float>(x)}, yf{static_cast<size_t>(rows)};
      DeviceBuffer<uint16_t> xd{std::span<const uint16_t>(xh)}, yd{static_cast<size_t>(rows)};
      for (double d : {1.0, 0.5, 0.1, 0.01}) {
        CAPTURE(d);
        const float tau = d >= 1.0 ? 0.0f : topk_threshold(x, d);
        std::vector<double> ref(static_cast<size_t>(rows)), scale(static_cast<size_t>(rows));
        for (int32_t i = 0; i < rows; ++i)
          for (int32_t p = pw.row_ptr[i]; p < pw.row_ptr[i + 1]; ++p) {
            const float xv = x[static_cast<size_t>(pw.col_idx[p])];
            if (!(std::fabs(xv) >= tau) || xv == 0.0f) continue;
            ref[static_cast<size_t>(i)] += double(round(pw.values[p])) * xv;
            scale[static_cast<size_t>(i)] += std::fabs(double(round(pw.values[p])) * xv);
          }
        for (DecodeLinearPlan& plan : plans) {
          CAPTURE(plan.explain());
          plan.set_tau(tau);
          std::vector<float> got;
          // Twice: the second call checks that the first left the sums and tickets at zero.
          const uint64_t xin = dt == DecodeDtype::F32 ? xf.ptr() : xd.ptr();
          const uint64_t yout = dt == DecodeDtype::F32 ? yf.ptr() : yd.ptr();
          plan.run(xin, yout, s.handle());
          plan.run(xin, yout, s.handle());
          s.synchronize();
          if (dt == DecodeDtype::F32) {
            got = yf.download();
          } else {
            const auto yh = yd.download();
            got = dt == DecodeDtype::F16 ? half_to_floats(yh) : bf16_to_floats(yh);
          }
          double worst = 0;
          for (int32_t i = 0; i < rows; ++i)
            worst = std::max(worst, std::fabs(got[static_cast<size_t>(i)] - ref[static_cast<size_t>(i)]) /
                                        std::max(scale[static_cast<size_t>(i)], 1e-30));
          CHECK(worst <= (dt == DecodeDtype::F16 ? 1e-3 : dt == DecodeDtype::BF16 ? 8e-3 : 1e-5));
        }
      }
    }
  }
}

TEST_CASE("DecodeLinearCloneComputesTheSameProduct") {
  Stream s(ctx());
  const std::vector<float> w = synthetic_weights(3000, 700, 31), x = synthetic_weights(1, 700, 32);
  DecodeLinearOptions o;
  o.dtype = DecodeDtype::F32;
  o.tau = topk_threshold(x, 0.1);
  DecodeLinearPlan a = plan_decode_linear(ctx(), prune_magnitude(w, 3000, 700, 0.5), o);
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
      DecodeLinearPlan plan = plan_decode_linear(ctx(), pw, o);
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
        for (int32_t p = pw.row_ptr[i]; p < pw.row_ptr[i + 1]; ++p)
          scale += std::fabs(pw.values[p] * xs[pw.col_idx[p]]);
        worst = std::max(worst,
                         std::fabs(got[static_cast<size_t>(i)] - ref[static_cast<size_t>(i)]) / std::max(scale, 1e-30));
      }
      CHECK(worst <= 1e-5);
    }
  // 16-bit activations select on 16-bit keys (two radix passes): the same threshold as the CPU on
  // the rounded values, for fp16 and bf16, with ties and a long run of equal exponents.
  for (DecodeDtype dt : {DecodeDtype::F16, DecodeDtype::BF16})
    for (int32_t cols : {5, 4096, 14336})
      for (double keep : {1.0, 0.5, 0.1}) {
        CAPTURE(to_string(dt));
        CAPTURE(cols);
        CAPTURE(keep);
        const int32_t rows = 512;
        std::vector<float> x = synthetic_weights(1, cols, 43);
        if (cols > 100) x[7] = x[8] = x[9];
        auto round = [&](float v) {
          return dt == DecodeDtype::F16 ? half_to_float(float_to_half(v)) : bf16_to_float(float_to_bf16(v));
        };
        for (auto& v : x) v = round(v);
        DecodeLinearOptions o;
        o.dtype = dt;
        o.keep = keep;
        o.mapping = DecodeMapping::Ring;
        const CsrMatrix<float> pw = prune_magnitude(synthetic_weights(rows, cols, 44), rows, cols, 0.5);
        DecodeLinearPlan plan = plan_decode_linear(ctx(), pw, o);
        const auto xh = dt == DecodeDtype::F16 ? floats_to_half(x) : floats_to_bf16(x);
        DeviceBuffer<uint16_t> xd{std::span<const uint16_t>(xh)}, yd{static_cast<size_t>(rows)};
        plan.run(xd.ptr(), yd.ptr(), s.handle());
        const float tau = topk_threshold(x, keep);
        CHECK(plan.last_tau(s.handle()) == tau);
        const auto yh = yd.download();
        const auto got = dt == DecodeDtype::F16 ? half_to_floats(yh) : bf16_to_floats(yh);
        CHECK(masked_rel_err(pw, x, tau, got, dt) <= (dt == DecodeDtype::F16 ? 1e-3 : 8e-3));
      }
  DecodeLinearOptions too_wide;
  too_wide.keep = 0.1;
  CHECK_THROWS_AS(plan_decode_linear(ctx(), prune_magnitude(synthetic_weights(4, 16385, 1), 4, 16385, 0.5), too_wide),
                  UsageError);
}

// The row-block mapping on small odd shapes, with top-k and a clone: small enough for the
// sanitizers (tools/device/check.sh decode runs memcheck and racecheck over it).
TEST_CASE("DecodeLinearRowBlocksMatchReferenceOnOddShapes") {
  Stream s(ctx());
  for (auto [rows, cols] : {std::pair{1, 1}, {31, 5000}, {33, 4097}, {200, 9000}, {1025, 64}})
    for (int words : {1, 2, 4}) {
      CAPTURE(rows);
      CAPTURE(cols);
      CAPTURE(words);
      const std::vector<float> x = synthetic_weights(1, cols, 41);
      const CsrMatrix<float> pw = prune_magnitude(synthetic_weights(rows, cols, 40), rows, cols, 0.5);
      DecodeLinearOptions o;
      o.dtype = DecodeDtype::F32;
      o.mapping = DecodeMapping::RowBlocks;
      o.row_block_words = words;
      o.keep = cols <= 16384 ? 0.1 : 0.0;
      DecodeLinearPlan plan = plan_decode_linear(ctx(), pw, o);
      DecodeLinearPlan copy = plan.clone();
      DeviceBuffer<float> xd{std::span<const float>(x)}, y{static_cast<size_t>(rows)};
      copy.run(xd.ptr(), y.ptr(), s.handle());
      const float tau = copy.last_tau(s.handle());
      CHECK(tau == topk_threshold(x, 0.1));
      const auto got = y.download();
      for (int32_t i = 0; i < rows; ++i) {
        double ref = 0, scale = 0;
        for (int32_t p = pw.row_ptr[i]; p < pw.row_ptr[i + 1]; ++p) {
          const float xv = x[static_cast<size_t>(pw.col_idx[p])];
          if (!(std::fabs(xv) >= tau) || xv == 0.0f) continue;
          ref += double(pw.values[p]) * xv;
          scale += std::fabs(double(pw.values[p]) * xv);
        }
        CHECK(std::fabs(got[static_cast<size_t>(i)] - ref) <= 1e-5 * std::max(scale, 1e-30));
      }
    }
  DecodeLinearOptions bad;
  bad.mapping = DecodeMapping::RowBlocks;
  bad.row_block_words = 3;
  CHECK_THROWS_AS(plan_decode_linear(ctx(), prune_magnitude(synthetic_weights(4, 4, 1), 4, 4, 0.5), bad), UsageError);
}

// The ring and dense-columns mappings on odd shapes (strips and slabs cut short, a row, columns past
// one block's list), with blocks_per_sm from 1 to 16 so that the column splits differ, top-k, a
// clone and two calls (the second finds the sums and tickets the first left at zero): small enough
// for the sanitizers.
TEST_CASE("DecodeLinearRingAndDenseColumnsMatchReferenceOnOddShapes") {
  Stream s(ctx());
  dbs_test::Shard shard;  // a (shape, mapping) a shard under a sanitizer (hardening_run.sh SAN_SHARDS)
  for (auto [rows, cols] :
       {std::pair{1, 1}, {31, 5000}, {33, 4097}, {200, 9000}, {1025, 64}, {3000, 1537}, {2049, 20000}})
    for (auto [mapping, per_sm] : {std::pair{DecodeMapping::DenseColumns, 0},
                                   {DecodeMapping::DenseColumns, 1},
                                   {DecodeMapping::DenseColumns, 16},
                                   {DecodeMapping::Ring, 0},
                                   {DecodeMapping::Ring, 1},
                                   {DecodeMapping::Ring, 16}}) {
      if (!shard.next()) continue;
      CAPTURE(rows);
      CAPTURE(cols);
      CAPTURE(to_string(mapping));
      CAPTURE(per_sm);
      const std::vector<float> x = synthetic_weights(1, cols, 61);
      const CsrMatrix<float> pw = prune_magnitude(synthetic_weights(rows, cols, 60), rows, cols, 0.5);
      DecodeLinearOptions o;
      o.dtype = DecodeDtype::F32;
      o.mapping = mapping;
      o.blocks_per_sm = per_sm;
      o.keep = cols <= 16384 ? 0.3 : 0.0;
      o.tau = cols <= 16384 ? 0.0f : topk_threshold(x, 0.3);
      DecodeLinearPlan plan = plan_decode_linear(ctx(), pw, o);
      CAPTURE(plan.explain());
      DecodeLinearPlan copy = plan.clone();
      DeviceBuffer<float> xd{std::span<const float>(x)}, y{static_cast<size_t>(rows)};
      copy.run(xd.ptr(), y.ptr(), s.handle());
      copy.run(xd.ptr(), y.ptr(), s.handle());
      const float tau = copy.last_tau(s.handle());
      CHECK(tau == topk_threshold(x, 0.3));
      const auto got = y.download();
      for (int32_t i = 0; i < rows; ++i) {
        double ref = 0, scale = 0;
        for (int32_t p = pw.row_ptr[i]; p < pw.row_ptr[i + 1]; ++p) {
          const float xv = x[static_cast<size_t>(pw.col_idx[p])];
          if (!(std::fabs(xv) >= tau) || xv == 0.0f) continue;
          ref += double(pw.values[p]) * xv;
          scale += std::fabs(double(pw.values[p]) * xv);
        }
        CHECK(std::fabs(got[static_cast<size_t>(i)] - ref) <= 1e-5 * std::max(scale, 1e-30));
      }
    }
  DecodeLinearOptions bad;
  bad.blocks_per_sm = -1;
  CHECK_THROWS_AS(plan_decode_linear(ctx(), prune_magnitude(synthetic_weights(4, 4, 1), 4, 4, 0.5), bad), UsageError);
  bad.blocks_per_sm = 65;
  CHECK_THROWS_AS(plan_decode_linear(ctx(), prune_magnitude(synthetic_weights(4, 4, 1), 4, 4, 0.5), bad), UsageError);
}

// Ring plans of one dtype share a kernel, and its dynamic shared-memory limit is the kernel's: a
// plan built later with a smaller list (fewer columns a block) must not lower the limit under an
// earlier plan's launches (the Llama MLP's gate|up plan failed to launch once down's plan existed).
TEST_CASE("DecodeRingPlansSharingAKernelEachLaunchWithTheirOwnSharedMemory") {
  Stream s(ctx());
  std::vector<DecodeLinearPlan> plans;
  std::vector<CsrMatrix<float>> ws;
  const std::vector<std::pair<int32_t, int32_t>> shapes{{2048, 4096}, {1024, 512}, {64, 64}};
  for (auto [rows, cols] : shapes) {
    ws.push_back(prune_magnitude(synthetic_weights(rows, cols, 81), rows, cols, 0.5));
    DecodeLinearOptions o;
    o.dtype = DecodeDtype::F32;
    o.mapping = DecodeMapping::Ring;
    o.blocks_per_sm = 1;  // f32 segments of 1024 rows: the first plan needs over 48 KB
    plans.push_back(plan_decode_linear(ctx(), ws.back(), o));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto [rows, cols] = shapes[i];
    CAPTURE(rows);
    CAPTURE(cols);
    const std::vector<float> x = synthetic_weights(1, cols, 82);
    DeviceBuffer<float> xd{std::span<const float>(x)}, y{static_cast<size_t>(rows)};
    plans[i].run(xd.ptr(), y.ptr(), s.handle());
    s.synchronize();
    CHECK(masked_rel_err(ws[i], x, 0.0f, y.download(), DecodeDtype::F32) <= 1e-5);
  }
}

// The 7-8B shapes (Llama-3.1-8B's MLP and k/v, Qwen2.5-7B's down) in f16 with Wanda-like 50% rows,
// at the bench's activation densities: y against the CPU on the same rounded inputs.
TEST_CASE("DecodeLinearMatchesReferenceOn8bShapes") {
  Stream s(ctx());
  dbs_test::Shard shard;  // a shape a shard under a sanitizer (hardening_run.sh SAN_SHARDS)
  for (auto [rows, cols] : {std::pair{14336, 4096}, {4096, 14336}, {1024, 4096}, {3584, 18944}}) {
    if (!shard.next()) continue;
    CAPTURE(rows);
    CAPTURE(cols);
    const CsrMatrix<float> pw = prune_magnitude(synthetic_weights(rows, cols, 71), rows, cols, 0.5);
    std::vector<float> x = synthetic_weights(1, cols, 72);
    for (auto& v : x) v = half_to_float(float_to_half(v));
    for (DecodeMapping mapping : {DecodeMapping::Auto, DecodeMapping::Ring, DecodeMapping::DenseColumns}) {
      CAPTURE(to_string(mapping));
      DecodeLinearOptions o;
      o.dtype = DecodeDtype::F16;
      o.mapping = mapping;
      DecodeLinearPlan plan = plan_decode_linear(ctx(), pw, o);
      CAPTURE(plan.explain());
      // What a bitmap plan holds: the kept fp16 values, a bit per weight of 1024-row strips (the last
      // one whole), an offset per strip of a column; no word offsets. Llama's shapes: 0.5645x dense
      // fp16. A dense plan (auto with every activation kept takes one): W whole, columns padded to 512 rows.
      const int64_t strips = (rows + 1023) / 1024;
      if (plan.mapping() == DecodeMapping::Ring) {
        CHECK(plan.weight_bytes() == pw.nnz() * 2 + int64_t{cols} * strips * (32 * 4 + 4) + 4);
        if (rows % 1024 == 0) CHECK(plan.weight_bytes() <= static_cast<int64_t>(0.565 * 2.0 * rows * cols));
      } else {
        CHECK(plan.weight_bytes() == int64_t{2} * ((rows + 511) / 512 * 512) * cols);
      }
      const auto xh = floats_to_half(x);
      DeviceBuffer<uint16_t> xd{std::span<const uint16_t>(xh)}, yd{static_cast<size_t>(rows)};
      for (double d : {1.0, 0.5, 0.3, 0.1}) {
        CAPTURE(d);
        const float tau = d >= 1.0 ? 0.0f : topk_threshold(x, d);
        plan.set_tau(tau);
        plan.run(xd.ptr(), yd.ptr(), s.handle());
        s.synchronize();
        const auto got = half_to_floats(yd.download());
        const double worst = masked_rel_err(pw, x, tau, got, DecodeDtype::F16);
        CHECK(worst <= 1e-3);
      }
    }
  }
}

// The dense path (tensor-core mma on W held dense) against the CPU on the same rounded inputs, x
// thresholded as in the sparse mappings: odd rows (tiles of 16 cut), columns a multiple of 8 but
// not of 32, one block a tile and split columns (tickets), f16 and bf16; and its limits.
TEST_CASE("DecodeLinearDenseMatchesReference") {
  Stream s(ctx());
  dbs_test::Shard shard;  // a (shape, type, per_sm) a shard under a sanitizer (hardening_run.sh SAN_SHARDS)
  for (auto [rows, cols] : {std::pair{1, 8}, {33, 1032}, {1000, 4096}, {4096, 1024}, {3000, 14336}})
    for (DecodeDtype dt : {DecodeDtype::F16, DecodeDtype::BF16})
      for (int per_sm : {0, 1, 16}) {
        if (!shard.next()) continue;
        CAPTURE(rows);
        CAPTURE(cols);
        CAPTURE(to_string(dt));
        CAPTURE(per_sm);
        const CsrMatrix<float> pw = prune_magnitude(synthetic_weights(rows, cols, 91), rows, cols, 0.5);
        std::vector<float> x = synthetic_weights(1, cols, 92);
        for (auto& v : x)
          v = dt == DecodeDtype::F16 ? half_to_float(float_to_half(v)) : bf16_to_float(float_to_bf16(v));
        DecodeLinearOptions o;
        o.dtype = dt;
        o.mapping = DecodeMapping::Dense;
        o.blocks_per_sm = per_sm;
        DecodeLinearPlan plan = plan_decode_linear(ctx(), pw, o);
        CAPTURE(plan.explain());
        CHECK(plan.weight_bytes() == int64_t{2} * rows * cols);
        const auto xh = dt == DecodeDtype::F16 ? floats_to_half(x) : floats_to_bf16(x);
        DeviceBuffer<uint16_t> xd{std::span<const uint16_t>(xh)}, yd{static_cast<size_t>(rows)};
        for (double d : {1.0, 0.5}) {
          CAPTURE(d);
          const float tau = d >= 1.0 ? 0.0f : topk_threshold(x, d);
          plan.set_tau(tau);
          plan.run(xd.ptr(), yd.ptr(), s.handle());  // twice: the split path resets its sums itself
          plan.run(xd.ptr(), yd.ptr(), s.handle());
          s.synchronize();
          const auto h = yd.download();
          const auto got = dt == DecodeDtype::F16 ? half_to_floats(h) : bf16_to_floats(h);
          CHECK(masked_rel_err(pw, x, tau, got, dt) <= (dt == DecodeDtype::F16 ? 1e-3 : 8e-3));
        }
        // A clone holds its own copy of the dense weights and computes the same product.
        DecodeLinearPlan copy = plan.clone();
        CHECK(copy.weight_bytes() == plan.weight_bytes());
        copy.run(xd.ptr(), yd.ptr(), s.handle());
        s.synchronize();
        const auto h = yd.download();
        CHECK(masked_rel_err(pw, x, plan.tau(), dt == DecodeDtype::F16 ? half_to_floats(h) : bf16_to_floats(h), dt) <=
              (dt == DecodeDtype::F16 ? 1e-3 : 8e-3));
      }
  const CsrMatrix<float> small = prune_magnitude(synthetic_weights(16, 12, 1), 16, 12, 0.5);
  DecodeLinearOptions o;
  o.mapping = DecodeMapping::Dense;
  CHECK_THROWS_AS(plan_decode_linear(ctx(), small, o), UsageError);  // 12 columns: not a multiple of 8
  o.dtype = DecodeDtype::F32;
  CHECK_THROWS_AS(plan_decode_linear(ctx(), prune_magnitude(synthetic_weights(16, 16, 1), 16, 16, 0.5), o), UsageError);
}

// The tile bitmap path (tensor-core mma over 16-row x 256-column chunks): shapes with partial tiles
// and chunks, f16 and bf16, its own splits and forced ones, all activations and half of them (x
// thresholded inside the kernel), densities of W where chunks run from empty to full, and a clone.
TEST_CASE("DecodeLinearTilesMatchesReference") {
  Stream s(ctx());
  dbs_test::Shard shard;  // a (shape, type, per_sm) a shard under a sanitizer (hardening_run.sh SAN_SHARDS)
  for (auto [rows, cols, keep] : {std::tuple{1, 8, 0.5},
                                  {17, 264, 0.5},
                                  {33, 1032, 0.9},
                                  {1000, 4096, 0.5},
                                  {4096, 1024, 0.1},
                                  {3000, 14336, 0.5},
                                  {64, 512, 1.0}})
    for (DecodeDtype dt : {DecodeDtype::F16, DecodeDtype::BF16})
      for (int per_sm : {0, 1, 16}) {
        if (!shard.next()) continue;
        CAPTURE(rows);
        CAPTURE(cols);
        CAPTURE(keep);
        CAPTURE(to_string(dt));
        CAPTURE(per_sm);
        const CsrMatrix<float> pw = prune_magnitude(synthetic_weights(rows, cols, 93), rows, cols, 1.0 - keep);
        std::vector<float> x = synthetic_weights(1, cols, 94);
        for (auto& v : x)
          v = dt == DecodeDtype::F16 ? half_to_float(float_to_half(v)) : bf16_to_float(float_to_bf16(v));
        DecodeLinearOptions o;
        o.dtype = dt;
        o.mapping = DecodeMapping::Tiles;
        o.blocks_per_sm = per_sm;
        // One block an SM asked: the 4-warp, 3-stage variant; 16: a warp per tile (its splits past
        // one wherever the tiles are fewer than the warps); otherwise the default 8 x 2.
        o.tiles_warps = per_sm == 1 ? 4 : 0;
        o.tiles_stages = per_sm == 1 ? 3 : 0;
        o.tiles_per_warp = per_sm == 16;
        DecodeLinearPlan plan = plan_decode_linear(ctx(), pw, o);
        CAPTURE(plan.explain());
        CHECK(plan.mapping() == DecodeMapping::Tiles);
        // 1 bit a weight slot of whole tiles and chunks, 4 bytes a chunk, and the kept values.
        const int64_t chunks = int64_t{(rows + 15) / 16} * ((cols + 255) / 256);
        CHECK(plan.weight_bytes() == chunks * 516 + 4 + pw.nnz() * 2);
        const auto xh = dt == DecodeDtype::F16 ? floats_to_half(x) : floats_to_bf16(x);
        DeviceBuffer<uint16_t> xd{std::span<const uint16_t>(xh)}, yd{static_cast<size_t>(rows)};
        for (double d : {1.0, 0.5}) {
          CAPTURE(d);
          const float tau = d >= 1.0 ? 0.0f : topk_threshold(x, d);
          plan.set_tau(tau);
          plan.run(xd.ptr(), yd.ptr(), s.handle());  // twice: the split path resets its sums itself
          plan.run(xd.ptr(), yd.ptr(), s.handle());
          s.synchronize();
          const auto h = yd.download();
          const auto got = dt == DecodeDtype::F16 ? half_to_floats(h) : bf16_to_floats(h);
          CHECK(masked_rel_err(pw, x, tau, got, dt) <= (dt == DecodeDtype::F16 ? 1e-3 : 8e-3));
        }
        DecodeLinearPlan copy = plan.clone();
        copy.run(xd.ptr(), yd.ptr(), s.handle());
        s.synchronize();
        const auto h = yd.download();
        CHECK(masked_rel_err(pw, x, plan.tau(), dt == DecodeDtype::F16 ? half_to_floats(h) : bf16_to_floats(h), dt) <=
              (dt == DecodeDtype::F16 ? 1e-3 : 8e-3));
      }
  DecodeLinearOptions o;
  o.mapping = DecodeMapping::Tiles;
  CHECK_THROWS_AS(plan_decode_linear(ctx(), prune_magnitude(synthetic_weights(16, 12, 1), 16, 12, 0.5), o),
                  UsageError);  // 12 columns: not a multiple of 8
  o.dtype = DecodeDtype::F32;
  CHECK_THROWS_AS(plan_decode_linear(ctx(), prune_magnitude(synthetic_weights(16, 16, 1), 16, 16, 0.5), o), UsageError);
}

// Several rows of x at one step (run_batch): the tiles path reads W once for up to 8 rows a launch
// (11 rows: two launches), with its own splits and forced ones, and at half the activations; a ring
// plan launches once a row; every row of y equals its own product.
TEST_CASE("DecodeLinearBatchMatchesReferenceRowByRow") {
  Stream s(ctx());
  for (auto [rows, cols] : {std::pair{17, 264}, {1000, 4096}, {4096, 1024}})
    for (auto [mapping, per_sm] : {std::pair{DecodeMapping::Tiles, 0},
                                   {DecodeMapping::Tiles, 16},
                                   {DecodeMapping::Tiles, 17},
                                   {DecodeMapping::Ring, 0}})
      for (int batch : {2, 8, 11}) {
        CAPTURE(rows);
        CAPTURE(cols);
        CAPTURE(to_string(mapping));
        CAPTURE(per_sm);
        CAPTURE(batch);
        const CsrMatrix<float> pw = prune_magnitude(synthetic_weights(rows, cols, 95), rows, cols, 0.5);
        std::vector<float> x = synthetic_weights(batch, cols, 96);
        for (auto& v : x) v = half_to_float(float_to_half(v));
        DecodeLinearOptions o;
        o.mapping = mapping;
        o.blocks_per_sm = std::min(per_sm, 16);
        o.tiles_per_warp = per_sm == 17;  // a warp per tile, its splits past one
        DecodeLinearPlan plan = plan_decode_linear(ctx(), pw, o);
        CAPTURE(plan.explain());
        DeviceBuffer<uint16_t> xd{std::span<const uint16_t>(floats_to_half(x))};
        DeviceBuffer<uint16_t> yd{static_cast<size_t>(rows) * batch};
        for (double d : {1.0, 0.5}) {
          CAPTURE(d);
          const std::vector<float> x0(x.begin(), x.begin() + cols);
          const float tau = d >= 1.0 ? 0.0f : topk_threshold(x0, d);
          plan.set_tau(tau);
          plan.run_batch(xd.ptr(), yd.ptr(), batch, s.handle());  // twice: the split path resets its sums
          plan.run_batch(xd.ptr(), yd.ptr(), batch, s.handle());
          s.synchronize();
          const std::vector<float> got = half_to_floats(yd.download());
          for (int b = 0; b < batch; ++b) {
            CAPTURE(b);
            const std::vector<float> xb(x.begin() + int64_t{b} * cols, x.begin() + int64_t{b + 1} * cols);
            const std::vector<float> yb(got.begin() + int64_t{b} * rows, got.begin() + int64_t{b + 1} * rows);
            CHECK(masked_rel_err(pw, xb, tau, yb, DecodeDtype::F16) <= 1e-3);
          }
        }
      }
  DecodeLinearOptions o;
  o.mapping = DecodeMapping::Tiles;
  DecodeLinearPlan plan = plan_decode_linear(ctx(), prune_magnitude(synthetic_weights(16, 16, 1), 16, 16, 0.5), o);
  DeviceBuffer<uint16_t> b(64);
  CHECK_THROWS_AS(plan.run_batch(b.ptr(), b.ptr(), 0, nullptr), UsageError);
}

// A layer `dbsparse prune` saved, read back and planned without pruning or converting: the same
// weight bytes and y as the plan from the pruned CSR (same values, same kernel), in f16 and bf16,
// on every mapping; a dtype that does not match the file's is refused.
TEST_CASE("DecodeLinearFromCompactLayerEqualsThePlanFromCsr") {
  Stream s(ctx());
  const std::string path = (dbs_test::temp_dir("compact-gpu") / "w.safetensors").string();
  const int32_t rows = 2100, cols = 900;
  const CsrMatrix<float> pw = prune_magnitude(synthetic_weights(rows, cols, 81), rows, cols, 0.5);
  std::vector<float> x = synthetic_weights(1, cols, 82);
  for (DecodeDtype dt : {DecodeDtype::F16, DecodeDtype::BF16}) {
    CAPTURE(to_string(dt));
    write_compact_weights(path, {make_compact_layer("w", pw, dt)});
    const CompactLayer layer = read_compact_weights(path).at(0);
    const auto xh = dt == DecodeDtype::F16 ? floats_to_half(x) : floats_to_bf16(x);
    DeviceBuffer<uint16_t> xd{std::span<const uint16_t>(xh)}, ya{static_cast<size_t>(rows)},
        yb{static_cast<size_t>(rows)};
    for (DecodeMapping mapping :
         {DecodeMapping::Ring, DecodeMapping::Columns, DecodeMapping::RowBlocks, DecodeMapping::DenseColumns}) {
      CAPTURE(to_string(mapping));
      DecodeLinearOptions o;
      o.dtype = dt;
      o.mapping = mapping;
      o.tau = topk_threshold(x, 0.5);
      DecodeLinearPlan from_csr = plan_decode_linear(ctx(), pw, o), from_file = plan_decode_linear(ctx(), layer, o);
      CHECK(from_file.weight_bytes() == from_csr.weight_bytes());
      from_csr.run(xd.ptr(), ya.ptr(), s.handle());
      from_file.run(xd.ptr(), yb.ptr(), s.handle());
      s.synchronize();
      // Sums cross blocks by atomics in an order that varies: equal to fp32 rounding, not bitwise.
      const auto a = dt == DecodeDtype::F16 ? half_to_floats(ya.download()) : bf16_to_floats(ya.download());
      const auto b = dt == DecodeDtype::F16 ? half_to_floats(yb.download()) : bf16_to_floats(yb.download());
      for (int32_t i = 0; i < rows; ++i)
        CHECK(std::fabs(a[static_cast<size_t>(i)] - b[static_cast<size_t>(i)]) <=
              8e-3f * (1e-3f + std::fabs(a[static_cast<size_t>(i)])));
    }
    DecodeLinearOptions wrong;
    wrong.dtype = dt == DecodeDtype::F16 ? DecodeDtype::BF16 : DecodeDtype::F16;
    CHECK_THROWS_AS(plan_decode_linear(ctx(), layer, wrong), UsageError);
  }
}

// One entry point for both paths: plan_sparse_linear with the column bitmap layout and dtype f16
// computes what plan_decode_linear computes, and refuses what it cannot do.
TEST_CASE("SparseLinearColumnBitmapInF16MatchesTheDecodingPlan") {
  Stream s(ctx());
  const int32_t rows = 700, cols = 300;
  const CsrMatrix<float> pw = prune_magnitude(synthetic_weights(rows, cols, 51), rows, cols, 0.5);
  std::vector<float> x = synthetic_weights(1, cols, 52);
  for (auto& v : x) v = half_to_float(float_to_half(v));
  const float tau = topk_threshold(x, 0.1);
  SparseLinearOptions o;
  o.layout = SparseLinearLayout::ColumnBitmap;
  o.dtype = DecodeDtype::F16;
  o.tau = tau;
  SparseLinearPlan<float> plan = plan_sparse_linear(ctx(), pw, o);
  DecodeLinearOptions d;
  d.tau = tau;
  DecodeLinearPlan direct = plan_decode_linear(ctx(), pw, d);
  const auto xh = floats_to_half(x);
  DeviceBuffer<uint16_t> xd{std::span<const uint16_t>(xh)}, y1{static_cast<size_t>(rows)},
      y2{static_cast<size_t>(rows)};
  plan.run(xd.ptr(), y1.ptr(), s.handle());
  direct.run(xd.ptr(), y2.ptr(), s.handle());
  s.synchronize();
  const auto a = half_to_floats(y1.download()), b = half_to_floats(y2.download());
  // Same kernel, same inputs; the block sums meet in a different order, so allow fp16 rounding.
  for (int32_t i = 0; i < rows; ++i)
    CHECK(std::fabs(a[static_cast<size_t>(i)] - b[static_cast<size_t>(i)]) <=
          1e-3f * (1.0f + std::fabs(b[static_cast<size_t>(i)])));
  DeviceBuffer<float> xf{static_cast<size_t>(cols)}, yf{static_cast<size_t>(rows)};
  CHECK_THROWS_AS(plan.run(xf, yf, s), UsageError);
  SparseLinearOptions bad;
  bad.dtype = DecodeDtype::BF16;  // with the SpMSpV layout
  CHECK_THROWS_AS(plan_sparse_linear(ctx(), pw, bad), UsageError);
}

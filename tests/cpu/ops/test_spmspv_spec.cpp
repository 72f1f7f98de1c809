// The SpMSpV plan's host spec (runtime/spmspv/spmspv_spec.hpp) for small matrices whose blocks,
// segments, push task capacities and thresholds are worked out by hand below, not read back from
// the code: each case's comment gives the arithmetic.
#include <doctest/doctest.h>

#include <functional>

#include "dbsparse/tuning_db.hpp"
#include "runtime/spmspv/spmspv_spec.hpp"

using namespace dbsparse;
using detail::spmspv_spec;
using detail::SpmspvDeviceFacts;

namespace {

// rows x cols with an entry of value 1 wherever has(i, j), row by row.
template <class T>
CsrMatrix<T> pattern(int32_t rows, int32_t cols, const std::function<bool(int32_t, int32_t)>& has) {
  CsrMatrix<T> a;
  a.rows = rows;
  a.cols = cols;
  for (int32_t i = 0; i < rows; ++i) {
    for (int32_t j = 0; j < cols; ++j)
      if (has(i, j)) {
        a.col_idx.push_back(j);
        a.values.push_back(T(1));
      }
    a.row_ptr.push_back(static_cast<int32_t>(a.col_idx.size()));
  }
  return a;
}

// 32 x 32, one block of each type when no block goes to the residual (th0 32, th1 128, th2 2):
//   (0,0) rows 0-15 x cols 0-15, all 256: Dense (256 > 128).
//   (0,1) rows 0-1 x cols 16-31 (32) and row 2 x cols 16-19 (4): 36. Row counts 16, 16, 4; column
//         counts 3 (cols 16-19) and 2; mean 36/16 = 2.25; skew_r 16/2.25 = 7.1, skew_c 3/2.25 =
//         1.33; 7.1 / 1.33 = 5.3 > 2: ForceCsc.
//   (1,0) rows 16-31 x cols 0-1 (32) and rows 16-23 x col 2 (8): 40. Row counts 3 and 2, column
//         counts 16, 16, 8; skew_r 3/2.5 = 1.2, skew_c 16/2.5 = 6.4; 0.19 <= 2: ForceCsr.
//   (1,1) (16,16), (20,25), (31,31): 3 < 32: Coo.
bool four_types(int32_t i, int32_t j) {
  if (i < 16 && j < 16) return true;
  if (i < 2 && j >= 16) return true;
  if (i == 2 && j >= 16 && j < 20) return true;
  if (i >= 16 && j < 2) return true;
  if (i >= 16 && i < 24 && j == 2) return true;
  return (i == 16 && j == 16) || (i == 20 && j == 25) || (i == 31 && j == 31);
}

SpmspvConfig blocks_kept() {
  SpmspvConfig c;
  c.residual_below = 0;  // every block stays a block
  return c;
}

}  // namespace

TEST_CASE("spmspv spec: one block of each type, no residual") {
  const auto a = pattern<float>(32, 32, four_types);
  REQUIRE(a.nnz() == 256 + 36 + 40 + 3);
  const auto spec = spmspv_spec(a, blocks_kept(), SpmspvDirection::Auto, Semiring::PlusTimes, {132, 9});
  const auto& s = spec.shape;
  CHECK(s.rows == 32);
  CHECK(s.cols == 32);
  CHECK(s.nnz == 335);
  CHECK(s.block_rows == 2);
  CHECK(s.block_cols == 2);
  CHECK(s.blocks == 4);
  CHECK(s.block_nnz == 335);
  CHECK(s.residual_nnz == 0);
  const int64_t by_type[4] = {1, 1, 1, 1};  // coo, dense, csr, csc
  for (int t = 0; t < 4; ++t) CHECK(s.stats.storage.blocks_by_type[t] == by_type[t]);
  // Pull segments by weight (Dense 4, Csc and Csr 2, Coo 1): row block 0 weighs 6, row block 1
  // weighs 3, both under 16: one segment each, alone on its row block. Blocks are numbered in
  // block-CSR order: (0,0) 0, (0,1) 1, (1,0) 2, (1,1) 3.
  CHECK(s.block_segments == 2);
  CHECK(s.stats.pull_segments == 2);
  REQUIRE(spec.segments.size() == 2);
  CHECK(spec.segments[0].row_block == 0);
  CHECK(spec.segments[0].first == 0);
  CHECK(spec.segments[0].end == 2);
  CHECK(spec.segments[0].alone == 1);
  CHECK(spec.segments[1].row_block == 1);
  CHECK(spec.segments[1].first == 2);
  CHECK(spec.segments[1].end == 4);
  CHECK(spec.segments[1].alone == 1);
  // Push: two blocks per column block, one task each (8 blocks a task); no residual.
  CHECK(s.block_task_capacity == 2);
  CHECK(s.residual_task_capacity == 0);
  CHECK(s.small_task_capacity == 0);
  CHECK(s.stats.push_tasks_max == 2);
  // Column block 0 holds 256 + 40 entries, column block 1 36 + 3.
  CHECK(s.max_colblock_entries == 296);
  // th3 0.4 over 335 / 4 = 83.75 nonzeros a block, as the kernel's float.
  CHECK(s.stats.xb_threshold == static_cast<double>(static_cast<float>(0.4 / 83.75)));
  CHECK(s.stats.residual_push_below == 2.0);  // no row view: the residual never pulls
  CHECK(s.key.to_string() == "spmspv.auto.f32.plus_times.bs16.t=coo+dense+csr+csc");
  CHECK(s.sm_count == 132);
  CHECK(s.pdl);             // config pdl 1 on sm_90
  CHECK(s.prep_grid == 1);  // 2 x blocks: one thread block of 128 threads
  CHECK(s.stats.device_bytes == 0);
}

TEST_CASE("spmspv spec: the config's direction, scaling, COO walk and residual pull reach the spec") {
  const auto a = pattern<double>(32, 32, four_types);
  SpmspvConfig c = blocks_kept();
  c.th3 = 0.01;
  c.th3_scale = "none";
  c.pull_coo = "warp";
  c.residual_pull = "by_density";
  c.residual_push_below = 0.05;
  c.pdl = 1;
  const auto spec = spmspv_spec(a, c, SpmspvDirection::Push, Semiring::PlusTimes, {0, 8});
  const auto& s = spec.shape;
  CHECK(s.stats.xb_threshold == static_cast<double>(0.01f));
  CHECK(s.stats.residual_push_below == static_cast<double>(0.05f));
  CHECK(s.key.to_string() == "spmspv.push.f64.plus_times.bs16.t=coo+dense+csr+csc.coo=warp");
  CHECK(s.direction == SpmspvDirection::Push);
  CHECK(s.sm_count == 1);  // a device reporting no SMs is taken as one
  CHECK_FALSE(s.pdl);      // programmatic dependent launch needs sm_90
}

TEST_CASE("spmspv spec: the default config puts every entry in the residual") {
  // 40 x 40: column 0 in every row (40 entries, column block 0) and (0,16), (5,20), (39,31) in
  // column block 1; column block 2 (cols 32-39) empty. Under residual_below 257 no block stays.
  const auto a = pattern<float>(40, 40, [](int32_t i, int32_t j) {
    return j == 0 || (i == 0 && j == 16) || (i == 5 && j == 20) || (i == 39 && j == 31);
  });
  const auto spec = spmspv_spec(a, SpmspvConfig{}, SpmspvDirection::Auto, Semiring::PlusTimes, {132, 9});
  const auto& s = spec.shape;
  CHECK(s.block_rows == 3);
  CHECK(s.block_cols == 3);
  CHECK(s.blocks == 0);
  CHECK(s.block_nnz == 0);
  CHECK(s.residual_nnz == 43);
  // No blocks and no residual row view: no pull segments, and one placeholder of count 0.
  CHECK(s.block_segments == 0);
  CHECK(s.stats.pull_segments == 0);
  REQUIRE(spec.segments.size() == 1);
  CHECK(spec.segments[0].first == spec.segments[0].end);
  // Column block 0 has 40 > 32 residual entries: ceil(40 / 256) = 1 piece; column block 1 has 3:
  // one small task; column block 2 none.
  CHECK(s.block_task_capacity == 0);
  CHECK(s.residual_task_capacity == 1);
  CHECK(s.small_task_capacity == 1);
  CHECK(s.stats.push_tasks_max == 2);
  CHECK(s.max_colblock_entries == 40);
  CHECK(s.stats.xb_threshold == static_cast<double>(0.4f));  // no blocks: 1 nonzero a block
  CHECK(s.key.to_string() == "spmspv.auto.f32.plus_times.bs16.t=none");
}

TEST_CASE("spmspv spec: a row block heavier than one segment is cut, and the mask pass's grid") {
  // 16 x 80, all dense: five Dense blocks (weight 4 each) in one row block. The weight reaches 16
  // at the fourth block: segments [0, 4) and [4, 5), neither alone.
  const auto a = pattern<float>(16, 80, [](int32_t, int32_t) { return true; });
  const auto spec = spmspv_spec(a, blocks_kept(), SpmspvDirection::Auto, Semiring::PlusTimes, {132, 9});
  REQUIRE(spec.segments.size() == 2);
  CHECK(spec.segments[0].first == 0);
  CHECK(spec.segments[0].end == 4);
  CHECK(spec.segments[0].alone == 0);
  CHECK(spec.segments[1].first == 4);
  CHECK(spec.segments[1].end == 5);
  CHECK(spec.segments[1].alone == 0);
  CHECK(spec.shape.block_task_capacity == 5);
  CHECK(spec.shape.max_colblock_entries == 256);
  CHECK(spec.shape.key.to_string() == "spmspv.auto.f32.plus_times.bs16.t=dense");

  // 1 x 16000, no entries: 1000 x blocks need ceil(1000 / 128) = 8 thread blocks, at most four a
  // SM: 4 on one SM, 8 on 132.
  const auto wide = pattern<float>(1, 16000, [](int32_t, int32_t) { return false; });
  CHECK(spmspv_spec(wide, SpmspvConfig{}, SpmspvDirection::Auto, Semiring::PlusTimes, {1, 9}).shape.prep_grid == 4);
  CHECK(spmspv_spec(wide, SpmspvConfig{}, SpmspvDirection::Auto, Semiring::PlusTimes, {132, 9}).shape.prep_grid == 8);
}

TEST_CASE("spmspv compute grids") {
  // The full grid: the configured blocks a SM, capped by what fits, at least one.
  CHECK(detail::spmspv_full_compute_grid(0, 12, 132) == 12 * 132);
  CHECK(detail::spmspv_full_compute_grid(4, 12, 132) == 4 * 132);
  CHECK(detail::spmspv_full_compute_grid(4, 2, 132) == 2 * 132);
  CHECK(detail::spmspv_full_compute_grid(0, 0, 132) == 132);
  // By x's nonzeros: 1 a SM up to 128, 2 up to 1024, 4 up to 4096, then all that fit.
  CHECK(detail::spmspv_compute_grid_for(1, 12, 132) == 132);
  CHECK(detail::spmspv_compute_grid_for(128, 12, 132) == 132);
  CHECK(detail::spmspv_compute_grid_for(129, 12, 132) == 2 * 132);
  CHECK(detail::spmspv_compute_grid_for(1024, 12, 132) == 2 * 132);
  CHECK(detail::spmspv_compute_grid_for(4096, 12, 132) == 4 * 132);
  CHECK(detail::spmspv_compute_grid_for(4097, 12, 132) == 12 * 132);
  CHECK(detail::spmspv_compute_grid_for(2000, 3, 132) == 3 * 132);  // never more than fit
}

TEST_CASE("spmspv explain text from a spec") {
  const auto a = pattern<float>(32, 32, four_types);
  auto spec = spmspv_spec(a, blocks_kept(), SpmspvDirection::Auto, Semiring::PlusTimes, {132, 9});
  spec.shape.stats.device_bytes = 1234;
  Config config;
  config.source = ConfigSource::Default;
  KernelInfo kernel;
  kernel.key = spec.shape.key.to_string();
  const std::string text = detail::spmspv_explain(spec.shape, config, kernel);
  CHECK(text.starts_with(
      "spmspv plan (plus_times): 32 x 32, nnz 335, 4 blocks + 0 residual entries, 2 pull segments, up to 2 push "
      "tasks; push while xb < 0.004776\n  device bytes 1234 (format, segments, workspace)\n"));
  CHECK(text.find("kernel: spmspv.auto.f32.plus_times.bs16.t=coo+dense+csr+csc") != std::string::npos);
}

// The run-time hint from the last call's counts, against hand-worked thresholds: 100 x blocks of
// 1600 columns, push while fewer than 40 are non-empty; the residual pushes at any density
// without a row view (residual_push_below 2), below 800 nonzeros with one (0.5).
TEST_CASE("SpmspvDirectionHintFollowsTheDeviceRules") {
  using dbsparse::detail::SpmspvHint;
  dbsparse::detail::SpmspvShape s;
  s.cols = 1600;
  s.block_cols = 100;
  s.stats.xb_threshold = 0.4;
  s.stats.residual_push_below = 2.0;
  s.stats.pull_segments = s.block_segments = 10;  // no row view: the pull-only variant pushes it
  auto hint = [&](uint32_t nnz, uint32_t nonempty) {
    return dbsparse::detail::spmspv_direction_hint(s, nnz, nonempty);
  };
  CHECK(hint(100, 39) == SpmspvHint::Push);
  CHECK(hint(100, 40) == SpmspvHint::Pull);  // blocks pull, residual pushes: the pull-only variant's way
  CHECK(hint(1600, 100) == SpmspvHint::Pull);
  s.stats.residual_push_below = 0.5;
  s.stats.pull_segments = 12;                // a row view: the pull-only variant pulls the residual
  CHECK(hint(799, 50) == SpmspvHint::None);  // blocks pull, residual pushes: split
  CHECK(hint(800, 50) == SpmspvHint::Pull);
  CHECK(hint(799, 39) == SpmspvHint::Push);
  CHECK(hint(800, 39) == SpmspvHint::None);  // blocks push, residual pulls: split
}

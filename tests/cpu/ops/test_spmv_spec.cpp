// The SpMV plan's host stage (runtime/spmv/spmv_spec.hpp): bins folded from the classifier's
// counts, long rows in chunks, the launches and their grids, the column order and the explain
// lines, for small matrices whose values are worked out by hand below.
#include <doctest/doctest.h>

#include "dbsparse/error.hpp"
#include "runtime/spmv/spmv_spec.hpp"

using namespace dbsparse;
using codegen::ValueType;

namespace {

SpmvConfig config_of(const nlohmann::json& j) { return config_from_json<SpmvConfig>(j); }

// Ten rows: six of 3 entries (the scalar bin, <= 8 in f32), two of 20 (the 4-lane bin, <= 32), one
// of 300 (the block bin, <= 4096) and one of 5000 (a long row): 18 + 40 + 300 + 5000 = 5358 entries.
const SpmvShape kTen{10, 6000, 5358};
const std::vector<SpmvBinCount> kTenCounts{{6, 18}, {0, 0}, {2, 40}, {0, 0}, {0, 0}, {1, 300}, {1, 5000}};

}  // namespace

TEST_CASE("SpmvBinsFoldThinBinsUpwardAndListOnlyWhereSeveralBinsRun") {
  // fold_share 0: nothing folds; the bins' rows follow one another in the lists.
  const SpmvLayout unfolded =
      choose_spmv_layout(config_of({{"fold_share", 0.0}, {"scalar_min_rows", 0}}), 10, 5358, ValueType::F32);
  const SpmvBins b = fold_spmv_bins(unfolded, kTenCounts, 5358);
  CHECK(b.rows == std::vector<int64_t>{6, 0, 2, 0, 0, 1, 1});
  CHECK(b.off == std::vector<int64_t>{0, 6, 6, 8, 8, 8, 9});
  CHECK(b.max_len[0] == 8);
  CHECK(b.lists());
  // The default 2%: 107.16 entries. The scalar bin (18) folds into the 2-lane bin, which folds on
  // (18, 58, 58, 58 entries: each under 107) up to the block bin; the block bin never folds.
  const SpmvLayout folded = choose_spmv_layout(SpmvConfig{}, 10, 5358, ValueType::F32);
  const SpmvBins f = fold_spmv_bins(folded, kTenCounts, 5358);
  CHECK(f.rows == std::vector<int64_t>{0, 0, 0, 0, 0, 9, 1});
  CHECK(f.nnz == std::vector<int64_t>{0, 0, 0, 0, 0, 358, 5000});
  CHECK(f.max_len[0] == -1);  // the folded bins keep no rows: their bounds fall to the one below
  CHECK(f.max_len[4] == -1);
  CHECK(f.max_len[5] == 4096);
  CHECK(f.off == std::vector<int64_t>{0, 0, 0, 0, 0, 0, 9});
  // Four rows of 3: one bin, no lists.
  const SpmvBins one = fold_spmv_bins(folded, {{4, 12}, {}, {}, {}, {}, {}, {}}, 12);
  CHECK_FALSE(one.lists());
  CHECK(one.rows[0] == 4);
  CHECK_THROWS_AS(fold_spmv_bins(folded, {{4, 12}}, 12), UsageError);
}

TEST_CASE("SpmvLongRowsSplitIntoChunksAndAnEmptyRowKeepsOne") {
  // Row 1 is empty, row 2 has 5000 entries from offset 3: chunks of 2048, 2048 and 904.
  const SpmvLongRows l = split_spmv_long_rows({0, 3, 3, 5003}, {1, 2}, 2048);
  REQUIRE(l.chunks.size() == 4);
  CHECK(l.chunk_ptr == std::vector<int32_t>{0, 1, 4});
  CHECK(l.chunks[0].row == 1);
  CHECK(l.chunks[0].first == 3);
  CHECK(l.chunks[0].end == 3);
  CHECK(l.chunks[1].first == 3);
  CHECK(l.chunks[1].end == 2051);
  CHECK(l.chunks[3].first == 4099);
  CHECK(l.chunks[3].end == 5003);
  CHECK(l.chunks[3].slot == 1);
}

TEST_CASE("SpmvSpecOfOneLaunchClassifiedPlan") {
  const SpmvConfig cfg = config_of({{"fold_share", 0.0}, {"scalar_min_rows", 0}});
  const SpmvLayout layout = choose_spmv_layout(cfg, 10, 5358, ValueType::F32);
  // One long row of 5000 entries: 3 chunks.
  const SpmvSpec s = make_spmv_spec(cfg, kTen, layout, {}, fold_spmv_bins(layout, kTenCounts, 5358), 1, 3);
  REQUIRE(s.kernels.size() == 1);
  CHECK(s.kernels[0].to_string() == "spmv.classified.f32.b256.l2.l4.l8.l32");
  REQUIRE(s.launches.size() == 1);
  CHECK(s.launches[0].kind == SpmvLaunchKind::Classified);
  CHECK(std::string(s.launches[0].entry) == "classified");
  // Grid slots from the long-row bin down: 3 chunks, 1 block row, the 32- and 8-lane bins empty,
  // the 4-lane bin's 2 rows x 4 lanes in one 256-thread block, the 2-lane bin empty, the scalar
  // bin's 6 rows in one block: ends 3, 4, 4, 4, 5, 5, 6.
  CHECK(s.fused_blocks == 6);
  CHECK(s.launches[0].grid == 6);
  CHECK(s.launches[0].block == 256);
  const std::vector<int32_t> fused{0, 6, 6, 8, 8, 8, 9,   // list offsets, by bin
                                   6, 0, 2, 0, 0, 1, 3,   // rows by bin; the long-row bin: chunks
                                   3, 4, 4, 4, 5, 5, 6};  // grid ends, by slot
  CHECK(s.fused == fused);
  CHECK(explain_spmv_spec(s, {}) ==
        "  classified, 1 launch(es) per run:\n"
        "  bin 0 (rows of length <= 8): 6 rows, 18 nonzeros\n"
        "  bin 2 (rows of length <= 32): 2 rows, 40 nonzeros\n"
        "  bin 5 (rows of length <= 4096): 1 rows, 300 nonzeros\n"
        "  bin 6 (rows of length <= any): 1 rows, 5000 nonzeros, 3 chunks of <= 2048\n"
        "  -> one launch of spmv.classified.f32.b256.l2.l4.l8.l32 (6 thread blocks)\n");
}

TEST_CASE("SpmvSpecOfOneLaunchPerBin") {
  const SpmvConfig cfg = config_of({{"fold_share", 0.0}, {"fuse_bins", 0}});
  const SpmvLayout layout = choose_spmv_layout(cfg, 10, 5358, ValueType::F64);
  const SpmvSpec s = make_spmv_spec(cfg, kTen, layout, {}, fold_spmv_bins(layout, kTenCounts, 5358), 1, 3);
  // f64: 4 entries a lane, so these counts are taken as given (the spec does not re-bin rows).
  REQUIRE(s.launches.size() == 5);
  CHECK(s.kernels.size() == 4);  // scalar, 4 lanes, block, long rows (partial and finalize)
  CHECK(s.kernels[0].to_string() == "spmv.scalar.f64.b256");
  CHECK(s.kernels[1].to_string() == "spmv.vector.f64.b256.l4");
  CHECK(s.kernels[2].to_string() == "spmv.block.f64.b256");
  CHECK(s.kernels[3].to_string() == "spmv.longrow.f64.b256");
  const SpmvLaunchSpec& scalar = s.launches[0];
  CHECK(scalar.kind == SpmvLaunchKind::Rows);
  CHECK(scalar.grid == 1);
  CHECK(scalar.count == 6);
  CHECK(scalar.rows_from == SpmvRowSource::BinList);
  CHECK(scalar.list_off == 0);
  CHECK(s.launches[1].list_off == 6);
  CHECK(s.launches[1].count == 2);
  CHECK(s.launches[2].grid == 1);  // a block a row
  CHECK(s.launches[2].list_off == 8);
  CHECK(s.launches[3].kind == SpmvLaunchKind::LongPartial);
  CHECK(std::string(s.launches[3].entry) == "partial");
  CHECK(s.launches[3].grid == 3);
  CHECK(s.launches[4].kind == SpmvLaunchKind::LongFinalize);
  CHECK(std::string(s.launches[4].entry) == "finalize");
  CHECK(s.launches[4].kernel == 3);
  CHECK(s.launches[4].rows_from == SpmvRowSource::LongRows);
  CHECK(s.launches[4].count == 1);
  CHECK(s.fused.empty());
}

TEST_CASE("SpmvSpecOfARegularMatrixIsOneRowKernelWithoutLists") {
  const SpmvConfig cfg = config_of({{"scalar_min_rows", 0}});  // the scalar bound of a large matrix
  const SpmvShape a{4, 4, 12};
  const SpmvLayout layout = choose_spmv_layout(cfg, 4, 12, ValueType::F32);
  const SpmvSpec s = make_spmv_spec(cfg, a, layout, choose_spmv_order(cfg, a, {}),
                                    fold_spmv_bins(layout, {{4, 12}, {}, {}, {}, {}, {}, {}}, 12), 0, 0);
  REQUIRE(s.launches.size() == 1);
  CHECK(s.launches[0].rows_from == SpmvRowSource::None);
  CHECK(s.launches[0].grid == 1);
  CHECK(explain_spmv_spec(s, {}) ==
        "  reorder auto: 4 columns (degree from 262144), 3.0 entries a column (degree from 4): none\n"
        "  classified, 1 launch(es) per run:\n"
        "  bin 0 (rows of length <= 8): 4 rows, 12 nonzeros\n"
        "  -> bin 0: spmv.scalar.f32.b256\n");
}

TEST_CASE("SpmvSpecOfAnEmptyOrUnclassifiedPlan") {
  // 0 x 5: nothing launches, and the plan still reports the first bin's kernel.
  const SpmvLayout layout = choose_spmv_layout(SpmvConfig{}, 0, 0, ValueType::F32);
  const SpmvSpec empty = make_spmv_spec(SpmvConfig{}, {0, 5, 0}, layout, {}, empty_spmv_bins(layout), 0, 0);
  CHECK(empty.launches.empty());
  REQUIRE(empty.kernels.size() == 1);
  CHECK(empty.kernels[0].to_string() == "spmv.scalar.f32.b256");
  // vector, 2 lanes: 1000 rows x 2 lanes over 256 threads is 8 blocks.
  const SpmvConfig vec = config_of({{"strategy", "vector"}, {"lanes", 2}, {"window_max_len", 16}});
  const SpmvShape a{1000, 1000, 4000};
  const SpmvLayout one = choose_spmv_layout(vec, a.rows, a.nnz, ValueType::F32);
  const SpmvSpec s = make_spmv_spec(vec, a, one, choose_spmv_order(vec, a, {}), unclassified_spmv_bins(one, a), 0, 0);
  REQUIRE(s.launches.size() == 1);
  CHECK(s.launches[0].grid == 8);
  CHECK(s.launches[0].count == 1000);
  CHECK(explain_spmv_spec(s, {}) ==
        "  reorder auto: 1000 columns (degree from 262144), 4.0 entries a column (degree from 4): none\n"
        "  window_max_len 16 not applied: the strategy is not classified\n");
}

TEST_CASE("SpmvColumnOrderFollowsTheHubShare") {
  // 4 columns, 16 entries (4 a column: auto's feature is measured past reorder_min_cols 4).
  const SpmvConfig cfg =
      config_of({{"reorder_min_cols", 4}, {"reorder_hub_columns", 1}, {"reorder_min_hub_share", 0.5}});
  const SpmvShape a{8, 4, 16};
  CHECK(spmv_needs_column_counts(cfg, a));
  const SpmvOrderChoice hub = choose_spmv_order(cfg, a, {10, 2, 2, 2});  // the top column: 10/16
  CHECK(hub.feature);
  CHECK(hub.hub_share == doctest::Approx(0.625));
  CHECK(hub.by_degree);
  const SpmvOrderChoice flat = choose_spmv_order(cfg, a, {4, 4, 4, 4});  // 4/16 < 0.5
  CHECK(flat.feature);
  CHECK_FALSE(flat.by_degree);
  // 15 entries: under 4 a column, not measured.
  CHECK_FALSE(spmv_needs_column_counts(cfg, {8, 4, 15}));
  CHECK_FALSE(choose_spmv_order(cfg, {8, 4, 15}, {}).feature);
  // degree: always, and the plan gathers x first.
  const SpmvConfig degree = config_of({{"reorder", "degree"}});
  CHECK(spmv_needs_column_counts(degree, a));
  const SpmvOrderChoice d = choose_spmv_order(degree, a, {10, 2, 2, 2});
  CHECK(d.by_degree);
  CHECK_FALSE(d.automatic);
  const SpmvLayout layout = choose_spmv_layout(degree, 8, 16, ValueType::F32);
  const SpmvSpec s =
      make_spmv_spec(degree, a, layout, d, fold_spmv_bins(layout, {{8, 16}, {}, {}, {}, {}, {}, {}}, 16), 0, 0);
  REQUIRE(s.launches.size() == 2);
  CHECK(s.launches[0].kind == SpmvLaunchKind::Gather);
  CHECK(s.launches[0].grid == 1);
  CHECK(s.launches[0].count == 4);
  CHECK(s.kernels[0].to_string() == "spmv.gather.f32.b256");
  // 4 columns x (4 bytes of order + 2 x 4 of x): 48 bytes a call.
  CHECK(
      explain_spmv_spec(s, {0.0, 1.5})
          .rfind(
              "  columns in degree order (built in 1.5 ms on the host): x gathered into that order by "
              "spmv.gather.f32.b256 each call, 48 bytes read and written more a call; A, x and y in the user's order\n",
              0) == 0);
}

// The decoding plan's host stage (runtime/decode/decode_spec.hpp): how each mapping holds W, its
// splits for a given occupancy and SM count, its launch and its entry point, for layers whose
// values are worked out by hand below.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "codegen/keys/decode_key.hpp"
#include "dbsparse/error.hpp"
#include "runtime/decode/decode_spec.hpp"
#include "test_support.hpp"

using namespace dbsparse;

namespace {

// 4096 x 4096 in 4 strips, every (column, strip) segment of 10 values: 16384 segments, 163840
// values, 32 mask words a segment.
struct Layer {
  std::vector<int32_t> seg_ptr;
  DecodeShape shape;
  Layer() {
    for (int32_t s = 0; s <= 4096 * 4; ++s) seg_ptr.push_back(10 * s);
    shape = DecodeShape{4096, 4096, 4, 163840, size_t{16384} * 32, size_t{16384} * 32, seg_ptr};
  }
};

// The spec reads the device only for Auto's costs; these cases fix the mapping (or check what
// does not depend on the device).
const DeviceProfile kDevice = dbs_test::recorded_profile("h200");

DecodeLinearOptions asked(DecodeMapping m, int blocks_per_sm = 2) {
  DecodeLinearOptions o;
  o.mapping = m;
  o.blocks_per_sm = blocks_per_sm;
  return o;
}

}  // namespace

TEST_CASE("DecodeSpecOfTheRingOn132Sms") {
  const Layer l;
  DecodeSpec s = make_decode_spec(l.shape, asked(DecodeMapping::Lanes), kDevice);  // Lanes is the ring's old name
  CHECK(s.mapping == DecodeMapping::Ring);
  CHECK(std::string(s.entry) == "ring");
  CHECK(s.needs_occupancy);
  // A segment of 10 f16 values starting at 10 s spans 2 chunks of 16 bytes (8 values) wherever it
  // starts: 10 s mod 8 is 0, 2, 4 or 6, and 6 + 10 = 16 values.
  CHECK(s.stage_chunks == 2);
  // The probe: 1024 columns x 16 + 8 warps x 4 stages x (128 + 32) = 21504, under the sums' 32768.
  CHECK(s.probe_smem == 32768);
  // Masks 16384 x 32 x 4 + offsets 16385 x 4 + values 163840 x 2 (no word offsets on the ring).
  CHECK(s.weight_bytes == 2097152 + 65540 + 327680);
  CHECK(s.row_ranges == 4);
  // 2 blocks an SM on 132 SMs over 4 strips: 66 wanted, at most 4096 / 64 = 64 splits, at least 4.
  set_decode_splits(s, 2, 132);
  CHECK(s.splits == 64);
  CHECK(s.smem == 32768);  // 64 columns x 16 + 5120 = 6144, under the sums'
  const DecodeLaunchShape launch = decode_launch_shape(s);
  CHECK(launch.grid == 256);
  CHECK(launch.block == 256);
  // 8 SMs: 16 / 4 strips = 4 splits, 1024 columns a block: its list is 16 KB + 5 KB.
  set_decode_splits(s, 2, 8);
  CHECK(s.splits == 4);
  CHECK(s.smem == 32768);
  set_decode_splits(s, 1, 2);  // wants fewer than the 4 a 1024-column list allows: 4
  CHECK(s.splits == 4);
  CHECK(explain_decode_spec(s, KernelInfo{"decode_linear.colbitmap.f16.w8x8", "compiled"}) ==
        "decode linear 4096x4096 f16: column bitmap, ring: 4 strips x 4 splits, weights 2490372 bytes (0.074x dense "
        "fp16), x kept where |x| >= 0; mapping lanes as asked; kernel decode_linear.colbitmap.f16.w8x8 (compiled)\n");
}

TEST_CASE("DecodeSpecOfTheDenseLayouts") {
  const Layer l;
  // Dense columns in f16: slabs of 32 lanes x 8 values x 2 chunks = 512 rows; 1000 rows pad to 1024.
  DecodeShape short_rows = l.shape;
  short_rows.rows = 1000;
  DecodeSpec c = make_decode_spec(short_rows, asked(DecodeMapping::DenseColumns), kDevice);
  CHECK(std::string(c.entry) == "dense_columns");
  CHECK(c.dense_layout);
  CHECK(c.rows_pad == 1024);
  CHECK(c.row_ranges == 2);
  CHECK(c.weight_bytes == int64_t{1024} * 4096 * 2);
  // 264 places over 2 slabs: 132 wanted, at most 4096 / 32 = 128.
  set_decode_splits(c, 2, 132);
  CHECK(c.splits == 128);
  CHECK(decode_launch_shape(c).grid == 256);
  // Dense (mma): 256 tiles of 16 rows; ceil(264 / 256) = 2 splits, at most 128 steps / 32 = 4.
  DecodeSpec d = make_decode_spec(l.shape, asked(DecodeMapping::Dense), kDevice);
  CHECK(std::string(d.entry) == "dense");
  CHECK(d.row_ranges == 256);
  CHECK(d.weight_bytes == int64_t{4096} * 4096 * 2);
  set_decode_splits(d, 2, 132);
  CHECK(d.splits == 2);
  CHECK(decode_launch_shape(d).grid == 512);
  set_decode_splits(d, 64, 132);  // 33 wanted, 4 at most
  CHECK(d.splits == 4);
  // A layer of no rows: no tiles, so any split count launches nothing; it must not divide by zero.
  DecodeShape no_rows = l.shape;
  no_rows.rows = 0;
  DecodeSpec z = make_decode_spec(no_rows, asked(DecodeMapping::Dense), kDevice);
  set_decode_splits(z, 2, 132);
  CHECK(z.splits >= 1);
  CHECK(decode_launch_shape(z).grid == 0);
  // f32 values, or columns not a multiple of 8, have no dense (mma) path.
  DecodeLinearOptions f32 = asked(DecodeMapping::Dense);
  f32.dtype = DecodeDtype::F32;
  CHECK_THROWS_AS(make_decode_spec(l.shape, f32, kDevice), UsageError);
  DecodeShape odd = l.shape;
  odd.cols = 4092;
  CHECK_THROWS_AS(make_decode_spec(odd, asked(DecodeMapping::Dense), kDevice), UsageError);
}

TEST_CASE("DecodeSpecOfTheColumnsAndRowBlocksMappings") {
  const Layer l;
  DecodeLinearOptions o = asked(DecodeMapping::Columns, 0);
  o.keep = 0.1;  // ceil(409.6) = 410 activations a call
  const DecodeSpec c = make_decode_spec(l.shape, o, kDevice);
  CHECK_FALSE(c.needs_occupancy);
  CHECK(c.keep_k == 410);
  CHECK(c.act_density == 0.1);
  CHECK(c.splits == 64);  // 4096 columns in windows of 8 warps x 8
  CHECK(decode_launch_shape(c).grid == 4 * 64);
  CHECK(std::string(c.entry) == "columns");
  DecodeLinearOptions r = asked(DecodeMapping::RowBlocks, 0);
  r.row_block_words = 2;
  const DecodeSpec b = make_decode_spec(l.shape, r, kDevice);
  CHECK(std::string(b.entry) == "row_blocks_2");
  CHECK(b.word_offsets);  // the only mapping that reads them: 2 bytes a mask word more
  CHECK(b.weight_bytes == 2097152 + 65540 + 327680 + 1048576);
  CHECK(decode_launch_shape(b).grid == 4096 / 64);
  r.row_block_words = 3;
  CHECK_THROWS_AS(make_decode_spec(l.shape, r, kDevice), UsageError);
  // Auto without the dense layouts keeps the bitmap: the ring.
  DecodeLinearOptions a;
  a.allow_dense = false;
  CHECK(make_decode_spec(l.shape, a, kDevice).mapping == DecodeMapping::Ring);
  CHECK(make_decode_spec(l.shape, a, kDevice).act_density == 1.0);  // tau 0: every activation kept
  a.tau = 0.5f;
  CHECK(make_decode_spec(l.shape, a, kDevice).act_density == 0.5);
}

TEST_CASE("DecodeKeyDeclaresEveryEntryPointItsPlansFetch") {
  for (const auto& key : codegen::decode_search_space()) {
    CAPTURE(key.to_string());
    const auto ks = codegen::make_source(key);
    REQUIRE(ks.entry_names.size() == ks.name_expressions.size());
    for (const char* role :
         {"columns", "topk", "row_blocks_1", "row_blocks_2", "row_blocks_4", "ring", "dense_columns"})
      CHECK(std::find(ks.entry_names.begin(), ks.entry_names.end(), role) != ks.entry_names.end());
    const bool dense = std::find(ks.entry_names.begin(), ks.entry_names.end(), "dense") != ks.entry_names.end();
    CHECK(dense == (key.dtype != codegen::DecodeDtype::F32));
  }
  CHECK(std::string(codegen::decode_row_blocks_entry(4)) == "row_blocks_4");
  CHECK_THROWS_AS(codegen::decode_row_blocks_entry(3), UsageError);
}

TEST_CASE("DecodeSpecOfTheTilesMapping") {
  const Layer l;
  DecodeSpec s = make_decode_spec(l.shape, asked(DecodeMapping::Tiles), kDevice);
  CHECK(std::string(s.entry) == "tiles_w8s2");  // the default variant: 8 warps x 2 stages
  CHECK(s.needs_occupancy);
  CHECK_FALSE(s.dense_layout);
  // 256 tiles x 16 chunks, 512 bytes of masks and a 4-byte offset each, one end offset, the values.
  CHECK(s.weight_bytes == int64_t{256} * 16 * 516 + 4 + 163840 * 2);
  CHECK(s.row_ranges == 256);
  // Before the layout is built, its stages are sized for every weight kept: 16 x 256 values in
  // 513 pieces of 16 bytes (from an unaligned start), after 512 bytes of masks.
  CHECK(s.stage_bytes == 512 + 16 * 513);
  CHECK(s.smem == 8u * 2u * s.stage_bytes);
  set_tiles_stage(s, 276);  // what a layer at half kept needs
  CHECK(s.stage_bytes == 4928);
  CHECK(s.smem == 8u * 2u * 4928u);
  // 1 block an SM on 132 SMs over 256 tiles: no split; on 1024 SMs, 4 wanted, at most 16 / 8 = 2.
  set_decode_splits(s, 1, 132);
  CHECK(s.splits == 1);
  CHECK(decode_launch_shape(s).grid == 256);
  CHECK(decode_launch_shape(s).block == 256);
  set_decode_splits(s, 1, 1024);
  CHECK(s.splits == 2);
  // The 8-warp, 3-stage variant: its entry, threads, shared memory, and at most 16 / 8 = 2 splits.
  DecodeLinearOptions w8 = asked(DecodeMapping::Tiles);
  w8.tiles_warps = 8;
  w8.tiles_stages = 3;
  DecodeSpec v = make_decode_spec(l.shape, w8, kDevice);
  CHECK(std::string(v.entry) == "tiles_w8s3");
  CHECK(decode_launch_shape(v).block == 256);
  CHECK(v.smem == 8u * 3u * v.stage_bytes);
  set_decode_splits(v, 1, 1024);
  CHECK(v.splits == 2);
  // A warp per tile: 256 tiles, 2 blocks an SM x 132 SMs x 8 warps = 2112 warps: 8 splits (at most
  // 16 / 4 = 4: a warp at least 4 chunks), 1024 warps in 128 blocks.
  DecodeLinearOptions pw = asked(DecodeMapping::Tiles);
  pw.tiles_per_warp = true;
  DecodeSpec q = make_decode_spec(l.shape, pw, kDevice);
  CHECK(std::string(q.entry) == "tiles_warp_w8s2");
  set_decode_splits(q, 2, 132);
  CHECK(q.splits == 4);
  CHECK(decode_launch_shape(q).grid == 128);
  CHECK(decode_launch_shape(q).block == 256);
  w8.tiles_warps = 6;
  CHECK_THROWS_AS(make_decode_spec(l.shape, w8, kDevice), UsageError);
  // f32 values and columns not a multiple of 8 have no tiles path.
  DecodeLinearOptions f32 = asked(DecodeMapping::Tiles);
  f32.dtype = DecodeDtype::F32;
  CHECK_THROWS_AS(make_decode_spec(l.shape, f32, kDevice), UsageError);
  DecodeShape odd = l.shape;
  odd.cols = 4092;
  CHECK_THROWS_AS(make_decode_spec(odd, asked(DecodeMapping::Tiles), kDevice), UsageError);
  // The recorded profile has no tiles calibration: the model never estimates it, so auto keeps off it.
  CHECK(std::isnan(estimate_decode_costs(4096, 4096, DecodeDtype::F16, 0.5, 1.0, kDevice).tiles_us));
  DeviceProfile calibrated = kDevice;
  calibrated.calibrations["decode.tiles.share"] = 0.9;
  calibrated.calibrations["decode.tiles.fixed_us"] = 3.0;
  const DecodeCosts k = estimate_decode_costs(4096, 4096, DecodeDtype::F16, 0.5, 1.0, calibrated);
  CHECK(k.tiles_us > 0);
  CHECK(k.tiles_us < k.ring_us);
  CHECK(choose_decode_mapping(4096, 4096, DecodeDtype::F16, 0.5, 1.0, calibrated, false) == DecodeMapping::Tiles);
}

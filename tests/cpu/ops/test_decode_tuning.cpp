// Decode's side of the tuning DB: the problem key and activation-density buckets its rows are stored
// under, the features prediction compares (from the shape and density alone), and the choice between
// an asked mapping, a DB row (tuned, predicted) or a given config, and the cost model
// (choose_decode_config), with rows written to a temporary DB as dbtune writes them.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "dbsparse/decode_linear.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/tuning_db.hpp"
#include "runtime/decode/decode_spec.hpp"
#include "test_support.hpp"

using namespace dbsparse;
using nlohmann::json;

namespace {

const OpConfigInfo kDecode = config_info<DecodeConfig>();

// The cost model stand-in: what it was asked (allow_dense) and how often.
struct Model {
  DecodeMapping with_dense = DecodeMapping::Dense, without = DecodeMapping::Ring;
  int calls = 0;
  bool last_allow_dense = true;
  std::function<DecodeMapping(bool)> fn() {
    return [this](bool allow_dense) {
      ++calls;
      last_allow_dense = allow_dense;
      return allow_dense ? with_dense : without;
    };
  }
};

// A temporary DB holding what dbtune stores for a tuned layer: its record (key, features) and the
// best config of a bucket.
void store_tuned(TuningDb& db, int32_t rows, int32_t cols, const std::string& bucket, const json& params) {
  const std::string key = decode_problem_key(rows, cols, DecodeDtype::F16, 0.5);
  db.upsert_matrix({key, key, decode_problem_features(rows, cols, 0.5)});
  db.set_best("dev0", key, "decode", bucket, params, 50.0, 1.2);
}

// What a plan looks up for a layer (decode_linear_plan.cpp's lookup_decode_row), on `db`.
Config look_up(const TuningDb& db, int32_t rows, int32_t cols, double act_density, DecodeDtype dt = DecodeDtype::F16) {
  return db.lookup("dev0", decode_problem_key(rows, cols, dt, 0.5), kDecode, decode_density_bucket(act_density),
                   [&] { return decode_problem_features(rows, cols, 0.5); });
}

}  // namespace

TEST_CASE("DecodeProblemKeyRoundsTheWeightDensityToATwentieth") {
  CHECK(decode_problem_key(4096, 4096, DecodeDtype::F16, 0.5) == "decode.4096x4096.f16.w0.50");
  CHECK(decode_problem_key(14336, 4096, DecodeDtype::BF16, 0.5) == "decode.14336x4096.bf16.w0.50");
  CHECK(decode_problem_key(1024, 4096, DecodeDtype::F32, 0.5) == "decode.1024x4096.f32.w0.50");
  // 0.4749 is nearer 0.45, 0.4751 nearer 0.5; 0.3 stays 0.30 (not 0.29 or 0.31 from rounding).
  CHECK(decode_problem_key(8, 8, DecodeDtype::F16, 0.4749) == "decode.8x8.f16.w0.45");
  CHECK(decode_problem_key(8, 8, DecodeDtype::F16, 0.4751) == "decode.8x8.f16.w0.50");
  CHECK(decode_problem_key(8, 8, DecodeDtype::F16, 0.3) == "decode.8x8.f16.w0.30");
  CHECK(decode_problem_key(8, 8, DecodeDtype::F16, 1.0) == "decode.8x8.f16.w1.00");
  CHECK(decode_problem_key(8, 8, DecodeDtype::F16, 0.0) == "decode.8x8.f16.w0.00");
}

TEST_CASE("DecodeActivationDensityMapsToTheNearestBucket") {
  CHECK(decode_density_buckets() == std::vector<std::string>{"a1", "a0.5", "a0.3", "a0.1"});
  CHECK(decode_density_bucket(1.0) == "a1");
  CHECK(decode_density_bucket(0.8) == "a1");
  CHECK(decode_density_bucket(0.74) == "a0.5");
  CHECK(decode_density_bucket(0.75) == "a1");  // a tie goes to the denser class
  CHECK(decode_density_bucket(0.5) == "a0.5");
  CHECK(decode_density_bucket(0.41) == "a0.5");
  CHECK(decode_density_bucket(0.39) == "a0.3");
  CHECK(decode_density_bucket(0.2) == "a0.3");  // a tie, to the denser
  CHECK(decode_density_bucket(0.19) == "a0.1");
  CHECK(decode_density_bucket(0.01) == "a0.1");
  for (const auto& b : decode_density_buckets()) CHECK(decode_density_bucket(decode_bucket_density(b)) == b);
  CHECK(decode_bucket_density("a0.3") == 0.3);
  CHECK_THROWS_AS(decode_bucket_density("a0.2"), UsageError);
  // A plan's bucket is that of the density it assumes: act_density, else keep, else tau.
  DecodeLinearOptions o;
  CHECK(decode_density_bucket(decode_assumed_act_density(o)) == "a1");  // tau 0: everything kept
  o.tau = 0.1f;
  CHECK(decode_density_bucket(decode_assumed_act_density(o)) == "a0.5");
  o.keep = 0.1;
  CHECK(decode_density_bucket(decode_assumed_act_density(o)) == "a0.1");
  o.act_density = 0.3;
  CHECK(decode_density_bucket(decode_assumed_act_density(o)) == "a0.3");
}

TEST_CASE("DecodeProblemFeaturesPredictLikeTheFeaturesOfAPrunedLayer") {
  // The generator prunes each row to the same count, as the features assume: every term of the
  // prediction vector agrees with compute_features' on the matrix itself (the bandwidth term within
  // a column or two: the corner entries may be pruned).
  const auto m = generate("pruned:rows=96,cols=160,density=0.5,seed=1");
  const MatrixFeatures cheap = decode_problem_features(96, 160, 0.5), full = compute_features(m);
  CHECK(cheap.nnz == full.nnz);
  CHECK(cheap.row_mean == doctest::Approx(full.row_mean));
  CHECK(cheap.row_std == doctest::Approx(full.row_std));
  CHECK(cheap.row_max == full.row_max);
  CHECK(cheap.empty_rows == full.empty_rows);
  const auto a = prediction_features(cheap, false), b = prediction_features(full, false);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(0.02));
  const MatrixFeatures empty = decode_problem_features(4, 4, 0.0);
  CHECK(empty.nnz == 0);
  CHECK(empty.empty_rows == 4);
}

TEST_CASE("DecodeTunedRowIsWhatThePlanChoosesForItsKey") {
  auto path = dbs_test::temp_dir("decode-tuned") / "tuning.db";
  auto db = TuningDb::open(path.string());
  store_tuned(*db, 4096, 4096, "a1", {{"mapping", "dense-columns"}, {"blocks_per_sm", 2}});
  Model model;
  DecodeLinearOptions o;  // f16, tau 0: bucket a1
  const Config row = look_up(*db, 4096, 4096, decode_assumed_act_density(o));
  REQUIRE(row.source == ConfigSource::Tuned);
  const DecodeChoice c = choose_decode_config(o, 4096, &row, model.fn());
  CHECK(c.mapping == DecodeMapping::DenseColumns);
  CHECK(c.blocks_per_sm == 2);
  CHECK(c.source == ConfigSource::Tuned);
  CHECK(model.calls == 0);

  // The options' own parameters win where set; an asked mapping wins over the row.
  o.blocks_per_sm = 4;
  CHECK(choose_decode_config(o, 4096, &row, model.fn()).blocks_per_sm == 4);
  o.blocks_per_sm = 0;
  o.mapping = DecodeMapping::RowBlocks;
  o.row_block_words = 2;
  const DecodeChoice asked = choose_decode_config(o, 4096, &row, model.fn());
  CHECK(asked.mapping == DecodeMapping::RowBlocks);
  CHECK(asked.row_block_words == 2);
  CHECK(asked.blocks_per_sm == 0);
  CHECK(asked.source == ConfigSource::Explicit);
  CHECK(model.calls == 0);

  // allow_dense off keeps the row's dense layout out: the model picks among the bitmap ones.
  DecodeLinearOptions no_dense;
  no_dense.allow_dense = false;
  const DecodeChoice nd = choose_decode_config(no_dense, 4096, &row, model.fn());
  CHECK(nd.mapping == DecodeMapping::Ring);
  CHECK(nd.source == ConfigSource::Default);
  CHECK_FALSE(model.last_allow_dense);
  CHECK(nd.note.find("allow_dense") != std::string::npos);

  // A row tuned to auto: the tuning confirmed the model's choice (the source says the DB decided).
  store_tuned(*db, 4096, 4096, "a0.5", {{"mapping", "auto"}});
  DecodeLinearOptions half;
  half.act_density = 0.5;
  const Config auto_row = look_up(*db, 4096, 4096, 0.5);
  const DecodeChoice a = choose_decode_config(half, 4096, &auto_row, model.fn());
  CHECK(a.mapping == DecodeMapping::Dense);
  CHECK(a.source == ConfigSource::Tuned);
}

TEST_CASE("DecodeUntunedShapesGetAPredictionOrTheModel") {
  auto path = dbs_test::temp_dir("decode-predict") / "tuning.db";
  auto db = TuningDb::open(path.string());
  store_tuned(*db, 14336, 4096, "a1", {{"mapping", "ring"}, {"blocks_per_sm", 4}});
  Model model;
  DecodeLinearOptions o;
  // A shape near the tuned one (Llama-2-7B's gate next to Llama-3.1-8B's): its row, predicted.
  const Config near = look_up(*db, 11008, 4096, 1.0);
  REQUIRE(near.source == ConfigSource::Predicted);
  const DecodeChoice p = choose_decode_config(o, 4096, &near, model.fn());
  CHECK(p.mapping == DecodeMapping::Ring);
  CHECK(p.blocks_per_sm == 4);
  CHECK(p.source == ConfigSource::Predicted);
  CHECK(model.calls == 0);
  // Far from every tuned shape, or in a bucket nothing was tuned in, or another device: the model.
  for (const Config& none :
       {look_up(*db, 64, 64, 1.0), look_up(*db, 14336, 4096, 0.1),
        db->lookup("dev1", decode_problem_key(14336, 4096, DecodeDtype::F16, 0.5), kDecode, "a1")}) {
    CAPTURE(none.note);
    CHECK(none.source == ConfigSource::Default);
    const DecodeChoice m = choose_decode_config(o, 4096, &none, model.fn());
    CHECK(m.mapping == DecodeMapping::Dense);
    CHECK(m.source == ConfigSource::Default);
    CHECK(m.blocks_per_sm == 0);
  }
  // No DB at all: the model.
  CHECK(choose_decode_config(o, 4096, nullptr, model.fn()).source == ConfigSource::Default);

  // A predicted dense row on a layer the dense path cannot take (f32; columns not a multiple of 8)
  // is set aside for the model; its parameters with it.
  store_tuned(*db, 1024, 4096, "a1", {{"mapping", "dense"}, {"blocks_per_sm", 8}});
  DecodeLinearOptions f32;
  f32.dtype = DecodeDtype::F32;
  const Config dense_row = look_up(*db, 1024, 4096, 1.0, DecodeDtype::F32);
  REQUIRE(dense_row.source == ConfigSource::Predicted);
  const DecodeChoice f = choose_decode_config(f32, 4096, &dense_row, model.fn());
  CHECK(f.mapping == DecodeMapping::Dense);  // the stand-in model's answer; the real one never gives dense for f32
  CHECK(f.source == ConfigSource::Default);
  CHECK(f.blocks_per_sm == 0);
  CHECK(f.note.find("f32") != std::string::npos);
  const DecodeChoice odd = choose_decode_config(o, 4100, &dense_row, model.fn());
  CHECK(odd.source == ConfigSource::Default);
  CHECK(odd.note.find("multiple of 8") != std::string::npos);
}

TEST_CASE("DecodeConfigGivenOrStoredIsReadStrictly") {
  Model model;
  DecodeLinearOptions o;
  // A config the caller gives is theirs to get right: a UsageError naming the key.
  const Config bad{"decode", {{"mapping", "lanes-ish"}}, ConfigSource::Explicit, ""};
  CHECK_THROWS_AS(choose_decode_config(o, 4096, &bad, model.fn()), UsageError);
  // A stored row that is not a decode config is set aside for the model, with the reason.
  const Config stored{"decode", {{"mapping", "lanes-ish"}}, ConfigSource::Tuned, "tuned"};
  const DecodeChoice c = choose_decode_config(o, 4096, &stored, model.fn());
  CHECK(c.source == ConfigSource::Default);
  CHECK(c.note.find("mapping") != std::string::npos);
  // A given config with auto and allow_dense 0: the model without the dense layouts.
  const Config given{"decode", {{"mapping", "auto"}, {"allow_dense", 0}}, ConfigSource::Explicit, ""};
  CHECK(choose_decode_config(o, 4096, &given, model.fn()).mapping == DecodeMapping::Ring);
  CHECK(decode_mapping_from_string("dense-columns") == DecodeMapping::DenseColumns);
  CHECK_THROWS_AS(decode_mapping_from_string("diagonal"), UsageError);
}

TEST_CASE("DecodeSpecExplainsWhereAutosMappingCameFrom") {
  // 1024 x 1024 in one strip, 8 values a segment.
  std::vector<int32_t> seg_ptr;
  for (int32_t s = 0; s <= 1024; ++s) seg_ptr.push_back(8 * s);
  const DecodeShape shape{1024, 1024, 1, 8192, size_t{1024} * 32, size_t{1024} * 32, seg_ptr};
  const DeviceProfile device = dbs_test::recorded_profile("h200");
  const Config row{"decode", config_to_json(DecodeConfig{.mapping = "row-blocks", .row_block_words = 4}),
                   ConfigSource::Tuned, "tuned for this device and matrix"};
  const std::string key = decode_problem_key(1024, 1024, DecodeDtype::F16, 8192.0 / (1024 * 1024));
  const DecodeSpec s = make_decode_spec(shape, DecodeLinearOptions{}, device, &row, key, "a1");
  CHECK(s.mapping == DecodeMapping::RowBlocks);
  CHECK(s.row_words == 4);
  CHECK(s.source == ConfigSource::Tuned);
  const std::string e = explain_decode_spec(s, KernelInfo{});
  CAPTURE(e);
  CHECK(e.find("auto: tuned config for " + key + " [a1]") != std::string::npos);
  const DecodeSpec m = make_decode_spec(shape, DecodeLinearOptions{}, device, nullptr, key, "a1");
  CHECK(m.source == ConfigSource::Default);
  CHECK(explain_decode_spec(m, KernelInfo{}).find("auto: model's choice for " + key) != std::string::npos);
}

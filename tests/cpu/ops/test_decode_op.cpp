// The decode op in the registry: its config (DecodeLinearOptions' defaults), its search space, its
// suite of LLM layer shapes and buckets, its rows keyed by problem key, and its variants (the
// decoding kernels and the sparsifier, for precompile and the nvrtc tier).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "codegen/keys/decode_key.hpp"
#include "codegen/keys/sparse_linear_key.hpp"
#include "dbsparse/decode_linear.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/io.hpp"
#include "dbsparse/tuning_db.hpp"
#include "test_support.hpp"
#include "tools/bench/suites.hpp"
#include "tools/ops/registry.hpp"

using namespace dbsparse;

TEST_CASE("DecodeIsARegistryOpTunedOnItsOwnSuite") {
  const auto& op = tools::find_op("decode");
  CHECK(op.config.op == "decode");
  CHECK(op.config.defaults ==
        nlohmann::json{{"mapping", "auto"}, {"row_block_words", 1}, {"blocks_per_sm", 0}, {"allow_dense", 1}});
  CHECK(op.space.defaults == op.config.defaults);
  CHECK_NOTHROW(op.space.validate({{"mapping", "ring"}, {"row_block_words", 4}}));
  CHECK_THROWS_AS(op.space.validate({{"row_block_words", 3}}), UsageError);
  CHECK_THROWS_AS(op.space.validate({{"mapping", "lanes"}}), UsageError);
  CHECK(op.tuned_by_default);
  CHECK(tools::default_tuned_op_names() ==
        std::vector<std::string>{"spmv", "spmspv", "bfs", "spmm", "spgemm", "decode"});
  CHECK(op.buckets == std::vector<std::string>{"a1", "a0.5", "a0.3", "a0.1"});
  CHECK(op.budget_units == 8);  // two budgets a bucket
  // No matrix bench: both the suite and the bench say where the layers are timed.
  CHECK_THROWS_WITH_AS(op.bench_suite("quick"), doctest::Contains("decode-bench"), UsageError);
  // Every decoding key and sparsifier key once, nothing else.
  std::vector<std::string> want;
  for (const auto& k : codegen::decode_search_space()) want.push_back(k.to_string());
  for (const auto& k : codegen::sparse_linear_search_space()) want.push_back(k.to_string());
  std::vector<std::string> got;
  for (const auto& ks : op.variants(true)) got.push_back(ks.key);
  CHECK(got == want);
  CHECK(op.variants(false).size() == got.size());
}

TEST_CASE("DecodeSearchSpaceIsEveryMappingWithItsOwnParameters") {
  const auto& space = tools::find_op("decode").space;
  // The grid the tuner walks, constraints applied: auto 1, ring / dense / dense-columns 5 each
  // (blocks an SM 0, 1, 2, 4, 8), columns 1, row-blocks 3 (1, 2, 4 words), tiles 1: small enough for the
  // exhaustive strategy (tuner/search.hpp: at most 24 points).
  int points = 0, per_mapping_ring = 0, row_blocks = 0;
  for (const auto& m : space.find("mapping")->values)
    for (const auto& b : space.find("blocks_per_sm")->values)
      for (const auto& w : space.find("row_block_words")->values) {
        const auto c = space.complete({{"mapping", m}, {"blocks_per_sm", b}, {"row_block_words", w}});
        if (!space.can_implement(c)) continue;
        ++points;
        per_mapping_ring += m == "ring";
        row_blocks += m == "row-blocks";
      }
  CHECK(points == 21);
  CHECK(per_mapping_ring == 5);
  CHECK(row_blocks == 3);
  CHECK(space.can_implement(space.defaults));
  std::string why;
  CHECK_FALSE(space.can_implement(space.complete({{"mapping", "columns"}, {"blocks_per_sm", 2}}), &why));
  CHECK(why.find("blocks_per_sm") != std::string::npos);
  CHECK_FALSE(space.can_implement(space.complete({{"mapping", "ring"}, {"row_block_words", 2}})));
}

TEST_CASE("DecodeSuiteIsTheModelsLayerShapesAtHalfTheWeights") {
  const auto quick = tools::decode_suite("quick");
  CHECK(quick == std::vector<std::string>{"pruned:rows=4096,cols=4096,density=0.5,seed=1",
                                          "pruned:rows=1024,cols=4096,density=0.5,seed=1",
                                          "pruned:rows=14336,cols=4096,density=0.5,seed=1",
                                          "pruned:rows=4096,cols=14336,density=0.5,seed=1"});
  const auto full = tools::decode_suite("full");
  CHECK(full.size() == 12);  // Llama-3.1-8B's 4, Llama-3.2-1B's 4, Qwen2.5-1.5B's 4 distinct shapes
  CHECK(std::equal(quick.begin(), quick.end(), full.begin()));
  CHECK(std::find(full.begin(), full.end(), "pruned:rows=8192,cols=2048,density=0.5,seed=1") != full.end());
  CHECK(std::find(full.begin(), full.end(), "pruned:rows=256,cols=1536,density=0.5,seed=1") != full.end());
  CHECK_THROWS_AS(tools::decode_suite("medium"), UsageError);
  CHECK(tools::find_op("decode").tune_suite("quick") == quick);
  CHECK_FALSE(tools::find_op("spmv").tune_suite);
}

TEST_CASE("DecodeRowsAreKeyedByProblemKeyNotStructure") {
  const auto& op = tools::find_op("decode");
  const NamedMatrix m{"pruned:rows=64,cols=96,density=0.5,seed=1",
                      generate("pruned:rows=64,cols=96,density=0.5,seed=1")};
  CHECK(tools::db_key(op, m) == "decode.64x96.f16.w0.50");
  const MatrixRecord rec = tools::db_record(op, m);
  CHECK(rec.fingerprint == "decode.64x96.f16.w0.50");
  CHECK(rec.name == m.name);
  CHECK(rec.features.nnz == 64 * 48);
  CHECK(rec.features.row_mean == 48);
  // The other ops keep the structure fingerprint and the full features.
  const auto& spmv = tools::find_op("spmv");
  CHECK(tools::db_key(spmv, m) == structure_fingerprint(m.csr));
  CHECK(tools::db_record(spmv, m).features.bandwidth == compute_features(m.csr).bandwidth);
  CHECK_FALSE(spmv.problem_key);
}

// Without a GPU dbtune records what it can: decode's layer under its problem key with the cheap
// features, not under its structure (no device visible, so that this holds on a GPU host too).
TEST_CASE("DbtuneRecordsDecodeLayersUnderTheirProblemKey") {
  const std::filesystem::path db = dbs_test::temp_dir("dbtune-decode-key") / "t.db";
  const std::string spec = "pruned:rows=64,cols=96,density=0.5,seed=1";
  const std::string cmd = "CUDA_VISIBLE_DEVICES= '" + dbs_test::sibling_binary("dbtune").string() +
                          "' --ops decode --arch sm_90 --matrices " + spec + " --db '" + db.string() +
                          "' > /dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  auto t = TuningDb::open(db.string(), /*read_only=*/true);
  const auto rec = t->find_matrix("decode.64x96.f16.w0.50");
  REQUIRE(rec);
  CHECK(rec->name == load_matrix(spec).name);
  CHECK(rec->features.nnz == 64 * 48);
  CHECK_FALSE(t->find_matrix(structure_fingerprint(generate(spec))));
}

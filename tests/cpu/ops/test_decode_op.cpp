// The decode op in the registry: its config (DecodeLinearOptions' defaults), its variants (the
// decoding kernels and the sparsifier, for precompile and the nvrtc tier), no tuning yet, and
// dbtune's default ops as they were.
#include <doctest/doctest.h>

#include <algorithm>

#include "codegen/keys/decode_key.hpp"
#include "codegen/keys/sparse_linear_key.hpp"
#include "dbsparse/decode_linear.hpp"
#include "dbsparse/error.hpp"
#include "tools/ops/registry.hpp"

using namespace dbsparse;

TEST_CASE("DecodeIsARegistryOpThatDbtuneLeavesOutByDefault") {
  const auto& op = tools::find_op("decode");
  CHECK(op.config.op == "decode");
  CHECK(op.config.defaults ==
        nlohmann::json{{"mapping", "auto"}, {"row_block_words", 1}, {"blocks_per_sm", 0}, {"allow_dense", 1}});
  CHECK(op.space.params.empty());  // its search space is still to come
  CHECK_NOTHROW(op.space.validate({{"mapping", "ring"}, {"row_block_words", 4}}));
  CHECK_THROWS_AS(op.space.validate({{"row_block_words", 3}}), UsageError);
  CHECK_THROWS_AS(op.space.validate({{"mapping", "lanes"}}), UsageError);
  CHECK_FALSE(op.tuned_by_default);
  CHECK(tools::default_tuned_op_names() == std::vector<std::string>{"spmv", "spmspv", "bfs", "spmm", "spgemm"});
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

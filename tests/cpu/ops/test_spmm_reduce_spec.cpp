// SpMM's reductions (SpmmOptions::reduce): their texts, the kernel keys that name max and min (so
// cache keys differ from the sum's), the modules' roles, the spec's path and cuts, and the mean as
// the sum over scaled values, on the CPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/keys/spmm_key.hpp"
#include "dbsparse/error.hpp"
#include "runtime/spmm/spmm_spec.hpp"

using namespace dbsparse;
using namespace dbsparse::spmm_detail;
using codegen::SpmmKey;
using codegen::SpmmReduceOp;

namespace {

CsrMatrix<float> rows_of(const std::vector<int32_t>& lengths, int32_t cols) {
  CsrMatrix<float> a;
  a.rows = static_cast<int32_t>(lengths.size());
  a.cols = cols;
  for (int32_t len : lengths) {
    for (int32_t c = 0; c < len; ++c) {
      a.col_idx.push_back(c);
      a.values.push_back(1.0f);
    }
    a.row_ptr.push_back(static_cast<int32_t>(a.col_idx.size()));
  }
  return a;
}

Config config(nlohmann::json params) { return Config{"spmm", std::move(params), ConfigSource::Explicit, ""}; }

SpmmOptions reducing(SpmmReduce r, SpmmDtype d = SpmmDtype::F32) {
  SpmmOptions o;
  o.reduce = r;
  o.dtype = d;
  return o;
}

}  // namespace

TEST_CASE("SpmmReduceParsesAndPrintsItsNames") {
  CHECK(parse_spmm_reduce("sum") == SpmmReduce::Sum);
  CHECK(parse_spmm_reduce("mean") == SpmmReduce::Mean);
  CHECK(parse_spmm_reduce("max") == SpmmReduce::Max);
  CHECK(parse_spmm_reduce("min") == SpmmReduce::Min);
  for (SpmmReduce r : {SpmmReduce::Sum, SpmmReduce::Mean, SpmmReduce::Max, SpmmReduce::Min})
    CHECK(parse_spmm_reduce(to_string(r)) == r);
  for (const char* bad : {"", "Sum", "avg", "prod", "max "}) CHECK_THROWS_AS(parse_spmm_reduce(bad), UsageError);
  try {
    parse_spmm_reduce("avg");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("sum, mean, max or min") != std::string::npos);
  }
  CHECK(SpmmOptions{}.reduce == SpmmReduce::Sum);
}

TEST_CASE("SpmmReduceKeysNameTheReductionLastAndRoundTrip") {
  SpmmKey k{codegen::SpmmKernelPath::Csr, 1, 4, 4, 4, 8};
  CHECK(k.to_string() == "spmm.csr.v4.l8.w4");  // the sum's text as before the field
  k.reduce = SpmmReduceOp::Max;
  CHECK(k.to_string() == "spmm.csr.v4.l8.w4.max");
  k.rows = 4;
  k.value = codegen::SpmmValue::BF16;
  k.reduce = SpmmReduceOp::Min;
  CHECK(k.to_string() == "spmm.csr.bf16.v4.l8.w4.r4.min");
  CHECK(SpmmKey::parse("spmm.csr.bf16.v4.l8.w4.r4.min") == k);
  CHECK(SpmmKey::parse("spmm.csr.v1.l32.w4.max").reduce == SpmmReduceOp::Max);
  // The mean has no key of its own (the sum's modules over scaled values).
  for (const char* bad : {"spmm.csr.v4.l8.w4.sum", "spmm.brp.f1.g4.w4.max", "spmm.csr.v4.l8.w4.o64.max",
                          "spmm.csr.v4.l8.w4.avg", "spmm.csr.v4.l8.w4.max.max", "spmm.csr.v4.l8.w4.mean"})
    CHECK_THROWS_AS(SpmmKey::parse(bad), UsageError);
  size_t listed = 0;
  for (const SpmmKey& key : codegen::spmm_reduce_keys()) {
    CAPTURE(key.to_string());
    CHECK((key.reduce == SpmmReduceOp::Max || key.reduce == SpmmReduceOp::Min));
    CHECK(SpmmKey::parse(key.to_string()) == key);
    // One kernel a module, the role the plan fetches, its template arguments ending in the op.
    const codegen::KernelSource ks = codegen::make_source(key);
    REQUIRE(ks.entry_names.size() == 1);
    CHECK(ks.entry_names[0] == "reduce");
    const std::string op = std::to_string(static_cast<int>(key.reduce));
    CHECK(ks.name_expressions[0].rfind("dbs::csr_spmm_reduce<", 0) == 0);
    CHECK(ks.name_expressions[0].find(", " + op + ">") != std::string::npos);
    ++listed;
  }
  CHECK(listed == 3 * 2 * 2 * 15);  // types x ops x vec x (lanes, rows a warp) with lanes x rows <= 32
  // The sum's search space (what dbtune compiles and times) holds no reduction.
  for (const SpmmKey& key : codegen::spmm_search_space()) CHECK(key.reduce == SpmmReduceOp::Sum);
}

TEST_CASE("SpmmSpecWithMaxOrMinTakesTheCsrPathAndCutsLongRowsIntoParts") {
  // Row 3 of 300 entries; n = 32 with float4 (8 lanes across N): max_run is the sum's, the larger
  // of twice the mean row (102) and 32 entries per subgroup (128), so row 3 is cut into parts of
  // 128, 128 and 44 from its first entry, 2 (rows 0 and 2 hold one each), in every value type (the
  // parts' extremes go to an f32 workspace).
  const CsrMatrix<float> a = rows_of({1, 0, 1, 300, 1, 1}, 300);
  const SpmmSpec sum = spmm_spec(a, 32, SpmmOptions{}, config({{"path", "csr"}}), 132);
  CHECK(sum.n_parts == 3);
  for (SpmmReduce r : {SpmmReduce::Max, SpmmReduce::Min}) {
    CAPTURE(to_string(r));
    for (SpmmDtype d : {SpmmDtype::F32, SpmmDtype::BF16}) {
      const SpmmSpec s = spmm_spec(a, 32, reducing(r, d), config({{"path", "auto"}}), 132);
      CHECK(s.path == SpmmPath::CsrCudaCore);
      CHECK(s.reduce == r);
      CHECK(s.max_run == 128);
      CHECK(s.n_parts == 3);
      CHECK(s.cut_rows == 1);
      CHECK(s.tables.split.parts == std::vector<int32_t>{3, 2, 130, 0, 3, 130, 258, 0, 3, 258, 302, 0});
      CHECK(s.n_pieces == 0);
      CHECK(s.acc.n_units == 0);
      CHECK(s.st_windows == 0);
      CHECK(s.csr_key1.reduce == static_cast<SpmmReduceOp>(r));
      CHECK(s.csr_key4.reduce == static_cast<SpmmReduceOp>(r));
      CHECK(s.csr_key4.to_string() != sum.csr_key4.to_string());
      CHECK(s.csr_key4.to_string().rfind(std::string(".") + to_string(r)) != std::string::npos);
    }
  }
  // Short rows only: nothing cut, max_run the longest row's bound.
  const SpmmSpec flat = spmm_spec(rows_of({3, 0, 5, 2}, 8), 32, reducing(SpmmReduce::Max), config({}), 132);
  CHECK(flat.n_parts == 0);
  // Auto would take the condensed path for a dense A; a reduction keeps the CSR path.
  const CsrMatrix<float> full = rows_of(std::vector<int32_t>(64, 64), 64);
  CHECK(spmm_spec(full, 32, SpmmOptions{}, config({{"path", "auto"}}), 132).path == SpmmPath::Condensed);
  for (SpmmReduce r : {SpmmReduce::Mean, SpmmReduce::Max})
    CHECK(spmm_spec(full, 32, reducing(r), config({{"path", "auto"}}), 132).path == SpmmPath::CsrCudaCore);
}

TEST_CASE("SpmmSpecOfAMeanIsTheSumsOnTheCsrPath") {
  // The mean runs the sum's modules and cuts (the long row's parts too) over scaled values.
  const CsrMatrix<float> a = rows_of({1, 0, 1, 300, 1, 1}, 300);
  for (SpmmDtype d : {SpmmDtype::F32, SpmmDtype::BF16}) {
    const SpmmSpec sum = spmm_spec(a, 32, reducing(SpmmReduce::Sum, d), config({{"path", "csr"}}), 132);
    const SpmmSpec mean = spmm_spec(a, 32, reducing(SpmmReduce::Mean, d), config({{"path", "auto"}}), 132);
    CHECK(mean.path == SpmmPath::CsrCudaCore);
    CHECK(mean.reduce == SpmmReduce::Mean);
    CHECK(mean.csr_key1 == sum.csr_key1);
    CHECK(mean.csr_key4 == sum.csr_key4);
    CHECK(mean.n_parts == sum.n_parts);
    CHECK(mean.n_pieces == sum.n_pieces);
    CHECK(mean.max_run == sum.max_run);
  }
  // mean_scaled: each value over its row's length; empty rows stay empty.
  CsrMatrix<float> b = rows_of({2, 0, 4}, 4);
  b.values = {1, 3, 4, 8, -2, 6};
  const CsrMatrix<float> m = mean_scaled(b);
  CHECK(m.row_ptr == b.row_ptr);
  CHECK(m.col_idx == b.col_idx);
  CHECK(m.values == std::vector<float>{0.5f, 1.5f, 1.0f, 2.0f, -0.5f, 1.5f});
}

TEST_CASE("SpmmSpecRefusesAReductionOnATensorCorePathAskedFor") {
  const CsrMatrix<float> a = rows_of({2, 2, 2, 2}, 4);
  SpmmOptions o = reducing(SpmmReduce::Mean);
  o.path = SpmmPath::Brp;
  CHECK_THROWS_WITH_AS(spmm_spec(a, 8, o, config({{"path", "auto"}}), 132), doctest::Contains("SpmmOptions::path"),
                       UsageError);
  o.path = SpmmPath::Condensed;
  CHECK_THROWS_AS(spmm_spec(a, 8, o, config({{"path", "auto"}}), 132), UsageError);
  // An explicit config's path: the same refusal, naming the config's option.
  const Config brp = config({{"path", "brp"}});
  SpmmOptions via_config = reducing(SpmmReduce::Max);
  via_config.config = &brp;
  CHECK_THROWS_WITH_AS(spmm_spec(a, 8, via_config, brp, 132), doctest::Contains("'path'"), UsageError);
  // The sum on those paths stays allowed.
  SpmmOptions sum;
  sum.path = SpmmPath::Condensed;
  CHECK(spmm_spec(a, 8, sum, config({{"path", "auto"}}), 132).path == SpmmPath::Condensed);
}

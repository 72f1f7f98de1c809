// Keys round-trip; key -> source is pure and matches the golden files byte for byte.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/embedded_templates.hpp"
#include "codegen/keys/bfs_key.hpp"
#include "codegen/keys/csr_view_key.hpp"
#include "codegen/keys/spmspv_key.hpp"
#include "codegen/keys/spmv_key.hpp"
#include "dbsparse/error.hpp"

using namespace dbsparse;
using namespace dbsparse::codegen;

namespace {
std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("SpmvKeyRoundTripsThroughText") {
  for (const auto& k : spmv_search_space()) {
    CHECK(SpmvKey::parse(k.to_string()) == k);
    CHECK(SpmvKey::parse(k.to_string()).to_string() == k.to_string());
  }
  CHECK(SpmvKey{ValueType::F64, SpmvStrategy::Scalar, 128}.to_string() == "spmv.scalar.f64.b128");
  CHECK(SpmvKey{ValueType::F32, SpmvStrategy::Vector, 256, 16}.to_string() == "spmv.vector.f32.b256.l16");
  CHECK(SpmvKey{ValueType::F32, SpmvStrategy::LongRow, 512}.to_string() == "spmv.longrow.f32.b512");
  // 64-bit row offsets: ".o64" last, on the scalar, vector and block kernels only.
  SpmvKey o64{ValueType::F32, SpmvStrategy::Vector, 256, 8};
  o64.offsets64 = true;
  CHECK(o64.to_string() == "spmv.vector.f32.b256.l8.o64");
  CHECK(SpmvKey::parse("spmv.vector.f32.b256.l8.o64") == o64);
  CHECK(make_source(o64).name_expressions.at(0) == "dbs::spmv_csr_vector<float, 256, 8, long long>");
  CHECK_THROWS_AS(SpmvKey::parse("spmv.longrow.f32.b256.o64"), UsageError);
  CHECK_THROWS_AS(SpmvKey::parse("spmv.classify.b256.o64"), UsageError);
  SpmvKey longrow{ValueType::F32, SpmvStrategy::LongRow, 256};
  longrow.offsets64 = true;
  CHECK_THROWS_AS(make_source(longrow), UsageError);
}

TEST_CASE("SpmvClassifyKeyRoundTripsAndIsAVariant") {
  const SpmvKey k = spmv_classify_key();
  CHECK(k.to_string() == "spmv.classify.b256");
  CHECK(SpmvKey::parse(k.to_string()) == k);
  CHECK(SpmvKey::parse("spmv.classify.b128") == spmv_classify_key(128));
  auto space = spmv_search_space();
  CHECK(std::count(space.begin(), space.end(), k) == 1);
  auto ks = make_source(k);
  REQUIRE(ks.name_expressions.size() == 1);
  CHECK(ks.name_expressions[0] == "dbs::spmv_classify<256>");
  // The classifier has no value type: a key that claims one is refused, not silently merged.
  SpmvKey f64 = k;
  f64.value = ValueType::F64;
  CHECK_THROWS_AS(make_source(f64), UsageError);
}

TEST_CASE("SpmvSourcesDefineOnlyTheKey") {
  // No SpMV template reads a DBS_ macro (the variant is in the name expressions' template
  // arguments): a macro nothing reads would only pretend to configure the kernel. DBS_KEY stays to
  // name a dumped source.
  for (const auto& key : spmv_search_space()) {
    auto src = make_source(key).source;
    CAPTURE(src);
    size_t defines = 0;
    for (size_t pos = 0; (pos = src.find("#define ", pos)) != std::string::npos; ++pos) ++defines;
    CHECK(defines == 1);
    CHECK(src.find("#define DBS_KEY \"" + key.to_string() + "\"") != std::string::npos);
  }
}

TEST_CASE("SpmvAbiHeaderIsEmbeddedUnderItsIncludeName") {
  // Templates include it as "dbsparse/abi/spmv.h", the name the host uses: NVRTC matches the
  // include string against the embedded names exactly.
  for (const char* name : {"dbsparse/abi/spmv.h", "dbsparse/abi/abi_types.h"}) {
    CAPTURE(name);
    const EmbeddedTemplate* found = nullptr;
    for (const auto& t : embedded_templates())
      if (std::string(t.name) == name) found = &t;
    REQUIRE(found);
    CHECK(found->source == read_file(std::filesystem::path(DBS_SOURCE_DIR) / "include" / name));
  }
}

TEST_CASE("SpmvKeyParseRejectsMalformedText") {
  for (const char* bad : {"",
                          "spmv",
                          "spmv.scalar.f32",
                          "spmspv.scalar.f32.b256",
                          "spmv.vector.f32.b256",
                          "spmv.scalar.f16.b256",
                          "spmv.scalar.f32.256",
                          "spmv.scalar.f32.b100",
                          "spmv.scalar.f32.b2048",
                          "spmv.scalar.f32.bx",
                          "spmv.scalar.f32.b256.extra",
                          "spmv.scalar.f32.b256.l8",
                          "spmv.vector.f32.b256.l3",
                          "spmv.vector.f32.b256.l64",
                          "spmv.vector.f32.b256.x8",
                          "spmv.block.f32.b256.l2",
                          "spmv.classify",
                          "spmv.classify.f32.b256",
                          "spmv.classify.b100",
                          "spmv.classify.256"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(SpmvKey::parse(bad), UsageError);
  }
}

TEST_CASE("SpmvSourceMatchesGolden") {
  // To update after an intended change: write make_source(key).source over the golden file and
  // review the diff.
  for (const auto& key :
       {SpmvKey{ValueType::F32, SpmvStrategy::Scalar, 256}, SpmvKey{ValueType::F64, SpmvStrategy::Scalar, 128},
        SpmvKey{ValueType::F32, SpmvStrategy::Vector, 256, 8}, SpmvKey{ValueType::F64, SpmvStrategy::LongRow, 256},
        spmv_classify_key()}) {
    auto ks = make_source(key);
    auto golden = std::filesystem::path(DBS_SOURCE_DIR) / "tests" / "golden" / (ks.key + ".cu");
    REQUIRE_MESSAGE(std::filesystem::exists(golden), golden.string());
    CHECK(ks.source == read_file(golden));
    CHECK(ks.key == key.to_string());
    // LongRow: partial + finalize; every other variant one kernel.
    REQUIRE(ks.name_expressions.size() == (key.strategy == SpmvStrategy::LongRow ? 2u : 1u));
    if (key.strategy != SpmvStrategy::Classify)
      CHECK(ks.name_expressions[0].find(key.value == ValueType::F32 ? "float" : "double") != std::string::npos);
  }
}

TEST_CASE("SpmvSourceIsPureAndDistinctPerKey") {
  auto a = make_source(SpmvKey{ValueType::F32, SpmvStrategy::Scalar, 256});
  auto b = make_source(SpmvKey{ValueType::F32, SpmvStrategy::Scalar, 256});
  auto c = make_source(SpmvKey{ValueType::F32, SpmvStrategy::Scalar, 512});
  CHECK(a.source == b.source);
  CHECK(a.options == b.options);
  CHECK(a.source != c.source);
  CHECK(a.name_expressions != c.name_expressions);
}

TEST_CASE("EveryIncludedTemplateIsEmbedded") {
  // A generated source may only include what the library carries.
  for (const auto& key : spmv_search_space()) {
    auto src = make_source(key).source;
    size_t pos = 0;
    while ((pos = src.find("#include \"", pos)) != std::string::npos) {
      pos += 10;
      auto name = src.substr(pos, src.find('"', pos) - pos);
      bool found = false;
      for (const auto& t : embedded_templates()) found |= name == t.name;
      CHECK_MESSAGE(found, name);
    }
  }
  CHECK(templates_hash().size() == 16);
}

TEST_CASE("SpmspvKeyRoundTripsThroughText") {
  for (const auto& k : spmspv_search_space(/*include_opt_in=*/true)) {
    CHECK(SpmspvKey::parse(k.to_string()) == k);
  }
  SpmspvKey k{Direction::Pull, ValueType::F64, Semiring::PlusTimes, 0b00101};
  CHECK(k.to_string() == "spmspv.pull.f64.plus_times.bs16.t=coo+csr");
  CHECK(SpmspvKey{Direction::Push, ValueType::F32, Semiring::PlusTimes, 0}.to_string() ==
        "spmspv.push.f32.plus_times.bs16.t=none");
  SpmspvKey w{Direction::Auto, ValueType::F32, Semiring::PlusTimes, 0b1001, PullCoo::Warp};
  CHECK(w.to_string() == "spmspv.auto.f32.plus_times.bs16.t=coo+csc.coo=warp");
  // Four block types (patched CSR is ForceCSR): 3 directions x 2 value types x 16 type sets by
  // default, and the 8 warp-COO sets per (auto, pull) x value type opt-in.
  CHECK(spmspv_search_space().size() == 96);
  CHECK(spmspv_search_space(true).size() == 96 + 32);
  // The semiring is a key part: the generated source names its functor.
  CHECK(make_source(k).source.find("#define DBS_SEMIRING PlusTimes") != std::string::npos);
  CHECK(SpmspvKey::parse(w.to_string()) == w);
  CHECK(make_source(w).source.find("#define DBS_PULL_COO_WARP 1") != std::string::npos);
}

TEST_CASE("SpmspvKeyParseRejectsMalformedText") {
  for (const char* bad :
       {"spmspv.auto.f32.plus_times.bs16", "spmv.auto.f32.plus_times.bs16.t=coo",
        "spmspv.sideways.f32.plus_times.bs16.t=coo", "spmspv.auto.f16.plus_times.bs16.t=coo",
        "spmspv.auto.f32.max_plus.bs16.t=coo", "spmspv.auto.f32.plus_times.bs8.t=coo",
        "spmspv.auto.f32.plus_times.bs16.coo", "spmspv.auto.f32.plus_times.bs16.t=ell",
        "spmspv.auto.f32.plus_times.bs16.t=dense+coo", "spmspv.auto.f32.plus_times.bs16.t=coo+coo",
        "spmspv.auto.f32.plus_times.bs16.t=coo.coo=lane", "spmspv.auto.f32.plus_times.bs16.t=coo+pcsr",
        "spmspv.auto.f32.plus_times.bs16.t=coo.coo=warp.x"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(SpmspvKey::parse(bad), UsageError);
  }
}

TEST_CASE("SpmspvSourceMatchesGoldenAndCompilesOutAbsentTypes") {
  SpmspvKey k{Direction::Auto, ValueType::F32, Semiring::PlusTimes, 0b00011};
  auto ks = make_source(k);
  auto golden = std::filesystem::path(DBS_SOURCE_DIR) / "tests" / "golden" / (ks.key + ".cu");
  REQUIRE_MESSAGE(std::filesystem::exists(golden), golden.string());
  CHECK(ks.source == read_file(golden));
  CHECK(ks.source.find("#define DBS_HAS_DENSE 1") != std::string::npos);
  CHECK(ks.source.find("#define DBS_HAS_CSR 0") != std::string::npos);
  CHECK(ks.source.find("#define DBS_PULL_COO_WARP 0") != std::string::npos);
  CHECK(ks.name_expressions.size() == 8);  // codegen/keys/spmspv_key.hpp lists them
}

TEST_CASE("BfsKeyRoundTripsThroughTextAndO64AddsTheViewCheck") {
  for (const auto& k : bfs_search_space()) {
    CAPTURE(k.to_string());
    CHECK(BfsKey::parse(k.to_string()) == k);
    const KernelSource ks = make_source(k);
    CHECK(ks.key == k.to_string());
    // The view check exists only where 64-bit views are read; the other entry points keep their places.
    CHECK(ks.name_expressions.size() == (k.offsets64 ? 3u : 2u));
    CHECK((ks.source.find("#define DBS_BFS_O64 1") != std::string::npos) == k.offsets64);
  }
  CHECK(BfsKey::parse("bfs.push.or_and.w32.o64") == BfsKey{Direction::Push, Semiring::OrAnd, 32, true});
  for (const char* bad :
       {"bfs.auto.or_and.w8.o32", "bfs.auto.or_and.w8.o64.x", "bfs.auto.or_and", "bfs.auto.or_and.w16"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(BfsKey::parse(bad), UsageError);
  }
}

TEST_CASE("CsrViewKeyRoundTripsThroughText") {
  for (const auto& k : csr_view_space()) {
    CHECK(CsrViewKey::parse(k.to_string()) == k);
    const KernelSource ks = make_source(k);
    REQUIRE(ks.name_expressions.size() == 3);
    CHECK(ks.name_expressions[0] == (k.offsets64 ? "dbs::csr_check<long long>" : "dbs::csr_check<int>"));
    CHECK(ks.name_expressions[2] ==
          (k.offsets64 ? "dbs::csr_degree_scatter<long long>" : "dbs::csr_degree_scatter<int>"));
  }
  for (const char* bad : {"csr_view", "csr_view.o16", "csr_view.o64.x", "check.o64"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(CsrViewKey::parse(bad), UsageError);
  }
}

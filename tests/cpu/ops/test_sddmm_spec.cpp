// SDDMM's kernel keys (codegen/keys/sddmm_key.hpp) and plan spec (runtime/sddmm/sddmm_spec.hpp)
// on the CPU, against values worked out by hand from the rules the headers state; and the CPU
// reference (reference::sddmm) on a hand-worked case.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/keys/sddmm_key.hpp"
#include "codegen/keys/spmm_key.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/reference.hpp"
#include "runtime/sddmm/sddmm_spec.hpp"

using namespace dbsparse;
using codegen::SddmmKey;
using codegen::SddmmValue;

TEST_CASE("SddmmKeysRoundTripAndRefuseWhatNoKNeeds") {
  SddmmKey k;
  CHECK(k.to_string() == "sddmm.f32.v4.l32.c1.w4");
  k.value = SddmmValue::BF16;
  k.vec = 1;
  k.chunks = 16;
  k.scale = true;
  CHECK(k.to_string() == "sddmm.bf16.v1.l32.c16.w4.scale");
  CHECK(SddmmKey::parse("sddmm.bf16.v1.l32.c16.w4.scale") == k);
  for (const char* bad : {"sddmm.f32.v2.l8.c1.w4", "sddmm.f32.v4.l64.c1.w4", "sddmm.f32.v4.l32.c8.w4",
                          "sddmm.f32.v4.l8.c3.w4", "sddmm.f32.v4.l8.c1.w3", "sddmm.f64.v4.l8.c1.w4",
                          "sddmm.f32.v4.l8.w4", "sddmm.f32.v4.l8.c1.w4.scale.scale", "spmm.f32.v4.l8.c1.w4"})
    CHECK_THROWS_AS(SddmmKey::parse(bad), UsageError);
  const auto keys = codegen::sddmm_keys();
  CHECK(!keys.empty());
  for (const SddmmKey& key : keys) {
    CAPTURE(key.to_string());
    CHECK(SddmmKey::parse(key.to_string()) == key);
    const codegen::KernelSource ks = codegen::make_source(key);
    REQUIRE(ks.entry_names == std::vector<std::string>{"sddmm"});
    CHECK(ks.name_expressions[0].rfind("dbs::sddmm_csr<", 0) == 0);
  }
}

TEST_CASE("SddmmKeyForKTakesTheFewestLanesThenChunks") {
  // k = 1: one lane; 16 with 4 values a load: 4 lanes; 33 scalars: 32 lanes, 2 chunks; 128 float4:
  // 32 lanes, 1 chunk; 512 float4: 4 chunks; 512 scalars: 16 chunks.
  CHECK(codegen::sddmm_key_for(1, 1, SddmmValue::F32, false, 4).to_string() == "sddmm.f32.v1.l1.c1.w4");
  CHECK(codegen::sddmm_key_for(16, 4, SddmmValue::F32, false, 4).to_string() == "sddmm.f32.v4.l4.c1.w4");
  CHECK(codegen::sddmm_key_for(33, 1, SddmmValue::F16, false, 4).to_string() == "sddmm.f16.v1.l32.c2.w4");
  CHECK(codegen::sddmm_key_for(128, 4, SddmmValue::F32, true, 8).to_string() == "sddmm.f32.v4.l32.c1.w8.scale");
  CHECK(codegen::sddmm_key_for(512, 4, SddmmValue::BF16, false, 4).to_string() == "sddmm.bf16.v4.l32.c4.w4");
  CHECK(codegen::sddmm_key_for(512, 1, SddmmValue::BF16, false, 4).to_string() == "sddmm.bf16.v1.l32.c16.w4");
}

TEST_CASE("SddmmSpecPicksBothKernelsAndTheGrid") {
  const Config defaults{"sddmm", nlohmann::json::object(), ConfigSource::Default, ""};
  SddmmOptions o;
  o.dtype = SpmmDtype::BF16;
  // k = 16: 4 lanes a group with float4, 16 with scalars; 1000 entries in tiles of 8 = 125 groups;
  // 4 warps of 8 groups (float4) = 32 a block: 4 blocks; scalars 4 warps of 2 groups: 16 blocks.
  const auto s = sddmm_detail::sddmm_spec(100, 80, 1000, 16, o, defaults);
  CHECK(s.vec4);
  CHECK(s.key4.to_string() == "sddmm.bf16.v4.l4.c1.w4");
  CHECK(s.key1.to_string() == "sddmm.bf16.v1.l16.c1.w4");
  CHECK(s.grid4 == 4);
  CHECK(s.grid1 == 16);
  CHECK(s.typed.tile == 8);
  const auto odd = sddmm_detail::sddmm_spec(100, 80, 1000, 33, SddmmOptions{}, defaults);
  CHECK_FALSE(odd.vec4);
  CHECK(odd.key1.to_string() == "sddmm.f32.v1.l32.c2.w4");
  CHECK(odd.grid1 == 32);  // 125 groups, 4 a block
  CHECK_THROWS_AS(sddmm_detail::sddmm_spec(10, 10, 10, 0, SddmmOptions{}, defaults), UsageError);
  CHECK_THROWS_AS(sddmm_detail::sddmm_spec(10, 10, 10, 513, SddmmOptions{}, defaults), UsageError);
  const Config bad{"sddmm", {{"warps", 3}}, ConfigSource::Explicit, ""};
  CHECK_THROWS_AS(sddmm_detail::sddmm_spec(10, 10, 10, 8, SddmmOptions{}, bad), UsageError);
}

TEST_CASE("SddmmEntryRowsNameEachEntrysRow") {
  // Rows of 0, 5, 0, 0, 1, 7 entries: row_ptr 0 0 5 5 5 6 13; empty rows hold no entry.
  const std::vector<int32_t> ptr = {0, 0, 5, 5, 5, 6, 13};
  CHECK(sddmm_detail::sddmm_entry_rows(ptr, 13) == std::vector<int32_t>{1, 1, 1, 1, 1, 4, 5, 5, 5, 5, 5, 5, 5});
  CHECK(sddmm_detail::sddmm_entry_rows({0, 0}, 0).empty());
  CHECK(sddmm_detail::sddmm_entry_rows({0}, 0).empty());
}

TEST_CASE("SddmmReferenceOnAHandWorkedPattern") {
  // A = [[0, 2], [0, 0], [3, 0]] (row 1 empty); X rows (1, 2), (0, 0), (-1, 4); Y rows (5, 6), (7, 8).
  CsrMatrix<float> a;
  a.rows = 3;
  a.cols = 2;
  a.row_ptr = {0, 1, 1, 2};
  a.col_idx = {1, 0};
  a.values = {2.0f, 3.0f};
  const std::vector<float> x = {1, 2, 0, 0, -1, 4}, y = {5, 6, 7, 8};
  // entry 0: row 0 . Y row 1 = 7 + 16 = 23; entry 1: row 2 . Y row 0 = -5 + 24 = 19.
  CHECK(reference::sddmm(a, std::span<const float>(x), std::span<const float>(y), 2) == std::vector<double>{23, 19});
  CHECK(reference::sddmm(a, std::span<const float>(x), std::span<const float>(y), 2, true) ==
        std::vector<double>{46, 57});
  CHECK_THROWS_AS(reference::sddmm(a, std::span<const float>(x), std::span<const float>(y), 3), UsageError);
}

// The new modules' sources byte for byte (tests/golden; to update after an intended change, write
// make_source(key).source over the file and review the diff), with their one entry point each.
TEST_CASE("SddmmAndSpmmMaxSourcesMatchGolden") {
  auto golden = [](const std::string& key) {
    std::ifstream in(std::filesystem::path(DBS_SOURCE_DIR) / "tests" / "golden" / (key + ".cu"));
    REQUIRE_MESSAGE(in, key);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  const codegen::KernelSource sd = codegen::make_source(SddmmKey::parse("sddmm.bf16.v4.l8.c1.w4.scale"));
  CHECK(sd.source == golden(sd.key));
  CHECK(sd.name_expressions == std::vector<std::string>{"dbs::sddmm_csr<dbs::ValBF16, 4, 4, 8, 1, true>"});
  const codegen::KernelSource mx = codegen::make_source(codegen::SpmmKey::parse("spmm.csr.v4.l8.w4.r4.max"));
  CHECK(mx.source == golden(mx.key));
  CHECK(mx.name_expressions == std::vector<std::string>{"dbs::csr_spmm_reduce<dbs::ValF32, 4, 4, 8, 4, 2>"});
}

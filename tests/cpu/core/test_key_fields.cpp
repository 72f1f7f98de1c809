// Kernel keys' text, declared as fields (codegen/keys/key_text.hpp): every key of every search
// space keeps its text byte for byte (tests/golden/kernel_keys.txt, written by the hand-written
// parsers the declarations replaced) and parses back to itself; malformed texts are refused with a
// UsageError that names the part; the odd spellings parse always took are still taken.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "codegen/keys/bfs_key.hpp"
#include "codegen/keys/brp_convert_key.hpp"
#include "codegen/keys/csr_view_key.hpp"
#include "codegen/keys/decode_key.hpp"
#include "codegen/keys/key_text.hpp"
#include "codegen/keys/mcl_key.hpp"
#include "codegen/keys/sparse_linear_key.hpp"
#include "codegen/keys/spgemm_key.hpp"
#include "codegen/keys/spmm_key.hpp"
#include "codegen/keys/spmspv_key.hpp"
#include "codegen/keys/spmv_key.hpp"
#include "codegen/keys/triangle_key.hpp"
#include "dbsparse/error.hpp"

using namespace dbsparse;
using namespace dbsparse::codegen;

namespace {

// Appends "<family> <text>" for each key, checking that the text parses back to the key.
template <class K>
void list(std::string& out, const char* family, const std::vector<K>& keys) {
  for (const K& k : keys) {
    const std::string text = k.to_string();
    CAPTURE(text);
    CHECK(K::parse(text) == k);
    CHECK(K::parse(text).to_string() == text);
    out += fmt::format("{} {}\n", family, text);
  }
}

// The UsageError's message, or "" when parse takes the text.
template <class K>
std::string refusal(const std::string& text) {
  try {
    (void)K::parse(text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("EveryKeyOfEverySearchSpaceKeepsItsText") {
  std::string got;
  list(got, "spmv", spmv_search_space());
  list(got, "spmspv", spmspv_search_space(/*include_opt_in=*/true));
  list(got, "bfs", bfs_search_space());
  list(got, "spmm", spmm_search_space());
  list(got, "spgemm", spgemm_search_space());
  list(got, "spgemm_analysis", spgemm_analysis_search_space());
  list(got, "decode", decode_search_space());
  list(got, "sparse_linear", sparse_linear_search_space());
  list(got, "mcl", mcl_search_space());
  list(got, "triangles", triangle_search_space());
  list(got, "csr_view", csr_view_space());
  list(got, "brpconv", brp_convert_keys({ValueType::F32, ValueType::F64}));
  std::ifstream in(std::filesystem::path(DBS_SOURCE_DIR) / "tests" / "golden" / "kernel_keys.txt");
  REQUIRE(in);
  std::string want;
  for (std::string line; std::getline(in, line);)
    if (!line.starts_with("#")) want += line + "\n";
  // The first line that differs, rather than two 20 KB strings.
  auto lines = [](const std::string& s) {
    std::vector<std::string> v;
    std::istringstream in(s);
    for (std::string line; std::getline(in, line);) v.push_back(line);
    return v;
  };
  const auto g = lines(got), w = lines(want);
  for (size_t i = 0; i < std::max(g.size(), w.size()); ++i) {
    CAPTURE(i);
    REQUIRE(i < g.size());
    REQUIRE(i < w.size());
    REQUIRE(g[i] == w[i]);
  }
}

TEST_CASE("MalformedKeysAreRefusedNamingThePart") {
  // (text, a piece of the message that names what is wrong)
  const std::vector<std::pair<std::string, std::string>> spmv = {
      {"", "expected 'spmv', got ''"},
      {"spmv.scalar.f32", "block size part is missing"},
      {"spmv.scalar.f16.b256", "unknown value type 'f16'"},
      {"spmv.scalar.f32.b100", "block size 100: allowed a multiple of 32 in [32, 1024]"},
      {"spmv.scalar.f32.bx", "block size 'bx' is not a number"},
      {"spmv.scalar.f32.b256.l8", "unexpected part 'l8'"},
      {"spmv.vector.f32.b256.l3", "lanes 3"},
      {"spmv.vector.f32.b256", "lanes part is missing"},
      {"spmv.classified.f32.b256.l2.l4.l8.l32.w0", "window 0"},
      {"spmv.vector.f32.b256.l8.w64", "only classified keys take .w<window>"},
      {"spmv.longrow.f32.b256.o64", "only scalar, vector and block keys take .o64"},
      {"spmv.classify.b256.o64", "unexpected part 'o64'"},
      {"spmv.sideways.f32.b256", "unknown strategy 'sideways'"}};
  for (const auto& [text, why] : spmv) {
    CAPTURE(text);
    CHECK(refusal<SpmvKey>(text).find(why) != std::string::npos);
    CHECK(refusal<SpmvKey>(text).starts_with("bad spmv kernel key '" + text + "': "));
  }
  CHECK(refusal<SpmmKey>("spmm.csr.v4.l8.w4.r1").find("rows 'r1' is the default") != std::string::npos);
  CHECK(refusal<SpmmKey>("spmm.brp.f32.f1.g4.w4").find("value type 'f32' is the default") != std::string::npos);
  CHECK(refusal<SpmmKey>("spmm.csr.v4.l16.w4.r4").find("lanes 16 x rows 4") != std::string::npos);
  CHECK(refusal<SpmmKey>("spmm.coo.v1.w8").find("unknown path 'coo' (allowed: brp, csr)") != std::string::npos);
  CHECK(refusal<SpgemmKey>("spgemm.f32.numeric.g1.t1024.l256.b256").find("lanes 'l256' is the default") !=
        std::string::npos);
  CHECK(refusal<SpgemmKey>("spgemm.f32.numeric.g3.t64.b1024").find("unknown table 't64' (allowed: global)") !=
        std::string::npos);
  CHECK(refusal<SpgemmKey>("spgemm.f32.numeric.g4.t64.b1024").find("group 4") != std::string::npos);
  CHECK(refusal<SpmspvKey>("spmspv.auto.f32.plus_times.bs16.t=dense+coo").find("in the order coo+dense+csr+csc") !=
        std::string::npos);
  CHECK(refusal<SpmspvKey>("spmspv.auto.f32.plus_times.bs16.t=ell").find("unknown block type 'ell'") !=
        std::string::npos);
  CHECK(refusal<SpmspvKey>("spmspv.auto.f32.or_and.bs16.t=coo").find("or_and is bfs.*") != std::string::npos);
  CHECK(refusal<BfsKey>("bfs.auto.or_and.w16").find("unknown warps 'w16' (allowed: w8, w32)") != std::string::npos);
  CHECK(refusal<BrpConvertKey>("brpconv.f32.f3.g4").find("f 3: allowed 1, 2, 4, 8") != std::string::npos);
  CHECK(refusal<CsrViewKey>("csr_view.o16").find("unknown offset width 'o16'") != std::string::npos);
  CHECK(refusal<DecodeKey>("decode_linear.colbitmap.f64.w8x8").find("unknown dtype 'f64'") != std::string::npos);
  CHECK(refusal<SparseLinearKey>("sparse_linear.sparsify.f32.b128").find("unknown block 'b128'") != std::string::npos);
  CHECK(refusal<MclKey>("mcl.f32.b25x").find("block 'b25x' is not a number") != std::string::npos);
  CHECK(refusal<TriangleKey>("triangles.b48").find("block 48") != std::string::npos);
  CHECK(refusal<SpgemmAnalysisKey>("spgemm.f32.analysis.b256").find("expected 'analysis', got 'f32'") !=
        std::string::npos);
  // Each family refuses the others' keys.
  for (const char* text : {"spmv.scalar.f32.b256", "spmm.brp.f1.g4.w4", "bfs.auto.or_and.w8", "mcl.f64.b256"}) {
    CAPTURE(text);
    CHECK((refusal<SpmvKey>(text).empty() + refusal<SpmmKey>(text).empty() + refusal<BfsKey>(text).empty() +
           refusal<MclKey>(text).empty() + refusal<SpmspvKey>(text).empty() + refusal<SpgemmKey>(text).empty()) == 1);
  }
}

// What the hand-written parsers took beyond the canonical texts, kept so that no text that was ever
// read (a cache file's name, a tuning row) stops parsing: numbers as std::from_chars reads them
// (leading zeros, "-0"); ".coo=warp" on any spmspv key. The exact words (bfs warps, the
// sparse_linear block) took no other spelling and still take none.
TEST_CASE("OddSpellingsParseAsTheyAlwaysDid") {
  CHECK(SpmvKey::parse("spmv.scalar.f32.b0256").to_string() == "spmv.scalar.f32.b256");
  CHECK(SpmvKey::parse("spmv.classified.f32.b256.l02.l4.l8.l32.w064").to_string() ==
        "spmv.classified.f32.b256.l2.l4.l8.l32.w64");
  CHECK(SpgemmKey::parse("spgemm.f32.symbolic.g-0.t64.l4.b512").to_string() == "spgemm.f32.symbolic.g0.t64.l4.b512");
  CHECK(SpmmKey::parse("spmm.csr.v04.l8.w4.r02").to_string() == "spmm.csr.v4.l8.w4.r2");
  CHECK(MclKey::parse("mcl.f64.b00256") == MclKey{});
  CHECK(BrpConvertKey::parse("brpconv.f32.f01.g4") == BrpConvertKey{});
  CHECK(SpmspvKey::parse("spmspv.push.f32.plus_times.bs16.t=dense.coo=warp").pull_coo == PullCoo::Warp);
  CHECK_THROWS_AS(BfsKey::parse("bfs.auto.or_and.w08"), UsageError);
  CHECK_THROWS_AS(SparseLinearKey::parse("sparse_linear.sparsify.f32.b0256"), UsageError);
  CHECK_THROWS_AS(SpmmKey::parse("spmm.csr.v4.l8.w4.r01"), UsageError);  // rows 1 is never written
}

namespace {

// A key declared from scratch: what a new kernel family writes to get its text and its parser.
struct ToyKey {
  ValueType value = ValueType::F32;
  int block = 256;
  int lanes = 0;  // optional: no part while 0
  bool wide = false;
  auto operator<=>(const ToyKey&) const = default;
};

[[noreturn]] void toy_fail(std::string_view text, const std::string& why) {
  throw UsageError(fmt::format("bad toy key '{}': {}", text, why));
}

const KeyText<ToyKey>& toy_text() {
  static const KeyText<ToyKey> t(
      {
          word("toy"),
          choice("value type", &ToyKey::value, {ValueType::F32, ValueType::F64}),
          number("block", 'b', &ToyKey::block).allow(block_threads()),
          number("lanes", 'l', &ToyKey::lanes).allow(power_of_two_in(2, 32)).optional(0),
          flag("wide", &ToyKey::wide, true).when(is(&ToyKey::value, {ValueType::F64})),
      },
      toy_fail);
  return t;
}

}  // namespace

TEST_CASE("KeyTextDerivesTextAndParserFromTheDeclaredParts") {
  const auto& t = toy_text();
  CHECK(t.print(ToyKey{}) == "toy.f32.b256");
  CHECK(t.print(ToyKey{ValueType::F64, 128, 8, true}) == "toy.f64.b128.l8.wide");
  CHECK(t.print(ToyKey{ValueType::F32, 128, 8, true}) == "toy.f32.b128.l8");  // wide: f64 keys only
  for (const ToyKey& k : {ToyKey{}, ToyKey{ValueType::F64, 128, 8, true}, ToyKey{ValueType::F64, 64, 0, true}})
    CHECK(t.parse(t.print(k)) == k);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"toy.f32", "the block part is missing"},
      {"toy.f16.b256", "unknown value type 'f16' (allowed: f32, f64)"},
      {"toy.f32.b100", "block 100: allowed a multiple of 32 in [32, 1024]"},
      {"toy.f32.b256.l0", "lanes 0: allowed a power of two in [2, 32]"},
      {"toy.f32.b256.l8.x", "unexpected part 'x'"},
      {"toy.f32.b256.wide", "unexpected part 'wide'"},
      {"toy.f64.b256.wide.l8", "unexpected part 'l8'"},
      {"top.f32.b256", "expected 'toy', got 'top'"}};
  for (const auto& [text, why] : bad) {
    CAPTURE(text);
    std::string what;
    try {
      (void)t.parse(text);
    } catch (const UsageError& e) {
      what = e.what();
    }
    CHECK(what == fmt::format("bad toy key '{}': {}", text, why));
  }
}

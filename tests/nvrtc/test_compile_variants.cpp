// Every template variant in the search spaces, and every default-reachable one, compiles to a cubin
// for sm_80 and sm_90. No GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <future>
#include <regex>
#include <set>
#include <thread>
#include <vector>

#include "codegen/keys/brp_convert_key.hpp"
#include "codegen/keys/decode_key.hpp"
#include "codegen/keys/mcl_key.hpp"
#include "codegen/keys/sddmm_key.hpp"
#include "codegen/keys/triangle_key.hpp"
#include "codegen/keys/sparse_linear_key.hpp"
#include "codegen/keys/spgemm_key.hpp"
#include "codegen/keys/spmm_key.hpp"
#include "codegen/keys/spmv_key.hpp"
#include "codegen/compile_pool.hpp"
#include "codegen/nvrtc_compiler.hpp"
#include "dbsparse/error.hpp"
#include "test_support.hpp"
#include "tools/ops/registry.hpp"

using namespace dbsparse;
using namespace dbsparse::codegen;

TEST_CASE("EveryVariantOfEveryOpCompilesForSm80AndSm90") {
  // Compiled on as many threads as there are cores; results are checked on this thread.
  struct Job {
    KernelSource ks;
    std::string arch;
    std::future<CompiledKernel> result;
  };
  std::vector<Job> jobs;
  std::set<std::string> keys;
  // Every variant, and the default-reachable ones (what `precompile --aot` ships) that the search
  // spaces leave out: a fitted SpGEMM table, a 64-bit-offset SpMV vector kernel.
  for (const auto* op : tools::ops()) {
    auto sources = op->variants(/*opt_in=*/true);
    for (auto& ks : tools::default_variants(*op)) sources.push_back(std::move(ks));
    for (const auto& ks : sources)
      if (keys.insert(ks.key).second)
        for (const char* arch : {"sm_80", "sm_90"}) jobs.push_back(Job{ks, arch, {}});
  }
  const size_t workers = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<size_t> next{0};
  std::vector<std::promise<CompiledKernel>> promises(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].result = promises[i].get_future();
  std::vector<std::thread> pool;
  for (size_t w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < jobs.size();) {
        try {
          promises[i].set_value(compile_to_cubin(jobs[i].ks, jobs[i].arch));
        } catch (...) {
          promises[i].set_exception(std::current_exception());
        }
      }
    });
  for (auto& t : pool) t.join();
  for (auto& job : jobs) {
    CAPTURE(job.arch);
    CAPTURE(job.ks.key);
    CompiledKernel k;
    REQUIRE_NOTHROW(k = job.result.get());
    REQUIRE(k.cubin.size() > 4);
    CHECK(std::string(k.cubin.begin() + 1, k.cubin.begin() + 4) == "ELF");
    REQUIRE(k.lowered_names.size() == job.ks.name_expressions.size());
    for (size_t n = 0; n < k.lowered_names.size(); ++n) {
      CHECK(k.lowered_names[n].first == job.ks.name_expressions[n]);
      CHECK(k.lowered_names[n].second.rfind("_Z", 0) == 0);  // a mangled C++ name
    }
  }
  MESSAGE(jobs.size() << " kernels compiled");
}

TEST_CASE("CompileErrorCarriesKeyOptionsLogAndSource") {
  KernelSource ks;
  ks.key = "test.broken";
  ks.source = "__global__ void k() { this is not cuda; }\n";
  ks.options = {"-std=c++17"};
  try {
    compile_to_cubin(ks, "sm_90");
    FAIL("compile should have failed");
  } catch (const CompileError& e) {
    CHECK(e.key() == "test.broken");
    CHECK(e.options().find("--gpu-architecture=sm_90") != std::string::npos);
    CHECK(!e.log().empty());
    CHECK(std::string(e.what()).find("test.broken") != std::string::npos);
    std::ifstream dumped(e.source_path());
    std::string first;
    std::getline(dumped, first);
    CHECK(first == "__global__ void k() { this is not cuda; }");
  }
}

TEST_CASE("UnsupportedArchIsAClearError") {
  auto ks = make_source(SpmvKey{});
  CHECK_THROWS_AS(compile_to_cubin(ks, "sm_12"), UsageError);
}

// The decode op's variants (the decoding kernels in each dtype, and DB-Decoding's sparsifier) are
// compiled by EveryVariantOfEveryOpCompilesForSm80AndSm90; here, without compiling them again, that
// the op lists them all and that each declares the entry points its plans fetch by role.
TEST_CASE("DecodeOpListsEveryDecodingAndSparsifierVariantWithItsEntryPoints") {
  std::vector<std::string> variants;
  for (const auto& ks : tools::find_op("decode").variants(false)) variants.push_back(ks.key);
  for (const auto& key : decode_search_space()) {
    CAPTURE(key.to_string());
    CHECK(std::find(variants.begin(), variants.end(), key.to_string()) != variants.end());
    CHECK(DecodeKey::parse(key.to_string()) == key);
    const KernelSource ks = make_source(key);
    // columns, top-k, three row blocks, ring, dense columns; and in 16 bits the dense (mma) path
    // and the tiles paths' eight variants (a block or a warp a tile, 4 or 8 warps, 2 or 3 stages).
    std::vector<std::string> roles{"columns",      "topk", "row_blocks_1", "row_blocks_2",
                                   "row_blocks_4", "ring", "dense_columns"};
    if (key.dtype != DecodeDtype::F32) {
      roles.push_back("dense");
      for (bool per_warp : {false, true})
        for (int warps : {4, 8})
          for (int stages : {2, 3}) roles.push_back(decode_tiles_entry(warps, stages, per_warp));
    }
    CHECK(ks.entry_names == roles);
    CHECK(ks.name_expressions.size() == roles.size());
  }
  for (const auto& key : sparse_linear_search_space()) {
    CAPTURE(key.to_string());
    CHECK(std::find(variants.begin(), variants.end(), key.to_string()) != variants.end());
    CHECK(SparseLinearKey::parse(key.to_string()) == key);
    CHECK(make_source(key).entry_names == std::vector<std::string>{"sparsify"});
  }
}

// spgemm is an op of the registry: EveryVariantOfEveryOpCompilesForSm80AndSm90 compiles its keys.
TEST_CASE("SpgemmKeysOfTheSearchSpaceRoundTrip") {
  const auto space = spgemm_search_space();
  CHECK(space.size() >= 4 * 4);
  for (const auto& key : space) {
    CAPTURE(key.to_string());
    CHECK(SpgemmKey::parse(key.to_string()) == key);
  }
  // The defaults are in the space, and a bad key says what is wrong.
  for (int g = 0; g < 4; ++g)
    CHECK(std::find(space.begin(), space.end(), spgemm_key(ValueType::F64, SpgemmPhase::Numeric, g, SpgemmConfig{})) !=
          space.end());
  CHECK_THROWS_AS(SpgemmKey::parse("spgemm.f32.symbolic.g0.t63.l4.b512"), UsageError);
  CHECK_THROWS_AS(SpgemmKey::parse("spgemm.f32.numeric.g3.t64.b1024"), UsageError);
  CHECK_THROWS_AS(SpgemmKey::parse("spgemm.f16.numeric.g1.t1024.b256"), UsageError);
  // Groups 1-2 name their lanes only when a row has fewer threads than the block.
  CHECK(SpgemmKey::parse("spgemm.f32.numeric.g1.t1024.l32.b256").lanes == 32);
  CHECK(SpgemmKey::parse("spgemm.f32.numeric.g1.t1024.b256").lanes == 256);
  CHECK_THROWS_AS(SpgemmKey::parse("spgemm.f32.numeric.g1.t1024.l256.b256"), UsageError);
  CHECK_THROWS_AS(SpgemmKey::parse("spgemm.f32.numeric.g3.global.l32.b256"), UsageError);
  SpgemmConfig warp_rows;
  warp_rows.lanes1 = 32;
  warp_rows.block1 = 256;
  CHECK(spgemm_key(ValueType::F32, SpgemmPhase::Numeric, 1, warp_rows).to_string() ==
        "spgemm.f32.numeric.g1.t1024.l32.b256");
}

// The analysis kernels (templates/spgemm/spgemm_analysis.cuh) are part of the spgemm op's variants too;
// this compiles them on their own, so a break there is named as theirs.
TEST_CASE("SpgemmAnalysisKernelsCompileForSm80AndSm90AndKeysRoundTrip") {
  const auto space = spgemm_analysis_search_space();
  CHECK(std::find(space.begin(), space.end(), SpgemmAnalysisKey{256}) != space.end());  // the plan's
  for (const auto& key : space) {
    CAPTURE(key.to_string());
    CHECK(SpgemmAnalysisKey::parse(key.to_string()) == key);
    const KernelSource ks = make_source(key);
    REQUIRE(ks.name_expressions.size() == 9);
    for (const char* arch : {"sm_80", "sm_90"}) {
      CAPTURE(arch);
      CompiledKernel k;
      REQUIRE_NOTHROW(k = compile_to_cubin(ks, arch));
      REQUIRE(k.lowered_names.size() == 9);
      for (const auto& [expr, lowered] : k.lowered_names) CHECK(lowered.rfind("_Z", 0) == 0);
    }
  }
  CHECK(SpgemmAnalysisKey{}.to_string() == "spgemm.analysis.b256");
  for (const char* bad :
       {"spgemm.analysis.b250", "spgemm.analysis", "spgemm.analysis.b2048", "spgemm.f32.analysis.b256"})
    CHECK_THROWS_AS(SpgemmAnalysisKey::parse(bad), UsageError);
}

// SpMM is not an op of the registry yet. TF32 mma needs sm_80, so both archs are the floor.
TEST_CASE("SpmmKernelsCompileForSm80AndSm90AndKeysRoundTrip") {
  size_t compiled = 0;
  for (const auto& key : spmm_search_space()) {
    if (key.value != SpmmValue::F32) continue;  // SpmmHalfKernelsCompileForSm80AndSm90AndKeysRoundTrip
    CAPTURE(key.to_string());
    CHECK(SpmmKey::parse(key.to_string()) == key);
    const KernelSource ks = make_source(key);
    for (const char* arch : {"sm_80", "sm_90"}) {
      CAPTURE(arch);
      CompiledKernel k;
      REQUIRE_NOTHROW(k = compile_to_cubin(ks, arch));
      REQUIRE(k.lowered_names.size() == ks.name_expressions.size());
      for (const auto& [expr, lowered] : k.lowered_names) CHECK(lowered.rfind("_Z", 0) == 0);
      ++compiled;
    }
  }
  CHECK(SpmmKey::parse("spmm.brp.f1.g4.w4").to_string() == "spmm.brp.f1.g4.w4");
  CHECK(SpmmKey::parse("spmm.csr.v4.l8.w8").to_string() == "spmm.csr.v4.l8.w8");
  for (const char* bad :
       {"spmm.brp.f3.g4.w4",     "spmm.brp.f1.g16.w4",        "spmm.brp.f1.g4",           "spmm.csr.v2.l8.w8",
        "spmm.csr.v4.l8.w3",     "spmm.csr.v4.l3.w8",         "spmm.csr.v4.l64.w8",       "spmm.csr.v4.w8",
        "spmm.coo.v1.w8",        "spmv.brp.f1.g4.w4",         "spmm.brp.f1.g4.wx",        "spmm.csr.v4.l8.w4.r1",
        "spmm.csr.v4.l8.w4.r3",  "spmm.csr.v4.l16.w4.r4",     "spmm.csr.v4.l8.w4.r4.r2",  "spmm.brp.f1.g4.w4.r2",
        "spmm.brp.f1.g4.w4.o64", "spmm.csr.f16.v4.l8.w4.o64", "spmm.csr.v4.l8.w4.o64.r4", "spmm.o64"})
    CHECK_THROWS_AS(SpmmKey::parse(bad), UsageError);
  // 64-bit row offsets: ".o64" last, one kernel (csr_spmm_rows64), f32 CSR only.
  {
    const SpmmKey k = SpmmKey::parse("spmm.csr.v4.l8.w4.r4.o64");
    CHECK(k.offsets64);
    CHECK(k.rows == 4);
    CHECK(k.to_string() == "spmm.csr.v4.l8.w4.r4.o64");
    REQUIRE(make_source(k).name_expressions.size() == 1);
    CHECK(make_source(k).name_expressions[0] == "dbs::csr_spmm_rows64<dbs::ValF32, 4, 4, 8, 4>");
  }
  // Rows a warp (SpmmConfig::csr_rows_per_warp): named past 1 only, and compiled (the groups'
  // masked shuffles) for f32 and a 16-bit type, with the pieces kernel at one row a warp.
  for (const char* text : {"spmm.csr.v4.l8.w4.r4", "spmm.csr.v4.l8.w4.r2", "spmm.csr.v1.l16.w8.r2",
                           "spmm.csr.f16.v4.l8.w4.r4", "spmm.csr.bf16.v1.l8.w2.r4"}) {
    CAPTURE(text);
    const SpmmKey key = SpmmKey::parse(text);
    CHECK(key.to_string() == text);
    CHECK(key.rows > 1);
    CompiledKernel k;
    REQUIRE_NOTHROW(k = compile_to_cubin(make_source(key), "sm_90"));
    CHECK(k.lowered_names.size() == make_source(key).name_expressions.size());
    ++compiled;
  }
  MESSAGE(compiled << " spmm modules compiled");
}

// The f16 and bf16 SpMM keys: every one in the search space round-trips and names its value type
// after the path; a few per type (g = 1, padded to k16, and g = 8; CSR) compile for sm_80 and
// sm_90 (mma.m16n8k16 .bf16 and cvt.rn.bf16.f32 need sm_80). Every key is compiled for sm_90 by
// EveryVariantOfEveryOpCompiles already: compiling all of them twice more cost CI 10 minutes.
TEST_CASE("SpmmHalfKernelsCompileForSm80AndSm90AndKeysRoundTrip") {
  std::vector<std::pair<KernelSource, std::string>> jobs;
  size_t f16 = 0, bf16 = 0;
  for (const auto& key : spmm_search_space()) {
    if (key.value == SpmmValue::F32) continue;
    CAPTURE(key.to_string());
    CHECK(SpmmKey::parse(key.to_string()) == key);
    const std::string text = key.to_string();
    CHECK(text.rfind(key.path == SpmmKernelPath::Brp ? "spmm.brp." : "spmm.csr.", 0) == 0);
    CHECK(text.find(key.value == SpmmValue::F16 ? ".f16." : ".bf16.") == 8);
    (key.value == SpmmValue::F16 ? f16 : bf16)++;
    const bool sample = key.path == SpmmKernelPath::Brp
                            ? key.warps == 8 && ((key.f == 1 && key.g == 1) || (key.f == 8 && key.g == 8))
                            : key.vec == 4 && (key.lanes == 8 || key.lanes == 32) && key.warps == 4;
    if (sample)
      for (const char* arch : {"sm_80", "sm_90"}) jobs.emplace_back(make_source(key), arch);
  }
  // BRP: 4 f x 4 g x 4 warps; CSR: 2 vec x 6 lanes x 3 warps (SpmmConfig::csr_warps 2, 4, 8), and
  // at 4 warps 2 vec x 9 (lanes, rows a warp) with lanes x rows <= 32 (rows 2 or 4).
  CHECK(f16 == 64 + 36 + 18);
  CHECK(bf16 == 64 + 36 + 18);
  std::vector<std::future<CompiledKernel>> results(jobs.size());
  std::vector<std::promise<CompiledKernel>> promises(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) results[i] = promises[i].get_future();
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (size_t w = 0; w < std::max(1u, std::thread::hardware_concurrency()); ++w)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < jobs.size();) {
        try {
          promises[i].set_value(compile_to_cubin(jobs[i].first, jobs[i].second));
        } catch (...) {
          promises[i].set_exception(std::current_exception());
        }
      }
    });
  for (auto& t : pool) t.join();
  for (size_t i = 0; i < jobs.size(); ++i) {
    CAPTURE(jobs[i].first.key);
    CAPTURE(jobs[i].second);
    CompiledKernel k;
    REQUIRE_NOTHROW(k = results[i].get());
    REQUIRE(k.lowered_names.size() == jobs[i].first.name_expressions.size());
    for (const auto& [expr, lowered] : k.lowered_names) CHECK(lowered.rfind("_Z", 0) == 0);
  }
  CHECK(SpmmKey::parse("spmm.brp.f16.f1.g4.w8").to_string() == "spmm.brp.f16.f1.g4.w8");
  CHECK(SpmmKey::parse("spmm.csr.bf16.v4.l8.w8").value == SpmmValue::BF16);
  CHECK(SpmmKey{SpmmKernelPath::Brp, 2, 1, 4, 1, 32, SpmmValue::BF16}.to_string() == "spmm.brp.bf16.f2.g1.w4");
  for (const char* bad : {"spmm.brp.f32.f1.g4.w4", "spmm.brp.f8.f1.g4.w4", "spmm.brp.f16.f1.g4",
                          "spmm.csr.tf32.v4.l8.w8", "spmm.brp.f16.f3.g4.w4", "spmm.csr.bf16.v2.l8.w8"})
    CHECK_THROWS_AS(SpmmKey::parse(bad), UsageError);
  MESSAGE(jobs.size() << " f16 / bf16 spmm modules compiled");
}

// SpMM's reductions max and min (spmm_reduce_keys): every key round-trips; a sample per value
// type and op (float4 with 4 rows a warp, scalars across 32 lanes, float4 across 32 lanes) compiles
// for sm_90, the float4 one for sm_80 too. The default-reachable ones compile in
// EveryVariantOfEveryOpCompilesForSm80AndSm90 (spmm_default_variants).
TEST_CASE("SpmmReduceKernelsCompileForSm80AndSm90AndKeysRoundTrip") {
  size_t compiled = 0, listed = 0;
  for (const auto& key : spmm_reduce_keys()) {
    CAPTURE(key.to_string());
    CHECK(SpmmKey::parse(key.to_string()) == key);
    ++listed;
    const bool sample = (key.vec == 4 && key.lanes == 8 && key.rows == 4) ||
                        (key.vec == 1 && key.lanes == 32 && key.rows == 1) ||
                        (key.vec == 4 && key.lanes == 32 && key.rows == 1);
    if (!sample) continue;
    const KernelSource ks = make_source(key);
    for (const char* arch : {"sm_90", "sm_80"}) {
      if (std::string(arch) == "sm_80" && !(key.vec == 4 && key.lanes == 8)) continue;
      CAPTURE(arch);
      CompiledKernel k;
      REQUIRE_NOTHROW(k = compile_to_cubin(ks, arch));
      REQUIRE(k.lowered_names.size() == 1);
      for (const auto& [expr, lowered] : k.lowered_names) CHECK(lowered.rfind("_Z", 0) == 0);
      ++compiled;
    }
  }
  // 3 types x 2 ops x 2 vec x 15 (lanes, rows a warp) with lanes x rows <= 32.
  CHECK(listed == 3 * 2 * 2 * 15);
  MESSAGE(compiled << " spmm reduce modules compiled");
}

// SDDMM's kernels (sddmm_keys: every shape a plan takes for k in 1 .. 512): each compiles for
// sm_90, and the scaled f32 and bf16 float4 ones for sm_80 too.
TEST_CASE("SddmmKernelsCompileForSm80AndSm90AndKeysRoundTrip") {
  size_t compiled = 0;
  for (const auto& key : sddmm_keys()) {
    CAPTURE(key.to_string());
    CHECK(SddmmKey::parse(key.to_string()) == key);
    const KernelSource ks = make_source(key);
    for (const char* arch : {"sm_90", "sm_80"}) {
      if (std::string(arch) == "sm_80" && !(key.scale && key.vec == 4 && key.value != SddmmValue::F16)) continue;
      CAPTURE(arch);
      CompiledKernel k;
      REQUIRE_NOTHROW(k = compile_to_cubin(ks, arch));
      REQUIRE(k.lowered_names.size() == 1);
      CHECK(k.lowered_names.begin()->second.rfind("_Z", 0) == 0);
      ++compiled;
    }
  }
  MESSAGE(compiled << " sddmm modules compiled");
}

// MCL's kernels are not an op of the registry: every key, both archs, all eleven entry points.
TEST_CASE("MclKernelsCompileForSm80AndSm90AndKeysRoundTrip") {
  const auto space = mcl_search_space();
  CHECK(std::find(space.begin(), space.end(), MclKey{ValueType::F64, 256}) != space.end());  // the library's
  CHECK(std::find(space.begin(), space.end(), MclKey{ValueType::F32, 256}) != space.end());
  for (const auto& key : space) {
    CAPTURE(key.to_string());
    CHECK(MclKey::parse(key.to_string()) == key);
    const KernelSource ks = make_source(key);
    for (const char* arch : {"sm_80", "sm_90"}) {
      CAPTURE(arch);
      CompiledKernel k;
      REQUIRE_NOTHROW(k = compile_to_cubin(ks, arch));
      REQUIRE(k.lowered_names.size() == 11);
      for (size_t n = 0; n < 11; ++n) {
        CHECK(k.lowered_names[n].first == ks.name_expressions[n]);
        CHECK(k.lowered_names[n].second.rfind("_Z", 0) == 0);
      }
    }
  }
}

// Triangle counting's kernels (an application, not an op of the registry): every key, both archs,
// the three entry points; and the key text.
TEST_CASE("TriangleKernelsCompileForSm80AndSm90AndKeysRoundTrip") {
  for (const auto& key : triangle_search_space()) {
    CAPTURE(key.to_string());
    CHECK(TriangleKey::parse(key.to_string()) == key);
    const KernelSource ks = make_source(key);
    for (const char* arch : {"sm_80", "sm_90"}) {
      CAPTURE(arch);
      CompiledKernel k;
      REQUIRE_NOTHROW(k = compile_to_cubin(ks, arch));
      REQUIRE(k.lowered_names.size() == 3);
    }
  }
  CHECK(TriangleKey{}.to_string() == "triangles.b256");
  for (const char* bad : {"triangles", "triangles.b48", "triangles.b2048", "triangle.b256", "triangles.b256.x"})
    CHECK_THROWS_AS(TriangleKey::parse(bad), UsageError);
}

// The GPU conversion CSR -> BRP: keys round trip and bad ones are refused; the f32 keys are spmm
// variants (EveryVariantOfEveryOp compiles them for sm_80 and sm_90), the f64 ones compile here
// for sm_90.
TEST_CASE("BrpConvertKernelsCompileForSm90AndKeysRoundTrip") {
  const auto f32 = brp_convert_keys({ValueType::F32});
  CHECK(f32.size() == 16);
  std::vector<std::string> spmm_variants;
  for (const auto& ks : tools::find_op("spmm").variants(false)) spmm_variants.push_back(ks.key);
  for (const auto& key : f32) {
    CAPTURE(key.to_string());
    CHECK(BrpConvertKey::parse(key.to_string()) == key);
    CHECK(std::find(spmm_variants.begin(), spmm_variants.end(), key.to_string()) != spmm_variants.end());
  }
  for (const auto& key : brp_convert_keys({ValueType::F64})) {
    CAPTURE(key.to_string());
    CHECK(BrpConvertKey::parse(key.to_string()) == key);
    const KernelSource ks = make_source(key);
    const CompiledKernel k = compile_to_cubin(ks, "sm_90");
    REQUIRE(k.lowered_names.size() == 8);
    for (const auto& [expr, lowered] : k.lowered_names) CHECK(lowered.rfind("_Z", 0) == 0);
  }
  CHECK(BrpConvertKey{ValueType::F64, 8, 2}.to_string() == "brpconv.f64.f8.g2");
  CHECK_THROWS_AS(BrpConvertKey::parse("brpconv.f32.f3.g4"), UsageError);
  CHECK_THROWS_AS(BrpConvertKey::parse("brpconv.f16.f1.g4"), UsageError);
  CHECK_THROWS_AS(BrpConvertKey::parse("brpconv.f32.f1"), UsageError);
}

// `dbsparse precompile --resources`: ptxas's report for every kernel of a variant, named by the
// name expression it came from (what the next change can be checked against where no GPU is lent).
// The BFS search is bounded to 64 registers a thread (its __launch_bounds__ asks for 32 warps an SM).
TEST_CASE("PrecompileResourcesReportsEveryKernelsRegistersAndSpills") {
  // The cache is the tier's own (ctest sets DBSPARSE_CACHE_DIR).
  const auto [rc, out] = dbs_test::run_tool("dbsparse", "precompile --arch sm_90 --op bfs --resources");
  CAPTURE(out);
  REQUIRE(rc == 0);
  for (const char* kernel :
       {"dbs::bfs_search<8>", "dbs::bfs_search<32>", "dbs::bfs_dense_update<8>", "dbs::bfs_check_view<long long>"})
    CHECK(out.find(kernel) != std::string::npos);
  size_t lines = 0, at = 0;
  while ((at = out.find("dbs::bfs_search<", at)) != std::string::npos) {
    const size_t eol = out.find('\n', at);
    const std::string line = out.substr(at, eol - at);
    std::smatch m;
    REQUIRE(std::regex_search(line, m, std::regex(R"(Used (\d+) registers)")));
    CHECK(std::stoi(m.str(1)) > 0);
    CHECK(std::stoi(m.str(1)) <= 64);  // the launch bound's limit
    CHECK(line.find("0 bytes spill stores") != std::string::npos);
    ++lines;
    at = eol;
  }
  CHECK(lines == 12);  // 3 directions x 2 block sizes x 2 offset widths
}

// The pool (precompile, dbtune's kernel pass): each variant reported once, its kernel what a plain
// get() of a fresh cache on the same directory reads back; stop() leaves the rest unstarted; a
// failing variant is reported, not thrown.
TEST_CASE("CacheAllOnSeveralThreadsMatchesSequentialGets") {
  const auto dir = dbs_test::temp_dir("compile-pool");
  const auto sources = tools::find_op("bfs").variants(/*opt_in=*/false);
  REQUIRE(sources.size() >= 4);
  std::vector<int> seen(sources.size(), 0);
  std::vector<std::vector<char>> cubins(sources.size());
  {
    KernelCache pooled(dir.string());
    cache_all(pooled, sources, "sm_90", 3, [&](const PoolOutcome& o) {
      REQUIRE(o.index < sources.size());
      ++seen[o.index];
      CHECK(o.error.empty());
      if (o.kernel.kernel) cubins[o.index] = o.kernel.kernel->cubin;
    });
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  KernelCache fresh(dir.string());
  for (size_t i = 0; i < sources.size(); ++i) {
    const CachedKernel k = fresh.get(sources[i], "sm_90");
    CHECK(k.origin == CacheOrigin::Disk);
    CHECK(k.kernel->cubin == cubins[i]);
  }
  // Stopped after the first report, one worker: exactly one variant.
  int reports = 0;
  KernelCache memory_only(dir.string(), /*persistent=*/false);
  cache_all(
      memory_only, sources, "sm_90", 1, [&](const PoolOutcome&) { ++reports; }, [&] { return reports > 0; });
  CHECK(reports == 1);
  // An arch NVRTC refuses: every variant reported with its error.
  std::vector<std::string> errors;
  cache_all(memory_only, {sources[0], sources[1]}, "sm_12", 2,
            [&](const PoolOutcome& o) { errors.push_back(o.error); });
  REQUIRE(errors.size() == 2);
  for (const auto& e : errors) CHECK(e.find("sm_12") != std::string::npos);
  CHECK(pool_threads(0, 1) == 1);
  CHECK(pool_threads(5, 3) == 3);
  CHECK(pool_threads(2, 100) == 2);
}

// Gets of one key on several threads at once (a pool precompiling what a plan asks for): one
// compile, the others wait for it and receive the same kernel; an arch NVRTC refuses throws in
// every waiter too.
TEST_CASE("ConcurrentGetsOfOneKeyCompileItOnce") {
  const auto sources = tools::find_op("bfs").variants(/*opt_in=*/false);
  REQUIRE(!sources.empty());
  KernelCache cache("", /*persistent=*/false, {});
  constexpr int kThreads = 4;
  std::vector<std::future<CachedKernel>> got;
  for (int t = 0; t < kThreads; ++t)
    got.push_back(std::async(std::launch::async, [&] { return cache.get(sources[0], "sm_90"); }));
  std::vector<CachedKernel> ks;
  for (auto& f : got) ks.push_back(f.get());
  const CacheStats st = cache.stats();
  CHECK(st.compiles == 1);
  CHECK(st.inflight_waits + st.memory_hits == kThreads - 1);
  for (const auto& k : ks) CHECK(k.kernel == ks[0].kernel);
  CHECK(std::count_if(ks.begin(), ks.end(), [](const CachedKernel& k) { return k.origin == CacheOrigin::Compiled; }) ==
        1);
  std::vector<std::future<CachedKernel>> bad;
  for (int t = 0; t < kThreads; ++t)
    bad.push_back(std::async(std::launch::async, [&] { return cache.get(sources[1], "sm_12"); }));
  for (auto& f : bad) CHECK_THROWS(f.get());
  CHECK(cache.stats().compiles == 1);
}

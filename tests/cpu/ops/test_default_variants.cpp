// Each op's default-reachable variants (OpDescriptor::default_variants: what `precompile --aot`
// ships): unique keys, each entry point named by a role, the kernels the default configs give by
// hand (SpmvConfig, SpmmConfig, SpgemmConfig defaults) present, and tuned-only choices absent.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include <sstream>

#include "test_support.hpp"
#include "tools/ops/registry.hpp"

using namespace dbsparse;

namespace {
std::set<std::string> default_keys(const std::string& op) {
  std::set<std::string> keys;
  for (const auto& ks : tools::default_variants(tools::find_op(op))) {
    CAPTURE(ks.key);
    CHECK(keys.insert(ks.key).second);
    CHECK(ks.entry_names.size() == ks.name_expressions.size());
    CHECK(!ks.name_expressions.empty());
  }
  return keys;
}
bool any_contains(const std::set<std::string>& keys, const std::string& part) {
  for (const auto& k : keys)
    if (k.find(part) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST_CASE("DefaultVariantsHoldTheDefaultConfigsKernelsAndNoTunedOnlyOnes") {
  // SpMV: classified with vector bins of 2, 4, 8 and 32 lanes in 256-thread blocks, both value
  // types; the classifier; the degree order's gather; the 64-bit view's check.
  const auto spmv = default_keys("spmv");
  for (const char* k : {"spmv.classified.f32.b256.l2.l4.l8.l32", "spmv.classified.f64.b256.l2.l4.l8.l32",
                        "spmv.classify.b256", "spmv.gather.f32.b256", "spmv.gather.f64.b256", "csr_view.o64"})
    CHECK_MESSAGE(spmv.count(k) == 1, k);
  CHECK_FALSE(any_contains(spmv, ".b128"));  // other block sizes are tuned choices
  CHECK_FALSE(any_contains(spmv, ".b512"));

  // SpMM: the CSR kernel with 4 warps at N = 128 (32 lanes of float4) and at odd N (32 lanes of one
  // value); the condensed path's module (f 1, g 4, 8 warps) in every value type.
  const auto spmm = default_keys("spmm");
  for (const char* k : {"spmm.csr.v4.l32.w4", "spmm.csr.v1.l32.w4", "spmm.brp.f1.g4.w8", "spmm.brp.f16.f1.g4.w8",
                        "spmm.brp.bf16.f1.g4.w8", "spmm.csr.f16.v4.l32.w4"})
    CHECK_MESSAGE(spmm.count(k) == 1, k);
  CHECK_FALSE(any_contains(spmm, ".w2"));   // csr_warps 2 is a tuned choice
  CHECK_FALSE(any_contains(spmm, ".f2."));  // BRP's other f: not auto's by default
  // Max and min (SpmmOptions::reduce) at the CSR defaults' lanes and rows a warp, every type.
  for (const char* k : {"spmm.csr.v4.l32.w4.max", "spmm.csr.bf16.v1.l32.w4.min", "spmm.csr.f16.v4.l32.w4.max"})
    CHECK_MESSAGE(spmm.count(k) == 1, k);
  CHECK_FALSE(any_contains(spmm, ".mean"));    // the mean runs the sum's modules
  CHECK_FALSE(any_contains(spmm, ".w8.max"));  // the relu pass's module is the sum's alone
  size_t sums = 0;
  for (const auto& k : spmm)
    if (k.find(".max") == std::string::npos && k.find(".min") == std::string::npos) ++sums;
  CHECK(sums < tools::find_op("spmm").variants(/*opt_in=*/true).size());

  // SpGEMM: the defaults' own tables (t0 64, t1 1024, t2 16384) and the global group, both phases
  // and value types; a fitted table below them; no other block size of group 1.
  const auto spgemm = default_keys("spgemm");
  for (const char* k : {"spgemm.f32.symbolic.g0.t64.l4.b512", "spgemm.f32.numeric.g1.t1024.l32.b64",
                        "spgemm.f64.numeric.g2.t16384.b1024", "spgemm.f64.symbolic.g3.global.b1024",
                        "spgemm.f32.numeric.g1.t256.l32.b64", "spgemm.analysis.b256"})
    CHECK_MESSAGE(spgemm.count(k) == 1, k);
  CHECK_FALSE(any_contains(spgemm, ".g1.t1024.l32.b256"));

  // Ops without a derivation of their own ship every variant of variants(false).
  for (const char* op : {"spmspv", "bfs", "decode"})
    CHECK(default_keys(op).size() == tools::find_op(op).variants(/*opt_in=*/false).size());
}

// `precompile --aot`'s own set (tune): the defaults plus every variant dbtune's searches reach for the
// ops it tunes by default, so a fresh machine's dbtune compiles none of them.
TEST_CASE("AotTuneSetHoldsEveryVariantDbtunesSearchesReach") {
  const auto [rc, out] = dbs_test::run_tool("dbsparse", "precompile --list --variants tune");
  REQUIRE(rc == 0);
  std::set<std::string> listed;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) CHECK(listed.insert(line).second);  // each key once
  size_t searched = 0;
  for (const auto* op : tools::ops()) {
    for (const auto& ks : tools::default_variants(*op)) CHECK(listed.count(ks.key) == 1);
    if (!op->tuned_by_default) continue;
    for (const auto& ks : op->variants(/*opt_in=*/false)) {
      CAPTURE(ks.key);
      CHECK(listed.count(ks.key) == 1);
      ++searched;
    }
  }
  CHECK(searched > 0);
}

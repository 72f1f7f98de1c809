#include "codegen/keys/spgemm_key.hpp"

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {
namespace {

bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw UsageError(
      fmt::format("bad spgemm kernel key '{}': {} (form: spgemm.f32.symbolic.g0.t64.l4.b512, "
                  "spgemm.f64.numeric.g1.t1024.b256, spgemm.f32.numeric.g3.global.b1024)",
                  text, why));
}

void check_key(const SpgemmKey& k, std::string_view text) {
  if (k.group < 0 || k.group > 3) bad(text, fmt::format("group {} is not 0..3", k.group));
  if (k.block < 32 || k.block > 1024 || k.block % 32 != 0)
    bad(text, fmt::format("block {} is not a multiple of 32 in [32, 1024]", k.block));
  if (k.group == 3) {
    if (k.table != 0) bad(text, "group 3 has no shared table");
  } else if (!is_pow2(k.table)) {
    bad(text, fmt::format("table {} is not a power of two", k.table));
  }
  if (k.group == 3) {
    if (k.lanes != k.block) bad(text, "group 3 runs a row per block: lanes must equal the block");
  } else if (k.lanes != k.block && (!is_pow2(k.lanes) || k.lanes > 32 || k.block % k.lanes != 0)) {
    bad(text, fmt::format("lanes {} is neither the block nor a power of two <= 32 dividing it", k.lanes));
  }
  if (k.merge < 0 || k.merge > 32) bad(text, fmt::format("merge {} is not in [0, 32]", k.merge));
  if (k.merge > 0 && (k.group != 2 || k.lanes != k.block))
    bad(text, "merge needs group 2 with a block a row (lanes == block)");
}

}  // namespace

const char* to_string(SpgemmPhase p) { return p == SpgemmPhase::Symbolic ? "symbolic" : "numeric"; }

namespace {

// Group 3 has no shared table ("global") and a block a row; groups 1-2 name their lanes only when
// they are not the block (the article's mapping, whose texts predate the lanes1 / lanes2 keys).
const KeyText<SpgemmKey>& spgemm_text() {
  using K = SpgemmKey;
  static const auto group0 = is(&K::group, {0});
  static const auto lanes_optional = is_not(&K::group, {0, 3});  // groups 1-2
  static const auto global = is(&K::group, {3});
  static const KeyText<K> t(
      {
          word("spgemm"),
          choice("value type", &K::value, {ValueType::F32, ValueType::F64}),
          choice("phase", &K::phase, {SpgemmPhase::Symbolic, SpgemmPhase::Numeric}),
          number("group", 'g', &K::group).allow(in_range(0, 3)),
          choice("table", &K::table, {0}, [](int) { return std::string("global"); }).when(global),
          number("table", 't', &K::table).when(is_not(&K::group, {3})),
          number("lanes", 'l', &K::lanes).when(group0),
          number("lanes", 'l', &K::lanes).optional([](const K& k) { return k.block; }).when(lanes_optional),
          implied(&K::lanes, [](const K& k) { return k.block; }).when(global),
          number("block", 'b', &K::block),
          number("merge", 'm', &K::merge).optional(0).when(is(&K::group, {2})),
      },
      bad, check_key);
  return t;
}

}  // namespace

std::string SpgemmKey::to_string() const { return spgemm_text().print(*this); }

SpgemmKey SpgemmKey::parse(std::string_view text) { return spgemm_text().parse(text); }

SpgemmKey spgemm_key(ValueType value, SpgemmPhase phase, int group, const SpgemmConfig& c) {
  SpgemmKey k;
  k.value = value;
  k.phase = phase;
  k.group = group;
  k.block = c.block(group);
  k.table = group < 3 ? c.table(group) : 0;
  k.lanes = c.lanes(group);
  k.merge = group == 2 ? c.merge2 : 0;
  check_key(k, k.to_string());
  return k;
}

KernelSource make_source(const SpgemmKey& key) {
  KernelSource ks;
  ks.key = key.to_string();
  ks.source = fmt::format("// dbsparse generated kernel: {}\n#include \"spgemm.cuh\"\n", ks.key);
  ks.options = {"-std=c++17", "-lineinfo"};  // line info: Nsight Compute's source view (no effect on the code)
  const char* v = cuda_type(key.value);
  const char* fn = key.phase == SpgemmPhase::Symbolic ? "symbolic" : "numeric";
  if (key.group == 3) {
    // Then the tables' initialisation and, numeric, C's rows written (spgemm_global_sort, _count,
    // _scan, _scatter).
    ks.add_entry(fn, fmt::format("dbs::spgemm_{}_global<{}, {}>", fn, v, key.block));
    ks.add_entry("init", fmt::format("dbs::spgemm_global_init<{}, {}>", v, key.block));
    if (key.phase == SpgemmPhase::Numeric)
      for (const char* step : {"sort", "count", "scan", "scatter"})
        ks.add_entry(step, fmt::format("dbs::spgemm_global_{}<{}, {}>", step, v, key.block));
  } else {
    // The merge count only where set, so that the other keys' sources (and cached kernels) stay as they were.
    const std::string args = fmt::format("{}, {}, {}, {}{}", v, key.table, key.lanes, key.block,
                                         key.merge ? fmt::format(", {}", key.merge) : std::string());
    ks.add_entry(fn, fmt::format("dbs::spgemm_{}_shared<{}>", fn, args));
    // Numeric: then the one-pass first run's variant (no symbolic phase; writes row lengths).
    if (key.phase == SpgemmPhase::Numeric)
      ks.add_entry("numeric_first", fmt::format("dbs::spgemm_numeric_shared_first<{}>", args));
  }
  return ks;
}

std::vector<SpgemmKey> spgemm_search_space() {
  std::vector<SpgemmConfig> configs(1);  // the defaults first, then the article's
  configs.push_back(SpgemmConfig::paper());
  SpgemmConfig c;
  c.t0 *= 2;
  c.t1 *= 2;
  c.t2 = std::min(c.t2 * 2, 16384);  // 32768 f64 slots pass sm_90's shared memory
  configs.push_back(c);              // tables 2x
  c = SpgemmConfig{};
  c.lanes0 = 8;
  c.block1 = 512;
  c.block3 = 512;
  configs.push_back(c);  // other lanes and blocks
  c = SpgemmConfig{};
  c.lanes1 = 32;
  configs.push_back(c);  // a warp per row in group 1 (group 2's 8192-slot tables fit one row a block)
  c.lanes1 = 16;
  c.block1 = 128;
  configs.push_back(c);
  c = SpgemmConfig{};  // the tuner's seeds (tools/ops/spgemm_op.cpp): group 0 with 256-slot tables
  c.b0 = 128;
  c.t0 = 256;
  c.lanes0 = 32;
  configs.push_back(c);
  c.lanes0 = 16;
  configs.push_back(c);
  c = SpgemmConfig{};
  c.block1 = 256;  // eight warp-rows a block (docs/decisions/spgemm-config-defaults.md)
  configs.push_back(c);
  for (int b2 : {256, 512}) {  // group 2's block rows narrower (the tuner's block2)
    c = SpgemmConfig{};
    c.block2 = b2;
    configs.push_back(c);
  }
  for (int b2 : {1024, 512, 256}) {  // group 2's rows of few A entries merged (the tuner's merge2)
    c = SpgemmConfig{};
    c.block2 = b2;
    c.merge2 = 8;
    configs.push_back(c);
  }
  std::vector<SpgemmKey> out;
  for (ValueType v : {ValueType::F32, ValueType::F64})
    for (SpgemmPhase ph : {SpgemmPhase::Symbolic, SpgemmPhase::Numeric})
      for (const auto& cfg : configs)
        for (int g = 0; g < 4; ++g) {
          const SpgemmKey k = spgemm_key(v, ph, g, cfg);
          bool seen = false;
          for (const auto& o : out) seen |= o == k;
          if (!seen) out.push_back(k);
        }
  return out;
}

namespace {

[[noreturn]] void bad_analysis(std::string_view text, const std::string& why) {
  throw UsageError(fmt::format("bad spgemm analysis key '{}': {} (form: spgemm.analysis.b256)", text, why));
}

const KeyText<SpgemmAnalysisKey>& analysis_text() {
  using K = SpgemmAnalysisKey;
  static const KeyText<K> t(
      {
          word("spgemm"),
          word("analysis"),
          number("block", 'b', &K::block).allow(block_threads()),
      },
      bad_analysis);
  return t;
}

}  // namespace

std::string SpgemmAnalysisKey::to_string() const { return analysis_text().print(*this); }

SpgemmAnalysisKey SpgemmAnalysisKey::parse(std::string_view text) { return analysis_text().parse(text); }

KernelSource make_source(const SpgemmAnalysisKey& key) {
  KernelSource ks;
  ks.key = key.to_string();
  // The module also holds graph contraction's factors, which use its scan (runtime/apps/contract_gpu.cpp).
  ks.source = fmt::format(
      "// dbsparse generated kernel: {}\n#include \"spgemm_analysis.cuh\"\n#include \"contract_factors.cuh\"\n",
      ks.key);
  ks.options = {"-std=c++17"};
  for (const char* role : {"analyse_rows", "scatter_rows", "tile_sums", "scan_tiles", "row_ptr", "compact_rows"})
    ks.add_entry(role, fmt::format("dbs::spgemm_{}<{}>", role, key.block));
  for (const char* role : {"contract_count", "contract_scatter", "contract_merge"})
    ks.add_entry(role, fmt::format("dbs::{}<{}>", role, key.block));
  return ks;
}

std::vector<SpgemmAnalysisKey> spgemm_analysis_search_space() {
  return {SpgemmAnalysisKey{256}, SpgemmAnalysisKey{128}, SpgemmAnalysisKey{512}};
}

}  // namespace dbsparse::codegen

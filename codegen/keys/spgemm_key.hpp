#pragma once
// Hash SpGEMM's kernels (templates/spgemm/spgemm.cuh), one variant per key, e.g.
// "spgemm.f32.symbolic.g0.t64.l4.b512" (group 0: table slots, lanes per row, block),
// "spgemm.f64.numeric.g1.t1024.b256" (groups 1-2: a block per row, lanes == block; with fewer
// lanes they are named, "spgemm.f32.numeric.g1.t1024.l32.b256") and
// "spgemm.f32.symbolic.g3.global.b1024" (group 3 and overflowed rows: global tables),
// "spgemm.f32.numeric.g2.t16384.b1024.m8" (group 2's rows of at most 8 A entries merged); and the
// analysis kernels' "spgemm.analysis.b256" (templates/spgemm/spgemm_analysis.cuh: indices only, so no
// value type; the bounds and tables are kernel arguments, so one module serves every config).
#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_source.hpp"
#include "codegen/keys/value_type.hpp"
#include "dbsparse/spgemm.hpp"

namespace dbsparse::codegen {

enum class SpgemmPhase { Symbolic, Numeric };
const char* to_string(SpgemmPhase p);

struct SpgemmKey {
  ValueType value = ValueType::F32;
  SpgemmPhase phase = SpgemmPhase::Symbolic;
  int group = 0;    // 0..3
  int table = 64;   // shared slots per row (groups 0-2, a power of two); 0 for group 3
  int lanes = 4;    // threads per row: a power of two <= 32 (several rows a block), or == block (groups 1-3)
  int block = 512;  // threads per block (a multiple of 32)
  int merge = 0;    // group 2, a block a row: rows of at most this many A entries merged by rank (".m8"); 0: none
  std::string to_string() const;
  static SpgemmKey parse(std::string_view text);  // throws UsageError
  auto operator<=>(const SpgemmKey&) const = default;
};

// The key of a group's kernel in a phase under a config (its table, lanes and block).
SpgemmKey spgemm_key(ValueType value, SpgemmPhase phase, int group, const SpgemmConfig& c);

// Entry points, by role: "symbolic" or "numeric", the key's group's kernel of its phase
// (spgemm_{symbolic,numeric}_shared for groups 0-2, _global for group 3); groups 0-2, numeric:
// "numeric_first" (spgemm_numeric_shared_first); group 3: "init" (spgemm_global_init) and,
// numeric, "sort", "count", "scan", "scatter" (spgemm_global_sort, _count, _scan, _scatter).
KernelSource make_source(const SpgemmKey& key);
// SpgemmConfig's defaults (both value types, both phases, every group) and a few alternatives:
// tables twice the default, group 0 with 8 lanes, other blocks, the tuner's seeds.
std::vector<SpgemmKey> spgemm_search_space();

struct SpgemmAnalysisKey {
  int block = 256;  // threads per block of every analysis kernel: a multiple of 32 in [32, 1024]
  std::string to_string() const;
  static SpgemmAnalysisKey parse(std::string_view text);  // throws UsageError
  auto operator<=>(const SpgemmAnalysisKey&) const = default;
};
// Entry points, by role: "analyse_rows", "scatter_rows", "tile_sums", "scan_tiles", "row_ptr",
// "compact_rows" (spgemm_<role><block>), and graph contraction's factors (templates/apps/
// contract_factors.cuh, included by the source beside the analysis): "contract_count",
// "contract_scatter", "contract_merge".
KernelSource make_source(const SpgemmAnalysisKey& key);
// The plan's block (256) and 128 and 512.
std::vector<SpgemmAnalysisKey> spgemm_analysis_search_space();

}  // namespace dbsparse::codegen

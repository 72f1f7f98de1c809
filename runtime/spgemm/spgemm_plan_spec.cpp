// The plan's spec from the config and the analysis's counts (runtime/spgemm/spgemm_plan_spec.hpp).
#include "runtime/spgemm/spgemm_plan_spec.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "codegen/keys/spgemm_key.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse::detail {
namespace {

using abi::kSpgemmGlobalGroup;

unsigned blocks_for(int64_t n, int per_block) { return static_cast<unsigned>((n + per_block - 1) / per_block); }

int64_t products_of(const abi::SpgemmStats& st) {
  int64_t s = 0;
  for (int64_t ip : st.ip) s += ip;
  return s;
}

SpgemmSharedLaunch shared_launch(const SpgemmSpecInputs& in, const SpgemmConfig& kc, int g) {
  SpgemmSharedLaunch l;
  l.rows = in.stats.rows[g];
  if (l.rows == 0) return l;
  l.block = kc.block(g);
  l.rows_per_block = kc.rows_per_block(g);
  l.grid = blocks_for(l.rows, l.rows_per_block);
  l.symbolic_smem = spgemm_shared_bytes(kc, g, 0);
  l.numeric_smem = spgemm_shared_bytes(kc, g, in.value_bytes);
  if (l.numeric_smem > in.optin_smem)
    throw UsageError(
        fmt::format("spgemm: group {} needs {} bytes of shared memory per block ({} table(s) of {} "
                    "slots), over this device's {} ({}): lower 't{}'",
                    g, l.numeric_smem, l.rows_per_block, kc.table(g), in.optin_smem, in.arch, g));
  return l;
}

SpgemmGlobalLaunch global_launch(const SpgemmSpecInputs& in, const SpgemmConfig& c) {
  SpgemmGlobalLaunch l;
  const abi::SpgemmStats& st = in.stats;
  l.rows = st.rows[kSpgemmGlobalGroup] + st.may_overflow;
  l.split = c.split3;
  l.block = c.block3;
  l.seg_count = std::max<int64_t>(int64_t{l.rows} * c.split3, 1);
  // Past the budget the tables are allocated, and their chunks made, by the first run.
  const int64_t pair = 4 + int64_t{in.value_bytes};
  if (st.global_slots * pair <= in.table_budget) {
    l.table_slots = std::max<int64_t>(st.global_slots, 1);
    l.one_chunk = l.rows > 0;
  }
  if (l.rows == 0) return l;
  // The largest power of two of (key, value) pairs that fits the opt-in shared memory, past the
  // kernel's own few bytes: a segment's columns.
  l.sort_cap = 1;
  while (int64_t{l.sort_cap} * 2 * pair <= in.optin_smem - 1024) l.sort_cap *= 2;
  l.sort_smem = int64_t{l.sort_cap} * pair;
  l.segs = static_cast<int>((int64_t{in.b_cols} + l.sort_cap - 1) / l.sort_cap);
  l.seg_blocks = static_cast<unsigned>(std::min(l.segs, 65535));
  l.seg_hist = std::max<int64_t>(2 * int64_t{l.rows} * l.segs, 1);
  return l;
}

// One pass where no row can fill its shared table (a table at least as large as its group's
// longest row, or as B is wide), so that the global rows are group 3's alone, their tables fit
// the budget in one chunk, and the scratch of IP keys and values fits the budget too
// (docs/decisions/spgemm-one-pass.md).
bool one_pass_fits(const SpgemmPlanSpec& s) {
  const abi::SpgemmStats& st = s.stats;
  const bool global_fits = s.global.rows == 0 || (s.global.rows == st.rows[kSpgemmGlobalGroup] && s.global.one_chunk);
  bool fits = s.products > 0 && s.products <= std::numeric_limits<int32_t>::max() &&
              s.products * (4 + int64_t{s.value_bytes}) <= s.table_budget && global_fits;
  for (int g = 0; g < kSpgemmGlobalGroup; ++g)
    if (st.rows[g] > 0 && s.fitted.table(g) < std::min<int64_t>(st.group_max_ip[g], s.cols)) fits = false;
  return fits;
}

}  // namespace

SpgemmConfig spgemm_plan_config(const SpgemmConfig& asked, int32_t b_cols) { return spgemm_for_width(asked, b_cols); }

SpgemmPlanSpec spgemm_plan_spec(const SpgemmSpecInputs& in) {
  SpgemmPlanSpec s;
  s.config = spgemm_plan_config(in.config, in.b_cols);
  s.narrowed = s.config.b2 != in.config.b2;
  s.config_source = in.config_source;
  s.stats = in.stats;
  s.rows = in.rows;
  s.cols = in.b_cols;
  s.a_nnz = in.a_nnz;
  s.b_nnz = in.b_nnz;
  s.products = products_of(in.stats);
  s.inputs_owned = in.inputs_owned;
  s.value_bytes = in.value_bytes;
  s.table_budget = in.table_budget;
  s.row_buffers = std::max(in.rows, 1);
  // The tables a group's kernels use: fitted to its longest row (a table at most half full, with
  // less to clear and compact, and more blocks an SM), else the config's.
  const auto& gm = in.stats.group_max_ip;
  s.fitted = spgemm_fitted(s.config, {gm[0], gm[1], gm[2]}, in.b_cols);
  for (int g = 0; g < kSpgemmGlobalGroup; ++g) s.shared[g] = shared_launch(in, s.fitted, g);
  s.global = global_launch(in, s.config);
  const auto vt = in.value_bytes == 4 ? codegen::ValueType::F32 : codegen::ValueType::F64;
  for (int g = 0; g < kSpgemmGroups; ++g) {
    const bool has_rows = g == kSpgemmGlobalGroup ? s.global.rows > 0 : s.shared[g].rows > 0;
    s.symbolic_key[g] =
        has_rows ? codegen::spgemm_key(vt, codegen::SpgemmPhase::Symbolic, g, s.fitted).to_string() : "-";
    s.numeric_key[g] = has_rows ? codegen::spgemm_key(vt, codegen::SpgemmPhase::Numeric, g, s.fitted).to_string() : "-";
  }
  s.one_pass = in.one_pass && one_pass_fits(s);
  return s;
}

std::string spgemm_explain(const SpgemmPlanSpec& s) {
  const SpgemmConfig& c = s.config;
  const abi::SpgemmStats& st = s.stats;
  const int64_t ip = s.products;
  const char* in_place = s.inputs_owned ? "" : ", read in place";
  std::string out = fmt::format(
      "spgemm {}x{} = A ({} nnz{}) * B ({} nnz{}), {}: IP {} (GFLOP {:.3f}, largest row {}), idle rows {}\n", s.rows,
      s.cols, s.a_nnz, in_place, s.b_nnz, in_place, s.value_bytes == 4 ? "f32" : "f64", ip, 2 * ip * 1e-9, st.max_ip,
      st.idle);
  out += fmt::format("  config ({}): {}\n", s.config_source, config_to_json(c).dump());
  if (s.narrowed)
    out += fmt::format("  B's {} columns fit group 2's table (narrow_dense): b2 raised to {}, no global tables\n",
                       s.cols, c.b2);
  for (int g = 0; g < kSpgemmGroups; ++g) {
    const std::string where =
        g < kSpgemmGlobalGroup
            ? fmt::format("IP < {} (largest {}), shared table {} slots{}, {} row(s) per block of {}", c.bound(g),
                          st.group_max_ip[g], s.fitted.table(g),
                          s.fitted.table(g) != c.table(g) ? fmt::format(" (fitted; config {})", c.table(g)) : "",
                          c.rows_per_block(g), c.block(g))
            : fmt::format("IP >= {}, global tables, {} blocks of {} a row", c.b2, c.split3, c.block3);
    out += fmt::format("  group {}: {} rows, IP {} ({}); kernels {} / {}\n", g, st.rows[g], st.ip[g], where,
                       s.symbolic_key[g], s.numeric_key[g]);
  }
  out += fmt::format(
      "  global tables: {} rows ({} of group 3, {} that may overflow a shared table), {} slots; "
      "overflow_to_global {}\n",
      s.global.rows, st.rows[kSpgemmGlobalGroup], st.may_overflow, st.global_slots, c.overflow_to_global);
  return out;
}

}  // namespace dbsparse::detail

#pragma once
// What an SpgemmPlan launches and allocates, as host values only (no CUDA, nothing on the device):
// the spec a plan is built from (runtime/spgemm/spgemm_plan.cpp materializes it), computed from
// the config and the analysis's counts, so that a CPU test can check it for a small matrix.
#include <array>
#include <cstdint>
#include <string>

#include "dbsparse/abi/spgemm.h"
#include "dbsparse/spgemm.hpp"

namespace dbsparse::detail {

// The config's grouping rules as the analysis kernel takes them (abi::spgemm_row_code and
// abi::spgemm_table_slots read it); runtime/spgemm/spgemm_analysis.cpp.
abi::SpgemmGroupRule spgemm_group_rule(const SpgemmConfig& c, int32_t b_cols);

// What the spec is computed from.
struct SpgemmSpecInputs {
  SpgemmConfig config;  // as asked for (checked); the spec narrows it (spgemm_for_width)
  std::string config_source;
  abi::SpgemmStats stats{};  // the analysis's counts (under the narrowed config)
  int32_t rows = 0, b_cols = 0;
  int64_t a_nnz = 0, b_nnz = 0;
  bool inputs_owned = false;  // A and B uploaded into the plan (else read in place)
  int value_bytes = 4;        // sizeof(T)
  int64_t optin_smem = 0;     // the device's opt-in shared memory per block
  std::string arch;           // the device's, for the error that names optin_smem
  int64_t table_budget = 0;   // bytes the global tables may take at once
  bool one_pass = true;       // SpgemmOptions::one_pass
};

// A shared group's (0-2) launches: rows_per_block rows a block of `block` threads, tables in
// `symbolic_smem` / `numeric_smem` dynamic shared bytes.
struct SpgemmSharedLaunch {
  int64_t rows = 0;  // 0: no kernel loaded, nothing launched
  int block = 0, rows_per_block = 1;
  unsigned grid = 0;
  int64_t symbolic_smem = 0, numeric_smem = 0;
};

// The global tables' rows (group 3's, then those of groups 0-2 that may overflow): each row's
// products split over `split` blocks of `block` threads; C's rows written by column segments of
// sort_cap columns (segs of them), each sorted in sort_smem = sort_cap * (4 + value bytes) of
// dynamic shared memory.
struct SpgemmGlobalLaunch {
  int32_t rows = 0;  // 0: no kernel loaded, nothing launched
  int split = 0, block = 0;
  int sort_cap = 0, segs = 0;
  int64_t sort_smem = 0;
  unsigned seg_blocks = 0;  // the sort's grid y: min(segs, 65535)
  int64_t seg_hist = 0;     // int32 entries of the segment histograms (0: none allocated)
  int64_t seg_count = 0;    // int32 entries of the dense rows' segment counts
  bool one_chunk = false;   // the tables fit the budget: allocated at planning, one chunk
  int64_t table_slots = 0;  // slots allocated at planning (0: the first run lays out chunks)
};

struct SpgemmPlanSpec {
  SpgemmConfig config;  // narrowed for B's width: what the analysis ran under
  SpgemmConfig fitted;  // config with the shared groups' tables fitted to their rows: the kernels'
  std::string config_source;
  bool narrowed = false;  // spgemm_for_width raised b2 (B fits group 2's dense table)
  abi::SpgemmStats stats{};
  int32_t rows = 0, cols = 0;
  int64_t a_nnz = 0, b_nnz = 0, products = 0;
  bool inputs_owned = false;
  int value_bytes = 4;
  std::array<SpgemmSharedLaunch, abi::kSpgemmGlobalGroup> shared;
  SpgemmGlobalLaunch global;
  std::array<std::string, kSpgemmGroups> symbolic_key, numeric_key;  // "-" for a group without rows
  int64_t table_budget = 0;
  int64_t row_buffers = 0;  // entries of row_len and of overflow (at least 1)
  bool one_pass = false;    // the first run has no symbolic phase
};

// config narrowed for B's width (spgemm_for_width): what the analysis runs under.
SpgemmConfig spgemm_plan_config(const SpgemmConfig& asked, int32_t b_cols);
// The spec from the analysis's counts. UsageError where a shared group's tables pass the device's
// shared memory.
SpgemmPlanSpec spgemm_plan_spec(const SpgemmSpecInputs& in);
// explain()'s text up to the global tables' line: the product, the config, the groups.
std::string spgemm_explain(const SpgemmPlanSpec& s);

}  // namespace dbsparse::detail

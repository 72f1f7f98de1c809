#pragma once
// Problem -> key for SpMV (the pure first stage): the config's strategy and cutoffs plus the
// matrix's shape decide the kernel variant.
#include <cstdint>

#include <nlohmann/json.hpp>

#include "codegen/spmv_key.hpp"

namespace dbsparse {

// params["strategy"]: "scalar" (the default), "vector", "block" or "auto" (uniform selection by
// mean row length, adaptive-csr-spmv.txt):
//   mean <= scalar_max_mean (default 4): scalar — short rows leave nothing to share, and a
//     reduction would cost more than the row;
//   mean <= vector_max_mean (default 64): vector, lanes = the power of two covering the mean,
//     clamped to [2, 32] — one pass of the group covers a typical row;
//   longer: block per row — a 256-thread block covers up to 256 entries per pass.
// "lanes" fixes the vector width (0: from the mean). Throws UsageError for an unknown strategy
// and for "longrow", which the plan does not run yet.
codegen::SpmvKey choose_spmv_key(const nlohmann::json& params, int64_t rows, int64_t nnz,
                                 codegen::ValueType value);

// Thread blocks the key's kernel is launched with for `rows` rows.
int64_t spmv_grid(const codegen::SpmvKey& key, int64_t rows);

}  // namespace dbsparse

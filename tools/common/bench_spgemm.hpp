#pragma once
// `dbsparse bench spgemm`: hash SpGEMM (spgemm.hpp) against cuSPARSE SpGEMM on C = A² (A·Aᵀ when
// A is not square), per matrix and precision: a fresh product from inputs already on the device
// (dbsparse: plan from device CSR + symbolic + numeric; cuSPARSE: its whole sequence), dbsparse's
// steady run (numeric only, structure reused), the plan from host CSR and the one-shot spgemm(),
// the peak device memory of each, and cuSPARSE's C checked against dbsparse's.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dbsparse/context.hpp"
#include "dbsparse/io.hpp"
#include "dbsparse/spgemm.hpp"
#include "tools/common/timing.hpp"

namespace dbsparse::tools {

struct SpgemmBenchOptions {
  // samples: the steady run's samples, and the most fresh products timed per implementation;
  // batch: the most steady runs per sample (fewer when one run is long).
  TimingOptions timing;
  bool baselines = true;               // cuSPARSE, and with it the check
  std::optional<SpgemmConfig> config;  // dbsparse's config instead of the defaults
  double product_budget_s = 3;         // fresh products of one implementation stop after this long
};

// The check's tolerance per entry of C, relative to sum |a||b| of that entry: 1e-5 for "f32",
// 1e-12 for "f64".
double spgemm_tolerance(const std::string& precision);

struct SpgemmCheck {
  bool ok = false;
  std::string note;      // "ok", or the first difference found
  double max_error = 0;  // the largest |ours - theirs| / sum |a||b| over the entries compared
};

// Another implementation's C (`theirs`, the columns of a row in any order) against dbsparse's
// (`ours`, sorted rows). `scale` is sum |a||b| on ours' structure (dbsparse on |A| and |B|). The
// same structure is required: the same nnz, row lengths and columns (both keep a column that
// some product reaches even when its sum cancels to zero).
template <class T>
SpgemmCheck compare_spgemm(const CsrMatrix<T>& ours, CsrMatrix<T> theirs, const CsrMatrix<T>& scale,
                           double tolerance);

// The table's header, one matrix at one precision ("f32" or "f64": prints its line, returns its
// JSON record; failures of either side are noted in the record and the line, not thrown), and the
// summary per precision over the records (printed, and returned as JSON).
void print_spgemm_header();
// What each timed column includes, printed above the header (and kept in step with the JSON's
// "timings" in tools/ops/spgemm_op.cpp).
std::string spgemm_columns_text();
nlohmann::json bench_spgemm_matrix(Context& ctx, const Stream& stream, const NamedMatrix& m, bool generated,
                                   const std::string& precision, const SpgemmBenchOptions& opt);
nlohmann::json spgemm_summary(const std::vector<nlohmann::json>& records);

}  // namespace dbsparse::tools

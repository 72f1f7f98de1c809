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
#include "dbsparse/spgemm_apps.hpp"
#include "tools/bench/timing.hpp"

namespace dbsparse::tools {

struct SpgemmBenchOptions {
  // samples: the steady run's samples, and the most fresh products timed per implementation;
  // batch: the most steady runs per sample (fewer when one run is long).
  TimingOptions timing;
  bool baselines = true;               // cuSPARSE, and with it the check
  std::optional<SpgemmConfig> config;  // dbsparse's config instead of the defaults
  double product_budget_s = 3;         // fresh products of one implementation stop after this long
  // The applications (square matrices only), each against its cuSPARSE-based pipeline built the
  // same way (tools/baselines/cusparse_pipelines.hpp): contraction with random labels and k classes
  // (0: max(1, rows / 64)), and MCL for a fixed number of iterations (0: no MCL rows). Either
  // needs baselines for its comparison; without them only dbsparse's side is timed.
  bool apps = true;
  int32_t contract_k = 0;
  int mcl_iters = 5;
  int app_reps = 3;      // timed runs per side (fewer once product_budget_s has passed), the median reported
  bool one_pass = true;  // SpgemmOptions::one_pass of dbsparse's square products
  // C = A·Aᵀ for every matrix (a directed graph's co-citation counts), not only the rectangular ones.
  bool transpose_b = false;
};

// k for a matrix of `rows` rows: `requested`, or max(1, rows / 64) when it is 0. UsageError for a
// negative request.
int32_t contract_k_for(int32_t rows, int32_t requested);
// The labels of bench spgemm's contraction: vertex j gets a label drawn uniformly from [0, k),
// seeded, so every run and both pipelines see the same ones.
std::vector<int32_t> contract_labels(int32_t n, int32_t k, uint64_t seed = 1);
// The MCL options of bench spgemm's MCL row: the defaults, max_iterations = iters and tolerance 0,
// so that both sides run `iters` expansions unless P stops changing exactly.
MclOptions bench_mcl_options(int iters);

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
SpgemmCheck compare_spgemm(const CsrMatrix<T>& ours, CsrMatrix<T> theirs, const CsrMatrix<T>& scale, double tolerance);

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

// The application rows of one matrix at one precision (printed as indented lines under its A^2
// row): {"contract": record, "mcl": record}, either absent when not run (a non-square matrix, or
// mcl_iters == 0). A record has "app", "matrix", "precision", "generated", dbsparse_ms and
// cusparse_ms (median wall clock of the whole pipeline), speedup (cusparse_ms / dbsparse_ms),
// check / check_ok, and the app's own fields (contract: k, nnz_sg, nnz_c, cusparse_algs; mcl:
// iterations of each side, *_iter_ms per iteration, labels and clusters). Failures are noted,
// not thrown.
nlohmann::json bench_spgemm_apps_matrix(Context& ctx, const Stream& stream, const NamedMatrix& m, bool generated,
                                        const std::string& precision, const SpgemmBenchOptions& opt);
// Triangle counting's record for a square matrix (tools/bench/bench_triangles.cpp): dbsparse's
// masked product on the undirected graph of A against cuSPARSE SpGEMM L·L plus the mask and sum;
// "app": "triangles", the counts checked equal.
template <class T>
nlohmann::json bench_triangles(Context& ctx, const Stream& stream, const CsrMatrix<T>& a, nlohmann::json rec,
                               const SpgemmBenchOptions& opt);

// The summary of one app's records ("contract" or "mcl") per precision: geomean and worst speedup
// over the records whose check passed, mismatches and failures; one line printed per precision.
// What the application lines' times include, printed before their summaries.
std::string spgemm_apps_text();
nlohmann::json spgemm_app_summary(const std::vector<nlohmann::json>& records, const std::string& app);

}  // namespace dbsparse::tools

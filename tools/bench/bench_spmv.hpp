#pragma once
// The SpMV benchmark: dbsparse's plan against cuSPARSE CSR ALG1 and ALG2, on one stream, each
// result checked against the CPU reference before it is timed.
#include <set>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dbsparse/context.hpp"
#include "dbsparse/matrix.hpp"
#include "tools/bench/timing.hpp"

namespace dbsparse::tools {

struct BenchRow {
  std::string matrix, precision, impl, key, config_source, kernel_origin;
  int64_t rows = 0, cols = 0, nnz = 0;
  double time_us = 0, min_us = 0, max_us = 0, host_us = 0, gflops = 0, gbps = 0, pct_bw = 0, rel_err = 0;
  double acquire_ms = 0, load_ms = 0;
  // check-auto's second look (time_interleaved): the first pass's median, where time_us is the
  // interleaved one; 0: not timed again.
  double first_pass_us = 0;
  // time_us becomes the second look's `us`; the figures derived from it follow.
  void retime(double us);
  // dbsparse rows: A's columns in degree order, the plan's host time for the order (auto's feature
  // included), and what it pays back against the cols-none row of the same run (-1: no such row;
  // 0: never, the order is no faster).
  bool reordered = false;
  double reorder_ms = 0, paid_back_after_calls = -1;
  std::string note;  // printed under the row
  int copies = 1;
  nlohmann::json to_json() const;
};

// check-auto's second look over one (matrix, setting): auto's row and the forced rows, each with
// the launch that runs it again. recheck_candidates picks auto and the forced rows near the best,
// time_interleaved times them in turn, and each picked row takes its time (BenchRow::retime).
struct RecheckRow {
  BenchRow* row = nullptr;
  bool is_auto = false;
  std::function<void(int64_t)> launch;
};
void second_look(void* stream, const TimingOptions& opt, int rounds, const std::vector<RecheckRow>& rows);

struct SpmvBenchOptions {
  std::vector<std::string> precisions{"f32"};
  TimingOptions timing;
  bool baselines = true;  // cuSPARSE ALG1 and ALG2
  // Forced dbsparse strategies (classified, uniform, scalar, vector, block, longrow), one row
  // each, named dbsparse-<strategy>, for ablation; "auto" is the config look-up's row, named
  // dbsparse. Empty: that row alone.
  std::vector<std::string> strategies;
  bool explain = false;  // print each dbsparse plan's explain() (bins, kernels) to stderr
  // check-auto's second look: auto and the forced rows near the best timed again in turn, this
  // many rounds (0: no second look).
  int recheck_rounds = 0;
};

// Sets note (and paid_back_after_calls) on the column-ordered dbsparse rows of `matrix` in `prec`:
// the order's host time, and, where the same run has a dbsparse-cols-none row, the calls after
// which the time it saves a call repays it (0: never).
void note_order_payback(std::vector<BenchRow>& rows, const std::string& matrix, const std::string& prec);

// Appends one row per implementation and precision for this matrix.
void bench_spmv_matrix(Context& ctx, const Stream& stream, const NamedMatrix& m, const SpmvBenchOptions& opt,
                       double copy_gbs, std::vector<BenchRow>& out);

// Geometric means over the generated matrices, per precision and dbsparse impl: speed-up over the
// better cuSPARSE algorithm (all, regular, irregular), % of copy bandwidth on regular matrices
// with >= 10M nonzeros, and classified over uniform on the power-law and RMAT matrices.
nlohmann::json spmv_summary(const std::vector<BenchRow>& rows, const std::set<std::string>& generated);
void print_spmv_summary(const nlohmann::json& summary);

// The matrix name cut to the table's 34-character column.
std::string short_name(const std::string& s);

// Prints the table header and one line per row.
void print_bench_header();
void print_bench_row(const BenchRow& r);

}  // namespace dbsparse::tools

#pragma once
// The SpMSpV benchmark: dbsparse's plan (auto, push-only, pull-only) against cuSPARSE BSR 16×16
// bsrmv and CSR SpMV ALG1 with a dense x that is mostly zeros, for x densities chosen by the
// caller. Each result is checked against the CPU reference before it is timed.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dbsparse/context.hpp"
#include "dbsparse/matrix.hpp"
#include "tools/bench/bench_spmv.hpp"
#include "tools/bench/timing.hpp"

namespace dbsparse::tools {

struct SpmspvBenchOptions {
  std::vector<std::string> precisions{"f32"};
  std::vector<double> densities{0.1, 0.01, 0.001, 0.0001};
  TimingOptions timing;
  bool baselines = true;                 // cuSPARSE BSR16 and CSR ALG1
  bool fused = false;                    // the dbsparse plans take SpmspvOptions::fused
  std::optional<nlohmann::json> config;  // params for the dbsparse plans; else the tuning DB's
  // check-auto's second look: auto, push-only and pull-only near the best timed again in turn,
  // this many rounds per density (0: none; their plans then stay on the device together).
  int recheck_rounds = 0;
};

// A sparse x with exactly round(density * cols) distinct nonzeros (at least one when density > 0),
// the same for a (matrix name, density) in every run and precision, with its CPU reference.
template <class T>
struct SparseX {
  double density = 0;
  std::vector<int32_t> idx;  // sorted, distinct
  std::vector<T> val;        // in [-1, 1], never 0
  std::vector<T> dense;      // zeros elsewhere, padded to whole BSR block columns
  std::vector<double> ref;
  int64_t nnz_touched = 0;  // entries of A in a column where x is nonzero
};

template <class T>
SparseX<T> make_sparse_x(const CsrMatrix<T>& a, const std::string& name, double density, size_t x_len);

struct SpmspvRow {
  // GFLOP/s counts 2 flops per entry of A in a column where x is nonzero, for every impl; GB/s
  // uses `bytes`, which depends on the impl (see bench_spmspv.cpp).
  BenchRow base;
  double density = 0;
  int64_t x_nnz = 0, nnz_touched = 0, bytes = 0;
  int x_copies = 1;         // x/y rotation; base.copies is the matrix (plan) rotation
  int batch = 0;            // calls per timed sample, lower than asked for slow impls
  std::string direction;    // dbsparse: the path the checked run took
  double xb = -1;           // dbsparse: non-empty 16-entry x blocks / all, from the checked run
  bool generated = false;   // a generator matrix: the summary's population
  std::string unavailable;  // non-empty: this impl could not run on this matrix, and why
  nlohmann::json to_json() const;
};

// Appends, per precision, one row per (density, impl), densities in the order given.
void bench_spmspv_matrix(Context& ctx, const Stream& stream, const NamedMatrix& m, bool generated,
                         const SpmspvBenchOptions& opt, double copy_gbs, std::vector<SpmspvRow>& out);

void print_spmspv_header();
void print_spmspv_row(const SpmspvRow& r);

// Per precision and density, over the generated matrices (all matrices when none is generated):
// geometric means of cuSPARSE BSR16 time / auto time and cuSPARSE CSR time / auto time, and the
// share of (matrix, density) pairs where auto is within 5% of min(push-only, pull-only).
nlohmann::json spmspv_summary(const std::vector<SpmspvRow>& rows, const std::vector<double>& densities);
void print_spmspv_summary(const nlohmann::json& summary);

}  // namespace dbsparse::tools

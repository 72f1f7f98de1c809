#pragma once
// The applications of hash SpGEMM in the article (docs/DESIGN.md, source [4]): squaring, graph
// contraction and Markov clustering. Each has a GPU version (square, contract, mcl: the products
// by plan_spgemm, MCL's elementwise steps by the kernels of templates/apps/mcl.cuh) and a CPU
// reference it is checked against (reference::spgemm for squaring, contract_cpu, mcl_cpu).
// spgemm_flops gives the GFLOP count of a product.
//
// Graphs follow the library's convention (graph.hpp): vertex i is reached from j when
// A(i, j) != 0, so column j holds j's out-edges.
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "dbsparse/context.hpp"
#include "dbsparse/device_csr.hpp"
#include "dbsparse/matrix.hpp"
#include "dbsparse/spgemm.hpp"

namespace dbsparse {

// C = S·G·Sᵀ, S k x n with S(labels[j], j) = 1: C(a, b) = sum of G(i, j) over labels[i] = a and
// labels[j] = b, present when some stored G(i, j) maps there (even if the sum is zero). Each
// group of vertices with one label becomes a vertex; within-group edges become C's diagonal.
// Computed as two reference::spgemm products, in double. UsageError when G is not square, labels
// is not n long, or a label is outside [0, k) (naming the vertex).
template <class T>
CsrMatrix<double> contract_cpu(const CsrMatrix<T>& g, std::span<const int32_t> labels, int32_t k);

// Markov clustering (van Dongen). The matrix M is column-stochastic, M(i, j) the chance of a step
// j -> i. Each iteration: expansion M = M·M; inflation, every entry to the power `inflation` and
// each column normalised to sum 1; pruning, entries below `prune_below` dropped and only the
// `keep_top_k` largest of each column kept (ties to the smaller row; a column's largest entry is
// never dropped), then the column normalised again. Stop when no entry moved by more than
// `tolerance` (the largest |difference|, over both patterns) or after `max_iterations`.
//
// The CPU (and the GPU version after it) holds P = Mᵀ in CSR: M's columns are P's rows, so
// normalising and pruning are row operations, and P·P = (M·M)ᵀ. This is MCL exactly, not an
// approximation, for any graph.
struct MclOptions {
  double inflation = 2.0;     // r >= 1
  double prune_below = 1e-4;  // in [0, 1)
  int32_t keep_top_k = 50;    // >= 1
  int32_t max_iterations = 100;
  double tolerance = 1e-6;
  bool add_self_loops = true;  // each vertex a loop of its column's largest weight (1 when it has no edge)
  bool weighted = false;       // edge weights |G(i, j)|; false: every stored entry weighs 1
  // UsageError naming the first field out of range (mcl_cpu, mcl and the steps call it).
  void check() const;
};

// One iteration of the GPU version, as it went (wall times on the host, each ending in a wait for
// the device).
struct MclIteration {
  double ms = 0;  // the whole iteration: expansion and elementwise steps (P stays on the device)
  // plan_spgemm(P, P) from device CSR (GPU analysis, one read-back) and its first run (symbolic, sync, numeric)
  double expand_ms = 0;
  int64_t nnz_expanded = 0;  // nnz(P·P)
  int64_t nnz = 0;           // nnz of the new P, after pruning
  double change = 0;         // the largest |difference| from the previous P (mcl_change)
};

struct MclResult {
  std::vector<int32_t> labels;  // cluster per vertex, 0..clusters-1, numbered by their smallest vertex
  int32_t clusters = 0;
  int32_t iterations = 0;           // expansions done
  bool converged = false;           // false: stopped at max_iterations
  std::vector<MclIteration> trace;  // per iteration, from the GPU version (mcl); empty from mcl_cpu
  // Host wall time of the GPU version's parts: the start (G uploaded, kernels looked up, P built
  // on the device), the iterations together, the labels (found on the device, downloaded).
  struct Times {
    double start_ms = 0, iterations_ms = 0, labels_ms = 0;
  } times;
};

// Clusters: vertex j is attracted to i when M(i, j) > 0 in the final matrix; a cluster is a
// connected set of such pairs (an attractor, the vertices it attracts, and attractors that attract
// each other; a vertex attracted to two attractors joins their clusters). Expansions through
// hash_spgemm_cpu. UsageError for a non-square graph or options out of range, naming the field.
template <class T>
MclResult mcl_cpu(const CsrMatrix<T>& g, const MclOptions& o = {});

// The pieces, for GPU versions checked an iteration at a time: the start matrix P (Mᵀ, rows
// summing to 1 or empty), one iteration on P, and the labels of a P.
template <class T>
CsrMatrix<double> mcl_start(const CsrMatrix<T>& g, const MclOptions& o);
CsrMatrix<double> mcl_step(const CsrMatrix<double>& p, const MclOptions& o);
// The largest |a - b| over the union of their patterns (shapes must match).
double mcl_change(const CsrMatrix<double>& a, const CsrMatrix<double>& b);
MclResult mcl_labels(const CsrMatrix<double>& p);

// --- on the GPU (runtime/apps/spgemm_apps_gpu.cpp, runtime/apps/mcl_gpu.cpp, templates/apps/mcl.cuh) ----------

// Whether square() multiplies by Aᵀ: when asked to, or when A is not square (A² does not exist).
template <class T>
bool square_uses_transpose(const CsrMatrix<T>& a, bool transpose) {
  return transpose || a.rows != a.cols;
}
// C = A·A, or A·Aᵀ (square_uses_transpose; Aᵀ built on the host), by hash SpGEMM. plan_square
// returns the plan (its first run sizes C, later runs recompute the values: what `dbsparse square`
// times); square is the one-shot product, downloaded. The GFLOP count is
// spgemm_flops(intermediate_products(A, B)) of that B.
template <class T>
SpgemmPlan<T> plan_square(Context& ctx, const CsrMatrix<T>& a, bool transpose = false,
                          const SpgemmOptions& options = {});
template <class T>
CsrMatrix<T> square(Context& ctx, const CsrMatrix<T>& a, bool transpose = false, const SpgemmOptions& options = {});

// Host wall time of a contraction's steps, in order (the plans wait for the work before them on
// the stream, so a run's GPU time shows in the next step that waits): G and the labels uploaded
// (host CSR only), the factors built on the device (one wait, for the labels' check), S·G planned
// (GPU analysis, a read-back), its first run, (S·G)·Sᵀ planned, its first run and a wait, C
// downloaded (host CSR only).
struct ContractTimes {
  double upload_ms = 0, factors_ms = 0, plan_sg_ms = 0, run_sg_ms = 0, plan_c_ms = 0, run_c_ms = 0, download_ms = 0;
};

template <class T>
struct ContractResult {
  CsrMatrix<T> c;      // k x k, as contract_cpu's (the same pattern, explicit zeros included), in T
  int64_t nnz_sg = 0;  // nnz(S·G), the intermediate product
  // 2 · IP of both products: IP(S·G) = nnz(G) and IP((S·G)·Sᵀ) = nnz(S·G), since every column of
  // S (and so every row of Sᵀ) holds exactly one entry.
  int64_t flops = 0;
  ContractTimes times;
};
// C = S·G·Sᵀ on the GPU, as contract_cpu defines it (S k x n with values 1): G and the labels
// uploaded, then the device overload below (factors built on the device, S·G and (S·G)·Sᵀ by plans
// from device CSR; S·G never comes back to the host), C downloaded. In T. The same UsageErrors as
// contract_cpu.
template <class T>
ContractResult<T> contract(Context& ctx, const CsrMatrix<T>& g, std::span<const int32_t> labels, int32_t k,
                           const SpgemmOptions& options = {});
// The two factors contract() multiplies by, built on the host (in contract() itself and by any
// other pipeline that means to be built the same way): S (k x n, row a the vertices labelled a,
// ascending, values 1) and Sᵀ (n x k, row j the single entry (j, labels[j])). UsageError, as
// contract's, for k < 0 or a label outside [0, k) (naming the vertex).
template <class T>
std::pair<CsrMatrix<T>, CsrMatrix<T>> contraction_factors(int32_t n, std::span<const int32_t> labels, int32_t k);

// The same factors built on the device from n labels on the device (stream `stream`, which the
// result's work is queued on; one wait, for the labels' check): S's rows by a count, a scan, a
// scatter and a merge sort inside each row (templates/apps/contract_factors.cuh). UsageError as the
// host overload's, naming the first vertex whose label is outside [0, k). Why: the host factors
// and their upload cost many times both products (docs/decisions/spgemm-apps-on-device.md).
template <class T>
std::pair<DeviceCsr<T>, DeviceCsr<T>> contraction_factors(Context& ctx, const int32_t* labels, int32_t n, int32_t k,
                                                          void* stream);

// C = S·G·Sᵀ with G and the labels on the device, as a graph-coarsening step inside a GPU
// pipeline would call it: the factors by the overload above, S·G and (S·G)·Sᵀ planned from device
// CSR and run on `stream`; no array comes back to the host (only the plans' small counts). C is
// result() (sorted rows; the same pattern and values as contract()'s), valid while this lives.
template <class T>
struct DeviceContraction {
  DeviceCsr<T> s, st;   // the factors, read in place by the plans
  SpgemmPlan<T> sg, c;  // S·G and C = (S·G)·Sᵀ, both run once
  ContractTimes times;  // upload_ms and download_ms stay 0
  DeviceCsrView<T> result() const { return c.result(); }
};
template <class T>
DeviceContraction<T> contract(Context& ctx, const DeviceCsrView<T>& g, const int32_t* labels, int32_t k, void* stream,
                              const SpgemmOptions& options = {});

// Markov clustering on the GPU, iteration for iteration mcl_cpu's, in T: G uploaded, P =
// mcl_start(g) built on the device (templates/apps/mcl_ends.cuh), then per iteration P·P by
// plan_spgemm from device CSR (a new plan each time: pruning changes P's structure) and inflation,
// pruning, normalisation and the change measure by the kernels of templates/apps/mcl.cuh; P stays on
// the device. Labels by mcl_labels' rule (connected components of the final P's positive entries,
// numbered by their smallest vertex), found on the device; only they come back. The values
// differ from the CPU's in the last bits (other orders of addition, and in f32 the precision), so
// a tie or a threshold met exactly on one side may fall otherwise on the other: compare the
// labels, not the matrices. Options are checked (UsageError).
template <class T>
MclResult mcl(Context& ctx, const CsrMatrix<T>& g, const MclOptions& o = {});
// The same loop with the expansion Q = P·P done by `expand` instead of hash SpGEMM (another
// library's SpGEMM in the same pipeline, for comparisons). expand(P, stream) gets P on the device
// (square, rows sorted) and the stream the elementwise steps run on; it returns Q on the device
// with every row sorted by column and unique columns (what mcl_prune needs), ready for work queued
// on that stream after it. The arrays are the callback's, must stay valid until its next call or
// until mcl returns, and are modified in place (pruning moves the kept entries of each row to its
// front). trace[i].expand_ms times the call and a wait for the stream.
template <class T>
using MclExpand = std::function<DeviceCsrView<T>(const DeviceCsrView<T>& p, void* stream)>;
template <class T>
MclResult mcl(Context& ctx, const CsrMatrix<T>& g, const MclOptions& o, const MclExpand<T>& expand);
// mcl()'s two ends alone: mcl_start's P built on the device (in T; the CPU's in double), and
// mcl_labels' clusters of a P (square) found on the device.
template <class T>
CsrMatrix<T> mcl_start(Context& ctx, const CsrMatrix<T>& g, const MclOptions& o = {});
template <class T>
MclResult mcl_labels(Context& ctx, const CsrMatrix<T>& p);
// One iteration on the GPU from a given P (square, rows sorted), as mcl_step; *change, when given,
// receives mcl_change(p, result) as the GPU measured it.
template <class T>
CsrMatrix<T> mcl_step(Context& ctx, const CsrMatrix<T>& p, const MclOptions& o, double* change = nullptr);

// Triangle counting, the SpGEMM benchmark of GraphBLAS suites: the triangles of the undirected
// graph whose edges are A's entries below the diagonal (L = tril(A, -1); a graph stored with both
// directions, a symmetric pattern, has each triangle counted once), as the sum of the masked
// product C<L> = L·L. The CPU reference marks row i's columns and walks L(k, :) for each k in
// L(i, :); it shares no code with the GPU version. UsageError for a non-square A.
template <class T>
int64_t triangle_count_cpu(const CsrMatrix<T>& a);
// On the GPU from device CSR (values unused), on `stream`, one wait (the count comes back): no L
// built and no C written (templates/apps/triangles.cuh). A's rows must be sorted with distinct
// columns in [0, n): UsageError naming the first row that is not (checked in the same pass), or
// for a non-square A. The host overload uploads A first.
template <class T>
int64_t triangle_count(Context& ctx, const DeviceCsrView<T>& a, void* stream);
template <class T>
int64_t triangle_count(Context& ctx, const CsrMatrix<T>& a);
// The mask step of the SpGEMM-then-mask way (for baselines): the sum of C(i, j) over j in
// L(i, :), C = L·L from any SpGEMM (rows in any order), L sorted; on `stream`, one wait.
template <class T>
double triangle_mask_sum(Context& ctx, const DeviceCsrView<T>& c, const DeviceCsrView<T>& l, void* stream);

}  // namespace dbsparse

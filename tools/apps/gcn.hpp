#pragma once
// A 2-layer GCN forward pass (Kipf & Welling 2017), the SpMM workload of the GNN benches:
//   H2 = Â · ReLU(Â · (X · W1)) · W2,  Â = D^-1/2 (A + I) D^-1/2,
// evaluated as Z1 = X·W1, P1 = Â·Z1, H1 = ReLU(P1), Z2 = H1·W2, H2 = Â·Z2 (the dense product
// first in both layers, as PyG's GCNConv does: the sparse products then have hidden and classes
// columns). The host side (Â, the seeded inputs, a double reference, the check) is CPU-only; the
// GPU pipeline does the dense products with cuBLAS (f32, no TF32) and the ReLU with a dbsparse
// kernel, and takes its two sparse products from the caller, so that dbsparse's SpmmPlan and
// cuSPARSE SpMM run the same pipeline otherwise. A caller whose first sparse product applies the
// ReLU itself (SpmmEpilogue::Relu) says so, and the pipeline skips its own ReLU pass.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dbsparse/context.hpp"
#include "dbsparse/io.hpp"
#include "dbsparse/matrix.hpp"

namespace dbsparse::tools {

struct GcnDims {
  int32_t nodes = 0;
  int features = 128, hidden = 128, classes = 16;
};

struct GcnAdjacency {
  CsrMatrix<float> a_hat;    // nodes x nodes, symmetric, the diagonal present in every row
  bool symmetrised = false;  // A's pattern was not symmetric: A + Aᵀ was used
  int64_t self_loops = 0;    // diagonal entries A had (replaced by I's)
};

// Â of a square matrix's pattern (values are ignored, stored zeros dropped, as a GCN reads an
// unweighted graph): A + Aᵀ when A is not symmetric, its self loops replaced by those of I, then
// Â_ij = 1 / sqrt(d_i d_j) with d the row counts of that A + I (in double, rounded once to f32).
// UsageError for a non-square A or one whose A + Aᵀ + I passes 2^31-1 entries.
GcnAdjacency gcn_normalized_adjacency(const CsrMatrix<double>& a);

// X (nodes x features) uniform in [-1, 1); W1 (features x hidden) and W2 (hidden x classes) Glorot
// uniform (within ±sqrt(6 / (fan_in + fan_out))); all row-major, from tools/bench/random.hpp's LCG.
struct GcnInputs {
  std::vector<float> x, w1, w2;
};
GcnInputs gcn_inputs(const GcnDims& d, uint64_t seed);
// The same inputs with every value replaced by its magnitude: the pipeline run on these gives, per
// entry of H2, the sum of |terms| of its product (ReLU is the identity on non-negative values, and
// bounds every layer-1 error it passes on), the yardstick of gcn_max_error.
GcnInputs gcn_abs_inputs(const GcnInputs& in);

// H2 (nodes x classes, row-major) by the same steps as the GPU pipeline, in double: for tests and
// `dbsparse gcn --cpu-check`. O(nodes * features * hidden + nnz(Â) * (hidden + classes)).
std::vector<double> gcn_forward_reference(const CsrMatrix<float>& a_hat, const GcnInputs& in, const GcnDims& d);

// The largest |got_i - want_i| / scale_i (a difference where scale_i == 0 counts as infinite, a NaN
// anywhere as NaN, which no tolerance accepts). UsageError unless the three have one length.
double gcn_max_error(std::span<const float> got, std::span<const float> want, std::span<const float> scale);
double gcn_max_error(std::span<const float> got, std::span<const double> want, std::span<const float> scale);

// The pipeline's steps, in order; forward() enqueues all five.
enum class GcnStage { Gemm1, Spmm1, Relu, Gemm2, Spmm2 };
inline constexpr GcnStage kGcnStages[] = {GcnStage::Gemm1, GcnStage::Spmm1, GcnStage::Relu, GcnStage::Gemm2,
                                          GcnStage::Spmm2};
const char* to_string(GcnStage s);  // "gemm1 (X W1)", ...

// C (nodes x n) = Â · B (nodes x n), both row-major f32 device pointers, enqueued on the
// pipeline's stream: layer 0 has n = hidden, layer 1 n = classes.
using GcnSparseProduct = std::function<void(int layer, uint64_t b, uint64_t c)>;

class GcnPipeline {
 public:
  // Uploads the inputs and allocates every intermediate (nothing is allocated per forward pass).
  GcnPipeline(Context& ctx, const Stream& stream, const GcnDims& d, const GcnInputs& in);
  ~GcnPipeline();
  GcnPipeline(const GcnPipeline&) = delete;
  GcnPipeline& operator=(const GcnPipeline&) = delete;

  void set_inputs(const GcnInputs& in);  // same dims (UsageError otherwise); synchronous upload
  // relu_in_spmm1: layer 0's sparse product writes ReLU(Â Z1) itself; the Relu stage does nothing.
  void stage(GcnStage s, const GcnSparseProduct& sparse, bool relu_in_spmm1 = false);
  void forward(const GcnSparseProduct& sparse, bool relu_in_spmm1 = false);
  uint64_t output() const;                     // H2 on the device
  std::vector<float> download_output() const;  // waits for the stream
  const GcnDims& dims() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// `dbsparse gcn GRAPH`: the forward pass with dbsparse's SpmmPlan and with cuSPARSE SpMM (per
// layer the fastest of its algorithms on this graph and width), end-to-end and per stage.
struct GcnBenchOptions {
  GcnDims dims;   // nodes is taken from the graph
  int reps = 20;  // timed forward passes (and per stage); the median is reported
  int warmup = 3;
  uint64_t seed = 1;
  std::string path = "config";  // dbsparse's SpMM path: config (the tuning DB's), auto, brp or csr
  // dbsparse's row order for Â (SpmmOptions::reorder: none, degree, rcm, community; "config": the
  // tuning DB's). Its host time is in the plans' setup and amortised over kGcnAmortisePasses.
  std::string reorder = "config";
  bool cpu_check = false;  // also compare both outputs with gcn_forward_reference
  // dbsparse's first SpMM applies the ReLU in its stores (SpmmEpilogue::Relu; a pass of its own on
  // the paths that cannot fuse it); cuSPARSE SpMM has no epilogue, so its pipeline keeps the pass.
  bool fuse_relu = true;
};

// The check's tolerance relative to sum |terms|: TF32's 2e-3 when a layer's plan runs on tensor
// cores (BRP or the condensed windows); else f32's 1e-5, or, for rows past ~20000 entries, the drift of an f32 sum along Â's
// longest row with a margin of 4 (4 * 2^-24 * sqrt(length)), the rule of the SpMM gpu tests.
inline constexpr double kGcnTolTf32 = 2e-3;
// Forward passes a one-time row order is spread over in the amortised speed-up (a training run's
// epochs).
inline constexpr int kGcnAmortisePasses = 100;
inline constexpr double kGcnTolF32 = 1e-5;
double gcn_tolerance(const CsrMatrix<float>& a_hat, bool tensor_cores);

// Builds Â (host, timed), plans both sides (plan_spmm, and cuSPARSE's descriptors, buffers and
// preprocessing, timed apart), checks the outputs against each other and times them. Prints a
// block of lines; returns the record ("ok": the check passed).
nlohmann::json bench_gcn(Context& ctx, const Stream& stream, const NamedMatrix& m, const GcnBenchOptions& opt);

}  // namespace dbsparse::tools

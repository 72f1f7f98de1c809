#pragma once
// SpMM, C = alpha * A * B + beta * C with A sparse (CSR, M x K) and B (K x n), C (M x n) dense,
// row-major; n = 1 .. 4096. Three paths: BRP-SpMM (brp.hpp; docs/DESIGN.md [3]), the TC
// groups on tensor cores plus the residual rows on CUDA cores; condensed TC windows
// (tc_condensed.hpp), every entry on tensor cores in zero-padded tiles, for moderate sparsity; or
// a CUDA-core CSR product (the fallback, and the ablation's baseline). Plan once, run many times.
// Value types (SpmmDtype): f32 (A, B, C f32; tensor cores in TF32, mma.m16n8k8), or f16 / bf16
// (A, B and C all 16-bit; tensor cores mma.m16n8k16 with f32 accumulators, CUDA cores sum in f32;
// C is rounded to the 16-bit type once per store, as cuSPARSE's SpMM with CUDA_R_16F / 16BF
// matrices and compute type CUDA_R_32F does; rows and windows cut into pieces for the atomic
// second pass are summed in an f32 workspace of the plan's and rounded once too).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dbsparse/brp.hpp"
#include "dbsparse/context.hpp"
#include "dbsparse/op_config.hpp"
#include "dbsparse/plan_info.hpp"
#include "dbsparse/reorder.hpp"
#include "dbsparse/tuning_db.hpp"

namespace dbsparse {

enum class SpmmPath { Auto, Brp, CsrCudaCore, Condensed };
const char* to_string(SpmmPath p);

// The values' type: of A (the plan rounds a CsrMatrix<float>'s values to it once, as the decoding
// plans do: the library's 16-bit host values are uint16_t words, half.hpp), B and C.
enum class SpmmDtype { F32, F16, BF16 };
const char* to_string(SpmmDtype d);  // "f32", "f16", "bf16"
// Also accepts "tf32" for F32 (the f32 plans' tensor core precision; `bench spmm --precision`).
SpmmDtype spmm_dtype_from_string(const std::string& s);
// The absolute error a C of this type can carry from its own rounding however small the entry:
// f16 below 2^-14 is subnormal, spaced 2^-24 apart, so an entry that cancels to a small fraction of
// its sum |a||b| carries a large "relative" error in any implementation
// (docs/decisions/spmm-config-defaults.md); bf16 keeps f32's exponents, f32 C is checked
// relatively alone. Checks forgive this much of |C - ref|.
inline double spmm_rounding_floor(SpmmDtype d) { return d == SpmmDtype::F16 ? 0x1p-24 : 0.0; }
int spmm_value_bytes(SpmmDtype d);  // 4 or 2

// What run() applies to each entry of C after alpha * A * B + beta * C (SpmmOptions::epilogue).
//  - None: nothing.
//  - Relu: max(C, 0), NaN kept: a GNN layer's activation (H = ReLU(Â · Z)) without a pass of its
//    own over C. The CSR path applies it in its final stores (each entry of C has one final
//    writer there); where several kernels add into C (the BRP and condensed paths, the CSR path's
//    f32 atomic pieces pass, staged windows) run() adds one in-place pass over C after them.
//    SpmmPlan::epilogue_fused() says which; cuSPARSE SpMM has no such epilogue.
enum class SpmmEpilogue { None, Relu };
const char* to_string(SpmmEpilogue e);                   // "none", "relu"
SpmmEpilogue parse_spmm_epilogue(const std::string& s);  // UsageError naming the choices

// How run() reduces row i's entries e (column k = col(e), value a_e) into C[i, j]
// (SpmmOptions::reduce); C = alpha * reduce + beta * C as for the sum:
//  - Sum: sum_e a_e * B[k, j] (the product).
//  - Mean: the sum over row i's length; 0 for an empty row.
//  - Max, Min: the largest (smallest) a_e * B[k, j], NaN when a product is; 0 for an empty row
//    (as torch_scatter and PyG). SpmmPlan::run_arg also writes which entry e won (the lowest e on
//    ties and among NaNs), for the gradient.
// A reduction other than Sum takes the CSR path (auto picks it; brp or condensed asked for is a
// UsageError). The mean runs the sum's kernels over A's values divided by their row's length; max
// and min a kernel of their own that cuts long rows into parts as the f32 sum does.
enum class SpmmReduce { Sum, Mean, Max, Min };
const char* to_string(SpmmReduce r);                 // "sum", "mean", "max", "min"
SpmmReduce parse_spmm_reduce(const std::string& s);  // UsageError naming the choices

// The SpMM op's config (op_config.hpp): what the tuning DB stores and dbtune searches.
struct SpmmConfig {
  static constexpr const char* kOp = "spmm";
  static constexpr bool kBlockFeatures = false;  // BRP's windows are 16 x 8g, not the 16x16 histogram's blocks
  // auto, in order: condensed when condensed_fill(A, g) >= min_condensed_fill; brp when
  // brp_group_share(A, f, g) >= min_tc_share; else csr. BRP lost to CSR on every matrix measured,
  // even at a TC share of 1, so auto leaves it out by default (min_tc_share above 1): BRP runs when
  // asked or tuned. dbtune searches all four. Figures: docs/decisions/spmm-config-defaults.md.
  std::string path = "auto";
  int f = 1;                   // BRP: nonzeros per slot
  int g = 4;                   // BRP: TC blocks (mma.m16n8k8 A operands) per group
  double min_tc_share = 1.01;  // auto's threshold on the share of nonzeros in TC groups (above 1: never)
  // auto's threshold on the condensed tiles' fill (stored entries / tile capacity). Condensed wins
  // over CSR from a fill of about half; below that, and on small matrices with too few windows to
  // fill the GPU, it loses, so auto asks for 0.45 (docs/decisions/spmm-config-defaults.md).
  double min_condensed_fill = 0.45;
  // BRP: expand the groups' A operands into fragment order once per plan when f >= this (16:
  // never). They take 16 x 8 x 4 bytes a block against 8f values, so 2x at f = 8, 16x at f = 1.
  int expand_min_f = 4;
  // BRP: the TC kernel's warps per block (1, 2, 4 or 8), which split a window's groups and add
  // their sums in shared memory. 8 was the fastest measured (docs/decisions/spmm-config-defaults.md).
  int tc_warps = 8;
  // BRP: a block sums at most this many of a window's groups; the rest of the window goes to a
  // second, atomic pass in runs of this length.
  int tc_max_run = 32;
  // CSR: a warp takes at most this many of a row's entries (0: 32 per subgroup, i.e. 32 * 32 /
  // lanes); the rest of the row goes to a second, atomic pass in runs of this length.
  int csr_max_run = 0;
  // CSR: the order the warps take A's rows in (reorder.hpp's rcm and community; degree here is
  // A's rows by decreasing length, O(rows); rcm and community need a square A). Nothing is moved: warp k takes row
  // order[k] and writes that row of C, so no pass is added. Degree puts rows of equal length in
  // one block (a block holds its registers until its slowest row is done) and the longest first;
  // rcm and community put rows that share B's rows together (L1 and L2 reuse). Computed on the
  // host once per plan (explain prints its time).
  // auto: degree where the rows' lengths vary (CV >= 0.6), else A's own order.
  std::string reorder = "auto";
  // CSR: 0 launches a warp per row (and per piece); k > 0 launches k blocks of 8 warps a SM that
  // stride over the rows, so no block holds its registers while one long row finishes.
  int csr_blocks_per_sm = 0;
  // CSR: warps a block (1, 2, 4 or 8). A block keeps its registers until its slowest row is done,
  // so rows of unequal length waste less of the SM in small blocks; 2 lost to 4.
  // CSR: 1 adds a block's pieces of one row in shared memory before the atomic add into C (a hub
  // row's pieces otherwise all add into the same n values); it gains most on hub-heavy graphs
  // (docs/decisions/spmm-config-defaults.md).
  int csr_warps = 4;
  int csr_piece_reduce = 1;
  // CSR, f32: 1 cuts a long row whole into parts that run in the same launch as the other rows
  // (each part's sum to a workspace, the row's last part to finish adds them in order and writes
  // C): no second launch, no atomics on C, and a long row's sum in a fixed order. 0: the row's
  // first max_run entries with the rows, the rest in a second, atomic pass (f16 / bf16 always).
  int csr_split = 1;
  // CSR: rows a warp (1, 2 or 4), each on 32 / rows lanes, where the lanes across N leave room
  // (lanes * rows <= 32: N <= 32 with float4 at 4, N <= 64 at 2; N = 128 takes 1). A warp of short
  // rows then keeps several rows' B loads in flight and pays its fixed costs once for them. 0: the
  // plan picks from A's mean row and its row count (spmm_plan.cpp, auto_rows_per_warp).
  int csr_rows_per_warp = 0;
  // CSR, f32, N a multiple of 4: runs of up to 32 short rows (in the warps' order) whose entries
  // reuse their distinct columns at least this many times on average go to staged windows
  // (templates/spmm/spmm_staged.cuh: the window's rows of B copied once into shared memory by
  // cp.async, its rows read them there), the rest to the CSR kernel, a second launch. 0: off.
  // Slower than the plain rows on every matrix that stages: a block a window of 32 rows gives ~1
  // block an SM on these matrices, and each block loads, waits, then computes. Off by default and
  // out of dbtune's space; kept as an option for a rework (docs/decisions/spmm-config-defaults.md).
  double csr_stage_reuse = 0;

  template <class V>
  void visit(V& v) {
    v.choice("path", path, {"auto", "brp", "csr", "condensed"},
             "auto: condensed when its fill >= min_condensed_fill, else brp when the TC share >= min_tc_share, else "
             "csr; brp; csr (CUDA cores); condensed (zero-padded TC windows)");
    v.integer("f", f, 1, 8, "BRP: nonzeros per slot (1, 2, 4 or 8)");
    v.integer("g", g, 1, 8, "BRP and condensed: TC blocks per group (1, 2, 4 or 8)");
    v.number("min_tc_share", min_tc_share, 0.0, 1.01,
             "auto takes BRP when at least this share of nonzeros is in TC groups (above 1: never)");
    v.number("min_condensed_fill", min_condensed_fill, 0.0, 1.01,
             "auto takes condensed TC windows when their tiles are at least this full (above 1: never)");
    v.integer("expand_min_f", expand_min_f, 1, 16, "BRP: expand A operands once per plan when f >= this (16: never)");
    v.integer("tc_warps", tc_warps, 1, 8, "BRP: TC kernel warps per block (1, 2, 4 or 8), splitting a window's groups");
    v.integer("tc_max_run", tc_max_run, 1, 1 << 20,
              "BRP: groups a block sums before the rest of a window goes to the atomic pass");
    v.integer("csr_max_run", csr_max_run, 0, 1 << 24,
              "CSR: entries a warp takes before the rest of a row goes to the atomic pass (0: 32 per subgroup)");
    v.integer("csr_blocks_per_sm", csr_blocks_per_sm, 0, 64,
              "CSR: 0 a warp per row; k > 0 k blocks a SM striding over the rows");
    v.integer("csr_warps", csr_warps, 1, 8, "CSR: warps a block (1, 2, 4 or 8)");
    v.integer("csr_piece_reduce", csr_piece_reduce, 0, 1,
              "CSR: 1 sums a block's pieces of one row in shared memory before adding them into C");
    v.integer("csr_split", csr_split, 0, 1,
              "CSR, f32: 1 sums a long row's parts in the same launch as the other rows; 0 a second, atomic pass");
    v.integer("csr_rows_per_warp", csr_rows_per_warp, 0, 4,
              "CSR: rows a warp (1, 2 or 4), each on 32 / rows lanes, where the lanes across N leave room; 0: the "
              "plan picks from A's mean row and row count");
    v.number(
        "csr_stage_reuse", csr_stage_reuse, 0.0, 32.0,
        "CSR, f32: stage windows of rows whose entries reuse their columns this often into shared memory (0: off)");
    v.choice("reorder", reorder, {"auto", "none", "degree", "rcm", "community"},
             "CSR: the order warps take A's rows in (auto: degree where row lengths vary, none, degree: by decreasing "
             "length, rcm, community: square A only); A, B and C as given");
  }
  void check() const {
    auto pow2 = [](int x) { return x == 1 || x == 2 || x == 4 || x == 8; };
    if (!pow2(f))
      throw UsageError("spmm config: 'f' (nonzeros per BRP slot) must be 1, 2, 4 or 8, got " + std::to_string(f));
    if (!pow2(g))
      throw UsageError("spmm config: 'g' (TC blocks per BRP group) must be 1, 2, 4 or 8, got " + std::to_string(g));
    if (!pow2(tc_warps))
      throw UsageError("spmm config: 'tc_warps' (TC kernel warps per block) must be 1, 2, 4 or 8, got " +
                       std::to_string(tc_warps));
    if (!pow2(csr_warps))
      throw UsageError("spmm config: 'csr_warps' (CSR kernel warps per block) must be 1, 2, 4 or 8, got " +
                       std::to_string(csr_warps));
    if (csr_rows_per_warp == 3)
      throw UsageError("spmm config: 'csr_rows_per_warp' must be 0 (the plan picks), 1, 2 or 4, got 3");
    if (reorder != "none" && reorder != "auto" && (path == "brp" || path == "condensed"))
      throw UsageError("spmm config: 'reorder' " + reorder + " applies to the CSR path (path auto or csr), not " +
                       path);
  }
};

// The tuning DB's bucket for a width n of B and C: dbtune tunes SpMM at n = 32 ("n32") and
// n = 128 ("n128") apart, and a plan reads the nearer class (n <= 64: "n32").
std::string spmm_tuning_bucket(int n_cols);

// Precedence, field by field: an explicit SpmmOptions field (path other than Auto, f or g set)
// wins; else `config` when given (read as an SpmmConfig); else the tuning DB's config for A on
// this device (tuned, predicted or the defaults above). With path Auto, the config's path decides
// ("auto" weighs brp_group_share(A, f, g) against min_tc_share).
struct SpmmOptions {
  SpmmPath path = SpmmPath::Auto;
  std::optional<int> f, g;         // BRP: nonzeros per slot, TC blocks per group (1, 2, 4 or 8 each)
  const Config* config = nullptr;  // instead of the tuning DB's
  // BRP: convert with csr_to_brp on the host and upload, instead of csr_to_brp_device (the
  // default; same arrays, bitwise). For tests and ablations. f16 / bf16 convert in f32 either way
  // (the GPU conversion has no 16-bit instantiation) and round the values on the host.
  bool convert_on_host = false;
  // A, B and C's type. Not a tuned field: the caller's data decides it.
  SpmmDtype dtype = SpmmDtype::F32;
  // The rows' order (SpmmConfig::reorder) instead of the config's; Reorder::None on a config that
  // asks for one turns it off. Needs the CSR path (Auto takes it): UsageError with BRP or condensed.
  std::optional<Reorder> reorder;
  // Applied to C by every run() (SpmmEpilogue): not a tuned field, the caller's model decides it.
  SpmmEpilogue epilogue = SpmmEpilogue::None;
  // The reduction over a row's entries (SpmmReduce): not a tuned field. Not Sum: the CSR path.
  SpmmReduce reduce = SpmmReduce::Sum;
  // Plan-time trial (path auto, no explicit config): where auto takes a tensor-core path, the plan
  // also builds the CSR one, times both on A (zero B and C of n_cols columns) and keeps the faster;
  // the tuning DB records the outcome for this matrix, device and n_cols, and later plans take it
  // without timing. < 0: on for A of >= 100K nonzeros with a 20 ms budget ($DBSPARSE_PLAN_TRIALS=0:
  // off); 0: off; > 0: that budget in ms of device time, whatever A's size.
  double trial_ms = -1;
};

class SpmmPlan {
 public:
  // SpMM C = alpha * A * B + beta * C for B and C with n_cols columns: BRP-SpMM, condensed
  // tensor-core windows or the CUDA-core CSR product, in f32, f16 or bf16 (SpmmOptions' dtype).
  // A in f64 is a UsageError, as is n_cols outside 1 .. 4096. plan_spmm(ctx, a, n, ...) is the
  // same call.
  template <class T>
  static SpmmPlan build(Context& ctx, const CsrMatrix<T>& a, int n_cols, const SpmmOptions& options);
  template <class T>
  static SpmmPlan build(Context& ctx, const CsrMatrix<T>& a, int n_cols);
  // A matrix already on the device with 64-bit row offsets (nnz past 2^31), f32: the CSR path
  // with rows in A's order and none cut (a long row stays with one warp), reading the caller's
  // arrays, which must outlive the plan. The options' path must be auto or csr, dtype f32 and the
  // config's reorder auto or none; config null: SpmmConfig's defaults (not fingerprinted).
  static SpmmPlan build(Context& ctx, const DeviceCsrView64<float>& a, int n_cols, const SpmmOptions& options);
  static SpmmPlan build(Context& ctx, const DeviceCsrView64<float>& a, int n_cols);

  // B: cols() x n_cols() and C: rows() x n_cols() values of dtype() on the device, row-major (f16
  // and bf16 as 16-bit words). beta == 0 never reads C. No allocation, no compilation, no host
  // synchronisation (capturable). The BRP path adds into C with atomics, so its C is equal to the
  // reference up to the order of f32 additions, not bitwise from run to run.
  // Several streams: a plan that cuts long rows (the CSR path's split parts, or a 16-bit plan's
  // f32 sums) keeps per-call sums and counts on the device, so its calls must be ordered (one
  // stream, or streams joined by events); give each concurrent stream its own plan.
  void run(uint64_t b, uint64_t c, void* stream, float alpha = 1.0f, float beta = 0.0f) const;
  // The same with sizes and the value type checked (UsageError naming them): float buffers for an
  // f32 plan, uint16_t (f16 or bf16 bits, half.hpp) for the others.
  void run(const DeviceBuffer<float>& b, DeviceBuffer<float>& c, const Stream& stream, float alpha = 1.0f,
           float beta = 0.0f) const;
  void run(const DeviceBuffer<uint16_t>& b, DeviceBuffer<uint16_t>& c, const Stream& stream, float alpha = 1.0f,
           float beta = 0.0f) const;
  // Max and Min plans: run() and, in `arg` (rows() x n_cols() int32 on the device, row-major as C),
  // the CSR entry index of A that gave each C entry (the lowest on ties; -1 for an empty row). A
  // plan of another reduction throws UsageError. run() of a Max / Min plan writes no arg.
  void run_arg(uint64_t b, uint64_t c, uint64_t arg, void* stream, float alpha = 1.0f, float beta = 0.0f) const;

  int32_t rows() const;
  int32_t cols() const;
  int n_cols() const;
  SpmmPath path() const;  // Brp, CsrCudaCore or Condensed: what Auto resolved to
  SpmmDtype dtype() const;
  int f() const;  // the BRP parameters (also on the CSR path: those Auto weighed)
  int g() const;
  double tc_share() const;        // nonzeros in TC groups / nnz (0 on the CSR path, 1 on the condensed one)
  double condensed_fill() const;  // the condensed path's tile fill (0 on the others)
  SpmmEpilogue epilogue() const;
  SpmmReduce reduce() const;
  bool epilogue_fused() const;  // applied in the product's own stores (no pass over C of its own)
  Reorder reorder() const;      // the rows' order the plan walks (None: A's own)
  double reorder_ms() const;    // its host time at plan creation (0 for None)
  // The rows' order (empty for None): warp k takes A's row row_order()[k].
  const std::vector<int32_t>& row_order() const;
  // The BRP path's format figures: split, bytes, conversion time and (converted on the GPU) peak
  // extra device memory against its bound. Empty on the CSR path.
  std::optional<BrpStats> brp_stats() const;
  const Config& config() const;            // the config read (source: tuned, predicted, default, explicit)
  const SpmmConfig& typed_config() const;  // with the explicit SpmmOptions fields applied
  int64_t device_bytes() const;            // everything the plan holds on the device
  const std::vector<KernelInfo>& kernels() const;
  std::string explain() const;

  SpmmPlan(SpmmPlan&&) noexcept;
  SpmmPlan& operator=(SpmmPlan&&) noexcept;
  ~SpmmPlan();
  struct Impl;

 private:
  explicit SpmmPlan(std::unique_ptr<Impl> impl);
  // A CsrMatrix<float>'s plan, its values already divided by their row's length for a mean.
  static SpmmPlan build_f32(Context& ctx, const CsrMatrix<float>& a, int n_cols, const SpmmOptions& options);
  std::unique_ptr<Impl> impl_;
};

// The op's entry point, as every op spells it: plan_<op>(ctx, problem, options...).
template <class M, class... Args>
SpmmPlan plan_spmm(Context& ctx, const M& a, int n_cols, const Args&... args) {
  return SpmmPlan::build(ctx, a, n_cols, args...);
}

}  // namespace dbsparse

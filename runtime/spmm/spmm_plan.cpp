// SpMM plans (include/dbsparse/spmm.hpp): BRP-SpMM (C = beta * C, the TC groups, the residual
// rows: up to three launches), condensed TC windows (BRP's TC kernel on zero-padded tiles built on
// the host, no residual) or the CUDA-core CSR product (one launch), in f32, f16 or bf16.
#include "dbsparse/spmm.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <type_traits>

#include <fmt/format.h>

#include "codegen/keys/spmm_key.hpp"
#include "dbsparse/abi/csr_view.h"
#include "dbsparse/abi/spmm.h"
#include "dbsparse/brp.hpp"
#include "dbsparse/brp_device.hpp"
#include "dbsparse/device_csr.hpp"
#include "dbsparse/features.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/tc_condensed.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/device_csr_view.hpp"
#include "runtime/gpu/module_registry.hpp"
#include "runtime/spmm/spmm_pieces.hpp"
#include "runtime/spmm/spmm_stage.hpp"

namespace dbsparse {

std::string spmm_tuning_bucket(int n_cols) { return n_cols <= 64 ? "n32" : "n128"; }

const char* to_string(SpmmPath p) {
  switch (p) {
    case SpmmPath::Auto: return "auto";
    case SpmmPath::Brp: return "brp";
    case SpmmPath::CsrCudaCore: return "csr-cuda-core";
    case SpmmPath::Condensed: return "condensed";
  }
  return "?";
}

const char* to_string(SpmmDtype d) {
  switch (d) {
    case SpmmDtype::F32: return "f32";
    case SpmmDtype::F16: return "f16";
    case SpmmDtype::BF16: return "bf16";
  }
  return "?";
}

SpmmDtype spmm_dtype_from_string(const std::string& s) {
  if (s == "f32" || s == "tf32") return SpmmDtype::F32;
  if (s == "f16") return SpmmDtype::F16;
  if (s == "bf16") return SpmmDtype::BF16;
  throw UsageError(fmt::format("unknown SpMM value type '{}' (f32 or its alias tf32, f16, bf16)", s));
}

int spmm_value_bytes(SpmmDtype d) { return d == SpmmDtype::F32 ? 4 : 2; }

const char* to_string(SpmmEpilogue e) { return e == SpmmEpilogue::Relu ? "relu" : "none"; }

SpmmEpilogue parse_spmm_epilogue(const std::string& s) {
  if (s == "none") return SpmmEpilogue::None;
  if (s == "relu") return SpmmEpilogue::Relu;
  throw UsageError(fmt::format("unknown SpMM epilogue '{}' (none or relu)", s));
}

static_assert(static_cast<int>(SpmmDtype::F32) == static_cast<int>(codegen::SpmmValue::F32) &&
                  static_cast<int>(SpmmDtype::F16) == static_cast<int>(codegen::SpmmValue::F16) &&
                  static_cast<int>(SpmmDtype::BF16) == static_cast<int>(codegen::SpmmValue::BF16),
              "SpmmDtype and codegen::SpmmValue name the same types in the same order");

namespace {

// Four values a load whenever n % 4 == 0 (and B and C are aligned to 4 values, checked per run):
// below n = 128 the CSR kernel puts fewer lanes across N and more subgroups over the entries
// (csr_lanes).
bool wants_vec4(int n) { return n % 4 == 0; }

std::vector<uint16_t> to_16(std::span<const float> x, SpmmDtype d) {
  return d == SpmmDtype::F16 ? floats_to_half(x) : floats_to_bf16(x);
}

// The BRP groups' values, converted in f32 (stride `from` floats a group), rounded to 16 bits at
// the 16-bit stride `to` (each run starts 128 bytes apart, as brp.hpp defines it for 2-byte
// values; the padding is 0).
std::vector<uint16_t> group_values_16(const std::vector<float>& v, int64_t groups, int32_t from, int32_t to,
                                      int64_t run, SpmmDtype d) {
  std::vector<uint16_t> out(static_cast<size_t>(groups) * static_cast<size_t>(to), 0);
  for (int64_t q = 0; q < groups; ++q) {
    const auto h = to_16(std::span<const float>(v.data() + q * from, static_cast<size_t>(run)), d);
    std::copy(h.begin(), h.end(), out.begin() + q * to);
  }
  return out;
}

// The CSR kernel's lanes across N: the fewest (a power of two up to 32) whose lanes * vec columns
// cover n; the rest of the warp splits the row's entries.
int csr_lanes(int n, int vec) {
  int lanes = 1;
  while (lanes < 32 && lanes * vec < n) lanes *= 2;
  return lanes;
}

constexpr int32_t kAutoFillWindows = 2048;  // auto's sample for condensed_fill (tc_condensed.hpp)

// Runs past the config's tc_max_run / csr_max_run are cut into pieces for a second, atomic pass
// (SpmmArgs::pieces). CSR's default: 32 entries per subgroup, so the longest warp of either pass
// takes 32 steps (max_run 256 at every n let a 2000-entry row's warps set the time of
// powerlaw:n=20000 at n = 128: 99 us against cuSPARSE's 25, H200, 2026-11-30).
// But never below twice the mean row: rows of equal length need no second pass (32 entries a
// warp at n = 128 sent pruned 4096^2 at density 0.5, 2048 entries a row, from 341 to 466 us).
int32_t csr_max_run(const SpmmConfig& c, int lanes, int64_t nnz, int32_t rows) {
  if (c.csr_max_run > 0) return c.csr_max_run;
  const int64_t twice_mean = rows > 0 ? (2 * nnz + rows - 1) / rows : 0;
  return static_cast<int32_t>(std::clamp<int64_t>(twice_mean, 32 * (32 / lanes), int64_t{1} << 24));
}

// Rows a warp when the config leaves it to the plan (csr_rows_per_warp 0): R rows where A's mean
// row is at most 32 entries and the rows fill the GPU twice over at R a warp (64 warps an SM).
// H200, n = 32, s24 run 1 (R = 1 / 2 / 4, us): uniform 200K d = 16 101.6 / 74.8 / 63.7,
// luxembourg_osm 39.2 / 22.1 / 12.2, R-MAT 17 (mean 28) 102 / 84 / 74, community 100K (mean 30)
// 68.5 / 60.0 / 56.6; on small matrices fewer warps than the GPU holds lose (ex10hs, 2.5K rows:
// 4.9 / 6.3 / 8.8; Cora 7.9 / 8.0 / 12.4). max_run stays a whole warp's (above): cutting rows at
// a group's 32 entries a subgroup sent more rows to parts and cost more than it saved (run 3:
// R-MAT 17 at R = 2 84 -> 96 us, R-MAT 16 38 -> 46).
int auto_rows_per_warp(int lanes, int64_t nnz, int32_t rows, int sm_count) {
  const double mean = rows > 0 ? double(nnz) / double(rows) : 0.0;
  const int64_t resident = int64_t{64} * std::max(sm_count, 1);
  for (int r : {4, 2}) {
    const int subgroups = 32 / r / lanes;
    if (subgroups >= 1 && mean <= 32.0 && int64_t{rows} >= 2 * r * resident) return r;
  }
  return 1;
}

// Rows a warp of the CSR kernel with `vec` values a load: the config's (0: auto_rows_per_warp),
// as far as the lanes across N leave room (at n = 128 a row takes all 32 lanes).
int csr_rows_a_warp(const SpmmConfig& c, int n_cols, int vec, int64_t nnz, int32_t rows, int sm_count) {
  const int lanes = csr_lanes(n_cols, vec);
  const int asked = c.csr_rows_per_warp > 0 ? c.csr_rows_per_warp : auto_rows_per_warp(lanes, nnz, rows, sm_count);
  return std::min(asked, 32 / lanes);
}

// The degree order for SpMM: A's rows by decreasing length, ties in A's order (a counting sort,
// O(rows + longest row)). The rows' own lengths are what balance the warps (the graph's degree
// when A is symmetric); reorder()'s degree symmetrises A first: 90 ms a plan on R-MAT 17 (H200
// host, 2026-12-04), where GCN's 100 passes save 2.6 ms.
std::vector<int32_t> rows_by_length(const CsrMatrix<float>& a) {
  int32_t longest = 0;
  for (int32_t r = 0; r < a.rows; ++r) longest = std::max(longest, a.row_ptr[r + 1] - a.row_ptr[r]);
  std::vector<int32_t> start(static_cast<size_t>(longest) + 2, 0);
  for (int32_t r = 0; r < a.rows; ++r) ++start[static_cast<size_t>(longest - (a.row_ptr[r + 1] - a.row_ptr[r])) + 1];
  for (size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
  std::vector<int32_t> order(static_cast<size_t>(a.rows));
  for (int32_t r = 0; r < a.rows; ++r)
    order[static_cast<size_t>(start[static_cast<size_t>(longest - (a.row_ptr[r + 1] - a.row_ptr[r]))]++)] = r;
  return order;
}

// reorder auto: the degree order where A's row lengths vary this much (standard deviation over
// mean). On the H200 (2026-12-04, docs/bench/2026-12-04-s22-run6-spmm-graphs.*) it gained 1.10-1.28x
// at N = 32 on power-law, R-MAT, cit-HepPh and bayer10 (CV 0.7 and up) and was within noise on the
// other CV >= 0.6 matrices; it lost up to 1.35x where rows are alike (community at N = 128, CV
// about 0.2; road graph, uniform, mhd3200a: 0.2-0.3).
constexpr double kAutoDegreeCv = 0.6;
// Warps a block of relu_inplace where a plan's epilogue needs a pass of its own over C.
constexpr int kEpilogueWarps = 8;

double row_length_cv(const CsrMatrix<float>& a) {
  if (a.rows <= 0 || a.nnz() == 0) return 0.0;
  const double mean = double(a.nnz()) / a.rows;
  double var = 0;
  for (int32_t r = 0; r < a.rows; ++r) {
    const double d = double(a.row_ptr[r + 1] - a.row_ptr[r]) - mean;
    var += d * d;
  }
  return std::sqrt(var / a.rows) / mean;
}

template <class U>
DeviceBuffer<U> upload(const std::vector<U>& v) {
  return DeviceBuffer<U>(std::span<const U>(v));
}

template <class U>
const U* dev(const DeviceBuffer<U>& b) {
  return reinterpret_cast<const U*>(b.ptr());
}

}  // namespace

struct SpmmPlan::Impl {
  int32_t rows = 0, cols = 0;
  int64_t nnz = 0;
  int n = 1;
  SpmmPath asked = SpmmPath::Auto, path = SpmmPath::Brp;
  SpmmDtype dtype = SpmmDtype::F32;
  int f = 1, g = 4;
  Config config;      // as read (tuning DB or SpmmOptions::config)
  SpmmConfig typed;   // with SpmmOptions' explicit fields applied
  double auto_share = -1;  // brp_group_share, when Auto weighed it
  double auto_fill = -1;   // condensed_fill, when Auto weighed it
  double fill = 0;         // the condensed path's tile fill
  double convert_ms = 0;   // the condensed path's host conversion
  int64_t csr_bytes = 0;   // the condensed path: A in CSR, what its tiles are weighed against
  Reorder order = Reorder::None;  // the CSR path's row order (SpmmConfig::reorder)
  double auto_cv = -1;             // the rows' length CV, when reorder auto weighed it
  double reorder_ms = 0;
  std::vector<int32_t> row_order;  // old_of_new; on the device as row_id
  BrpStats stats;          // BRP path
  // The row kernels' CSR: the residual rows (BRP; row_id maps them to C's rows) or all of A (CSR).
  DeviceBuffer<int32_t> row_ptr, col_idx, row_id;
  DeviceBuffer<float> vals;
  DeviceBuffer<uint16_t> vals16;  // instead of vals in f16 / bf16
  int32_t csr_rows = 0;
  // The TC groups.
  DeviceBuffer<int32_t> window, old_col;
  DeviceBuffer<uint8_t> local_id;
  DeviceBuffer<float> group_vals;
  DeviceBuffer<uint16_t> group_vals16;  // instead of group_vals in f16 / bf16
  int32_t local_stride = 0, value_stride = 0, groups = 0;
  CUfunction tc = nullptr, rows1 = nullptr, rows4 = nullptr;
  DeviceBuffer<uint32_t> afrag;  // the groups' A operands in fragment order, when expanded (SpmmArgs::afrag)
  CUfunction tc_pieces = nullptr, rows1_pieces = nullptr, rows4_pieces = nullptr;
  DeviceBuffer<int32_t> pieces;  // triples: see SpmmArgs::pieces
  int32_t n_pieces = 0, max_run = 0;
  // CSR f32 split (SpmmConfig::csr_split): long rows' parts in the rows' launch (SpmmArgs::parts).
  DeviceBuffer<int32_t> parts, part_first;
  DeviceBuffer<float> part_sum;
  DeviceBuffer<uint32_t> part_count;
  int32_t n_parts = 0;  // the cut rows are part_first.size() - 1
  unsigned csr_grid1 = 1, csr_grid4 = 1, csr_pieces_grid = 1;  // the scalar and float4 kernels'
  int csr_rows1 = 1, csr_rows4 = 1;  // rows a warp of each (SpmmConfig::csr_rows_per_warp)
  // Staged windows (SpmmConfig::csr_stage_reuse; abi::SpmmStageArgs, spmm_stage.hpp), float4 calls
  // only: the windows' arrays and kernel, and the rows left to the CSR kernel then (plain_rows).
  DeviceBuffer<int32_t> st_win_row, st_win_col, st_cols, st_rows, st_ptr, plain_rows;
  DeviceBuffer<uint16_t> st_slot;
  DeviceBuffer<float> st_vals;
  int32_t st_windows = 0, plain_count = 0;
  double st_build_ms = 0;
  CUfunction staged = nullptr;
  unsigned plain_grid4 = 1;
  unsigned st_smem = 0;  // the largest window's rows of B, bytes

  // Builds the staged windows of A (f32, float4 calls) in the warps' order; grid_for sizes the CSR
  // launch over the rows left plain.
  template <class GridFor>
  void stage_windows(const CsrMatrix<float>& a, int n_cols, const GridFor& grid_for) {
    // Short rows only (at most 64 entries, and within max_run), as many distinct columns as a
    // block's shared memory holds rows of B.
    const int32_t max_cols = abi::kSpmmStageBytes / (4 * n_cols);
    if (max_cols < 2) return;
    const auto t0 = std::chrono::steady_clock::now();
    const SpmmStageWindows sw = spmm_stage_windows(a, row_order, typed.csr_stage_reuse, 32,
                                                   std::min<int32_t>(64, max_run), std::min(max_cols, 65535));
    st_build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (sw.windows() == 0) return;
    st_windows = sw.windows();
    int32_t widest = 0;
    for (int32_t w = 0; w < st_windows; ++w)
      widest = std::max(widest, sw.win_col[static_cast<size_t>(w) + 1] - sw.win_col[static_cast<size_t>(w)]);
    st_smem = static_cast<unsigned>(widest) * 4u * static_cast<unsigned>(n_cols);
    st_win_row = upload(sw.win_row);
    st_win_col = upload(sw.win_col);
    st_cols = upload(sw.cols);
    st_rows = upload(sw.rows);
    st_ptr = upload(sw.ptr);
    st_slot = upload(sw.slot);
    st_vals = upload(sw.vals);
    plain_count = static_cast<int32_t>(sw.plain.size());
    plain_rows = sw.plain.empty() ? DeviceBuffer<int32_t>(1) : upload(sw.plain);
    plain_grid4 = grid_for((int64_t{plain_count} + csr_rows4 - 1) / csr_rows4 + n_parts);
  }
  int csr_warps = 8;  // the CSR path's launches (SpmmConfig::csr_blocks_per_sm)
  int tc_warps = 4;
  // f16 / bf16 with pieces: the cut rows' or windows' f32 sums (abi::SpmmAcc, spmm_pieces.hpp),
  // rounded into C by `finalize` after the pieces pass.
  DeviceBuffer<float> acc_w;
  DeviceBuffer<int32_t> acc_slot, acc_units;
  int32_t acc_n_units = 0, acc_unit_rows = 1;
  CUfunction finalize = nullptr;
  unsigned finalize_grid = 1;
  DeviceBuffer<int32_t> win_group;  // windows + 1: each window's group range
  unsigned tc_grid = 1, tc_pieces_grid = 1;
  bool vec4 = false;
  std::vector<KernelInfo> kernels;
  // A DeviceCsrView64's arrays (not owned): the plan runs csr_spmm_rows64 on them.
  uint64_t view_row_ptr64 = 0, view_col_idx = 0, view_vals = 0;
  // SpmmOptions::epilogue: fused (SpmmArgs::relu) where each entry of C has one final writer, the
  // CSR path's stores; else relu_inplace over C after the product (a CSR module's third entry).
  SpmmEpilogue epilogue = SpmmEpilogue::None;
  bool epilogue_fused = false;
  CUfunction relu = nullptr;  // the CSR path's module's relu_inplace, or the pass's
  int relu_warps = kEpilogueWarps;
  unsigned relu_grid = 1;

  // After the path's kernels are placed: fused on the CSR path unless f32 atomic pieces or staged
  // windows (a kernel of their own, which has no epilogue) also write C. load_relu(warps) gives
  // relu_inplace from a CSR module of the plan's value type with that many warps a block.
  template <class LoadRelu>
  void place_epilogue(SpmmEpilogue e, int sm_count, const LoadRelu& load_relu) {
    epilogue = e;
    if (e == SpmmEpilogue::None) return;
    const bool f32 = dtype == SpmmDtype::F32;
    epilogue_fused = path == SpmmPath::CsrCudaCore && st_windows == 0 && (n_pieces == 0 || !f32);
    if (epilogue_fused) return;
    if (path == SpmmPath::CsrCudaCore && relu) {
      relu_warps = csr_warps;
    } else {
      relu = load_relu(kEpilogueWarps);
      relu_warps = kEpilogueWarps;
    }
    // A grid-stride loop (float4 in f32): a few blocks a SM cover any C.
    const int64_t items = (int64_t{rows} * n + (f32 ? 3 : 0)) / (f32 ? 4 : 1);
    relu_grid = static_cast<unsigned>(std::clamp<int64_t>((items + relu_warps * 32 - 1) / (relu_warps * 32), 1,
                                                          int64_t{std::max(sm_count, 1)} * 16));
  }

  abi::SpmmAcc acc() const {
    abi::SpmmAcc w{};
    if (acc_n_units == 0) return w;
    w.w = reinterpret_cast<float*>(acc_w.ptr());
    w.slot = dev(acc_slot);
    w.units = dev(acc_units);
    w.n_units = acc_n_units;
    w.unit_rows = acc_unit_rows;
    return w;
  }
  // 16 bits: the units (rows or windows of unit_rows rows) that `ptr` and max_run cut get an f32
  // workspace; every part of such a unit is summed there and C rounded once (finalize).
  void cut_into_workspace(const std::vector<int32_t>& ptr, int unit_rows) {
    const SpmmCutUnits cut = spmm_cut_units(ptr, max_run);
    if (cut.units.empty()) return;
    acc_slot = upload(cut.slot);
    acc_units = upload(cut.units);
    acc_n_units = static_cast<int32_t>(cut.units.size());
    acc_unit_rows = unit_rows;
    const int64_t floats = spmm_workspace_floats(cut, unit_rows, n);
    acc_w = DeviceBuffer<float>(static_cast<size_t>(floats));
    // A grid-stride loop: a few blocks a SM cover any size.
    finalize_grid = static_cast<unsigned>(
        std::clamp<int64_t>((floats + abi::kSpmmFinalizeThreads - 1) / abi::kSpmmFinalizeThreads, 1, 4096));
  }

  // The TC kernels' launch shape from each window's group range wg (windows + 1): windows past
  // tc_max_run groups are cut into pieces for the atomic pass, and a block takes a (window or
  // piece, 64 columns of C), every window, so that C is written once.
  void place_windows(const std::vector<int32_t>& wg, int n_cols, bool f32) {
    max_run = typed.tc_max_run;
    const auto pc = spmm_cut_pieces(wg, max_run);
    n_pieces = static_cast<int32_t>(pc.size() / 3);
    if (!pc.empty()) pieces = upload(pc);
    if (!f32 && !pc.empty()) cut_into_workspace(wg, abi::kSpmmWindowRows);
    const int64_t windows = static_cast<int64_t>(wg.size()) - 1;
    const int64_t chunks = ((n_cols + abi::kSpmmTileCols - 1) / abi::kSpmmTileCols + 7) / 8;
    tc_grid = static_cast<unsigned>(windows * chunks);
    tc_pieces_grid = static_cast<unsigned>(n_pieces * chunks);
  }

  uint64_t vals_ptr() const { return dtype == SpmmDtype::F32 ? vals.ptr() : vals16.ptr(); }
  uint64_t group_vals_ptr() const { return dtype == SpmmDtype::F32 ? group_vals.ptr() : group_vals16.ptr(); }
};

template <class T>
SpmmPlan Context::plan_spmm(const CsrMatrix<T>& a, int n_cols) {
  return plan_spmm(a, n_cols, SpmmOptions{});
}

template <class T>
SpmmPlan Context::plan_spmm(const CsrMatrix<T>& a, int n_cols, const SpmmOptions& opt) {
  if constexpr (!std::is_same_v<T, float>) {
    throw UsageError(
        "plan_spmm: A must be a CsrMatrix<float> (there are no f64 SpMM kernels): convert it with a.cast<float>(); "
        "for f16 or bf16 data set SpmmOptions::dtype, and the plan rounds A's values once");
  } else {
    if (n_cols < 1 || n_cols > abi::kSpmmMaxCols)
      throw UsageError(fmt::format("plan_spmm: n_cols must be in 1 .. {}, got {}", abi::kSpmmMaxCols, n_cols));
    if (opt.f || opt.g) validate(BrpParams{opt.f.value_or(1), opt.g.value_or(1)});
    validate(a);
    make_current();
    require_device_bytes(fmt::format("plan_spmm of a {} x {} matrix with {} nonzeros (A, at least)", a.rows, a.cols, a.nnz()),
                         csr_device_bytes(a.rows, a.nnz(), spmm_value_bytes(opt.dtype)));
    auto p = std::make_unique<SpmmPlan::Impl>();
    // The config: SpmmOptions::config, else the tuning DB's; then the explicit options over it.
    p->config = opt.config ? *opt.config
                           : lookup_config(info_.record().fingerprint, structure_fingerprint(a),
                                           config_info<SpmmConfig>(), spmm_tuning_bucket(n_cols),
                                           [&] { return compute_features(a); });
    p->typed = config_from_json<SpmmConfig>(p->config.params);
    p->config.params = config_to_json(p->typed);
    if (opt.f) p->typed.f = *opt.f;
    if (opt.g) p->typed.g = *opt.g;
    if (opt.path == SpmmPath::Brp) p->typed.path = "brp";
    if (opt.path == SpmmPath::CsrCudaCore) p->typed.path = "csr";
    if (opt.path == SpmmPath::Condensed) p->typed.path = "condensed";
    if (opt.reorder) p->typed.reorder = to_string(*opt.reorder);
    p->typed.check();
    p->rows = a.rows;
    p->cols = a.cols;
    p->nnz = a.nnz();
    p->n = n_cols;
    p->f = p->typed.f;
    p->g = p->typed.g;
    p->dtype = opt.dtype;
    const bool f32 = opt.dtype == SpmmDtype::F32;
    const auto value = static_cast<codegen::SpmmValue>(opt.dtype);
    p->asked = p->typed.path == "brp"         ? SpmmPath::Brp
               : p->typed.path == "csr"       ? SpmmPath::CsrCudaCore
               : p->typed.path == "condensed" ? SpmmPath::Condensed
                                              : SpmmPath::Auto;
    p->path = p->asked;
    // An explicit order takes the CSR path (check() refused it with brp or condensed); auto decides
    // once the path is known.
    const bool auto_order = p->typed.reorder == "auto";
    p->order = auto_order ? Reorder::None : parse_reorder(p->typed.reorder);
    if (p->order != Reorder::None) {
      if (p->order != Reorder::Degree && a.rows != a.cols)
        throw UsageError(fmt::format("plan_spmm: reorder '{}' orders a graph's vertices and needs a square A, got {} x {}",
                                     to_string(p->order), a.rows, a.cols));
      p->path = SpmmPath::CsrCudaCore;
    }
    if (p->path == SpmmPath::Auto) {
      p->auto_fill = condensed_fill(a, p->g, kAutoFillWindows);
      if (a.nnz() > 0 && p->auto_fill >= p->typed.min_condensed_fill) {
        p->path = SpmmPath::Condensed;
      } else if (p->typed.min_tc_share <= 1.0) {
        p->auto_share = brp_group_share(a, p->f, p->g);
        p->path = p->auto_share >= p->typed.min_tc_share ? SpmmPath::Brp : SpmmPath::CsrCudaCore;
      } else {
        p->path = SpmmPath::CsrCudaCore;
      }
    }
    p->vec4 = wants_vec4(n_cols);
    const std::string arch = info_.arch();
    auto load = [&](const codegen::SpmmKey& key) {
      auto loaded = modules_->get(codegen::make_source(key), arch);
      p->kernels.push_back(loaded.info);
      return loaded.fns;
    };
    if (p->path == SpmmPath::CsrCudaCore && auto_order) {
      p->auto_cv = row_length_cv(a);
      p->order = p->auto_cv >= kAutoDegreeCv ? Reorder::Degree : Reorder::None;
    }
    if (p->path == SpmmPath::CsrCudaCore) {
      // Reordered: warp k takes A's row row_order[k] (SpmmArgs::row_id); A and C are not moved.
      if (p->order != Reorder::None) {
        const auto t0 = std::chrono::steady_clock::now();
        p->row_order = p->order == Reorder::Degree ? rows_by_length(a) : dbsparse::reorder(a, p->order).old_of_new;
        p->reorder_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        p->row_id = upload(p->row_order);
      }
      p->row_ptr = upload(a.row_ptr);
      p->col_idx = upload(a.col_idx);
      if (f32) p->vals = upload(a.values);
      else p->vals16 = upload(to_16(a.values, opt.dtype));
      p->csr_rows = a.rows;
      // The scalar kernel always: it also serves B or C that are not aligned to 4 values.
      p->csr_warps = p->typed.csr_warps;
      p->csr_rows1 = csr_rows_a_warp(p->typed, n_cols, 1, a.nnz(), a.rows, info_.sm_count);
      p->csr_rows4 = csr_rows_a_warp(p->typed, n_cols, 4, a.nnz(), a.rows, info_.sm_count);
      auto csr_key = [&](int vec, int rows) {
        codegen::SpmmKey k{codegen::SpmmKernelPath::Csr, 1, 4, p->csr_warps, vec, csr_lanes(n_cols, vec), value};
        k.rows = rows;
        return k;
      };
      const auto f1 = load(csr_key(1, p->csr_rows1));
      p->rows1 = f1.at(0);
      p->rows1_pieces = f1.at(1);
      p->relu = f1.at(2);  // the epilogue's pass, where it cannot be fused (place_epilogue)
      if (!f32) p->finalize = f1.at(3);
      if (p->vec4) {
        const auto f4 = load(csr_key(4, p->csr_rows4));
        p->rows4 = f4.at(0);
        p->rows4_pieces = f4.at(1);
        if (f32) p->staged = f4.at(3);  // csr_spmm_staged, used when windows qualify
      }
      // One max_run serves both kernels (the pieces are cut once): the float4 kernel's lanes when
      // it is loaded, as it runs whenever B and C are aligned.
      p->max_run = csr_max_run(p->typed, csr_lanes(n_cols, p->vec4 ? 4 : 1), a.nnz(), a.rows);
      // Every part's sum is kept (n floats each) until the row's last part adds them: at most
      // 2 nnz / max_run parts, and the default max_run is at least twice the mean row, so at most
      // C's size. A small csr_max_run of the user's could ask for far more: the atomic pass then.
      bool split = f32 && p->typed.csr_split;
      SpmmSplitParts sp;
      if (split) {
        sp = spmm_split_parts(a.row_ptr, p->max_run);
        split = int64_t{sp.count()} <= std::max<int64_t>(a.rows, 1 << 16);
      }
      if (split && sp.count() > 0) {
        p->n_parts = sp.count();
        p->parts = upload(sp.parts);
        p->part_first = upload(sp.first);
        p->part_sum = DeviceBuffer<float>(static_cast<size_t>(sp.count()) * static_cast<size_t>(n_cols));
        p->part_count = upload(std::vector<uint32_t>(static_cast<size_t>(sp.slots()), 0u));
      } else if (!split) {
        const auto pc = spmm_cut_pieces(a.row_ptr, p->max_run);
        p->n_pieces = static_cast<int32_t>(pc.size() / 3);
        if (!pc.empty()) p->pieces = upload(pc);
        if (!f32 && !pc.empty()) p->cut_into_workspace(a.row_ptr, 1);
      }
      auto grid_for = [&](int64_t units) {
        const int64_t one_each = std::max<int64_t>(1, (units + p->csr_warps - 1) / p->csr_warps);
        const int64_t resident = int64_t{p->typed.csr_blocks_per_sm} * std::max(info_.sm_count, 1);
        return static_cast<unsigned>(p->typed.csr_blocks_per_sm > 0 ? std::min(one_each, resident) : one_each);
      };
      p->csr_grid1 = grid_for((int64_t{a.rows} + p->csr_rows1 - 1) / p->csr_rows1 + p->n_parts);
      p->csr_grid4 = grid_for((int64_t{a.rows} + p->csr_rows4 - 1) / p->csr_rows4 + p->n_parts);
      p->csr_pieces_grid = grid_for(p->n_pieces);
      if (f32 && p->vec4 && p->typed.csr_stage_reuse > 0) p->stage_windows(a, n_cols, grid_for);
    } else if (p->path == SpmmPath::Condensed) {
      const auto t0 = std::chrono::steady_clock::now();
      const CondensedTc m = csr_to_condensed(a, p->g, opt.dtype);
      p->convert_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      p->fill = m.fill();
      p->csr_bytes = m.csr_bytes();
      p->groups = static_cast<int32_t>(m.groups());  // csr_to_condensed kept every array in int32
      p->window = upload(m.group_window);
      p->old_col = upload(m.old_col);
      p->win_group = upload(m.win_group);
      if (p->groups > 0) p->afrag = upload(m.afrag);
      p->csr_rows = 0;  // no residual
      p->tc_warps = p->typed.tc_warps;
      // BRP's module at f = 1: its FRAGS kernels read afrag and old_col alone, which is all these
      // tiles are (f only shapes the per-group tile build, not used here).
      const auto fns = load(codegen::SpmmKey{codegen::SpmmKernelPath::Brp, 1, p->g, p->tc_warps, 1, 32, value});
      p->tc = fns.at(4);
      p->tc_pieces = fns.at(5);
      if (!f32) p->finalize = fns.at(7);
      p->place_windows(m.win_group, n_cols, f32);
    } else {
      // Each window's groups are found from the group windows, on the host (they are 4 bytes a group).
      std::vector<int32_t> group_window;
      if (opt.convert_on_host) {
        const auto t0 = std::chrono::steady_clock::now();
        const BrpMatrix<float> m = csr_to_brp(a, BrpParams{p->f, p->g});
        p->stats = brp_stats(m);
        p->stats.convert_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        p->window = upload(m.group_window_id);
        p->old_col = upload(m.old_col_id);
        p->local_id = upload(m.local_id);
        p->row_ptr = upload(m.res_row_offset);
        p->col_idx = upload(m.res_col_id);
        p->row_id = upload(m.res_rows_id);
        if (f32) {
          p->group_vals = upload(m.values);
          p->vals = upload(m.res_values);
        } else {
          p->group_vals16 = upload(group_values_16(m.values, m.groups(), m.value_stride,
                                                   brp_value_stride(p->f, p->g, 2), m.group_nnz(), opt.dtype));
          p->vals16 = upload(to_16(m.res_values, opt.dtype));
        }
        group_window = m.group_window_id;
      } else {
        BrpDeviceMatrix<float> m = csr_to_brp_device(*this, a, BrpParams{p->f, p->g});
        p->stats = brp_stats(m);
        group_window = m.group_window_id.download();
        p->window = std::move(m.group_window_id);
        p->old_col = std::move(m.old_col_id);
        p->local_id = std::move(m.local_id);
        p->row_ptr = std::move(m.res_row_offset);
        p->col_idx = std::move(m.res_col_id);
        p->row_id = std::move(m.res_rows_id);
        if (f32) {
          p->group_vals = std::move(m.values);
          p->vals = std::move(m.res_values);
        } else {
          // Rounded on the host: a round trip of the values, once per plan.
          const int64_t groups = static_cast<int64_t>(group_window.size());
          p->group_vals16 = upload(group_values_16(m.values.download(), groups, brp_value_stride(p->f, p->g, 4),
                                                   brp_value_stride(p->f, p->g, 2),
                                                   int64_t{abi::kSpmmBlockSlots} * p->g * p->f, opt.dtype));
          p->vals16 = upload(to_16(m.res_values.download(), opt.dtype));
        }
      }
      p->local_stride = brp_local_stride(p->f, p->g);
      p->value_stride = brp_value_stride(p->f, p->g, spmm_value_bytes(opt.dtype));
      p->groups = static_cast<int32_t>(p->stats.groups);  // check_brp_counts kept it in int32
      p->csr_rows = static_cast<int32_t>(p->stats.residual_rows);
      p->tc_warps = p->typed.tc_warps;
      const auto fns = load(codegen::SpmmKey{codegen::SpmmKernelPath::Brp, p->f, p->g, p->tc_warps, 1, 32, value});
      p->rows1 = fns.at(1);
      p->rows4 = fns.at(2);
      const bool expand = p->f >= p->typed.expand_min_f && p->groups > 0;
      p->tc = fns.at(expand ? 4 : 0);
      p->tc_pieces = fns.at(expand ? 5 : 3);
      if (!f32) p->finalize = fns.at(7);
      // Groups come in window order: win_group[w] is window w's first.
      const int64_t windows = (int64_t{a.rows} + abi::kSpmmWindowRows - 1) / abi::kSpmmWindowRows;
      std::vector<int32_t> wg(static_cast<size_t>(windows) + 1, 0);
      for (int32_t w : group_window) ++wg[static_cast<size_t>(w) + 1];
      for (size_t i = 1; i < wg.size(); ++i) wg[i] += wg[i - 1];
      p->win_group = upload(wg);
      p->place_windows(wg, n_cols, f32);
      if (expand) {
        // A group's operands: g m16n8k8 tiles in f32, ceil(g / 2) m16n8k16 tiles in 16 bits; 16 bytes a lane each.
        const int tiles = f32 ? p->g : abi::spmm_k16_pairs(p->g);
        p->afrag = DeviceBuffer<uint32_t>(static_cast<size_t>(p->groups) * tiles * 32 * 4);
        abi::SpmmArgs args{};
        args.local_id = dev(p->local_id);
        args.group_vals = reinterpret_cast<const float*>(p->group_vals_ptr());
        args.local_stride = p->local_stride;
        args.value_stride = p->value_stride;
        uint64_t out = p->afrag.ptr();
        int32_t groups = p->groups;
        void* params[] = {&args, &out, &groups};
        DBS_CU(cuLaunchKernel(fns.at(6), static_cast<unsigned>((int64_t{groups} + p->tc_warps - 1) / p->tc_warps), 1, 1,
                              p->tc_warps * 32, 1, 1, 0, nullptr, params, nullptr));
        DBS_CU(cuCtxSynchronize());
      }
    }
    p->place_epilogue(opt.epilogue, info_.sm_count, [&](int warps) {
      return load(codegen::SpmmKey{codegen::SpmmKernelPath::Csr, 1, 4, warps, 1, csr_lanes(n_cols, 1), value}).at(2);
    });
    return SpmmPlan(std::move(p));
  }
}

SpmmPlan Context::plan_spmm(const DeviceCsrView64<float>& a, int n_cols) { return plan_spmm(a, n_cols, SpmmOptions{}); }

SpmmPlan Context::plan_spmm(const DeviceCsrView64<float>& a, int n_cols, const SpmmOptions& opt) {
  if (n_cols < 1 || n_cols > abi::kSpmmMaxCols)
    throw UsageError(fmt::format("plan_spmm: n_cols must be in 1 .. {}, got {}", abi::kSpmmMaxCols, n_cols));
  validate(a, "plan_spmm (64-bit offsets)");
  if (opt.dtype != SpmmDtype::F32)
    throw UsageError("plan_spmm (64-bit offsets): f32 only (a 16-bit A would be a copy of the caller's values)");
  if (opt.path == SpmmPath::Brp || opt.path == SpmmPath::Condensed)
    throw UsageError(fmt::format("plan_spmm (64-bit offsets): the CSR path only, not {}", to_string(opt.path)));
  make_current();
  auto p = std::make_unique<SpmmPlan::Impl>();
  p->config = opt.config ? *opt.config
                         : Config{"spmm", config_to_json(SpmmConfig{}), ConfigSource::Default, "device view"};
  p->typed = config_from_json<SpmmConfig>(p->config.params);
  p->config.params = config_to_json(p->typed);
  // The rows' order: none, degree, or auto's degree where the lengths vary, all made on the
  // device where A is; rcm and community need A on the host.
  const std::string order = opt.reorder ? to_string(*opt.reorder) : p->typed.reorder;
  if (order != "auto" && order != "none" && order != "degree")
    throw UsageError("plan_spmm (64-bit offsets): reorder " + order +
                     " needs A on the host (a CsrMatrix); none, degree or auto are made on the device");
  if (p->typed.path == "brp" || p->typed.path == "condensed")
    throw UsageError("plan_spmm (64-bit offsets): the config asks for path " + p->typed.path + "; the CSR path only");
  // The kernel indexes B and C by the caller's arrays: checked first.
  const detail::DeviceCsrArrays arrays = detail::arrays_of(a);
  detail::check_device_csr(*this, "plan_spmm (64-bit offsets)", "A", arrays, false);
  if (order != "none" && a.rows > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    const detail::DeviceRowLengths lengths = detail::device_row_lengths(*this, arrays);
    if (order == "auto") p->auto_cv = lengths.cv;
    if (order == "degree" || lengths.cv >= kAutoDegreeCv) {
      p->order = Reorder::Degree;
      p->row_id = detail::device_degree_order(*this, arrays, lengths);
    }
    p->reorder_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  p->rows = a.rows;
  p->cols = a.cols;
  p->nnz = a.nnz;
  p->n = n_cols;
  p->dtype = SpmmDtype::F32;
  p->asked = opt.path == SpmmPath::Auto && p->typed.path == "auto" ? SpmmPath::Auto : SpmmPath::CsrCudaCore;
  p->path = SpmmPath::CsrCudaCore;
  p->csr_rows = a.rows;
  p->csr_warps = p->typed.csr_warps;
  p->vec4 = n_cols % 4 == 0;
  auto load = [&](int vec, int rows) {
    codegen::SpmmKey k{codegen::SpmmKernelPath::Csr, 1, 4, p->csr_warps, vec, csr_lanes(n_cols, vec)};
    k.rows = rows;
    k.offsets64 = true;
    auto loaded = modules_->get(codegen::make_source(k), info_.arch());
    p->kernels.push_back(loaded.info);
    return loaded.fns.at(0);
  };
  p->csr_rows1 = csr_rows_a_warp(p->typed, n_cols, 1, a.nnz, a.rows, info_.sm_count);
  p->rows1 = load(1, p->csr_rows1);
  if (p->vec4) {
    p->csr_rows4 = csr_rows_a_warp(p->typed, n_cols, 4, a.nnz, a.rows, info_.sm_count);
    p->rows4 = load(4, p->csr_rows4);
  }
  auto grid_for = [&](int rows_a_warp) {
    const int64_t units = (int64_t{a.rows} + rows_a_warp - 1) / rows_a_warp;
    return static_cast<unsigned>(std::max<int64_t>(1, (units + p->csr_warps - 1) / p->csr_warps));
  };
  p->csr_grid1 = grid_for(p->csr_rows1);
  p->csr_grid4 = grid_for(p->csr_rows4);
  p->view_row_ptr64 = reinterpret_cast<uintptr_t>(a.row_ptr);
  p->view_col_idx = reinterpret_cast<uintptr_t>(a.col_idx);
  p->view_vals = reinterpret_cast<uintptr_t>(a.values);
  // One kernel writes each entry of C once: the epilogue is always fused.
  p->place_epilogue(opt.epilogue, info_.sm_count, [](int) -> CUfunction { return nullptr; });
  return SpmmPlan(std::move(p));
}

SpmmPlan::SpmmPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SpmmPlan::SpmmPlan(SpmmPlan&&) noexcept = default;
SpmmPlan& SpmmPlan::operator=(SpmmPlan&&) noexcept = default;
SpmmPlan::~SpmmPlan() = default;

namespace {
void check_sizes(const SpmmPlan::Impl& p, size_t b, size_t c, const char* what) {
  const size_t want_b = static_cast<size_t>(p.cols) * static_cast<size_t>(p.n);
  const size_t want_c = static_cast<size_t>(p.rows) * static_cast<size_t>(p.n);
  if (b != want_b || c != want_c)
    throw UsageError(fmt::format("SpmmPlan::run: B has {} {} (need {} x {} = {}), C has {} (need {} x {} = {})", b,
                                 what, p.cols, p.n, want_b, c, p.rows, p.n, want_c));
}
}  // namespace

void SpmmPlan::run(const DeviceBuffer<float>& b, DeviceBuffer<float>& c, const Stream& stream, float alpha,
                   float beta) const {
  if (impl_->dtype != SpmmDtype::F32)
    throw UsageError(fmt::format("SpmmPlan::run: the plan is {}, so B and C are uint16_t buffers, not float",
                                 to_string(impl_->dtype)));
  check_sizes(*impl_, b.size(), c.size(), "floats");
  run(b.ptr(), c.ptr(), stream.handle(), alpha, beta);
}

void SpmmPlan::run(const DeviceBuffer<uint16_t>& b, DeviceBuffer<uint16_t>& c, const Stream& stream, float alpha,
                   float beta) const {
  if (impl_->dtype == SpmmDtype::F32)
    throw UsageError("SpmmPlan::run: the plan is f32, so B and C are float buffers, not uint16_t");
  check_sizes(*impl_, b.size(), c.size(), to_string(impl_->dtype));
  run(b.ptr(), c.ptr(), stream.handle(), alpha, beta);
}

void SpmmPlan::run(uint64_t b, uint64_t c, void* stream, float alpha, float beta) const {
  const Impl& p = *impl_;
  if (p.rows == 0) return;
  if (!c || (!b && p.cols > 0)) throw UsageError("SpmmPlan::run: B and C must be device pointers");
  const auto h = static_cast<CUstream>(stream);
  abi::SpmmArgs args{};
  args.row_ptr = dev(p.row_ptr);
  args.col_idx = dev(p.col_idx);
  args.vals = reinterpret_cast<const float*>(p.vals_ptr());
  args.row_id = p.row_id.size() ? dev(p.row_id) : nullptr;  // BRP's residual rows, or CSR's order
  args.group_window = dev(p.window);
  args.old_col = dev(p.old_col);
  args.local_id = dev(p.local_id);
  args.group_vals = reinterpret_cast<const float*>(p.group_vals_ptr());
  args.b = reinterpret_cast<const float*>(b);
  args.c = reinterpret_cast<float*>(c);
  args.rows = p.csr_rows;
  args.m = p.rows;
  args.n = p.n;
  args.local_stride = p.local_stride;
  args.value_stride = p.value_stride;
  args.alpha = alpha;
  args.beta = beta;
  args.win_group = p.path != SpmmPath::CsrCudaCore ? dev(p.win_group) : nullptr;
  args.pieces = p.n_pieces ? dev(p.pieces) : nullptr;
  args.n_pieces = p.n_pieces;
  args.piece_reduce = p.path == SpmmPath::CsrCudaCore && p.typed.csr_piece_reduce ? 1 : 0;
  args.max_run = p.max_run;
  args.afrag = p.afrag.size() ? dev(p.afrag) : nullptr;
  if (p.n_parts) {
    args.parts = dev(p.parts);
    args.part_first = dev(p.part_first);
    args.part_sum = reinterpret_cast<float*>(p.part_sum.ptr());
    args.part_count = reinterpret_cast<uint32_t*>(p.part_count.ptr());
    args.n_parts = p.n_parts;
  }
  args.relu = p.epilogue_fused ? 1 : 0;
  // The epilogue's own pass over C, last, where the plan could not fuse it.
  auto epilogue_pass = [&] {
    if (p.epilogue == SpmmEpilogue::None || p.epilogue_fused) return;
    uint64_t x = c;
    long long count = static_cast<long long>(p.rows) * p.n;
    void* relu_params[] = {&x, &count};
    DBS_CU(cuLaunchKernel(p.relu, p.relu_grid, 1, 1, p.relu_warps * 32, 1, 1, 0, h, relu_params, nullptr));
  };
  void* params[] = {&args};
  // The 16-bit row and TC kernels also take the workspace (all null when nothing is cut).
  abi::SpmmAcc acc = p.acc();
  void* params16[] = {&args, &acc};
  const bool f32 = p.dtype == SpmmDtype::F32;
  void** tc_params = f32 ? params : params16;
  // 16 bits with pieces: the cut units' C, from their f32 sums, once the pieces are in.
  auto finalize = [&] {
    if (!f32 && p.acc_n_units)
      DBS_CU(cuLaunchKernel(p.finalize, p.finalize_grid, 1, 1, abi::kSpmmFinalizeThreads, 1, 1, 0, h, params16,
                            nullptr));
  };
  const uint64_t vec_bytes = 4 * static_cast<uint64_t>(spmm_value_bytes(p.dtype));
  const bool v4 = p.vec4 && b % vec_bytes == 0 && c % vec_bytes == 0;
  const CUfunction rows_fn = v4 ? p.rows4 : p.rows1;
  if (p.view_row_ptr64) {  // 64-bit offsets: one launch over the caller's arrays
    args.col_idx = reinterpret_cast<const int32_t*>(p.view_col_idx);
    args.vals = reinterpret_cast<const float*>(p.view_vals);
    CUdeviceptr rp64 = p.view_row_ptr64;
    void* params64[] = {&args, &rp64};
    DBS_CU(cuLaunchKernel(rows_fn, v4 ? p.csr_grid4 : p.csr_grid1, 1, 1, p.csr_warps * 32, 1, 1, 0, h, params64, nullptr));
    return;
  }
  if (p.path == SpmmPath::CsrCudaCore) {
    unsigned grid = v4 ? p.csr_grid4 : p.csr_grid1;
    if (p.st_windows > 0 && v4) {  // the staged windows, then the CSR kernel on the other rows
      abi::SpmmStageArgs sa{dev(p.st_win_row), dev(p.st_win_col), dev(p.st_cols), dev(p.st_rows), dev(p.st_ptr),
                            dev(p.st_slot), dev(p.st_vals), args.b, args.c, p.n, p.st_windows, alpha, beta};
      void* stage_params[] = {&sa};
      DBS_CU(cuLaunchKernel(p.staged, static_cast<unsigned>(p.st_windows), 1, 1, abi::kSpmmStageWarps * 32, 1, 1,
                            p.st_smem, h, stage_params, nullptr));
      args.row_id = dev(p.plain_rows);
      args.rows = p.plain_count;
      grid = p.plain_grid4;
    }
    if (args.rows > 0 || p.n_parts > 0)
      DBS_CU(cuLaunchKernel(rows_fn, grid, 1, 1, p.csr_warps * 32, 1, 1, 0, h, tc_params, nullptr));
    if (p.n_pieces)
      DBS_CU(cuLaunchKernel(v4 ? p.rows4_pieces : p.rows1_pieces, p.csr_pieces_grid, 1, 1, p.csr_warps * 32, 1, 1, 0, h,
                            tc_params, nullptr));
    finalize();
    epilogue_pass();
    return;
  }
  // The TC kernel writes every entry of C (alpha * groups + beta * C; in 16 bits a cut window's
  // after finalize); the residual rows add after it.
  DBS_CU(cuLaunchKernel(p.tc, p.tc_grid, 1, 1, p.tc_warps * 32, 1, 1, 0, h, tc_params, nullptr));
  if (p.n_pieces)
    DBS_CU(cuLaunchKernel(p.tc_pieces, p.tc_pieces_grid, 1, 1, p.tc_warps * 32, 1, 1, 0, h, tc_params, nullptr));
  finalize();
  if (p.csr_rows > 0)
    DBS_CU(cuLaunchKernel(rows_fn,
                          static_cast<unsigned>((int64_t{p.csr_rows} + abi::kSpmmRowWarps - 1) / abi::kSpmmRowWarps),
                          1, 1, abi::kSpmmRowWarps * 32, 1, 1, 0, h, params, nullptr));
  epilogue_pass();
}

int32_t SpmmPlan::rows() const { return impl_->rows; }
int32_t SpmmPlan::cols() const { return impl_->cols; }
int SpmmPlan::n_cols() const { return impl_->n; }
SpmmPath SpmmPlan::path() const { return impl_->path; }
SpmmDtype SpmmPlan::dtype() const { return impl_->dtype; }
int SpmmPlan::f() const { return impl_->f; }
int SpmmPlan::g() const { return impl_->g; }
double SpmmPlan::tc_share() const {
  if (impl_->path == SpmmPath::Condensed) return impl_->nnz > 0 ? 1.0 : 0.0;
  return impl_->path == SpmmPath::Brp ? impl_->stats.tc_share : 0.0;
}
Reorder SpmmPlan::reorder() const { return impl_->order; }
double SpmmPlan::reorder_ms() const { return impl_->reorder_ms; }
const std::vector<int32_t>& SpmmPlan::row_order() const { return impl_->row_order; }
double SpmmPlan::condensed_fill() const { return impl_->path == SpmmPath::Condensed ? impl_->fill : 0.0; }
SpmmEpilogue SpmmPlan::epilogue() const { return impl_->epilogue; }
bool SpmmPlan::epilogue_fused() const { return impl_->epilogue_fused; }
std::optional<BrpStats> SpmmPlan::brp_stats() const {
  if (impl_->path != SpmmPath::Brp) return std::nullopt;
  return impl_->stats;
}
const std::vector<KernelInfo>& SpmmPlan::kernels() const { return impl_->kernels; }
const Config& SpmmPlan::config() const { return impl_->config; }
const SpmmConfig& SpmmPlan::typed_config() const { return impl_->typed; }

int64_t SpmmPlan::device_bytes() const {
  const Impl& p = *impl_;
  return static_cast<int64_t>((p.row_ptr.size() + p.col_idx.size() + p.row_id.size() + p.window.size() +
                               p.old_col.size() + p.win_group.size() + p.pieces.size() + p.afrag.size() +
                               p.acc_w.size() + p.acc_slot.size() + p.acc_units.size() + p.parts.size() +
                               p.part_first.size() + p.part_sum.size() + p.part_count.size() +
                               p.st_win_row.size() + p.st_win_col.size() + p.st_cols.size() + p.st_rows.size() +
                               p.st_ptr.size() + p.plain_rows.size() + p.st_vals.size()) * 4 +
                              p.st_slot.size() * 2 +
                              (p.vals.size() + p.group_vals.size()) * 4 +
                              (p.vals16.size() + p.group_vals16.size()) * 2 + p.local_id.size());
}

std::string SpmmPlan::explain() const {
  const Impl& p = *impl_;
  const double th = p.typed.min_tc_share;
  const double th_fill = p.typed.min_condensed_fill;
  std::string why = "asked for";
  if (p.asked == SpmmPath::Auto) {
    why = fmt::format("auto: condensed fill at g = {} (from up to {} windows) is {:.3f} {} min_condensed_fill {}", p.g,
                      kAutoFillWindows, p.auto_fill,
                      p.auto_fill >= th_fill ? ">=" : "<", th_fill);
    if (p.auto_share >= 0)
      why += fmt::format("; TC share at f = {}, g = {} is {:.3f} {} min_tc_share {}", p.f, p.g, p.auto_share,
                         p.auto_share >= th ? ">=" : "<", th);
  }
  std::string out = fmt::format("spmm {}x{}, {} nonzeros, n = {}, {}: path {} ({})\n", p.rows, p.cols, p.nnz, p.n,
                                to_string(p.dtype), to_string(p.path), why);
  const bool f32 = p.dtype == SpmmDtype::F32;
  out += fmt::format("  config ({}): {}{}; used: {}\n", to_string(p.config.source), p.config.params.dump(),
                     p.config.note.empty() ? "" : " — " + p.config.note, config_to_json(p.typed).dump());
  if (p.path == SpmmPath::Brp) {
    const BrpStats& s = p.stats;
    out += fmt::format(
        "  BRP f = {}, g = {}: {} TC groups ({:.1f}% of the nonzeros, {} tensor cores, a block of {} warps per "
        "16-row window and 64 columns, at most {} groups a window, {} more runs added atomically, A operands {}), {} residual rows "
        "({} nonzeros, CUDA cores, f32 sums)\n",
        p.f, p.g, s.groups, 100.0 * s.tc_share,
        f32 ? "TF32 m16n8k8" : fmt::format("{} m16n8k16 (two blocks a mma)", to_string(p.dtype)), p.tc_warps,
        p.max_run, p.n_pieces,
        p.afrag.size() ? "expanded once per plan" : "built per group in shared memory", s.residual_rows,
        s.residual_nnz);
    if (s.on_device)
      out += fmt::format(
          "  converted on the GPU by csr_to_brp_device in {:.2f} ms, peak extra device memory {} bytes (bound "
          "4 * nnz * 8 = {}); device {} bytes, {:.3f}x CSR\n",
          s.convert_ms, s.peak_extra_bytes, s.peak_bound_bytes(), device_bytes(),
          s.bytes_csr ? double(s.bytes) / double(s.bytes_csr) : 0.0);
    else
      out += fmt::format("  converted on the host by csr_to_brp in {:.1f} ms and uploaded (SpmmOptions::convert_on_host); "
                         "device {} bytes, {:.3f}x CSR\n",
                         s.convert_ms, device_bytes(), s.bytes_csr ? double(s.bytes) / double(s.bytes_csr) : 0.0);
    if (!f32)
      out += fmt::format("  converted in f32, then A's values rounded to {} on the host: the device bytes are the "
                         "plan's, the x CSR ratio and the peak the f32 conversion's\n", to_string(p.dtype));
  } else if (p.path == SpmmPath::Condensed) {
    out += fmt::format(
        "  condensed TC windows, g = {}: {} groups of {} zero-padded 16 x 8 tiles ({} tensor cores, fill {:.3f}: "
        "stored entries over tile capacity), A operands in fragment order, built on the host in {:.1f} ms; a block "
        "of {} warps per 16-row window and 64 columns, at most {} groups a window, {} more runs added atomically; "
        "no residual; device {} bytes ({:.3f}x CSR's {})\n",
        p.g, p.groups, p.g, f32 ? "TF32 m16n8k8" : fmt::format("{} m16n8k16 (two tiles a mma)", to_string(p.dtype)),
        p.fill, p.convert_ms, p.tc_warps, p.max_run, p.n_pieces, device_bytes(),
        double(device_bytes()) / double(std::max<int64_t>(1, p.csr_bytes)), p.csr_bytes);
  } else if (p.view_row_ptr64) {
    out += fmt::format(
        "  CSR on CUDA cores (f32 sums) with 64-bit row offsets over the caller's device arrays (a DeviceCsrView64): "
        "{} rows a warp (float4 kernel; {} with scalars), none cut; {} lanes across N (4 values a load) or {} "
        "(scalars); {} blocks of {} warps\n",
        p.csr_rows4, p.csr_rows1, csr_lanes(p.n, 4), csr_lanes(p.n, 1), p.vec4 ? p.csr_grid4 : p.csr_grid1,
        p.csr_warps);
    if (p.auto_cv >= 0)
      out += fmt::format("  reorder auto: the rows' length CV is {:.2f} (counted on the device), {} {}\n", p.auto_cv,
                         p.auto_cv >= kAutoDegreeCv ? ">=" : "<", kAutoDegreeCv);
    out += p.order == Reorder::Degree
               ? fmt::format("  rows taken in degree order, made on the device in {:.1f} ms at plan time (rows by "
                             "decreasing length, past {} together): warp k takes A's row order[k]\n",
                             p.reorder_ms, abi::kDegreeCap)
               : std::string("  rows taken in A's order\n");
  } else {
    const std::string long_rows =
        p.n_parts ? fmt::format("rows longer than {} entries ({}) cut into {} parts of a warp each in the same launch, "
                                "the last part of a row to finish adding them in order",
                                p.max_run, p.part_first.size() - 1, p.n_parts)
                  : fmt::format("its first {} entries; {} more runs added atomically in a second launch", p.max_run,
                                p.n_pieces);
    const std::string per_warp =
        p.csr_rows4 == 1 && p.csr_rows1 == 1
            ? std::string("a warp per row")
            : fmt::format("{} rows a warp (float4 kernel; {} with scalars), each on 32 / rows lanes", p.csr_rows4,
                          p.csr_rows1);
    // The float4 launch's blocks (over the plain rows when windows are staged).
    const unsigned rows_grid = !p.vec4 ? p.csr_grid1 : p.st_windows > 0 ? p.plain_grid4 : p.csr_grid4;
    out += fmt::format("  CSR on CUDA cores (f32 sums), {} ({}), "
                       "{} lanes across N (4 values a load) or {} (scalars), the rest of the row's lanes over the entries; "
                       "{} blocks of {} warps{}; device {} bytes\n",
                       per_warp, long_rows, csr_lanes(p.n, 4), csr_lanes(p.n, 1), rows_grid,
                       p.csr_warps, p.typed.csr_blocks_per_sm > 0 ? " striding over the rows" : "", device_bytes());
    if (p.st_windows > 0)
      out += fmt::format(
          "  staged windows (csr_stage_reuse {}): {} windows of up to 32 rows ({} rows, {:.1f}% of the entries), "
          "their entries over their distinct columns {:.2f}; a block each copies the window's rows of B into up "
          "to {} bytes of shared memory by cp.async and its rows read them there (float4 calls; the other {} rows "
          "by the CSR kernel, a second launch); built on the host in {:.1f} ms\n",
          p.typed.csr_stage_reuse, p.st_windows, p.st_rows.size(),
          100.0 * double(p.st_slot.size()) / double(std::max<int64_t>(1, p.nnz)),
          double(p.st_slot.size()) / double(std::max<size_t>(1, p.st_cols.size())), p.st_smem, p.plain_count,
          p.st_build_ms);
    else if (p.typed.csr_stage_reuse > 0)
      out += fmt::format("  staged windows (csr_stage_reuse {}): none qualified{} ({:.1f} ms)\n", p.typed.csr_stage_reuse,
                         p.dtype != SpmmDtype::F32 || !p.vec4 ? " (f32 and N a multiple of 4 only)" : "",
                         p.st_build_ms);
    if (p.auto_cv >= 0)
      out += fmt::format("  reorder auto: the rows' length CV is {:.2f}, {} {} ({})\n", p.auto_cv,
                         p.auto_cv >= kAutoDegreeCv ? ">=" : "<", kAutoDegreeCv,
                         p.order == Reorder::Degree ? "degree order" : "A's own order");
    if (p.order != Reorder::None)
      out += fmt::format("  rows taken in {} order ({}computed on the host in {:.1f} ms at plan time): warp k takes A's row "
                         "order[k]; A, B and C as given, no extra pass\n",
                         to_string(p.order), p.order == Reorder::Degree ? "A's rows by decreasing length, " : "",
                         p.reorder_ms);
  }
  if (!f32) {
    const bool brp = p.path == SpmmPath::Brp;
    if (p.acc_n_units)
      out += fmt::format("  {}: the {} {} cut into pieces are summed in f32 (first pass and pieces, f32 atomics, in a "
                         "workspace of their {} rows x n = {} floats) and rounded to {} once by a finalize pass; ",
                         to_string(p.dtype), p.acc_n_units, p.path != SpmmPath::CsrCudaCore ? "windows" : "rows",
                         int64_t{p.acc_n_units} * p.acc_unit_rows, p.acc_w.size(), to_string(p.dtype));
    else
      out += fmt::format("  {}: nothing cut into pieces; ", to_string(p.dtype));
    out += brp ? "C is rounded once per entry, a residual row's entries twice (brp_residual adds after)\n"
               : "C is rounded once per entry\n";
  }
  out += fmt::format("  columns per lane: {} (4 a load needs n % 4 == 0 and B and C aligned to {} bytes)\n",
                     p.vec4 ? "4 where B and C are aligned, else 1" : "1", 4 * spmm_value_bytes(p.dtype));
  if (p.epilogue != SpmmEpilogue::None)
    out += fmt::format("  epilogue {}: {}\n", to_string(p.epilogue),
                       p.epilogue_fused ? "fused into the final stores of C (no pass of its own)"
                                        : "a pass over C after the product (several kernels add into C on this path)");
  for (const KernelInfo& k : p.kernels) out += fmt::format("  kernel {} ({})\n", k.key, k.origin);
  return out;
}

template SpmmPlan Context::plan_spmm(const CsrMatrix<float>&, int);
template SpmmPlan Context::plan_spmm(const CsrMatrix<double>&, int);
template SpmmPlan Context::plan_spmm(const CsrMatrix<float>&, int, const SpmmOptions&);
template SpmmPlan Context::plan_spmm(const CsrMatrix<double>&, int, const SpmmOptions&);

}  // namespace dbsparse

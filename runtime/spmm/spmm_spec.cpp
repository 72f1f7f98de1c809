// The SpMM plan's host decisions (spmm_spec.hpp): pure host code, no CUDA.
#include "runtime/spmm/spmm_spec.hpp"

#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "dbsparse/abi/spmm.h"
#include "dbsparse/brp.hpp"
#include "dbsparse/reorder.hpp"

namespace dbsparse::spmm_detail {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Runs past the config's csr_max_run are cut into pieces for a second, atomic pass
// (SpmmArgs::pieces). The default, 32 entries per subgroup, keeps the longest warp of either pass
// at 32 steps, so one long row's warps do not set the time of the whole product; but never below
// twice the mean row, as rows of equal length need no second pass. Why:
// docs/decisions/spmm-csr-max-run.md.
int32_t csr_max_run(const SpmmConfig& c, int lanes, int64_t nnz, int32_t rows) {
  if (c.csr_max_run > 0) return c.csr_max_run;
  const int64_t twice_mean = rows > 0 ? (2 * nnz + rows - 1) / rows : 0;
  return static_cast<int32_t>(std::clamp<int64_t>(twice_mean, 32 * (32 / lanes), int64_t{1} << 24));
}

// The degree order for SpMM: A's rows by decreasing length, ties in A's order (a counting sort,
// O(rows + longest row)). The rows' own lengths are what balance the warps (the graph's degree
// when A is symmetric); reorder()'s degree symmetrises A first, which costs more at plan time than
// the order saves over a typical run (docs/decisions/spmm-reorder-auto.md).
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

codegen::SpmmValue value_of(SpmmDtype d) { return static_cast<codegen::SpmmValue>(d); }

// The config read, with SpmmOptions' explicit fields over it.
void apply_options(SpmmSpec& s, const SpmmOptions& opt) {
  s.typed = config_from_json<SpmmConfig>(s.config.params);
  s.config.params = config_to_json(s.typed);
  if (opt.f) s.typed.f = *opt.f;
  if (opt.g) s.typed.g = *opt.g;
  if (opt.path == SpmmPath::Brp) s.typed.path = "brp";
  if (opt.path == SpmmPath::CsrCudaCore) s.typed.path = "csr";
  if (opt.path == SpmmPath::Condensed) s.typed.path = "condensed";
  if (opt.reorder) s.typed.reorder = to_string(*opt.reorder);
  s.typed.check();
  s.f = s.typed.f;
  s.g = s.typed.g;
}

// The path and the rows' order. An explicit order takes the CSR path (check() refused it with brp
// or condensed); auto, in order: condensed by its fill, brp by its TC share, else CSR; reorder
// auto decides once the path is known.
void choose_path(SpmmSpec& s, const CsrMatrix<float>& a) {
  s.asked = s.typed.path == "brp"         ? SpmmPath::Brp
            : s.typed.path == "csr"       ? SpmmPath::CsrCudaCore
            : s.typed.path == "condensed" ? SpmmPath::Condensed
                                          : SpmmPath::Auto;
  s.path = s.asked;
  if (s.reduce != SpmmReduce::Sum) s.path = SpmmPath::CsrCudaCore;  // check_reduce_path refused a TC path asked for
  const bool auto_order = s.typed.reorder == "auto";
  s.order = auto_order ? Reorder::None : parse_reorder(s.typed.reorder);
  if (s.order != Reorder::None) {
    if (s.order != Reorder::Degree && a.rows != a.cols)
      throw UsageError(
          fmt::format("plan_spmm: reorder '{}' orders a graph's vertices and needs a square A, got {} x {}",
                      to_string(s.order), a.rows, a.cols));
    s.path = SpmmPath::CsrCudaCore;
  }
  if (s.path == SpmmPath::Auto) {
    s.auto_fill = condensed_fill(a, s.g, kAutoFillWindows);
    if (a.nnz() > 0 && s.auto_fill >= s.typed.min_condensed_fill) {
      s.path = SpmmPath::Condensed;
    } else if (s.typed.min_tc_share <= 1.0) {
      s.auto_share = brp_group_share(a, s.f, s.g);
      s.path = s.auto_share >= s.typed.min_tc_share ? SpmmPath::Brp : SpmmPath::CsrCudaCore;
    } else {
      s.path = SpmmPath::CsrCudaCore;
    }
  }
  if (s.path == SpmmPath::CsrCudaCore && auto_order) {
    s.auto_cv = row_length_cv(a);
    s.order = s.auto_cv >= kAutoDegreeCv ? Reorder::Degree : Reorder::None;
  }
}

// 16 bits: the units (rows or windows of unit_rows rows) that `ptr` and max_run cut get an f32
// workspace; every part of such a unit is summed there and C rounded once (finalize).
void place_workspace(SpmmSpec& s, const std::vector<int32_t>& ptr, int unit_rows) {
  SpmmCutUnits cut = spmm_cut_units(ptr, s.max_run);
  if (cut.units.empty()) return;
  s.acc.n_units = static_cast<int32_t>(cut.units.size());
  s.acc.unit_rows = unit_rows;
  s.acc.floats = spmm_workspace_floats(cut, unit_rows, s.n);
  // A grid-stride loop: a few blocks a SM cover any size.
  s.acc.finalize_grid = static_cast<unsigned>(
      std::clamp<int64_t>((s.acc.floats + abi::kSpmmFinalizeThreads - 1) / abi::kSpmmFinalizeThreads, 1, 4096));
  s.tables.cut = std::move(cut);
}

// The TC kernels' launch shape from each window's group range wg (windows + 1): windows past
// tc_max_run groups are cut into pieces for the atomic pass, and a block takes a (window or
// piece, 64 columns of C), every window, so that C is written once.
void place_windows(SpmmSpec& s, std::vector<int32_t> wg) {
  s.max_run = s.typed.tc_max_run;
  s.tables.pieces = spmm_cut_pieces(wg, s.max_run);
  s.n_pieces = static_cast<int32_t>(s.tables.pieces.size() / 3);
  if (s.dtype != SpmmDtype::F32 && s.n_pieces > 0) place_workspace(s, wg, abi::kSpmmWindowRows);
  const int64_t windows = static_cast<int64_t>(wg.size()) - 1;
  const int64_t chunks = ((s.n + abi::kSpmmTileCols - 1) / abi::kSpmmTileCols + 7) / 8;
  s.tc_grid = static_cast<unsigned>(windows * chunks);
  s.tc_pieces_grid = static_cast<unsigned>(s.n_pieces * chunks);
  s.tables.win_group = std::move(wg);
}

// The CSR launches' blocks for `units` warps' work: a block a csr_warps units, or (csr_blocks_per_sm
// > 0) at most that many blocks an SM striding over them.
unsigned csr_grid(const SpmmSpec& s, int64_t units, int sm_count) {
  const int64_t one_each = std::max<int64_t>(1, (units + s.csr_warps - 1) / s.csr_warps);
  const int64_t resident = int64_t{s.typed.csr_blocks_per_sm} * std::max(sm_count, 1);
  return static_cast<unsigned>(s.typed.csr_blocks_per_sm > 0 ? std::min(one_each, resident) : one_each);
}

// Long rows, cut once for both kernels: f32 with csr_split cuts them whole into parts of the rows'
// launch; else (or when the parts would be too many) the part past max_run goes to the pieces pass.
void place_long_rows(SpmmSpec& s, const CsrMatrix<float>& a) {
  const bool f32 = s.dtype == SpmmDtype::F32;
  // Every part's sum is kept (n floats each) until the row's last part adds them: at most
  // 2 nnz / max_run parts, and the default max_run is at least twice the mean row, so at most
  // C's size. A small csr_max_run of the user's could ask for far more: the atomic pass then.
  bool split = f32 && s.typed.csr_split;
  SpmmSplitParts sp;
  if (split) {
    sp = spmm_split_parts(a.row_ptr, s.max_run);
    split = int64_t{sp.count()} <= std::max<int64_t>(a.rows, 1 << 16);
  }
  if (split && sp.count() > 0) {
    s.n_parts = sp.count();
    s.cut_rows = sp.slots();
    s.tables.split = std::move(sp);
  } else if (!split) {
    s.tables.pieces = spmm_cut_pieces(a.row_ptr, s.max_run);
    s.n_pieces = static_cast<int32_t>(s.tables.pieces.size() / 3);
    if (!f32 && s.n_pieces > 0) place_workspace(s, a.row_ptr, 1);
  }
}

// Staged windows of A (f32, float4 calls) in the warps' order: short rows only (at most 64
// entries, and within max_run), as many distinct columns as a block's shared memory holds rows of
// B; the CSR launch then covers the rows left plain.
void place_stage(SpmmSpec& s, const CsrMatrix<float>& a, int sm_count) {
  const int32_t max_cols = abi::kSpmmStageBytes / (4 * s.n);
  if (max_cols < 2) return;
  const auto t0 = std::chrono::steady_clock::now();
  SpmmStageWindows sw = spmm_stage_windows(a, s.row_order, s.typed.csr_stage_reuse, 32,
                                           std::min<int32_t>(64, s.max_run), std::min(max_cols, 65535));
  s.st_build_ms = ms_since(t0);
  if (sw.windows() == 0) return;
  s.st_windows = sw.windows();
  int32_t widest = 0;
  for (int32_t w = 0; w < s.st_windows; ++w)
    widest = std::max(widest, sw.win_col[static_cast<size_t>(w) + 1] - sw.win_col[static_cast<size_t>(w)]);
  s.st_smem = static_cast<unsigned>(widest) * 4u * static_cast<unsigned>(s.n);
  s.st_rows = static_cast<int32_t>(sw.rows.size());
  s.st_cols = static_cast<int32_t>(sw.cols.size());
  s.st_entries = sw.staged_entries();
  s.plain_count = static_cast<int32_t>(sw.plain.size());
  s.plain_grid4 = csr_grid(s, (int64_t{s.plain_count} + s.csr_rows4 - 1) / s.csr_rows4 + s.n_parts, sm_count);
  s.tables.stage = std::move(sw);
}

codegen::SpmmKey csr_key(const SpmmSpec& s, int vec, int rows) {
  codegen::SpmmKey k{codegen::SpmmKernelPath::Csr, 1, 4, s.csr_warps, vec, csr_lanes(s.n, vec), value_of(s.dtype)};
  k.rows = rows;
  // Mean runs the sum's kernels (over values scaled at plan time): the same modules.
  if (extreme_kernel(s.reduce)) k.reduce = static_cast<codegen::SpmmReduceOp>(s.reduce);
  return k;
}

// Max and min (csr_spmm_reduce): rows past the sum's max_run cut whole into parts in the same
// launch, as the f32 sum's split (whatever the value type: the parts' extremes and entries go to an
// f32 workspace, two floats a column), the last part of a row to finish merging them; no pieces
// pass (an atomic max with the tie rule has no one-word form), no staged window. Where the parts
// would be too many (a small csr_max_run of the user's) every row stays whole with its group.
void place_reduce_rows(SpmmSpec& s, const CsrMatrix<float>& a, int sm_count) {
  s.max_run = csr_max_run(s.typed, csr_lanes(s.n, s.vec4 ? 4 : 1), a.nnz(), a.rows);
  SpmmSplitParts sp = spmm_split_parts(a.row_ptr, s.max_run);
  if (sp.count() > 0 && int64_t{sp.count()} <= std::max<int64_t>(a.rows, 1 << 16)) {
    s.n_parts = sp.count();
    s.cut_rows = sp.slots();
    s.tables.split = std::move(sp);
  } else {
    for (int32_t r = 0; r < a.rows; ++r) s.max_run = std::max(s.max_run, a.row_ptr[r + 1] - a.row_ptr[r]);
  }
  s.csr_grid1 = csr_grid(s, (int64_t{a.rows} + s.csr_rows1 - 1) / s.csr_rows1 + s.n_parts, sm_count);
  s.csr_grid4 = csr_grid(s, (int64_t{a.rows} + s.csr_rows4 - 1) / s.csr_rows4 + s.n_parts, sm_count);
}

// reduce != Sum: the CSR path. Asked for brp or condensed (SpmmOptions::path or an explicit
// config's path) it is the caller's contradiction; a tuned or predicted config's TC path is only
// the sum's choice, so it gives way.
void check_reduce_path(const SpmmSpec& s, const SpmmOptions& opt) {
  if (s.reduce == SpmmReduce::Sum) return;
  const bool tc_option = opt.path == SpmmPath::Brp || opt.path == SpmmPath::Condensed;
  const bool tc_config = opt.config && (s.typed.path == "brp" || s.typed.path == "condensed");
  if (tc_option || tc_config)
    throw UsageError(fmt::format("plan_spmm: reduce {} runs on the CSR path only, but {} asks for path {}",
                                 to_string(s.reduce), tc_option ? "SpmmOptions::path" : "the config's 'path'",
                                 tc_option ? to_string(opt.path) : s.typed.path));
}

// The CUDA-core CSR product: the rows' order, rows a warp, long rows, launch shapes and staged
// windows. The scalar kernel always (it also serves B or C that are not aligned to 4 values).
void csr_spec(SpmmSpec& s, const CsrMatrix<float>& a, int sm_count) {
  if (s.order != Reorder::None) {
    const auto t0 = std::chrono::steady_clock::now();
    s.row_order = s.order == Reorder::Degree ? rows_by_length(a) : dbsparse::reorder(a, s.order).old_of_new;
    s.reorder_ms = ms_since(t0);
  }
  s.csr_rows = a.rows;
  s.csr_warps = s.typed.csr_warps;
  s.csr_rows1 = csr_rows_a_warp(s.typed, s.n, 1, a.nnz(), a.rows, sm_count);
  s.csr_rows4 = csr_rows_a_warp(s.typed, s.n, 4, a.nnz(), a.rows, sm_count);
  s.csr_key1 = csr_key(s, 1, s.csr_rows1);
  if (s.vec4) s.csr_key4 = csr_key(s, 4, s.csr_rows4);
  if (extreme_kernel(s.reduce)) {
    place_reduce_rows(s, a, sm_count);
    return;
  }
  // One max_run serves both kernels (the pieces are cut once): the float4 kernel's lanes when it
  // is loaded, as it runs whenever B and C are aligned.
  s.max_run = csr_max_run(s.typed, csr_lanes(s.n, s.vec4 ? 4 : 1), a.nnz(), a.rows);
  place_long_rows(s, a);
  s.csr_grid1 = csr_grid(s, (int64_t{a.rows} + s.csr_rows1 - 1) / s.csr_rows1 + s.n_parts, sm_count);
  s.csr_grid4 = csr_grid(s, (int64_t{a.rows} + s.csr_rows4 - 1) / s.csr_rows4 + s.n_parts, sm_count);
  s.csr_pieces_grid = csr_grid(s, s.n_pieces, sm_count);
  if (s.dtype == SpmmDtype::F32 && s.vec4 && s.typed.csr_stage_reuse > 0) place_stage(s, a, sm_count);
}

// Condensed TC windows: the zero-padded tiles, built on the host, run by BRP's module at f = 1
// (its FRAGS kernels read afrag and old_col alone, which is all these tiles are; f only shapes
// the per-group tile build, not used here). No residual.
void condensed_spec(SpmmSpec& s, const CsrMatrix<float>& a) {
  const auto t0 = std::chrono::steady_clock::now();
  s.tables.condensed = csr_to_condensed(a, s.g, s.dtype);
  s.convert_ms = ms_since(t0);
  const CondensedTc& m = s.tables.condensed;
  s.fill = m.fill();
  s.csr_bytes = m.csr_bytes();
  s.groups = static_cast<int32_t>(m.groups());  // csr_to_condensed kept every array in int32
  s.csr_rows = 0;
  s.tc_warps = s.typed.tc_warps;
  s.frags = true;
  s.tc_key = codegen::SpmmKey{codegen::SpmmKernelPath::Brp, 1, s.g, s.tc_warps, 1, 32, value_of(s.dtype)};
  place_windows(s, m.win_group);
}

// BRP before its conversion: the module and the groups' strides.
void brp_spec(SpmmSpec& s, const SpmmOptions& opt) {
  s.convert_on_host = opt.convert_on_host;
  s.local_stride = brp_local_stride(s.f, s.g);
  s.value_stride = brp_value_stride(s.f, s.g, spmm_value_bytes(s.dtype));
  s.tc_warps = s.typed.tc_warps;
  s.tc_key = codegen::SpmmKey{codegen::SpmmKernelPath::Brp, s.f, s.g, s.tc_warps, 1, 32, value_of(s.dtype)};
}

// Fused on the CSR path unless f32 atomic pieces or staged windows (a kernel of their own, which
// has no epilogue) also write C.
void place_epilogue(SpmmSpec& s, SpmmEpilogue e) {
  s.epilogue = e;
  s.epilogue_fused = e != SpmmEpilogue::None && s.path == SpmmPath::CsrCudaCore && s.st_windows == 0 &&
                     (s.n_pieces == 0 || s.dtype != SpmmDtype::F32);
}

}  // namespace

CsrMatrix<float> mean_scaled(const CsrMatrix<float>& a) {
  CsrMatrix<float> m = a;
  for (int32_t r = 0; r < m.rows; ++r) {
    const int32_t len = m.row_ptr[r + 1] - m.row_ptr[r];
    for (int32_t e = m.row_ptr[r]; e < m.row_ptr[r + 1]; ++e) m.values[e] /= static_cast<float>(len);
  }
  return m;
}

SpmmSpec spmm_spec(const CsrMatrix<float>& a, int n_cols, const SpmmOptions& opt, Config config, int sm_count) {
  SpmmSpec s;
  s.config = std::move(config);
  apply_options(s, opt);
  s.rows = a.rows;
  s.cols = a.cols;
  s.nnz = a.nnz();
  s.n = n_cols;
  s.dtype = opt.dtype;
  s.reduce = opt.reduce;
  check_reduce_path(s, opt);
  choose_path(s, a);
  s.vec4 = wants_vec4(n_cols);
  if (s.path == SpmmPath::CsrCudaCore)
    csr_spec(s, a, sm_count);
  else if (s.path == SpmmPath::Condensed)
    condensed_spec(s, a);
  else
    brp_spec(s, opt);
  place_epilogue(s, opt.epilogue);
  return s;
}

void place_brp(SpmmSpec& s, const std::vector<int32_t>& group_window, int64_t residual_rows) {
  s.groups = static_cast<int32_t>(group_window.size());  // check_brp_counts kept it in int32
  s.csr_rows = static_cast<int32_t>(residual_rows);
  s.frags = s.f >= s.typed.expand_min_f && s.groups > 0;
  // Groups come in window order: wg[w] is window w's first.
  const int64_t windows = (int64_t{s.rows} + abi::kSpmmWindowRows - 1) / abi::kSpmmWindowRows;
  std::vector<int32_t> wg(static_cast<size_t>(windows) + 1, 0);
  for (int32_t w : group_window) ++wg[static_cast<size_t>(w) + 1];
  for (size_t i = 1; i < wg.size(); ++i) wg[i] += wg[i - 1];
  place_windows(s, std::move(wg));
}

std::string view64_order(const SpmmOptions& opt, const SpmmConfig& typed) {
  // none, degree or auto's degree where the lengths vary are made on the device where A is; rcm
  // and community need A on the host.
  const std::string order = opt.reorder ? to_string(*opt.reorder) : typed.reorder;
  if (order != "auto" && order != "none" && order != "degree")
    throw UsageError("plan_spmm (64-bit offsets): reorder " + order +
                     " needs A on the host (a CsrMatrix); none, degree or auto are made on the device");
  return order;
}

SpmmSpec spmm_view64_spec(int32_t rows, int32_t cols, int64_t nnz, int n_cols, const SpmmOptions& opt, Config config,
                          int sm_count) {
  SpmmSpec s;
  s.config = std::move(config);
  s.typed = config_from_json<SpmmConfig>(s.config.params);
  s.config.params = config_to_json(s.typed);
  view64_order(opt, s.typed);
  if (s.typed.path == "brp" || s.typed.path == "condensed")
    throw UsageError("plan_spmm (64-bit offsets): the config asks for path " + s.typed.path + "; the CSR path only");
  s.rows = rows;
  s.cols = cols;
  s.nnz = nnz;
  s.n = n_cols;
  s.dtype = SpmmDtype::F32;
  s.asked = opt.path == SpmmPath::Auto && s.typed.path == "auto" ? SpmmPath::Auto : SpmmPath::CsrCudaCore;
  s.path = SpmmPath::CsrCudaCore;
  s.csr_rows = rows;
  s.csr_warps = s.typed.csr_warps;
  s.vec4 = wants_vec4(n_cols);
  // One kernel a call over every row, nothing cut: a block a csr_warps warps' rows.
  auto one_each = [&](int rows_a_warp) {
    const int64_t units = (int64_t{rows} + rows_a_warp - 1) / rows_a_warp;
    return static_cast<unsigned>(std::max<int64_t>(1, (units + s.csr_warps - 1) / s.csr_warps));
  };
  s.csr_rows1 = csr_rows_a_warp(s.typed, n_cols, 1, nnz, rows, sm_count);
  s.csr_key1 = csr_key(s, 1, s.csr_rows1);
  s.csr_key1.offsets64 = true;
  if (s.vec4) {
    s.csr_rows4 = csr_rows_a_warp(s.typed, n_cols, 4, nnz, rows, sm_count);
    s.csr_key4 = csr_key(s, 4, s.csr_rows4);
    s.csr_key4.offsets64 = true;
  }
  s.csr_grid1 = one_each(s.csr_rows1);
  s.csr_grid4 = one_each(s.csr_rows4);
  place_epilogue(s, opt.epilogue);  // one kernel writes each entry of C once: always fused
  return s;
}

}  // namespace dbsparse::spmm_detail

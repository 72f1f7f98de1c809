// SpMM plans of a host CsrMatrix (include/dbsparse/spmm.hpp): BRP-SpMM (C = beta * C, the TC
// groups, the residual rows: up to three launches), condensed TC windows (BRP's TC kernel on
// zero-padded tiles built on the host, no residual) or the CUDA-core CSR product (one launch), in
// f32, f16 or bf16. The plan's state is spmm_plan_impl.hpp; its calls and explain, spmm_run.cpp;
// plans of a DeviceCsrView64, spmm_plan_view64.cpp.
#include "dbsparse/spmm.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <type_traits>

#include <fmt/format.h>

#include "codegen/keys/spmm_key.hpp"
#include "dbsparse/abi/spmm.h"
#include "dbsparse/brp.hpp"
#include "dbsparse/brp_device.hpp"
#include "dbsparse/device_csr.hpp"
#include "dbsparse/features.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/tc_condensed.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/module_registry.hpp"
#include "runtime/spmm/spmm_plan_impl.hpp"

namespace dbsparse {

std::string spmm_tuning_bucket(int n_cols) { return n_cols <= 64 ? "n32" : "n128"; }

const char* to_string(SpmmPath p) {
  switch (p) {
    case SpmmPath::Auto:
      return "auto";
    case SpmmPath::Brp:
      return "brp";
    case SpmmPath::CsrCudaCore:
      return "csr-cuda-core";
    case SpmmPath::Condensed:
      return "condensed";
  }
  return "?";
}

const char* to_string(SpmmDtype d) {
  switch (d) {
    case SpmmDtype::F32:
      return "f32";
    case SpmmDtype::F16:
      return "f16";
    case SpmmDtype::BF16:
      return "bf16";
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

using namespace spmm_detail;

namespace {

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

}  // namespace

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
    require_device_bytes(
        fmt::format("plan_spmm of a {} x {} matrix with {} nonzeros (A, at least)", a.rows, a.cols, a.nnz()),
        csr_device_bytes(a.rows, a.nnz(), spmm_value_bytes(opt.dtype)));
    auto p = std::make_unique<SpmmPlan::Impl>();
    // The config: SpmmOptions::config, else the tuning DB's; then the explicit options over it.
    p->config = opt.config
                    ? *opt.config
                    : lookup_config(info_.record().fingerprint, structure_fingerprint(a), config_info<SpmmConfig>(),
                                    spmm_tuning_bucket(n_cols), [&] { return compute_features(a); });
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
        throw UsageError(
            fmt::format("plan_spmm: reorder '{}' orders a graph's vertices and needs a square A, got {} x {}",
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
      if (f32)
        p->vals = upload(a.values);
      else
        p->vals16 = upload(to_16(a.values, opt.dtype));
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
      if (!f32) p->finalize = f1.at(3);
      if (p->vec4) {
        const auto f4 = load(csr_key(4, p->csr_rows4));
        p->rows4 = f4.at(0);
        p->rows4_pieces = f4.at(1);
        if (f32) p->staged = f4.at(3);  // csr_spmm_staged, used when windows qualify
      }
      p->prefer_l1(info_);
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
    p->place_epilogue(opt.epilogue, *this);
    return SpmmPlan(std::move(p));
  }
}

template SpmmPlan Context::plan_spmm(const CsrMatrix<float>&, int);
template SpmmPlan Context::plan_spmm(const CsrMatrix<double>&, int);
template SpmmPlan Context::plan_spmm(const CsrMatrix<float>&, int, const SpmmOptions&);
template SpmmPlan Context::plan_spmm(const CsrMatrix<double>&, int, const SpmmOptions&);

}  // namespace dbsparse

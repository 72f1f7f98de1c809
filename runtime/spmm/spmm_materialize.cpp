// materialize (spmm_plan_impl.hpp): a spec's arrays on the device and its kernels loaded. BRP
// converts here (on the device unless SpmmOptions::convert_on_host), so its windows are placed
// here too (place_brp, pure host code on the converted groups' windows).
#include <chrono>

#include "codegen/keys/spmm_key.hpp"
#include "dbsparse/brp_device.hpp"
#include "dbsparse/half.hpp"
#include "runtime/gpu/l1_carveout.hpp"
#include "runtime/gpu/module_registry.hpp"
#include "runtime/spmm/spmm_plan_impl.hpp"

namespace dbsparse::spmm_detail {
namespace {

using Impl = SpmmPlan::Impl;

detail::LoadedKernel load(const Context& ctx, Impl& p, const codegen::SpmmKey& key) {
  detail::LoadedKernel loaded = ctx.modules().get(codegen::make_source(key), ctx.device().arch());
  p.kernels.push_back(loaded.info);
  return loaded;
}

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

// The pieces and, in 16 bits, the workspace of either path.
void upload_pieces(Impl& p) {
  const SpmmSpec& s = p.spec;
  if (s.n_pieces > 0) p.pieces = upload(s.tables.pieces);
  if (s.acc.n_units == 0) return;
  p.acc_slot = upload(s.tables.cut.slot);
  p.acc_units = upload(s.tables.cut.units);
  p.acc_w = DeviceBuffer<float>(static_cast<size_t>(s.acc.floats));
}

void upload_stage(Impl& p) {
  const SpmmStageWindows& sw = p.spec.tables.stage;
  p.st_win_row = upload(sw.win_row);
  p.st_win_col = upload(sw.win_col);
  p.st_cols = upload(sw.cols);
  p.st_rows = upload(sw.rows);
  p.st_ptr = upload(sw.ptr);
  p.st_slot = upload(sw.slot);
  p.st_vals = upload(sw.vals);
  p.plain_rows = sw.plain.empty() ? DeviceBuffer<int32_t>(1) : upload(sw.plain);
}

void materialize_csr(const Context& ctx, Impl& p, const CsrMatrix<float>& a) {
  const SpmmSpec& s = p.spec;
  if (s.order != Reorder::None) p.row_id = upload(s.row_order);  // warp k takes A's row row_order[k]
  p.row_ptr = upload(a.row_ptr);
  p.col_idx = upload(a.col_idx);
  if (s.dtype == SpmmDtype::F32)
    p.vals = upload(a.values);
  else
    p.vals16 = upload(to_16(a.values, s.dtype));
  load_csr_kernels(ctx, p);
  if (s.n_parts > 0) {
    p.parts = upload(s.tables.split.parts);
    p.part_first = upload(s.tables.split.first);
    // Max and min keep each part's extremes and, past them, its winning entries (int32 bits).
    const size_t per_part = extreme_kernel(s.reduce) ? 2 : 1;
    p.part_sum = DeviceBuffer<float>(per_part * static_cast<size_t>(s.n_parts) * static_cast<size_t>(s.n));
    p.part_count = upload(std::vector<uint32_t>(static_cast<size_t>(s.tables.split.slots()), 0u));
  }
  upload_pieces(p);
  if (s.st_windows > 0) upload_stage(p);
}

// The TC module's kernels: the FRAGS ones where the operands are expanded ahead.
void load_tc_kernels(const Context& ctx, Impl& p) {
  const detail::LoadedKernel k = load(ctx, p, p.spec.tc_key);
  p.tc = k.entry(p.spec.frags ? "windows_frags" : "windows");
  p.tc_pieces = k.entry(p.spec.frags ? "window_pieces_frags" : "window_pieces");
  if (p.spec.path == SpmmPath::Brp) {
    p.rows1 = k.entry("residual");
    p.rows4 = k.entry("residual_vec4");
  }
  if (p.spec.dtype != SpmmDtype::F32) p.finalize = k.entry("finalize");
  if (p.spec.path == SpmmPath::Brp && p.spec.frags) {
    // A group's operands: g m16n8k8 tiles in f32, ceil(g / 2) m16n8k16 tiles in 16 bits; 16 bytes a lane each.
    const SpmmSpec& s = p.spec;
    const int tiles = s.dtype == SpmmDtype::F32 ? s.g : abi::spmm_k16_pairs(s.g);
    p.afrag = DeviceBuffer<uint32_t>(static_cast<size_t>(s.groups) * tiles * 32 * 4);
    abi::SpmmArgs args{};
    args.local_id = dev(p.local_id);
    args.group_vals = reinterpret_cast<const float*>(p.group_vals_ptr());
    args.local_stride = s.local_stride;
    args.value_stride = s.value_stride;
    uint64_t out = p.afrag.ptr();
    int32_t groups = s.groups;
    void* params[] = {&args, &out, &groups};
    DBS_CU(cuLaunchKernel(k.entry("expand_frags"),
                          static_cast<unsigned>((int64_t{groups} + s.tc_warps - 1) / s.tc_warps), 1, 1, s.tc_warps * 32,
                          1, 1, 0, nullptr, params, nullptr));
    DBS_CU(cuCtxSynchronize());
  }
}

void materialize_condensed(const Context& ctx, Impl& p) {
  const CondensedTc& m = p.spec.tables.condensed;
  p.window = upload(m.group_window);
  p.old_col = upload(m.old_col);
  p.win_group = upload(p.spec.tables.win_group);
  if (p.spec.groups > 0) p.afrag = upload(m.afrag);
  load_tc_kernels(ctx, p);
  upload_pieces(p);
}

// csr_to_brp on the host, uploaded; returns the groups' windows.
std::vector<int32_t> convert_brp_on_host(Impl& p, const CsrMatrix<float>& a) {
  const SpmmSpec& s = p.spec;
  const auto t0 = std::chrono::steady_clock::now();
  const BrpMatrix<float> m = csr_to_brp(a, BrpParams{s.f, s.g});
  p.stats = brp_stats(m);
  p.stats.convert_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  p.window = upload(m.group_window_id);
  p.old_col = upload(m.old_col_id);
  p.local_id = upload(m.local_id);
  p.row_ptr = upload(m.res_row_offset);
  p.col_idx = upload(m.res_col_id);
  p.row_id = upload(m.res_rows_id);
  if (s.dtype == SpmmDtype::F32) {
    p.group_vals = upload(m.values);
    p.vals = upload(m.res_values);
  } else {
    p.group_vals16 = upload(
        group_values_16(m.values, m.groups(), m.value_stride, brp_value_stride(s.f, s.g, 2), m.group_nnz(), s.dtype));
    p.vals16 = upload(to_16(m.res_values, s.dtype));
  }
  return m.group_window_id;
}

// csr_to_brp_device, its arrays kept; returns the groups' windows (4 bytes a group, downloaded).
std::vector<int32_t> convert_brp_on_device(Context& ctx, Impl& p, const CsrMatrix<float>& a) {
  const SpmmSpec& s = p.spec;
  BrpDeviceMatrix<float> m = csr_to_brp_device(ctx, a, BrpParams{s.f, s.g});
  p.stats = brp_stats(m);
  std::vector<int32_t> group_window = m.group_window_id.download();
  p.window = std::move(m.group_window_id);
  p.old_col = std::move(m.old_col_id);
  p.local_id = std::move(m.local_id);
  p.row_ptr = std::move(m.res_row_offset);
  p.col_idx = std::move(m.res_col_id);
  p.row_id = std::move(m.res_rows_id);
  if (s.dtype == SpmmDtype::F32) {
    p.group_vals = std::move(m.values);
    p.vals = std::move(m.res_values);
  } else {
    // Rounded on the host: a round trip of the values, once per plan.
    const int64_t groups = static_cast<int64_t>(group_window.size());
    p.group_vals16 =
        upload(group_values_16(m.values.download(), groups, brp_value_stride(s.f, s.g, 4),
                               brp_value_stride(s.f, s.g, 2), int64_t{abi::kSpmmBlockSlots} * s.g * s.f, s.dtype));
    p.vals16 = upload(to_16(m.res_values.download(), s.dtype));
  }
  return group_window;
}

void materialize_brp(Context& ctx, Impl& p, const CsrMatrix<float>& a) {
  const std::vector<int32_t> group_window =
      p.spec.convert_on_host ? convert_brp_on_host(p, a) : convert_brp_on_device(ctx, p, a);
  place_brp(p.spec, group_window, p.stats.residual_rows);
  p.win_group = upload(p.spec.tables.win_group);
  load_tc_kernels(ctx, p);
  upload_pieces(p);
}

// The sum's CSR kernels besides k1's "rows": the pieces, the 16-bit finalize, the float4 module
// and its staged windows.
void load_csr_sum_kernels(const Context& ctx, Impl& p, const detail::LoadedKernel& k1) {
  const SpmmSpec& s = p.spec;
  const bool o64 = s.csr_key1.offsets64;  // 64-bit offsets: one kernel a module, nothing cut
  p.rows1 = k1.entry("rows");
  if (!o64) p.rows1_pieces = k1.entry("pieces");
  if (!o64 && s.dtype != SpmmDtype::F32) p.finalize = k1.entry("finalize");
  if (s.vec4) {
    const detail::LoadedKernel k4 = load(ctx, p, s.csr_key4);
    p.rows4 = k4.entry("rows");
    if (!o64) p.rows4_pieces = k4.entry("pieces");
    if (!o64 && s.dtype == SpmmDtype::F32) p.staged = k4.entry("staged");  // used when windows qualify
  }
}

}  // namespace

void load_csr_kernels(const Context& ctx, Impl& p) {
  const SpmmSpec& s = p.spec;
  const detail::LoadedKernel k1 = load(ctx, p, s.csr_key1);
  if (extreme_kernel(s.reduce)) {  // one kernel a module: nothing cut, nothing staged
    p.rows1 = k1.entry("reduce");
    if (s.vec4) p.rows4 = load(ctx, p, s.csr_key4).entry("reduce");
  } else {
    load_csr_sum_kernels(ctx, p, k1);
  }
  // As gather kernels: the least shared carveout that keeps their occupancy, so L1 keeps more of
  // B's rows (DBSPARSE_L1_CARVEOUT=max-l1; l1_carveout.hpp).
  const DeviceInfo& d = ctx.device();
  for (CUfunction fn : {p.rows1, p.rows4})
    if (fn) p.carveout = detail::prefer_l1(fn, s.csr_warps * 32, 0, d.reserved_shared_per_block, d.shared_per_sm);
}

void load_epilogue(const Context& ctx, Impl& p) {
  if (p.spec.epilogue == SpmmEpilogue::None || p.spec.epilogue_fused) return;
  p.relu = detail::relu_pass(ctx, p.spec.dtype, int64_t{p.spec.rows} * p.spec.n);
  p.kernels.push_back(p.relu.kernel());
}

std::unique_ptr<Impl> materialize(Context& ctx, SpmmSpec spec, const CsrMatrix<float>& a) {
  auto p = std::make_unique<Impl>();
  p->spec = std::move(spec);
  if (p->spec.path == SpmmPath::CsrCudaCore)
    materialize_csr(ctx, *p, a);
  else if (p->spec.path == SpmmPath::Condensed)
    materialize_condensed(ctx, *p);
  else
    materialize_brp(ctx, *p, a);
  load_epilogue(ctx, *p);
  p->spec.tables = SpmmTables{};  // on the device now
  return p;
}

}  // namespace dbsparse::spmm_detail

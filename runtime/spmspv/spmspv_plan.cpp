// The DB-SpMSpV plan: config look-up, the host spec (runtime/spmspv/spmspv_spec.hpp), then
// materialize (uploads, JIT, launch shapes); the two-launch hot path (prep, compute) with the
// direction chosen on the device.
#include "dbsparse/spmspv.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "codegen/keys/spmspv_key.hpp"
#include "dbsparse/features.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/module_registry.hpp"
#include "runtime/spmspv/spmspv_spec.hpp"

namespace dbsparse {

// run_sparse_out's one-launch path: at most this many x nonzeros, and at most this many entries of
// A in their column blocks (one block of kWarps warps does all of it). Its chain of dependent L2
// round trips and its one-block output pass lose to the three launches as the work grows, so it is
// kept to the few-entry calls where the three launches' own floor dominates
// (docs/decisions/spmspv-sparse-tiny.md).
constexpr int kSparseTinyX = 64;
constexpr int64_t kSparseTinyWork = 256;
namespace {

using abi::kWarps;

// Index bytes the pull path reads for a visited block: patched CSR is read by its row walk
// (row_ptr + row_mask), never through its column part.
int64_t aux_bytes_read(const BlockMeta& m) {
  switch (static_cast<BlockType>(m.type)) {
    case BlockType::Coo:
      return m.nnz;
    case BlockType::Dense:
      return 0;
    case BlockType::ForceCsr:
    case BlockType::ForceCsc:
      return 66;
  }
  return 0;
}

// A device buffer of n elements, all bytes zero (an allocation and a synchronous memset: set-up only).
template <class U>
DeviceBuffer<U> zeroed(size_t n) {
  DeviceBuffer<U> b(n);
  b.fill_bytes(0);
  return b;
}

}  // namespace

// No rule between fields: th0 >= th1 is legal (COO is tested first), and the tests use it to make
// every block COO or every block Dense. The search leaves such points out (tools/ops/spmspv_op.cpp).
void SpmspvConfig::check() const {}

SpmspvConfig SpmspvConfig::paper() {
  SpmspvConfig c;
  c.th3 = 0.01;
  c.th3_scale = "none";
  c.residual_below = 0;  // the paper keeps every nonzero in a block
  return c;
}

const char* to_string(SpmspvDirection d) {
  switch (d) {
    case SpmspvDirection::Auto:
      return "auto";
    case SpmspvDirection::Push:
      return "push";
    case SpmspvDirection::Pull:
      return "pull";
  }
  return "?";
}

// The plan: its shape (the spec's host decisions) and what materialize made of it.
template <class T>
struct SpmspvPlan<T>::Impl : detail::SpmspvShape {
  Config config;
  SpmspvConfig typed;
  KernelInfo kernel;
  DeviceBuffer<int32_t> blk_col_idx, blk_col_ptr, csc2csr;
  DeviceBuffer<BlockMeta> meta;
  DeviceBuffer<T> values;
  DeviceBuffer<uint8_t> aux;
  DeviceBuffer<uint32_t> res_rc, res_cr;
  DeviceBuffer<T> res_row_val, res_col_val;
  DeviceBuffer<int32_t> res_col_ptr;
  DeviceBuffer<abi::Segment> segments;
  mutable SpmspvWorkspace<T> own;  // the plan's own workspace (see SpmspvWorkspace)
  CUfunction prep = nullptr, compute = nullptr, scatter = nullptr, unscatter = nullptr, fused = nullptr,
             sparse_prep = nullptr, sparse_finish = nullptr, sparse_tiny = nullptr;
  // An auto plan's push-only and pull-only prep and compute (their own variants): run() takes
  // one where the last call's x would have taken that variant's direction in every part (hint),
  // and saves the auto variant's direction work; any x is still computed right by them, only
  // slower if its density changed much since the last call.
  CUfunction push_prep = nullptr, push_compute = nullptr, pull_prep = nullptr, pull_compute = nullptr;
  unsigned compute_grid = 1;  // the full compute grid (spmspv_full_compute_grid)
  int compute_occ = 1;        // compute blocks a SM that fit
  // The compute launch for an x of about x_nnz nonzeros (spmspv_compute_grid_for); a config's
  // compute_blocks_per_sm wins over it.
  unsigned compute_grid_for(int64_t x_nnz) const {
    if (typed.compute_blocks_per_sm > 0 || cols <= 0) return compute_grid;
    return detail::spmspv_compute_grid_for(x_nnz, compute_occ, sm_count);
  }
  // run()'s grid: from the workspace's last call (x is on the device; a graph replays whatever
  // was captured, so a capture gets the full grid). A wrong guess costs time, never correctness:
  // every path strides over its tasks by the grid's size.
  // The workspace's last call's x nonzeros and non-empty x blocks, kFeedbackUnknown in both
  // without one or under a capture (a graph replays whatever was captured, so a capture must not
  // lean on one call's x).
  struct LastX {
    uint32_t nnz = kFeedbackUnknown, nonempty = kFeedbackUnknown;
  };
  LastX last_x(const SpmspvWorkspace<T>& ws, void* stream) const {
    if (ws.feedback_.data() == nullptr) return {};
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    DBS_CU(cuStreamIsCapturing(static_cast<CUstream>(stream), &capture));
    if (capture != CU_STREAM_CAPTURE_STATUS_NONE) return {};
    const volatile uint32_t* f = static_cast<const volatile uint32_t*>(ws.feedback_.data());
    return {f[0], f[1]};
  }
  unsigned compute_grid_for_run(uint32_t last) const {
    return last == kFeedbackUnknown ? compute_grid : compute_grid_for(last);
  }
  // Which variant the last call's counts say this call can take (detail::spmspv_direction_hint).
  DirectionHint hint(const LastX& last) const {
    if (!push_prep || last.nnz == kFeedbackUnknown || last.nonempty == kFeedbackUnknown) return DirectionHint::None;
    switch (detail::spmspv_direction_hint(*this, last.nnz, last.nonempty)) {
      case detail::SpmspvHint::Push:
        return DirectionHint::Push;
      case detail::SpmspvHint::Pull:
        return DirectionHint::Pull;
      case detail::SpmspvHint::None:
        break;
    }
    return DirectionHint::None;
  }
  static constexpr uint32_t kFeedbackUnknown = 0xffffffffu;
  unsigned fused_grid = 0;  // 0: no cooperative launch on this device; two launches instead
  // Host copies for pull_bytes_visited (not used on the hot path).
  std::vector<BlockMeta> host_meta;
  std::vector<uint32_t> host_res_cr;
  std::vector<int32_t> host_res_col_ptr;

  // The per-call buffers every path uses, at this plan's sizes; `what` names the caller.
  void check_workspace(const SpmspvWorkspace<T>& ws, const char* what) const {
    if (ws.xmask_.size() != static_cast<size_t>(std::max(block_cols, 1)) ||
        ws.state_.size() != sizeof(abi::SpmspvState) ||
        ws.block_tasks_.size() != static_cast<size_t>(std::max<int64_t>(block_task_capacity, 1)) ||
        ws.residual_tasks_.size() != static_cast<size_t>(std::max<int64_t>(residual_task_capacity, 1)) ||
        ws.small_tasks_.size() != static_cast<size_t>(std::max<int64_t>(small_task_capacity, 1)))
      throw UsageError(
          fmt::format("{}: the workspace is empty or another plan's (make it with plan.make_workspace())", what));
  }

  // run_sparse's dense x (all-zero between calls), allocated by the first call through a workspace
  // that lacks it (not capturable), else checked against this plan's size.
  void ensure_sparse_x(SpmspvWorkspace<T>& ws, const char* what) const {
    if (ws.x_scatter_.size() == 0) ws.x_scatter_ = zeroed<T>(static_cast<size_t>(std::max(cols, 1)));
    if (ws.x_scatter_.size() != static_cast<size_t>(std::max(cols, 1)))
      throw UsageError(fmt::format("{}: the workspace is another plan's (make it with plan.make_workspace())", what));
  }

  // The kernels' argument for one call: the plan's arrays, the workspace, x and y.
  abi::SpmspvArgs<T> args(uint64_t x, uint64_t y, SpmspvWorkspace<T>& ws) const {
    abi::SpmspvArgs<T> a{};
    a.blk_col_idx = blk_col_idx.data();
    a.blk_col_ptr = blk_col_ptr.data();
    a.csc2csr = csc2csr.data();
    a.meta = meta.data();
    a.values = values.data();
    a.aux = aux.data();
    a.segments = segments.data();
    a.res_rc = res_rc.data();
    a.res_row_val = res_row_val.data();
    a.res_col_ptr = res_col_ptr.data();
    a.res_cr = res_cr.data();
    a.res_col_val = res_col_val.data();
    a.block_tasks = ws.block_tasks_.data();
    a.residual_tasks = ws.residual_tasks_.data();
    a.small_tasks = ws.small_tasks_.data();
    a.state = reinterpret_cast<abi::SpmspvState*>(ws.state_.data());
    a.xmask = ws.xmask_.data();
    a.x = reinterpret_cast<const T*>(static_cast<uintptr_t>(x));
    a.y = reinterpret_cast<T*>(static_cast<uintptr_t>(y));
    a.ytouched = nullptr;
    a.ylist = nullptr;
    a.rows = rows;
    a.cols = cols;
    a.block_cols = block_cols;
    a.nsegments = static_cast<int32_t>(stats.pull_segments);
    a.nblock_segments = block_segments;
    a.xb_threshold = static_cast<float>(stats.xb_threshold);
    a.res_threshold = static_cast<float>(stats.residual_push_below);
    a.block_rows = block_rows;
    return a;
  }

  // With pdl (SpmspvConfig::pdl on sm_90+), every kernel of a call starts by programmatic
  // dependent launch: its blocks may be scheduled while the stream's previous kernel still runs,
  // and wait in dbs_pdl_wait() (templates/common/dbs_common.cuh) for its results. Every kernel
  // launched here calls it first, so the first kernel of a call waits for the caller's work too.
  void launch(CUfunction f, unsigned grid, void** params, void* stream) const {
    if (!pdl) {
      DBS_CU(cuLaunchKernel(f, grid, 1, 1, kWarps * 32, 1, 1, 0, static_cast<CUstream>(stream), params, nullptr));
      return;
    }
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig cfg{};
    cfg.gridDimX = grid;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = kWarps * 32;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = static_cast<CUstream>(stream);
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    DBS_CU(cuLaunchKernelEx(&cfg, f, params, nullptr));
  }

  // The spec on the device: its shape taken over, its kernel variant loaded, its format uploaded
  // (the host keeps what pull_bytes_visited reads).
  void materialize(detail::SpmspvSpec<T>&& spec, detail::ModuleRegistry& modules, const std::string& arch) {
    static_cast<detail::SpmspvShape&>(*this) = spec.shape;
    auto loaded = modules.get(codegen::make_source(key), arch);
    kernel = loaded.info;
    prep = loaded.entry("prep");
    compute = loaded.entry("compute");
    scatter = loaded.entry("scatter");
    unscatter = loaded.entry("unscatter");
    fused = loaded.entry("fused");
    sparse_prep = loaded.entry("sparse_prep");
    sparse_finish = loaded.entry("sparse_finish");
    sparse_tiny = loaded.entry("sparse_tiny");
    if (key.direction == codegen::Direction::Auto) {
      codegen::SpmspvKey push_key = key;
      push_key.direction = codegen::Direction::Push;
      auto push = modules.get(codegen::make_source(push_key), arch);
      push_prep = push.entry("prep");
      push_compute = push.entry("compute");
      codegen::SpmspvKey pull_key = key;
      pull_key.direction = codegen::Direction::Pull;
      auto pull = modules.get(codegen::make_source(pull_key), arch);
      pull_prep = pull.entry("prep");
      pull_compute = pull.entry("compute");
    }
    DbMatrix<T>& db = spec.db;
    blk_col_idx = DeviceBuffer<int32_t>(std::span<const int32_t>(db.blk_col_idx));
    blk_col_ptr = DeviceBuffer<int32_t>(std::span<const int32_t>(db.blk_col_ptr));
    csc2csr = DeviceBuffer<int32_t>(std::span<const int32_t>(db.csc2csr));
    meta = DeviceBuffer<BlockMeta>(std::span<const BlockMeta>(db.meta));
    values = DeviceBuffer<T>(std::span<const T>(db.values));
    aux = DeviceBuffer<uint8_t>(std::span<const uint8_t>(db.aux));
    res_rc = DeviceBuffer<uint32_t>(std::span<const uint32_t>(db.res_rc));
    res_row_val = DeviceBuffer<T>(std::span<const T>(db.res_row_val));
    res_col_ptr = DeviceBuffer<int32_t>(std::span<const int32_t>(db.res_col_ptr));
    res_cr = DeviceBuffer<uint32_t>(std::span<const uint32_t>(db.res_cr));
    res_col_val = DeviceBuffer<T>(std::span<const T>(db.res_col_val));
    segments = DeviceBuffer<abi::Segment>(std::span<const abi::Segment>(spec.segments));
    host_res_col_ptr = std::move(db.res_col_ptr);
    host_meta = std::move(db.meta);
    host_res_cr = std::move(db.res_cr);
  }

  // Every allocation the plan holds, from the buffers themselves (its own workspace included).
  int64_t held_bytes() const {
    return static_cast<int64_t>(
        (blk_col_idx.size() + blk_col_ptr.size() + csc2csr.size()) * 4 + meta.size() * sizeof(BlockMeta) +
        values.size() * sizeof(T) + aux.size() + (res_rc.size() + res_cr.size() + res_col_ptr.size()) * 4 +
        (res_row_val.size() + res_col_val.size()) * sizeof(T) + segments.size() * sizeof(abi::Segment) + own.bytes());
  }

  // The compute and fused grids, from the loaded kernels' occupancy on `device`.
  void size_launches(CUdevice device, int device_sm_count, bool want_fused) {
    int occ = 0;
    DBS_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&occ, compute, kWarps * 32, 0));
    compute_grid =
        detail::spmspv_full_compute_grid(typed.compute_blocks_per_sm, occ, static_cast<unsigned>(device_sm_count));
    compute_occ = std::max(1, occ);
    int coop = 0, occ_fused = 0;
    DBS_CU(cuDeviceGetAttribute(&coop, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, device));
    DBS_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&occ_fused, fused, kWarps * 32, 0));
    // Every block must be resident at once for the grid barrier: exactly what fits, no more.
    if (want_fused && coop && occ_fused > 0) fused_grid = static_cast<unsigned>(occ_fused * device_sm_count);
  }
};

template <class T>
SpmspvPlan<T> SpmspvPlan<T>::build(Context& ctx, const CsrMatrix<T>& a) {
  return build(ctx, a, SpmspvOptions{});
}

template <class T>
SpmspvPlan<T> SpmspvPlan<T>::build(Context& ctx, const CsrMatrix<T>& a, const SpmspvOptions& opt) {
  ctx.make_current();
  if (opt.semiring != Semiring::PlusTimes)
    throw UsageError(fmt::format("plan_spmspv: semiring {} has no SpMSpV kernels; BFS (or_and) is plan_bfs(ctx, ...)",
                                 to_string(opt.semiring)));
  // The dual view holds A twice (rows and columns), at least.
  require_device_bytes(fmt::format("plan_spmspv of a {} x {} matrix with {} nonzeros (A's two views, at least)", a.rows,
                                   a.cols, a.nnz()),
                       2 * csr_device_bytes(a.rows, a.nnz(), sizeof(T)));
  auto p = std::make_unique<typename SpmspvPlan<T>::Impl>();
  p->config = opt.config ? *opt.config
                         : lookup_config(ctx.device().record().fingerprint, structure_fingerprint(a),
                                         config_info<SpmspvConfig>(), "", [&] { return compute_features(a); });
  // Keys a config leaves out take SpmspvConfig's defaults; wrong kinds and unknown keys are
  // UsageErrors naming the key.
  p->typed = config_from_json<SpmspvConfig>(p->config.params);
  p->config.params = config_to_json(p->typed);
  p->materialize(
      detail::spmspv_spec(a, p->typed, opt.direction, opt.semiring, {ctx.device().sm_count, ctx.device().cc_major}),
      ctx.modules(), ctx.device().arch());
  SpmspvPlan<T> plan(std::move(p));
  // Without run_sparse's dense x (cols elements): the first run_sparse adds it (see spmspv.hpp).
  plan.impl_->own = plan.make_workspace_without_sparse_x();
  plan.impl_->stats.device_bytes = plan.impl_->held_bytes();
  plan.impl_->size_launches(ctx.device().ordinal, ctx.device().sm_count, opt.fused);
  return plan;
}

template <class T>
SpmspvPlan<T>::SpmspvPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
template <class T>
SpmspvPlan<T>::SpmspvPlan(SpmspvPlan&&) noexcept = default;
template <class T>
SpmspvPlan<T>& SpmspvPlan<T>::operator=(SpmspvPlan&&) noexcept = default;
template <class T>
SpmspvPlan<T>::~SpmspvPlan() = default;

template <class T>
SpmspvWorkspace<T> SpmspvPlan<T>::make_workspace() const {
  SpmspvWorkspace<T> ws = make_workspace_without_sparse_x();
  impl_->ensure_sparse_x(ws, "SpmspvPlan::make_workspace");
  return ws;
}

template <class T>
SpmspvWorkspace<T> SpmspvPlan<T>::make_workspace_without_sparse_x() const {
  SpmspvWorkspace<T> ws;
  ws.state_ = zeroed<uint8_t>(sizeof(abi::SpmspvState));
  ws.feedback_ = MappedHostAllocation(2 * sizeof(uint32_t));
  static_cast<volatile uint32_t*>(ws.feedback_.data())[0] = Impl::kFeedbackUnknown;
  static_cast<volatile uint32_t*>(ws.feedback_.data())[1] = Impl::kFeedbackUnknown;
  ws.xmask_ = DeviceBuffer<uint16_t>(static_cast<size_t>(std::max(impl_->block_cols, 1)));
  ws.block_tasks_ = DeviceBuffer<abi::PushTask>(static_cast<size_t>(std::max<int64_t>(impl_->block_task_capacity, 1)));
  ws.residual_tasks_ =
      DeviceBuffer<abi::ResidualTask>(static_cast<size_t>(std::max<int64_t>(impl_->residual_task_capacity, 1)));
  ws.small_tasks_ =
      DeviceBuffer<abi::ResidualTask>(static_cast<size_t>(std::max<int64_t>(impl_->small_task_capacity, 1)));
  return ws;
}

template <class T>
void SpmspvPlan<T>::run(const DeviceBuffer<T>& x, DeviceBuffer<T>& y, const Stream& stream) const {
  run(x, y, stream, impl_->own);
}

template <class T>
void SpmspvPlan<T>::run(const DeviceBuffer<T>& x, DeviceBuffer<T>& y, const Stream& stream,
                        SpmspvWorkspace<T>& ws) const {
  if (x.size() != static_cast<size_t>(impl_->cols) || y.size() != static_cast<size_t>(impl_->rows))
    throw UsageError(fmt::format("SpmspvPlan::run: x has {} elements (need {}), y has {} (need {})", x.size(),
                                 impl_->cols, y.size(), impl_->rows));
  run(x.ptr(), y.ptr(), stream.handle(), ws);
}

template <class T>
void SpmspvPlan<T>::run(uint64_t x, uint64_t y, void* stream) const {
  run(x, y, stream, impl_->own);
}

template <class T>
void SpmspvPlan<T>::run(uint64_t x, uint64_t y, void* stream, SpmspvWorkspace<T>& ws) const {
  const Impl& p = *impl_;
  p.check_workspace(ws, "SpmspvPlan::run");
  const auto last = p.last_x(ws, stream);
  dense_in(x, y, stream, ws, p.compute_grid_for_run(last.nnz), static_cast<uint32_t*>(ws.feedback_.data()),
           p.hint(last));
}

// The mask pass and the compute (or the fused kernel) over a dense x, the compute on `grid` blocks.
template <class T>
void SpmspvPlan<T>::dense_in(uint64_t x, uint64_t y, void* stream, SpmspvWorkspace<T>& ws, unsigned grid,
                             uint32_t* feedback, DirectionHint hint) const {
  const Impl& p = *impl_;
  abi::SpmspvArgs<T> args = p.args(x, y, ws);
  args.feedback = feedback;
  void* params[] = {&args};
  if (p.fused_grid) {
    DBS_CU(cuLaunchCooperativeKernel(p.fused, p.fused_grid, 1, 1, kWarps * 32, 1, 1, 0, static_cast<CUstream>(stream),
                                     params));
    return;
  }
  const bool push = hint == DirectionHint::Push, pull = hint == DirectionHint::Pull;
  p.launch(push ? p.push_prep : pull ? p.pull_prep : p.prep, p.prep_grid, params, stream);
  p.launch(push ? p.push_compute : pull ? p.pull_compute : p.compute, grid, params, stream);
}

template <class T>
void SpmspvPlan<T>::run_sparse(const DeviceBuffer<int32_t>& x_idx, const DeviceBuffer<T>& x_val, int32_t x_nnz,
                               DeviceBuffer<T>& y, const Stream& stream) const {
  run_sparse(x_idx, x_val, x_nnz, y, stream, impl_->own);
}

template <class T>
void SpmspvPlan<T>::run_sparse(const DeviceBuffer<int32_t>& x_idx, const DeviceBuffer<T>& x_val, int32_t x_nnz,
                               DeviceBuffer<T>& y, const Stream& stream, SpmspvWorkspace<T>& ws) const {
  if (x_nnz < 0 || x_idx.size() < static_cast<size_t>(x_nnz) || x_val.size() < static_cast<size_t>(x_nnz))
    throw UsageError("SpmspvPlan::run_sparse: x_nnz exceeds the index or value buffer");
  if (y.size() != static_cast<size_t>(impl_->rows)) throw UsageError("SpmspvPlan::run_sparse: y has the wrong size");
  sparse_in(x_idx.ptr(), x_val.ptr(), x_nnz, y.ptr(), stream.handle(), ws);
}

template <class T>
void SpmspvPlan<T>::run_sparse(uint64_t x_idx, uint64_t x_val, int32_t x_nnz, uint64_t y, void* stream) const {
  if (x_nnz < 0) throw UsageError("SpmspvPlan::run_sparse: x_nnz must be >= 0");
  if (!y || (x_nnz > 0 && (!x_idx || !x_val))) throw UsageError("SpmspvPlan::run_sparse: null device pointer");
  sparse_in(x_idx, x_val, x_nnz, y, stream, impl_->own);
}

// x scattered into the workspace's dense x, the dense run, x's entries zeroed again.
template <class T>
void SpmspvPlan<T>::sparse_in(uint64_t idx, uint64_t val, int32_t x_nnz, uint64_t y, void* stream,
                              SpmspvWorkspace<T>& ws) const {
  const Impl& p = *impl_;
  p.ensure_sparse_x(ws, "SpmspvPlan::run_sparse");
  uint64_t xd = ws.x_scatter_.ptr();
  int n = x_nnz;
  const unsigned grid = static_cast<unsigned>(std::clamp((n + 127) / 128, 1, 1024));
  void* scatter_params[] = {&idx, &val, &n, &xd};
  if (n) p.launch(p.scatter, grid, scatter_params, stream);
  p.check_workspace(ws, "SpmspvPlan::run_sparse");
  dense_in(xd, y, stream, ws, p.compute_grid_for(n));
  void* unscatter_params[] = {&idx, &n, &xd};
  if (n) p.launch(p.unscatter, grid, unscatter_params, stream);
}

template <class T>
void SpmspvPlan<T>::run_sparse_out(const DeviceBuffer<int32_t>& x_idx, const DeviceBuffer<T>& x_val, int32_t x_nnz,
                                   DeviceBuffer<int32_t>& y_idx, DeviceBuffer<T>& y_val, DeviceBuffer<int32_t>& y_nnz,
                                   const Stream& stream) const {
  run_sparse_out(x_idx, x_val, x_nnz, y_idx, y_val, y_nnz, stream, impl_->own);
}

template <class T>
void SpmspvPlan<T>::run_sparse_out(const DeviceBuffer<int32_t>& x_idx, const DeviceBuffer<T>& x_val, int32_t x_nnz,
                                   DeviceBuffer<int32_t>& y_idx, DeviceBuffer<T>& y_val, DeviceBuffer<int32_t>& y_nnz,
                                   const Stream& stream, SpmspvWorkspace<T>& ws) const {
  const Impl& p = *impl_;
  if (p.direction == SpmspvDirection::Pull)
    throw UsageError("SpmspvPlan::run_sparse_out: the plan was made pull-only; sparse output needs push");
  if (x_nnz < 0 || x_idx.size() < static_cast<size_t>(x_nnz) || x_val.size() < static_cast<size_t>(x_nnz))
    throw UsageError("SpmspvPlan::run_sparse_out: x_nnz exceeds the index or value buffer");
  if (y_idx.size() < static_cast<size_t>(p.rows) || y_val.size() < static_cast<size_t>(p.rows) || y_nnz.size() < 1)
    throw UsageError(
        fmt::format("SpmspvPlan::run_sparse_out: y_idx and y_val need room for {} pairs (have {} and "
                    "{}), y_nnz for one count (has {})",
                    p.rows, y_idx.size(), y_val.size(), y_nnz.size()));
  p.check_workspace(ws, "SpmspvPlan::run_sparse_out");
  p.ensure_sparse_x(ws, "SpmspvPlan::run_sparse_out");
  const size_t words = (static_cast<size_t>(std::max(p.block_rows, 1)) + 31) / 32;
  if (ws.y_acc_.size() == 0) {  // first call through this workspace: allocate (not capturable)
    ws.sparse_xmask_ = zeroed<uint16_t>((static_cast<size_t>(std::max(p.block_cols, 1)) + 1) / 2 * 2);
    ws.y_acc_ = zeroed<T>(static_cast<size_t>(std::max(p.rows, 1)));
    ws.ytouched_ = zeroed<uint32_t>(words);
    ws.ylist_ = DeviceBuffer<int32_t>(static_cast<size_t>(std::max(p.block_rows, 1)));
  }
  if (ws.y_acc_.size() != static_cast<size_t>(std::max(p.rows, 1)) || ws.ytouched_.size() != words)
    throw UsageError(
        "SpmspvPlan::run_sparse_out: the workspace is another plan's (make it with plan.make_workspace())");
  abi::SpmspvArgs<T> args = p.args(ws.x_scatter_.ptr(), ws.y_acc_.ptr(), ws);
  args.xmask = ws.sparse_xmask_.data();
  args.ytouched = ws.ytouched_.data();
  args.ylist = ws.ylist_.data();
  const int* idx = x_idx.data();
  const T* val = x_val.data();
  int* yi = y_idx.data();
  T* yv = y_val.data();
  int* yn = y_nnz.data();
  int n = x_nnz;
  void* h = stream.handle();
  const unsigned xgrid =
      static_cast<unsigned>(std::clamp<int64_t>((int64_t{n} + 127) / 128, 1, int64_t{p.sm_count} * 4));
  // A tiny x (its push work bounded by x's nonzeros times the fullest column block) in one launch
  // of one block: spmspv_sparse_tiny says why.
  if (n > 0 && n <= kSparseTinyX && int64_t{n} * p.max_colblock_entries <= kSparseTinyWork) {
    void* tiny_params[] = {&args, &idx, &val, &n, &yi, &yv, &yn};
    p.launch(p.sparse_tiny, 1, tiny_params, h);
    return;
  }
  void* prep_params[] = {&args, &idx, &val, &n};
  p.launch(p.sparse_prep, xgrid, prep_params, h);
  void* params[] = {&args};
  p.launch(p.compute, p.compute_grid_for(n), params, h);
  void* finish_params[] = {&args, &idx, &n, &yi, &yv, &yn};
  p.launch(p.sparse_finish, p.sm_count * 4, finish_params, h);
}

namespace {
abi::SpmspvState read_state(const DeviceBuffer<uint8_t>& state, const Stream& stream) {
  stream.synchronize();
  auto bytes = state.download();
  abi::SpmspvState s{};
  std::memcpy(&s, bytes.data(), sizeof s);
  return s;
}
}  // namespace

template <class T>
SpmspvDirection SpmspvPlan<T>::last_direction(const Stream& stream) const {
  return last_direction(stream, impl_->own);
}

template <class T>
SpmspvDirection SpmspvPlan<T>::last_direction(const Stream& stream, const SpmspvWorkspace<T>& ws) const {
  // The direction of the part holding more of the nonzeros (the blocks and the residual choose
  // their own: last_directions() gives both).
  const auto st = read_state(ws.state_, stream);
  const uint32_t d = impl_->residual_nnz > impl_->block_nnz ? st.last_res_direction : st.last_direction;
  return d == abi::kDirPush ? SpmspvDirection::Push : SpmspvDirection::Pull;
}

template <class T>
double SpmspvPlan<T>::last_xb(const Stream& stream) const {
  const auto s = read_state(impl_->own.state_, stream);
  return impl_->block_cols ? static_cast<double>(s.last_nonempty) / impl_->block_cols : 0.0;
}

template <class T>
int64_t SpmspvPlan<T>::pull_bytes_visited(std::span<const int32_t> x_indices) const {
  const Impl& p = *impl_;
  std::vector<uint8_t> active(static_cast<size_t>(p.block_cols), 0);
  for (int32_t i : x_indices)
    if (i >= 0 && i < p.cols) active[i / 16] = 1;
  // Every block's column index and x mask are read; a visited block adds metadata and payload.
  int64_t bytes = static_cast<int64_t>(p.host_meta.size()) * 6;
  for (const auto& m : p.host_meta) {
    if (!active[m.col]) continue;
    const int64_t nvals = m.type == static_cast<uint8_t>(BlockType::Dense) ? 256 : m.nnz;
    bytes += static_cast<int64_t>(sizeof(BlockMeta)) + nvals * static_cast<int64_t>(sizeof(T)) + aux_bytes_read(m);
  }
  // The residual as it is pushed: the active column blocks' entries (index; the value where the
  // column is active).
  for (int32_t J = 0; J + 1 < static_cast<int32_t>(p.host_res_col_ptr.size()); ++J) {
    if (!active[J]) continue;
    bytes += static_cast<int64_t>(p.host_res_col_ptr[J + 1] - p.host_res_col_ptr[J]) * 4;
  }
  std::vector<uint8_t> col_active(static_cast<size_t>(p.cols), 0);
  for (int32_t i : x_indices)
    if (i >= 0 && i < p.cols) col_active[i] = 1;
  for (int32_t J = 0; J + 1 < static_cast<int32_t>(p.host_res_col_ptr.size()); ++J)
    for (int32_t k = p.host_res_col_ptr[J]; active[J] && k < p.host_res_col_ptr[J + 1]; ++k)
      if (col_active[16 * J + (p.host_res_cr[k] >> abi::kResidualLocalShift)]) bytes += static_cast<int64_t>(sizeof(T));
  // x read by prep, the active x entries, y zeroed by prep and written by pull, segments.
  bytes += static_cast<int64_t>(p.cols) * sizeof(T) + static_cast<int64_t>(x_indices.size()) * sizeof(T);
  bytes += 2 * static_cast<int64_t>(p.rows) * sizeof(T) + p.stats.pull_segments * 16;
  return bytes;
}

template <class T>
int32_t SpmspvPlan<T>::rows() const {
  return impl_->rows;
}
template <class T>
int32_t SpmspvPlan<T>::cols() const {
  return impl_->cols;
}
template <class T>
int64_t SpmspvPlan<T>::nnz() const {
  return impl_->nnz;
}
template <class T>
const SpmspvStats& SpmspvPlan<T>::stats() const {
  return impl_->stats;
}
template <class T>
const Config& SpmspvPlan<T>::config() const {
  return impl_->config;
}
template <class T>
const KernelInfo& SpmspvPlan<T>::kernel() const {
  return impl_->kernel;
}
template <class T>
const SpmspvConfig& SpmspvPlan<T>::typed_config() const {
  return impl_->typed;
}
template <class T>
Semiring SpmspvPlan<T>::semiring() const {
  return impl_->semiring;
}

template <class T>
std::string SpmspvPlan<T>::explain() const {
  return detail::spmspv_explain(*impl_, impl_->config, impl_->kernel);
}

template class SpmspvPlan<float>;
template class SpmspvPlan<double>;

}  // namespace dbsparse

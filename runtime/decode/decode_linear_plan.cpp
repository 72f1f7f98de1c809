// Decoding layers in the model's dtype (include/dbsparse/decode_linear.hpp).
#include "dbsparse/decode_linear.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "codegen/keys/decode_key.hpp"
#include "dbsparse/abi/decode.h"
#include "dbsparse/column_bitmap.hpp"
#include "dbsparse/compact_weights.hpp"
#include "dbsparse/half.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/decode/decode_source.hpp"
#include "runtime/decode/decode_spec.hpp"
#include "runtime/decode/tile_layout.hpp"
#include "runtime/gpu/module_registry.hpp"

namespace dbsparse {

// What a plan is besides its device buffers: copied as a whole by clone().
struct DecodeSetup : DecodeSpec {
  CUfunction product = nullptr;  // the mapping's kernel (DecodeSpec::entry)
  CUfunction topk = nullptr;     // keep > 0: the threshold pass before it
  KernelInfo kernel;
};

struct DecodeLinearPlan::Impl : DecodeSetup {
  DeviceBuffer<float> tau_dev;  // the threshold the top-k pass found
  DeviceAllocation values;      // dtype elements
  DeviceBuffer<uint32_t> masks, tickets;
  DeviceBuffer<int32_t> seg_ptr;
  DeviceBuffer<uint16_t> word_off;
  DeviceBuffer<float> acc;  // fp32 sums per row, zero between calls
  DeviceAllocation
      dense;  // Dense: W row-major, DenseColumns: column-major, in the dtype (the bitmap buffers then stay empty)
};

namespace {
using detail::for_each_weight;

// Zeroed first: the lanes kernel reads whole 16-byte chunks past the last value, and a clone
// copies whole buffers; neither may meet bytes nothing wrote (compute-sanitizer initcheck).
DeviceAllocation zeroed(size_t bytes) {
  DeviceAllocation a(bytes);
  if (bytes) DBS_CU(cuMemsetD8(a.ptr(), 0, bytes));
  return a;
}

// The layer as a dense row-major matrix of 16-bit values (zeros where pruned): the dense path's weights.
std::vector<uint16_t> expand_dense16(const detail::DecodeSource& m) {
  std::vector<uint16_t> d(static_cast<size_t>(m.rows) * static_cast<size_t>(m.cols), 0);
  const auto* v = static_cast<const uint16_t*>(m.values);
  for_each_weight(m, [&](int64_t row, int32_t j, int64_t at) { d[static_cast<size_t>(row) * m.cols + j] = v[at]; });
  return d;
}

// The layer column-major, each column padded to rows_pad, esize-byte values (zeros where pruned):
// the dense-columns path's weights.
std::vector<uint8_t> expand_dense_cols(const detail::DecodeSource& m, size_t esize, int32_t rows_pad) {
  std::vector<uint8_t> d(static_cast<size_t>(rows_pad) * static_cast<size_t>(m.cols) * esize, 0);
  const auto* v = static_cast<const uint8_t*>(m.values);
  for_each_weight(m, [&](int64_t row, int32_t j, int64_t at) {
    std::memcpy(&d[(static_cast<size_t>(j) * rows_pad + row) * esize], v + at * esize, esize);
  });
  return d;
}
}  // namespace

DecodeLinearPlan DecodeLinearPlan::build(Context& ctx, const CsrMatrix<float>& w, const DecodeLinearOptions& opt) {
  const ColumnBitmapMatrix<float> m = csr_to_column_bitmap(w);
  detail::DecodeSource src{m.rows,     m.cols,      m.strips,        &m.masks,
                           &m.seg_ptr, &m.word_off, m.values.data(), m.values.size()};
  // Values in the dtype: rounded once here, at load.
  std::vector<uint16_t> h;
  if (opt.dtype != DecodeDtype::F32) {
    h = opt.dtype == DecodeDtype::F16 ? floats_to_half(m.values) : floats_to_bf16(m.values);
    src.values = h.data();
  }
  return build_impl(ctx, src, opt);
}

DecodeLinearPlan DecodeLinearPlan::build(Context& ctx, const CompactLayer& w, const DecodeLinearOptions& opt) {
  if (opt.dtype != w.dtype)
    throw UsageError(fmt::format("plan_decode_linear: layer {} holds {} values, the options ask for {}", w.name,
                                 to_string(w.dtype), to_string(opt.dtype)));
  detail::DecodeSource src{w.w.rows,     w.w.cols,      w.w.strips,        &w.w.masks,
                           &w.w.seg_ptr, &w.w.word_off, w.w.values.data(), w.w.values.size()};
  return build_impl(ctx, src, opt);
}

namespace {

// The layer's shape and the statistics the spec reads.
DecodeShape shape_of(const detail::DecodeSource& m) {
  return DecodeShape{m.rows,
                     m.cols,
                     m.strips,
                     static_cast<int64_t>(m.nnz),
                     m.masks->size(),
                     m.word_off->size(),
                     std::span<const int32_t>(*m.seg_ptr)};
}

// W on the device as the spec holds it, and the per-call state (tickets, sums, threshold) zeroed.
void upload_weights(DecodeLinearPlan::Impl& p, const detail::DecodeSource& m) {
  const size_t esize = static_cast<size_t>(p.esize);
  if (p.mapping == DecodeMapping::Tiles) {
    // The tile bitmap layout in the buffers of the column bitmap's: masks, offsets (a chunk's), values.
    const TileLayout l = make_tile_layout(m);
    set_tiles_stage(p, l.max_chunk_pieces);
    p.values = zeroed(l.values.size() * esize + 16);
    p.values.upload(l.values.data(), l.values.size() * esize);
    p.masks = DeviceBuffer<uint32_t>(std::span<const uint32_t>(l.masks.empty() ? std::vector<uint32_t>{0} : l.masks));
    p.seg_ptr = DeviceBuffer<int32_t>(std::span<const int32_t>(l.chunk_ptr));
    p.word_off = DeviceBuffer<uint16_t>(std::span<const uint16_t>(std::vector<uint16_t>{0}));
  } else if (p.mapping == DecodeMapping::DenseColumns) {
    // W alone, column-major, each column padded to whole slabs.
    const std::vector<uint8_t> d = expand_dense_cols(m, esize, p.rows_pad);
    p.dense = zeroed(std::max<size_t>(d.size(), 1));
    if (!d.empty()) p.dense.upload(d.data(), d.size());
  } else if (p.dense_layout) {
    // The dense path holds W alone, row-major.
    const std::vector<uint16_t> d = expand_dense16(m);
    p.dense = zeroed(std::max<size_t>(d.size(), 1) * 2);
    if (!d.empty()) p.dense.upload(d.data(), d.size() * 2);
  } else {
    // 16 bytes past the last value: decode_lanes reads a segment in whole 16-byte chunks.
    p.values = zeroed(std::max<size_t>(m.nnz, 1) * esize + 16);
    if (m.nnz) p.values.upload(m.values, m.nnz * esize);
  }
  if (p.mapping != DecodeMapping::Tiles) {
    p.masks = DeviceBuffer<uint32_t>(
        std::span<const uint32_t>(m.masks->empty() || p.dense_layout ? std::vector<uint32_t>{0} : *m.masks));
    p.seg_ptr = DeviceBuffer<int32_t>(std::span<const int32_t>(p.dense_layout ? std::vector<int32_t>{0} : *m.seg_ptr));
    p.word_off =
        DeviceBuffer<uint16_t>(std::span<const uint16_t>(p.word_offsets ? *m.word_off : std::vector<uint16_t>{0}));
  }
  p.tickets = DeviceBuffer<uint32_t>(static_cast<size_t>(std::max(p.row_ranges, 1)));
  p.tickets.fill_bytes(0);
  // Tiles sums up to kDecodeTilesBatch rows of x a launch.
  const size_t acc_rows = p.mapping == DecodeMapping::Tiles ? abi::kDecodeTilesBatch : 1;
  p.acc = DeviceBuffer<float>(static_cast<size_t>(std::max(p.rows, 1)) * acc_rows);
  p.acc.fill_bytes(0);
  p.tau_dev = DeviceBuffer<float>(1);
  p.tau_dev.fill_bytes(0);
}

// The product kernel's splits: from the blocks an SM holds where the spec asks (the ring's with
// its largest list's shared memory allowed first), then the ring's own shared memory allowed.
void fit_splits(DecodeLinearPlan::Impl& p, int sm_count) {
  if (!p.needs_occupancy) return;
  const bool ring = p.mapping == DecodeMapping::Ring, tiles = p.mapping == DecodeMapping::Tiles;
  int fit = p.blocks_per_sm;
  if (fit == 0) {
    if (ring || tiles) cuda::allow_dynamic_smem(p.product, p.probe_smem);
    const int threads = tiles ? p.tiles_warps * 32 : abi::kDecodeLanesWarps * 32;
    DBS_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&fit, p.product, threads, p.probe_smem));
  }
  set_decode_splits(p, fit, sm_count);
  if (ring || tiles) cuda::allow_dynamic_smem(p.product, p.smem);
}

// The tuning DB's row for a layer of rows x cols with nnz weights (mapping Auto, no config given):
// keyed by its problem key and activation-density bucket, not by its structure, so no pass over
// the weights; none otherwise.
struct DbRow {
  std::optional<Config> config;
  std::string key, bucket;
};
DbRow lookup_decode_row(Context& ctx, int32_t rows, int32_t cols, int64_t nnz, const DecodeLinearOptions& opt) {
  DbRow r;
  if (opt.mapping != DecodeMapping::Auto || opt.config) return r;
  check_decode_options(opt, cols);  // a bucket is looked up only for a valid density
  const double wd = decode_weight_density(rows, cols, nnz);
  r.key = decode_problem_key(rows, cols, opt.dtype, wd);
  r.bucket = decode_density_bucket(decode_assumed_act_density(opt));
  r.config = lookup_config(ctx.device().record().fingerprint, r.key, config_info<DecodeConfig>(), r.bucket,
                           [&] { return decode_problem_features(rows, cols, wd); });
  return r;
}

}  // namespace

DecodeLinearPlan DecodeLinearPlan::build_impl(Context& ctx, const detail::DecodeSource& m,
                                              const DecodeLinearOptions& opt) {
  auto p = std::make_unique<DecodeLinearPlan::Impl>();
  const DbRow row = lookup_decode_row(ctx, m.rows, m.cols, static_cast<int64_t>(m.nnz), opt);
  // Throws before any device work.
  static_cast<DecodeSpec&>(*p) =
      make_decode_spec(shape_of(m), opt, ctx.profile(), row.config ? &*row.config : nullptr, row.key, row.bucket);
  ctx.make_current();
  upload_weights(*p, m);
  codegen::DecodeKey key;
  key.dtype = static_cast<codegen::DecodeDtype>(static_cast<int>(opt.dtype));
  const auto loaded = ctx.modules().get(codegen::make_source(key), ctx.device().arch());
  p->product = loaded.entry(p->entry);
  p->topk = loaded.entry("topk");
  p->kernel = loaded.info;
  fit_splits(*p, ctx.device().sm_count);
  return DecodeLinearPlan(std::move(p));
}

DecodeChoice decode_plan_choice(Context& ctx, int32_t rows, int32_t cols, int64_t nnz, const DecodeLinearOptions& opt) {
  check_decode_options(opt, cols);
  const DbRow row = lookup_decode_row(ctx, rows, cols, nnz, opt);
  return decode_choice(rows, cols, nnz, opt, ctx.profile(), row.config ? &*row.config : opt.config);
}

DecodeLinearPlan::DecodeLinearPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DecodeLinearPlan::DecodeLinearPlan(DecodeLinearPlan&&) noexcept = default;
DecodeLinearPlan& DecodeLinearPlan::operator=(DecodeLinearPlan&&) noexcept = default;
DecodeLinearPlan::~DecodeLinearPlan() = default;

namespace {
// decode_tiles(_warp) over `batch` (<= kDecodeTilesBatch) rows of x; tau_dev: the top-k pass's
// threshold, or 0 for the plan's tau.
void launch_tiles(const DecodeLinearPlan::Impl& p, uint64_t x, uint64_t y, int batch, uint64_t tau_dev, CUstream h) {
  uint64_t masks = p.masks.ptr(), seg = p.seg_ptr.ptr(), vals = p.values.ptr(), acc = p.acc.ptr(),
           tick = p.tickets.ptr();
  int rows = p.rows, n = p.cols, splits = p.splits, stage_bytes = p.stage_bytes;
  float tau = p.tau;
  const DecodeLaunchShape shape = decode_launch_shape(p);
  void* params[] = {&masks, &seg, &vals, &x, &rows, &n, &tau, &tau_dev, &splits, &acc, &tick, &y, &stage_bytes, &batch};
  DBS_CU(cuLaunchKernel(p.product, shape.grid, 1, 1, shape.block, 1, 1, p.smem, h, params, nullptr));
}
}  // namespace

void DecodeLinearPlan::run(uint64_t x, uint64_t y, void* stream) const {
  const Impl& p = *impl_;
  if (p.rows == 0) return;
  if (!x || !y) throw UsageError("DecodeLinearPlan::run: x and y must be device pointers");
  const auto h = static_cast<CUstream>(stream);
  int n = p.cols;
  float tau = p.tau;
  uint64_t tau_dev = 0;
  if (p.keep_k > 0 && n > 0) {
    int k = p.keep_k;
    uint64_t none = 0;
    tau_dev = p.tau_dev.ptr();
    void* topk_params[] = {&x, &n, &k, &none, &none, &none, &tau_dev};
    DBS_CU(cuLaunchKernel(p.topk, 1, 1, 1, 1024, 1, 1, 0, h, topk_params, nullptr));
  }
  uint64_t masks = p.masks.ptr(), seg = p.seg_ptr.ptr(), vals = p.values.ptr(), acc = p.acc.ptr(),
           tick = p.tickets.ptr();
  int rows = p.rows, strips = p.strips, splits = p.splits;
  const DecodeLaunchShape shape = decode_launch_shape(p);
  if (p.mapping == DecodeMapping::DenseColumns) {
    uint64_t wt = p.dense.ptr();
    int rows_pad = p.rows_pad;
    void* params[] = {&wt, &x, &rows, &rows_pad, &n, &tau, &tau_dev, &splits, &acc, &tick, &y};
    DBS_CU(cuLaunchKernel(p.product, shape.grid, 1, 1, shape.block, 1, 1, 0, h, params, nullptr));
    return;
  }
  if (p.mapping == DecodeMapping::Tiles) {
    launch_tiles(p, x, y, 1, tau_dev, h);
    return;
  }
  if (p.mapping == DecodeMapping::Dense) {
    uint64_t wd = p.dense.ptr();
    void* params[] = {&wd, &x, &rows, &n, &tau, &tau_dev, &splits, &acc, &tick, &y};
    DBS_CU(cuLaunchKernel(p.product, shape.grid, 1, 1, shape.block, 1, 1, 0, h, params, nullptr));
    return;
  }
  if (p.mapping == DecodeMapping::RowBlocks) {
    uint64_t woff = p.word_off.ptr();
    void* params[] = {&masks, &seg, &woff, &vals, &x, &n, &tau, &tau_dev, &y, &rows, &strips};
    DBS_CU(cuLaunchKernel(p.product, shape.grid, 1, 1, shape.block, 1, 1, 0, h, params, nullptr));
    return;
  }
  int stage_chunks = p.stage_chunks;
  void* params[] = {&masks, &seg,  &vals, &x,    &n,      &tau,    &tau_dev,
                    &acc,   &tick, &y,    &rows, &strips, &splits, &stage_chunks};
  DBS_CU(cuLaunchKernel(p.product, shape.grid, 1, 1, shape.block, 1, 1, p.smem, h, params, nullptr));
}

void DecodeLinearPlan::run_batch(uint64_t x, uint64_t y, int batch, void* stream) const {
  const Impl& p = *impl_;
  if (batch < 1) throw UsageError(fmt::format("DecodeLinearPlan::run_batch: batch must be >= 1, got {}", batch));
  if (batch > 1 && p.keep_k > 0)
    throw UsageError("DecodeLinearPlan::run_batch: keep finds one vector's threshold; give tau for a batch");
  if (batch == 1) return run(x, y, stream);
  if (p.rows == 0) return;
  if (!x || !y) throw UsageError("DecodeLinearPlan::run_batch: x and y must be device pointers");
  const uint64_t x_row = static_cast<uint64_t>(p.cols) * static_cast<uint64_t>(p.esize),
                 y_row = static_cast<uint64_t>(p.rows) * static_cast<uint64_t>(p.esize);
  if (p.mapping != DecodeMapping::Tiles) {
    for (int b = 0; b < batch; ++b) run(x + b * x_row, y + b * y_row, stream);
    return;
  }
  for (int b0 = 0; b0 < batch; b0 += abi::kDecodeTilesBatch)
    launch_tiles(p, x + static_cast<uint64_t>(b0) * x_row, y + static_cast<uint64_t>(b0) * y_row,
                 std::min(batch - b0, abi::kDecodeTilesBatch), 0, static_cast<CUstream>(stream));
}

namespace {
DeviceAllocation copy_of(const DeviceAllocation& a) {
  DeviceAllocation b(a.bytes());
  if (a.bytes()) DBS_CU(cuMemcpyDtoDAsync(b.ptr(), a.ptr(), a.bytes(), nullptr));
  return b;
}
template <class U>
DeviceBuffer<U> copy_of(const DeviceBuffer<U>& a) {
  DeviceBuffer<U> b(a.size());
  if (a.size()) DBS_CU(cuMemcpyDtoDAsync(b.ptr(), a.ptr(), a.size() * sizeof(U), nullptr));
  return b;
}
}  // namespace

DecodeLinearPlan DecodeLinearPlan::clone() const {
  const Impl& p = *impl_;
  auto q = std::make_unique<Impl>();
  static_cast<DecodeSetup&>(*q) = static_cast<const DecodeSetup&>(p);
  q->tau_dev = DeviceBuffer<float>(1);
  q->values = copy_of(p.values);
  q->dense = copy_of(p.dense);
  q->masks = copy_of(p.masks);
  q->seg_ptr = copy_of(p.seg_ptr);
  q->word_off = copy_of(p.word_off);
  q->tickets = DeviceBuffer<uint32_t>(p.tickets.size());
  q->acc = DeviceBuffer<float>(p.acc.size());
  DBS_CU(cuCtxSynchronize());  // the copies above ran on the legacy stream
  q->tickets.fill_bytes(0);
  q->acc.fill_bytes(0);
  return DecodeLinearPlan(std::move(q));
}

void DecodeLinearPlan::set_tau(float tau) {
  if (!(tau >= 0)) throw UsageError(fmt::format("DecodeLinearPlan::set_tau: tau must be >= 0, got {}", tau));
  impl_->tau = tau;
}
float DecodeLinearPlan::tau() const { return impl_->tau; }
float DecodeLinearPlan::last_tau(void* stream) const {
  DBS_CU(cuStreamSynchronize(static_cast<CUstream>(stream)));
  return impl_->keep_k > 0 ? impl_->tau_dev.download()[0] : impl_->tau;
}
int32_t DecodeLinearPlan::rows() const { return impl_->rows; }
int32_t DecodeLinearPlan::cols() const { return impl_->cols; }
DecodeDtype DecodeLinearPlan::dtype() const { return impl_->dtype; }
int64_t DecodeLinearPlan::weight_bytes() const { return impl_->weight_bytes; }
int64_t DecodeLinearPlan::device_bytes() const {
  const Impl& p = *impl_;
  return static_cast<int64_t>(p.values.bytes() + p.dense.bytes() +
                              (p.masks.size() + p.tickets.size() + p.seg_ptr.size() + p.acc.size()) * 4 +
                              p.word_off.size() * 2);
}
DecodeMapping DecodeLinearPlan::mapping() const { return impl_->mapping; }
ConfigSource DecodeLinearPlan::config_source() const { return impl_->source; }
std::string DecodeLinearPlan::explain() const { return explain_decode_spec(*impl_, impl_->kernel); }

}  // namespace dbsparse

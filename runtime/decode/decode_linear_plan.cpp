// Decoding layers in the model's dtype (include/dbsparse/decode_linear.hpp).
#include "dbsparse/decode_linear.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "codegen/keys/decode_key.hpp"
#include "dbsparse/abi/decode.h"
#include "dbsparse/column_bitmap.hpp"
#include "dbsparse/compact_weights.hpp"
#include "dbsparse/half.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/module_registry.hpp"

namespace dbsparse {

// decode_fused's warps per block and columns per warp window (the key's w8x8): a block reads
// 64 columns of x, a warp 8 at a time (~one kept column at 10% density).
constexpr int kDecodeWarps = 8, kDecodeWindow = 8;

// decode_lanes: the fewest columns a block takes (each block sums its strip's 1024 rows into the
// accumulator with one red per row, which a block over too few columns would not earn back).
constexpr int kLanesWarps = abi::kDecodeLanesWarps, kLanesMinChunk = 64, kLanesMaxChunk = abi::kDecodeLanesMaxChunk;
static_assert(abi::kDecodeStripRows == kBitmapStripRows, "the kernels' strips are the layout's");

const char* to_string(DecodeMapping m) {
  switch (m) {
    case DecodeMapping::RowBlocks:
      return "row-blocks";
    case DecodeMapping::Columns:
      return "columns";
    case DecodeMapping::Lanes:
      return "lanes";
    case DecodeMapping::Ring:
      return "ring";
    case DecodeMapping::Dense:
      return "dense";
    case DecodeMapping::DenseColumns:
      return "dense-columns";
    case DecodeMapping::Auto:
      break;
  }
  return "auto";
}

// The cost model Auto decides by. Fitted to decode-bench on the H200 (copy bandwidth 4.2 TB/s; f16,
// 50% Wanda; docs/bench/2026-12-02-s17-decode-ring-*.txt and 2026-12-03-s18-decode-*.txt): a fixed
// cost (launch, list, the sums' atomics and tickets) plus the bytes read over a share of the copy
// bandwidth, less where the grid has fewer blocks than SMs. Fitted, not derived: refit when the
// kernels change.
namespace {
constexpr double kModelBandwidth = 4200e9;  // bytes/s (H200 copy bandwidth, measured)
constexpr double kSms = 132;                // of the GPU the constants were fitted on
constexpr double kRingFixedUs = 5.5, kRingShare = 0.40;
// From s18 (Llama-3.1-8B shapes, 2026-12-03): dense-columns 9.0 / 24.6 / 18.4 us at half the
// activations on q, gate, down (model 9.0 / 21.4 / 21.4); dense (mma) 14.0 / 32.6 / 35.1 with all
// kept (model 12.6 / 34.3 / 34.3). The model misses the wide down layer (dense-columns 30.7 us with
// every activation kept, model 38.8: it picks dense there, 14% slower).
constexpr double kColsFixedUs = 4.0, kColsShare = 0.80;
constexpr double kDenseFixedUs = 4.0, kDenseShare = 0.92;
constexpr int kColsMinChunk = 32;  // decode_dense_cols: the fewest columns a block takes

double us(double bytes, double share, double blocks) {
  return bytes / (share * std::min(1.0, blocks / kSms) * kModelBandwidth) * 1e6;
}
}  // namespace

DecodeCosts estimate_decode_costs(int32_t rows, int32_t cols, DecodeDtype dtype, double weight_density,
                                  double act_density) {
  const double esize = dtype == DecodeDtype::F32 ? 4 : 2, r = rows, c = cols;
  const double rho = std::clamp(act_density, 0.0, 1.0), omega = std::clamp(weight_density, 0.0, 1.0);
  const double strips = std::ceil(r / kBitmapStripRows);
  DecodeCosts k;
  // Ring: per kept column, each strip's 32 mask words and its offset, then its values.
  const double ring_blocks = strips * std::max(1.0, std::ceil(c / kLanesMinChunk));
  k.ring_us = kRingFixedUs + us(rho * (c * strips * 132 + r * c * omega * esize), kRingShare, ring_blocks);
  const double slab = abi::decode_cols_slab_rows(static_cast<int>(esize));
  const double slabs = std::ceil(r / slab);
  k.dense_columns_us = kColsFixedUs + us(rho * slabs * slab * c * esize, kColsShare,
                                         slabs * std::max(1.0, std::ceil(c / kColsMinChunk)));
  k.dense_us = dtype == DecodeDtype::F32 || cols % 8 != 0
                   ? std::nan("")
                   : kDenseFixedUs + us(r * c * esize, kDenseShare, std::ceil(r / 16) * std::max(1.0, c / 128));
  return k;
}

DecodeMapping choose_decode_mapping(int32_t rows, int32_t cols, DecodeDtype dtype, double weight_density,
                                    double act_density, bool allow_dense) {
  const DecodeCosts k = estimate_decode_costs(rows, cols, dtype, weight_density, act_density);
  if (!allow_dense) return DecodeMapping::Ring;
  DecodeMapping best = DecodeMapping::Ring;
  double t = k.ring_us;
  if (k.dense_columns_us < t) best = DecodeMapping::DenseColumns, t = k.dense_columns_us;
  if (k.dense_us < t) best = DecodeMapping::Dense;  // false for NaN
  return best;
}

// The public dtype is the key's, enumerator for enumerator.
static_assert(static_cast<int>(DecodeDtype::F16) == static_cast<int>(codegen::DecodeDtype::F16) &&
              static_cast<int>(DecodeDtype::BF16) == static_cast<int>(codegen::DecodeDtype::BF16) &&
              static_cast<int>(DecodeDtype::F32) == static_cast<int>(codegen::DecodeDtype::F32));
const char* to_string(DecodeDtype d) { return codegen::to_string(static_cast<codegen::DecodeDtype>(d)); }

// What a plan is besides its device buffers: copied as a whole by clone().
struct DecodeSetup {
  DecodeDtype dtype = DecodeDtype::F16;
  int32_t rows = 0, cols = 0;
  int strips = 0, splits = 1;
  float tau = 0;
  CUfunction fused = nullptr, topk = nullptr, rows_fn = nullptr, lanes = nullptr;  // lanes: Lanes' or Ring's
  CUfunction dense_fn = nullptr;                                                   // Dense's or DenseColumns'
  int rows_pad = 0;  // DenseColumns: each column's rows, padded to whole slabs
  DecodeMapping asked = DecodeMapping::Auto;
  double act_density = 1;  // what Auto assumed
  DecodeCosts costs;
  int stage_chunks = 0;  // Ring: the largest segment in 16-byte chunks
  unsigned smem = 0;     // Ring: dynamic shared memory a block
  DecodeMapping mapping = DecodeMapping::Columns;
  int row_words = 1;
  int keep_k = 0;  // > 0: top-k threshold per call
  KernelInfo kernel;
  int64_t weight_bytes = 0;
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

// A layer in the column bitmap layout, its values already in the plan's dtype: what both entry
// points (a CSR matrix converted here, a compact layer read from a file) hand to the one builder.
namespace detail {
struct DecodeSource {
  int32_t rows = 0, cols = 0, strips = 0;
  const std::vector<uint32_t>* masks = nullptr;
  const std::vector<int32_t>* seg_ptr = nullptr;
  const std::vector<uint16_t>* word_off = nullptr;
  const void* values = nullptr;
  size_t nnz = 0;
};
}  // namespace detail

namespace {
// Calls f(row, column, index of the value) for every kept weight of the column bitmap, column by
// column, rows ascending within a column.
template <class F>
void for_each_weight(const detail::DecodeSource& m, F&& f) {
  for (int32_t j = 0; j < m.cols; ++j)
    for (int32_t t = 0; t < m.strips; ++t) {
      const size_t seg = static_cast<size_t>(j) * m.strips + t;
      int64_t at = (*m.seg_ptr)[seg];
      for (int p = 0; p < 32; ++p)
        for (uint32_t word = (*m.masks)[seg * 32 + p]; word; word &= word - 1)
          f(int64_t{t} * kBitmapStripRows + p * 32 + std::countr_zero(word), j, at++);
    }
}

// Zeroed first: the lanes kernel reads whole 16-byte chunks past the last value, and a clone
// copies whole buffers; neither may meet bytes nothing wrote (compute-sanitizer initcheck, s26).
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

DecodeLinearPlan Context::plan_decode_linear(const CsrMatrix<float>& w, const DecodeLinearOptions& opt) {
  const ColumnBitmapMatrix<float> m = csr_to_column_bitmap(w);
  detail::DecodeSource src{m.rows,     m.cols,      m.strips,        &m.masks,
                           &m.seg_ptr, &m.word_off, m.values.data(), m.values.size()};
  // Values in the dtype: rounded once here, at load.
  std::vector<uint16_t> h;
  if (opt.dtype != DecodeDtype::F32) {
    h = opt.dtype == DecodeDtype::F16 ? floats_to_half(m.values) : floats_to_bf16(m.values);
    src.values = h.data();
  }
  return build_decode_linear(src, opt);
}

DecodeLinearPlan Context::plan_decode_linear(const CompactLayer& w, const DecodeLinearOptions& opt) {
  if (opt.dtype != w.dtype)
    throw UsageError(fmt::format("plan_decode_linear: layer {} holds {} values, the options ask for {}", w.name,
                                 to_string(w.dtype), to_string(opt.dtype)));
  detail::DecodeSource src{w.w.rows,     w.w.cols,      w.w.strips,        &w.w.masks,
                           &w.w.seg_ptr, &w.w.word_off, w.w.values.data(), w.w.values.size()};
  return build_decode_linear(src, opt);
}

DecodeLinearPlan Context::build_decode_linear(const detail::DecodeSource& m, const DecodeLinearOptions& opt) {
  const int32_t rows = m.rows, cols = m.cols;
  if (!(opt.tau >= 0)) throw UsageError(fmt::format("plan_decode_linear: tau must be >= 0, got {}", opt.tau));
  if (!(opt.keep >= 0 && opt.keep <= 1))
    throw UsageError(fmt::format("plan_decode_linear: keep must be in [0, 1], got {}", opt.keep));
  if (opt.keep > 0 && cols > 16384)
    throw UsageError(
        fmt::format("plan_decode_linear: top-k listing handles up to 16384 activations, the layer has {}; "
                    "give tau instead",
                    cols));
  if (opt.row_block_words != 1 && opt.row_block_words != 2 && opt.row_block_words != 4)
    throw UsageError(fmt::format("plan_decode_linear: row_block_words must be 1, 2 or 4, got {}", opt.row_block_words));
  if (opt.blocks_per_sm < 0 || opt.blocks_per_sm > 64)
    throw UsageError(fmt::format("plan_decode_linear: blocks_per_sm must be in 0 .. 64 (0: as many as fit), got {}",
                                 opt.blocks_per_sm));
  if (!(opt.act_density >= 0 && opt.act_density <= 1))
    throw UsageError(fmt::format("plan_decode_linear: act_density must be in [0, 1] (0: from keep or tau), got {}",
                                 opt.act_density));
  if (opt.mapping == DecodeMapping::Dense && opt.dtype == DecodeDtype::F32)
    throw UsageError("plan_decode_linear: the dense path takes f16 or bf16 values, not f32");
  if (opt.mapping == DecodeMapping::Dense && cols % 8 != 0)
    throw UsageError(fmt::format("plan_decode_linear: the dense path needs the columns a multiple of 8, got {}", cols));
  make_current();
  auto p = std::make_unique<DecodeLinearPlan::Impl>();
  p->asked = opt.mapping;
  p->act_density = opt.act_density > 0 ? opt.act_density : opt.keep > 0 ? opt.keep : opt.tau == 0 ? 1.0 : 0.5;
  const double weight_density =
      static_cast<double>(m.nnz) / std::max(1.0, static_cast<double>(rows) * static_cast<double>(cols));
  p->costs = estimate_decode_costs(rows, cols, opt.dtype, weight_density, p->act_density);
  // Lanes names the mapping the ring kernel replaced.
  p->mapping = opt.mapping == DecodeMapping::Auto
                   ? choose_decode_mapping(rows, cols, opt.dtype, weight_density, p->act_density, opt.allow_dense)
               : opt.mapping == DecodeMapping::Lanes ? DecodeMapping::Ring
                                                     : opt.mapping;
  p->row_words = opt.row_block_words;
  p->dtype = opt.dtype;
  p->tau = opt.tau;
  p->rows = rows;
  p->cols = cols;
  p->strips = m.strips;
  const size_t esize = opt.dtype == DecodeDtype::F32 ? 4 : 2;
  const bool dense_cols = p->mapping == DecodeMapping::DenseColumns;
  const bool dense = p->mapping == DecodeMapping::Dense || dense_cols;
  const int slab = abi::decode_cols_slab_rows(static_cast<int>(esize));
  if (dense_cols) {
    // W alone, column-major, each column padded to whole slabs; the bitmap buffers stay empty.
    p->rows_pad = (rows + slab - 1) / slab * slab;
    const std::vector<uint8_t> d = expand_dense_cols(m, esize, p->rows_pad);
    p->dense = zeroed(std::max<size_t>(d.size(), 1));
    if (!d.empty()) p->dense.upload(d.data(), d.size());
    p->weight_bytes = static_cast<int64_t>(d.size());
  } else if (dense) {
    // The dense path holds W alone, row-major; the bitmap buffers stay empty.
    const std::vector<uint16_t> d = expand_dense16(m);
    p->dense = zeroed(std::max<size_t>(d.size(), 1) * 2);
    if (!d.empty()) p->dense.upload(d.data(), d.size() * 2);
    p->weight_bytes = static_cast<int64_t>(d.size() * 2);
  } else {
    // 16 bytes past the last value: decode_lanes reads a segment in whole 16-byte chunks.
    p->values = zeroed(std::max<size_t>(m.nnz, 1) * esize + 16);
    if (m.nnz) p->values.upload(m.values, m.nnz * esize);
  }
  p->masks = DeviceBuffer<uint32_t>(
      std::span<const uint32_t>(m.masks->empty() || dense ? std::vector<uint32_t>{0} : *m.masks));
  p->seg_ptr = DeviceBuffer<int32_t>(std::span<const int32_t>(dense ? std::vector<int32_t>{0} : *m.seg_ptr));
  // Only the row-block mapping reads the words' offsets (the others scan the counts of a segment's
  // words): left on the host otherwise, half a bit a weight the plan need not hold.
  const bool word_offsets = p->mapping == DecodeMapping::RowBlocks && !m.word_off->empty();
  p->word_off =
      DeviceBuffer<uint16_t>(std::span<const uint16_t>(word_offsets ? *m.word_off : std::vector<uint16_t>{0}));
  // A ticket per strip (the dense path: per 16-row tile; dense columns: per slab).
  const int row_ranges = dense_cols ? p->rows_pad / slab : dense ? (rows + 15) / 16 : m.strips;
  p->tickets = DeviceBuffer<uint32_t>(static_cast<size_t>(std::max(row_ranges, 1)));
  p->tickets.fill_bytes(0);
  p->acc = DeviceBuffer<float>(static_cast<size_t>(std::max(rows, 1)));
  p->acc.fill_bytes(0);
  if (!dense)
    p->weight_bytes = static_cast<int64_t>(m.masks->size() * 4 + m.seg_ptr->size() * 4 +
                                           (word_offsets ? m.word_off->size() * 2 : 0) + m.nnz * esize);
  codegen::DecodeKey key;
  key.dtype = static_cast<codegen::DecodeDtype>(static_cast<int>(opt.dtype));
  auto loaded = modules_->get(codegen::make_source(key), info_.arch());
  p->fused = loaded.fns.at(0);
  p->topk = loaded.fns.at(1);
  p->rows_fn = loaded.fns.at(p->row_words == 1 ? 2 : p->row_words == 2 ? 3 : 4);
  const bool ring = p->mapping == DecodeMapping::Ring;
  p->lanes = loaded.fns.at(5);
  if (ring) {
    const int per = static_cast<int>(16 / esize);
    for (size_t sgi = 0; sgi + 1 < m.seg_ptr->size(); ++sgi) {
      const int32_t o = (*m.seg_ptr)[sgi], e = (*m.seg_ptr)[sgi + 1], first = o & ~(per - 1);
      if (e > o) p->stage_chunks = std::max(p->stage_chunks, (e - first + per - 1) / per);
    }
    // The ring's shared memory: the list (16 bytes a column of the chunk), the warps' stages, or at
    // the end the warps' sums, whichever is larger.
    const auto ring_smem = [&](int64_t chunk) {
      return static_cast<unsigned>(std::max<int64_t>(
          chunk * 16 + int64_t{kLanesWarps} * abi::kDecodeRingStages * (128 + 16 * int64_t{p->stage_chunks}),
          int64_t{kLanesWarps} * 1024 * 4));
    };
    int fit = opt.blocks_per_sm;
    if (fit == 0) {
      DBS_CU(cuFuncSetAttribute(p->lanes, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                static_cast<int>(ring_smem(kLanesMaxChunk))));
      DBS_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&fit, p->lanes, kLanesWarps * 32, ring_smem(kLanesMaxChunk)));
      fit = std::max(fit, 1);
    }
    // Enough blocks for `fit` on every SM, no block over more than kLanesMaxChunk columns (its
    // list) nor, where the columns allow, under kLanesMinChunk.
    // Rounded down: a block past a full wave costs a whole block's time.
    const int64_t want = std::max<int64_t>(1, int64_t{fit} * std::max(info_.sm_count, 1) / std::max(m.strips, 1));
    const int64_t most = std::max<int64_t>(1, (cols + kLanesMinChunk - 1) / kLanesMinChunk);
    const int64_t least = (cols + kLanesMaxChunk - 1) / kLanesMaxChunk;
    p->splits = static_cast<int>(std::max<int64_t>({1, least, std::min(want, most)}));
    p->smem = ring_smem((cols + p->splits - 1) / p->splits);
    DBS_CU(cuFuncSetAttribute(p->lanes, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(p->smem)));
  } else if (dense_cols) {
    p->dense_fn = loaded.fns.at(6);
    int fit = opt.blocks_per_sm;
    if (fit == 0) DBS_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&fit, p->dense_fn, kLanesWarps * 32, 0));
    // Enough blocks for `fit` on every SM, no block over kLanesMaxChunk columns (its list) nor,
    // where the columns allow, under kColsMinChunk.
    const int64_t slabs = p->rows_pad / slab;
    // Rounded down (the 8B gate layer's 28 slabs at 2 blocks an SM: rounded up, 10 splits made 280
    // blocks for 264 places).
    const int64_t want =
        std::max<int64_t>(1, int64_t{std::max(fit, 1)} * std::max(info_.sm_count, 1) / std::max<int64_t>(slabs, 1));
    const int64_t most = std::max<int64_t>(1, (cols + kColsMinChunk - 1) / kColsMinChunk);
    const int64_t least = (cols + kLanesMaxChunk - 1) / kLanesMaxChunk;
    p->splits = static_cast<int>(std::max<int64_t>({1, least, std::min(want, most)}));
  } else if (dense) {
    p->dense_fn = loaded.fns.at(7);
    int fit = opt.blocks_per_sm;
    if (fit == 0) DBS_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&fit, p->dense_fn, kLanesWarps * 32, 0));
    // Enough blocks for `fit` on every SM; each warp at least a full unroll of 32-column steps.
    const int64_t tiles = (rows + 15) / 16, steps = (cols + 31) / 32;
    const int64_t want = (int64_t{std::max(fit, 1)} * std::max(info_.sm_count, 1) + tiles - 1) / tiles;
    const int64_t most = std::max<int64_t>(1, steps / (int64_t{kLanesWarps} * abi::kDecodeDenseUnroll));
    p->splits = static_cast<int>(std::clamp<int64_t>(want, 1, most));
  } else {
    p->splits = std::max(1, (cols + kDecodeWarps * kDecodeWindow - 1) / (kDecodeWarps * kDecodeWindow));
  }
  p->tau_dev = DeviceBuffer<float>(1);
  p->tau_dev.fill_bytes(0);
  if (opt.keep > 0) p->keep_k = std::max(1, static_cast<int>(std::ceil(opt.keep * cols - 1e-9)));
  p->kernel = loaded.info;
  return DecodeLinearPlan(std::move(p));
}

DecodeLinearPlan::DecodeLinearPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DecodeLinearPlan::DecodeLinearPlan(DecodeLinearPlan&&) noexcept = default;
DecodeLinearPlan& DecodeLinearPlan::operator=(DecodeLinearPlan&&) noexcept = default;
DecodeLinearPlan::~DecodeLinearPlan() = default;

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
  if (p.mapping == DecodeMapping::DenseColumns) {
    uint64_t wt = p.dense.ptr();
    int rows_pad = p.rows_pad;
    void* params[] = {&wt, &x, &rows, &rows_pad, &n, &tau, &tau_dev, &splits, &acc, &tick, &y};
    const int slabs = rows_pad / abi::decode_cols_slab_rows(p.dtype == DecodeDtype::F32 ? 4 : 2);
    DBS_CU(cuLaunchKernel(p.dense_fn, static_cast<unsigned>(slabs * splits), 1, 1, kLanesWarps * 32, 1, 1, 0, h, params,
                          nullptr));
    return;
  }
  if (p.mapping == DecodeMapping::Dense) {
    uint64_t wd = p.dense.ptr();
    void* params[] = {&wd, &x, &rows, &n, &tau, &tau_dev, &splits, &acc, &tick, &y};
    DBS_CU(cuLaunchKernel(p.dense_fn, static_cast<unsigned>((rows + 15) / 16 * splits), 1, 1, kLanesWarps * 32, 1, 1, 0,
                          h, params, nullptr));
    return;
  }
  if (p.mapping == DecodeMapping::RowBlocks) {
    uint64_t woff = p.word_off.ptr();
    void* params[] = {&masks, &seg, &woff, &vals, &x, &n, &tau, &tau_dev, &y, &rows, &strips};
    const int block_rows = 32 * p.row_words;
    DBS_CU(cuLaunchKernel(p.rows_fn, static_cast<unsigned>((rows + block_rows - 1) / block_rows), 1, 1, 256, 1, 1, 0, h,
                          params, nullptr));
    return;
  }
  int stage_chunks = p.stage_chunks;
  void* params[] = {&masks, &seg,  &vals, &x,    &n,      &tau,    &tau_dev,
                    &acc,   &tick, &y,    &rows, &strips, &splits, &stage_chunks};
  const bool lanes = p.mapping == DecodeMapping::Ring;
  DBS_CU(cuLaunchKernel(lanes ? p.lanes : p.fused, static_cast<unsigned>(strips * splits), 1, 1,
                        (lanes ? kLanesWarps : kDecodeWarps) * 32, 1, 1, p.smem, h, params, nullptr));
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
std::string DecodeLinearPlan::explain() const {
  const Impl& p = *impl_;
  std::string cut;
  switch (p.mapping) {
    case DecodeMapping::RowBlocks:
      cut = fmt::format("column bitmap, row blocks of {} rows", 32 * p.row_words);
      break;
    case DecodeMapping::DenseColumns:
      cut = fmt::format("dense column-major (rows padded to {}), dense-columns: {} slabs x {} splits", p.rows_pad,
                        p.rows_pad / abi::decode_cols_slab_rows(p.dtype == DecodeDtype::F32 ? 4 : 2), p.splits);
      break;
    case DecodeMapping::Dense:
      cut = fmt::format("dense row-major, dense (mma): {} tiles x {} splits", (p.rows + 15) / 16, p.splits);
      break;
    default:
      cut = fmt::format("column bitmap, {}: {} strips x {} splits", to_string(p.mapping), p.strips, p.splits);
  }
  const std::string why =
      p.asked == DecodeMapping::Auto
          ? fmt::format(
                "auto at {:.2f} of activations kept, estimated us: ring {:.1f}, dense-columns {:.1f}, dense {:.1f}",
                p.act_density, p.costs.ring_us, p.costs.dense_columns_us, p.costs.dense_us)
          : fmt::format("mapping {} as asked", to_string(p.asked));
  return fmt::format(
      "decode linear {}x{} {}: {}, weights {} bytes ({:.3f}x dense "
      "fp16), x kept where |x| >= {}; {}; kernel {} ({})\n",
      p.rows, p.cols, to_string(p.dtype), cut, p.weight_bytes,
      static_cast<double>(p.weight_bytes) / (2.0 * p.rows * std::max(p.cols, 1)), p.tau, why, p.kernel.key,
      p.kernel.origin);
}

}  // namespace dbsparse

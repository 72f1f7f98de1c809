#include "runtime/decode/decode_spec.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "codegen/keys/decode_key.hpp"
#include "dbsparse/abi/decode.h"
#include "dbsparse/column_bitmap.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse {
namespace {

constexpr int kLanesWarps = abi::kDecodeLanesWarps, kLanesMaxChunk = abi::kDecodeLanesMaxChunk;
static_assert(abi::kDecodeStripRows == kBitmapStripRows, "the kernels' strips are the layout's");

// The ring's largest segment in 16-byte chunks, counted from the chunk its first value is in.
int stage_chunks_of(std::span<const int32_t> seg_ptr, int esize) {
  const int per = 16 / esize;
  int most = 0;
  for (size_t s = 0; s + 1 < seg_ptr.size(); ++s) {
    const int32_t o = seg_ptr[s], e = seg_ptr[s + 1], first = o & ~(per - 1);
    if (e > o) most = std::max(most, (e - first + per - 1) / per);
  }
  return most;
}

const char* product_entry(DecodeMapping m, int row_words) {
  switch (m) {
    case DecodeMapping::RowBlocks:
      return codegen::decode_row_blocks_entry(row_words);
    case DecodeMapping::Ring:
      return "ring";
    case DecodeMapping::DenseColumns:
      return "dense_columns";
    case DecodeMapping::Dense:
      return "dense";
    default:
      return "columns";
  }
}

}  // namespace

void check_decode_options(const DecodeLinearOptions& opt, int32_t cols) {
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
  if (opt.mapping == DecodeMapping::Tiles && opt.dtype == DecodeDtype::F32)
    throw UsageError("plan_decode_linear: the tiles path takes f16 or bf16 values, not f32");
  if ((opt.tiles_warps != 0 && opt.tiles_warps != 4 && opt.tiles_warps != 8) ||
      (opt.tiles_stages != 0 && opt.tiles_stages != 2 && opt.tiles_stages != 3))
    throw UsageError(
        fmt::format("plan_decode_linear: tiles_warps must be 0, 4 or 8 and tiles_stages 0, 2 or 3, got {} and {}",
                    opt.tiles_warps, opt.tiles_stages));
  if (opt.mapping == DecodeMapping::Tiles && cols % 8 != 0)
    throw UsageError(fmt::format("plan_decode_linear: the tiles path needs the columns a multiple of 8, got {}", cols));
}

unsigned decode_ring_smem(int64_t chunk, int stage_chunks) {
  return static_cast<unsigned>(
      std::max<int64_t>(chunk * 16 + int64_t{kLanesWarps} * abi::kDecodeRingStages * (128 + 16 * int64_t{stage_chunks}),
                        int64_t{kLanesWarps} * 1024 * 4));
}

double decode_weight_density(int32_t rows, int32_t cols, int64_t nnz) {
  return static_cast<double>(nnz) / std::max(1.0, static_cast<double>(rows) * static_cast<double>(cols));
}

DecodeChoice decode_choice(int32_t rows, int32_t cols, int64_t nnz, const DecodeLinearOptions& opt,
                           const DeviceProfile& device, const Config* config) {
  const double wd = decode_weight_density(rows, cols, nnz);
  DecodeChoice c = choose_decode_config(opt, cols, config, [&](bool allow_dense) {
    return choose_decode_mapping(rows, cols, opt.dtype, wd, decode_assumed_act_density(opt), device, allow_dense);
  });
  if (c.mapping == DecodeMapping::Lanes) c.mapping = DecodeMapping::Ring;  // Lanes names what the ring kernel replaced
  return c;
}

DecodeSpec make_decode_spec(const DecodeShape& m, const DecodeLinearOptions& opt, const DeviceProfile& device,
                            const Config* config, const std::string& problem_key, const std::string& bucket) {
  check_decode_options(opt, m.cols);
  DecodeSpec s;
  s.dtype = opt.dtype;
  s.rows = m.rows;
  s.cols = m.cols;
  s.strips = m.strips;
  s.tau = opt.tau;
  s.asked = opt.mapping;
  s.act_density = decode_assumed_act_density(opt);
  s.costs = estimate_decode_costs(m.rows, m.cols, opt.dtype, decode_weight_density(m.rows, m.cols, m.nnz),
                                  s.act_density, device);
  s.device = device.summary();
  const DecodeChoice choice = decode_choice(m.rows, m.cols, m.nnz, opt, device, config ? config : opt.config);
  s.row_words = choice.row_block_words;
  s.blocks_per_sm = choice.blocks_per_sm;
  s.source = choice.source;
  s.source_note = choice.note;
  s.problem_key = problem_key;
  s.bucket = bucket;
  s.mapping = choice.mapping;
  s.entry = product_entry(s.mapping, s.row_words);
  if (s.mapping == DecodeMapping::Tiles) {
    s.tiles_warps = opt.tiles_warps ? opt.tiles_warps : abi::kDecodeTilesWarps;
    s.tiles_stages = opt.tiles_stages ? opt.tiles_stages : abi::kDecodeTilesStages;
    s.tiles_per_warp = opt.tiles_per_warp;
    static const char* const kEntries[2][2][2] = {
        {{"tiles_w4s2", "tiles_w4s3"}, {"tiles_w8s2", "tiles_w8s3"}},
        {{"tiles_warp_w4s2", "tiles_warp_w4s3"}, {"tiles_warp_w8s2", "tiles_warp_w8s3"}}};
    s.entry = kEntries[s.tiles_per_warp][s.tiles_warps == 8][s.tiles_stages == 3];
  }
  s.esize = opt.dtype == DecodeDtype::F32 ? 4 : 2;
  const bool dense_cols = s.mapping == DecodeMapping::DenseColumns;
  s.dense_layout = s.mapping == DecodeMapping::Dense || dense_cols;
  const int slab = abi::decode_cols_slab_rows(s.esize);
  // Only the row-block mapping reads the words' offsets (the others scan the counts of a segment's
  // words): left on the host otherwise, half a bit a weight the plan need not hold.
  s.word_offsets = s.mapping == DecodeMapping::RowBlocks && m.word_offsets > 0;
  if (dense_cols) {
    s.rows_pad = (m.rows + slab - 1) / slab * slab;
    s.weight_bytes = int64_t{s.rows_pad} * m.cols * s.esize;
  } else if (s.dense_layout) {
    s.weight_bytes = int64_t{m.rows} * m.cols * 2;
  } else if (s.mapping == DecodeMapping::Tiles) {
    const int64_t pieces = (int64_t{m.rows} + 15) / 16 * ((int64_t{m.cols} + 255) / 256);
    s.weight_bytes = pieces * (512 + 4) + 4 + m.nnz * s.esize;
  } else {
    s.weight_bytes = static_cast<int64_t>(m.mask_words * 4 + m.seg_ptr.size() * 4 +
                                          (s.word_offsets ? m.word_offsets * 2 : 0) + m.nnz * s.esize);
  }
  // A ticket per strip (the dense path: per 16-row tile; dense columns: per slab).
  s.row_ranges = dense_cols                                            ? s.rows_pad / slab
                 : s.dense_layout || s.mapping == DecodeMapping::Tiles ? (m.rows + 15) / 16
                                                                       : m.strips;
  if (opt.keep > 0) s.keep_k = std::max(1, static_cast<int>(std::ceil(opt.keep * m.cols - 1e-9)));
  s.needs_occupancy = s.mapping == DecodeMapping::Ring || s.mapping == DecodeMapping::Tiles || s.dense_layout;
  if (s.mapping == DecodeMapping::Tiles) set_tiles_stage(s, abi::kDecodeTilesChunkCols * abi::kDecodeTilesRows / 8 + 1);
  if (s.mapping == DecodeMapping::Ring) {
    s.stage_chunks = stage_chunks_of(m.seg_ptr, s.esize);
    s.probe_smem = decode_ring_smem(kLanesMaxChunk, s.stage_chunks);
  }
  if (!s.needs_occupancy)
    s.splits = std::max(1, (m.cols + kDecodeWarps * kDecodeWindow - 1) / (kDecodeWarps * kDecodeWindow));
  return s;
}

void set_decode_splits(DecodeSpec& s, int fit_asked, int sm_count) {
  const int64_t fit = std::max(fit_asked, 1), sms = std::max(sm_count, 1), cols = s.cols;
  const int64_t least = (cols + kLanesMaxChunk - 1) / kLanesMaxChunk;
  if (s.mapping == DecodeMapping::Ring) {
    // Enough blocks for `fit` on every SM, no block over kLanesMaxChunk columns (its list) nor,
    // where the columns allow, under kDecodeLanesMinChunk. Rounded down: a block past a full wave
    // costs a whole block's time.
    const int64_t want = std::max<int64_t>(1, fit * sms / std::max(s.strips, 1));
    const int64_t most = std::max<int64_t>(1, (cols + kDecodeLanesMinChunk - 1) / kDecodeLanesMinChunk);
    s.splits = static_cast<int>(std::max<int64_t>({1, least, std::min(want, most)}));
    s.smem = decode_ring_smem((cols + s.splits - 1) / s.splits, s.stage_chunks);
  } else if (s.mapping == DecodeMapping::DenseColumns) {
    // The same bounds with kDecodeColsMinChunk, over slabs. Rounded down too: rounded up, a layer
    // of 28 slabs at 2 blocks an SM on 132 SMs took 10 splits, 280 blocks for 264 places.
    const int64_t slabs = s.rows_pad / abi::decode_cols_slab_rows(s.esize);
    const int64_t want = std::max<int64_t>(1, fit * sms / std::max<int64_t>(slabs, 1));
    const int64_t most = std::max<int64_t>(1, (cols + kDecodeColsMinChunk - 1) / kDecodeColsMinChunk);
    s.splits = static_cast<int>(std::max<int64_t>({1, least, std::min(want, most)}));
  } else if (s.mapping == DecodeMapping::Tiles && s.tiles_per_warp) {
    // A warp per (tile, split): enough warps for `fit` blocks on every SM, rounded down; each warp at
    // least 4 chunks (its pipeline's length).
    const int64_t tiles = (int64_t{s.rows} + 15) / 16, chunks = (cols + 255) / 256;
    const int64_t want = std::max<int64_t>(1, fit * sms * s.tiles_warps / std::max<int64_t>(tiles, 1));
    s.splits = static_cast<int>(std::clamp<int64_t>(want, 1, std::max<int64_t>(1, chunks / 4)));
  } else if (s.mapping == DecodeMapping::Tiles) {
    // Enough blocks for `fit` on every SM, rounded down as the ring's; each warp at least a chunk.
    const int64_t tiles = (int64_t{s.rows} + 15) / 16, chunks = (cols + 255) / 256;
    const int64_t want = std::max<int64_t>(1, fit * sms / std::max<int64_t>(tiles, 1));
    const int64_t most = std::max<int64_t>(1, chunks / std::max(s.tiles_warps, 1));
    s.splits = static_cast<int>(std::clamp<int64_t>(want, 1, most));
  } else if (s.mapping == DecodeMapping::Dense) {
    // Enough blocks for `fit` on every SM; each warp at least a full unroll of 32-column steps.
    const int64_t tiles = (int64_t{s.rows} + 15) / 16, steps = (cols + 31) / 32;
    const int64_t want = (fit * sms + tiles - 1) / std::max<int64_t>(tiles, 1);  // a 0-row layer: 1
    const int64_t most = std::max<int64_t>(1, steps / (int64_t{kLanesWarps} * abi::kDecodeDenseUnroll));
    s.splits = static_cast<int>(std::clamp<int64_t>(want, 1, most));
  }
}

void set_tiles_stage(DecodeSpec& s, int max_chunk_pieces) {
  s.stage_bytes = 512 + 16 * std::max(max_chunk_pieces, 1);
  s.smem = static_cast<unsigned>(s.tiles_warps * s.tiles_stages * s.stage_bytes);
  s.probe_smem = s.smem;
}

DecodeLaunchShape decode_launch_shape(const DecodeSpec& s) {
  const unsigned lanes_block = kLanesWarps * 32;
  switch (s.mapping) {
    case DecodeMapping::DenseColumns:
      return {static_cast<unsigned>(s.rows_pad / abi::decode_cols_slab_rows(s.esize) * s.splits), lanes_block};
    case DecodeMapping::Dense:
      return {static_cast<unsigned>((s.rows + 15) / 16 * s.splits), lanes_block};
    case DecodeMapping::Tiles: {
      const unsigned items = static_cast<unsigned>((s.rows + 15) / 16 * s.splits), warps = s.tiles_warps;
      return {s.tiles_per_warp ? (items + warps - 1) / std::max(warps, 1u) : items, warps * 32};
    }
    case DecodeMapping::RowBlocks: {
      const int block_rows = 32 * s.row_words;
      return {static_cast<unsigned>((s.rows + block_rows - 1) / block_rows), 256};
    }
    case DecodeMapping::Ring:
      return {static_cast<unsigned>(s.strips * s.splits), lanes_block};
    default:
      return {static_cast<unsigned>(s.strips * s.splits), kDecodeWarps * 32};
  }
}

namespace {

// Where auto's mapping came from, for explain: the tuning DB's row (tuned or predicted) for the
// layer's key and bucket, a config given, or the cost model.
std::string decode_source_text(const DecodeSpec& p) {
  const std::string note = p.source_note.empty() ? "" : fmt::format(" ({})", p.source_note);
  switch (p.source) {
    case ConfigSource::Tuned:
    case ConfigSource::Predicted:
      return fmt::format("{} config for {} [{}]{}", to_string(p.source), p.problem_key, p.bucket, note);
    case ConfigSource::Explicit:
      return "config given";
    case ConfigSource::Default:
      break;
  }
  const std::string where = p.problem_key.empty() ? "" : fmt::format(" for {} [{}]", p.problem_key, p.bucket);
  return fmt::format("model's choice{}{}", where, note);
}

}  // namespace

std::string explain_decode_spec(const DecodeSpec& p, const KernelInfo& kernel) {
  std::string cut;
  switch (p.mapping) {
    case DecodeMapping::RowBlocks:
      cut = fmt::format("column bitmap, row blocks of {} rows", 32 * p.row_words);
      break;
    case DecodeMapping::DenseColumns:
      cut = fmt::format("dense column-major (rows padded to {}), dense-columns: {} slabs x {} splits", p.rows_pad,
                        p.rows_pad / abi::decode_cols_slab_rows(p.esize), p.splits);
      break;
    case DecodeMapping::Dense:
      cut = fmt::format("dense row-major, dense (mma): {} tiles x {} splits", (p.rows + 15) / 16, p.splits);
      break;
    case DecodeMapping::Tiles:
      cut = fmt::format("tile bitmap, tiles (mma, {} warps x {} stages of {} bytes{}): {} tiles x {} splits",
                        p.tiles_warps, p.tiles_stages, p.stage_bytes, p.tiles_per_warp ? ", a warp a tile" : "",
                        (p.rows + 15) / 16, p.splits);
      break;
    default:
      cut = fmt::format("column bitmap, {}: {} strips x {} splits", to_string(p.mapping), p.strips, p.splits);
  }
  const std::string why =
      p.asked == DecodeMapping::Auto
          ? fmt::format(
                "auto: {}{}; at {:.2f} of activations kept, estimated us: ring {:.1f}, dense-columns {:.1f}, dense "
                "{:.1f}, tiles {:.1f} (device profile: {})",
                decode_source_text(p), p.blocks_per_sm > 0 ? fmt::format(", {} blocks an SM", p.blocks_per_sm) : "",
                p.act_density, p.costs.ring_us, p.costs.dense_columns_us, p.costs.dense_us, p.costs.tiles_us, p.device)
          : fmt::format("mapping {} as asked", to_string(p.asked));
  return fmt::format(
      "decode linear {}x{} {}: {}, weights {} bytes ({:.3f}x dense "
      "fp16), x kept where |x| >= {}; {}; kernel {} ({})\n",
      p.rows, p.cols, to_string(p.dtype), cut, p.weight_bytes,
      static_cast<double>(p.weight_bytes) / (2.0 * p.rows * std::max(p.cols, 1)), p.tau, why, kernel.key,
      kernel.origin);
}

}  // namespace dbsparse

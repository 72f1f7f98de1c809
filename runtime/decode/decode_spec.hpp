#pragma once
// A decoding plan as host values (the pure stage of DecodeLinearPlan::build_impl): the mapping, how
// W is held and what it costs, the product kernel's entry point and its launch shape. Built from
// the options and the layer's shape and statistics, then materialized (uploads, module load,
// occupancy, attributes) and explained; nothing here touches CUDA, so the decisions are tested on
// the CPU (tests/cpu/ops/test_decode_spec.cpp).
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "dbsparse/decode_linear.hpp"
#include "dbsparse/plan_info.hpp"

namespace dbsparse {

// decode_fused's warps per block and columns per warp window (the key's w8x8): a block reads
// 64 columns of x, a warp 8 at a time (~one kept column at 10% density).
inline constexpr int kDecodeWarps = 8, kDecodeWindow = 8;
// decode_lanes_ring: the fewest columns a block takes (each block sums its strip's 1024 rows into
// the accumulator with one red per row, which a block over too few columns would not earn back).
inline constexpr int kDecodeLanesMinChunk = 64;
// decode_dense_cols: the fewest columns a block takes.
inline constexpr int kDecodeColsMinChunk = 32;

// The layer in the column bitmap layout, as much of it as the host decisions read.
struct DecodeShape {
  int32_t rows = 0, cols = 0, strips = 0;
  int64_t nnz = 0;
  size_t mask_words = 0, word_offsets = 0;  // sizes of the layout's masks and word_off
  std::span<const int32_t> seg_ptr;         // one offset per (column, strip) segment, and the end
};

// The share of activations a plan expects to keep: act_density when given, else keep, else 1 with
// tau = 0, else 0.5.
double decode_assumed_act_density(const DecodeLinearOptions& options);

// Pure: the plan's mapping (DecodeChoice, decode_linear.hpp). An explicit options.mapping (not
// Auto) is taken as asked, with the options' parameters. Else `config` (options.config, or the
// tuning DB's row for the layer; null or of source Default: none) gives the mapping and its
// parameters; a config of auto gives its parameters and `model(allow_dense)` the mapping. A
// config's mapping the layer cannot take (dense: f32, or columns not a multiple of 8), a dense one
// where allow_dense is off (the options' or the config's), or a stored row that is not a
// DecodeConfig is set aside with its parameters: the model picks, the note says why. The options'
// row_block_words and blocks_per_sm win where not at their defaults.
DecodeChoice choose_decode_config(const DecodeLinearOptions& options, int32_t cols, const Config* config,
                                  const std::function<DecodeMapping(bool allow_dense)>& model);

// A layer's share of weights kept: nnz / (rows * cols).
double decode_weight_density(int32_t rows, int32_t cols, int64_t nnz);

// The mapping a plan takes for a layer of rows x cols with nnz weights on `device`:
// choose_decode_config with the calibrated cost model as its fallback, Lanes taken as Ring. What
// make_decode_spec and decode_plan_choice both decide by.
DecodeChoice decode_choice(int32_t rows, int32_t cols, int64_t nnz, const DecodeLinearOptions& options,
                           const DeviceProfile& device, const Config* config);

struct DecodeSpec {
  DecodeDtype dtype = DecodeDtype::F16;
  int32_t rows = 0, cols = 0;
  int strips = 0;
  DecodeMapping asked = DecodeMapping::Auto;
  DecodeMapping mapping = DecodeMapping::Columns;  // Lanes is asked as Ring
  double act_density = 1;                          // what Auto assumed
  ConfigSource source = ConfigSource::Default;     // DecodeChoice's
  std::string source_note, problem_key, bucket;    // where a config was looked up, and its note
  DecodeCosts costs;
  std::string device;  // the profile the costs were estimated on (DeviceProfile::summary)
  float tau = 0;
  int keep_k = 0;  // > 0: top-k threshold per call
  int row_words = 1;
  int esize = 2;                          // bytes a value
  int rows_pad = 0;                       // DenseColumns: each column's rows, padded to whole slabs
  int row_ranges = 1;                     // tickets: strips, 16-row tiles (Dense) or slabs (DenseColumns)
  bool dense_layout = false;              // W held dense (Dense or DenseColumns): the bitmap buffers stay empty
  bool word_offsets = false;              // RowBlocks reads the words' offsets: uploaded
  int64_t weight_bytes = 0;               // W as the plan holds it
  int stage_chunks = 0;                   // Ring: the largest segment in 16-byte chunks
  int stage_bytes = 0;                    // Tiles: a warp's stage (masks, then the largest chunk's values)
  int tiles_warps = 0, tiles_stages = 0;  // Tiles: the kernel variant (warps a block, stages a warp)
  bool tiles_per_warp = false;            // Tiles: decode_tiles_warp (a warp per tile and split)
  const char* entry = "columns";          // the product kernel's role (codegen/keys/decode_key.hpp)
  // Ring, Dense, DenseColumns: the splits follow the blocks an SM holds, asked for
  // (blocks_per_sm) or, at 0, the product kernel's occupancy with probe_smem bytes of dynamic
  // shared memory.
  bool needs_occupancy = false;
  int blocks_per_sm = 0;
  unsigned probe_smem = 0;
  int splits = 1;     // blocks per strip, tile or slab (each a share of the columns)
  unsigned smem = 0;  // Ring, Tiles: dynamic shared memory a block
};

// UsageError naming the option for options out of range or a mapping the layer cannot take.
void check_decode_options(const DecodeLinearOptions& options, int32_t cols);
// Pure: everything but the splits of a product whose splits follow the occupancy (those:
// set_decode_splits). Checks the options first.
// Auto's costs are estimated on `device`; the mapping by choose_decode_config over `config` (the
// options' own when null). `problem_key` and `bucket` name where `config` was looked up (explain).
DecodeSpec make_decode_spec(const DecodeShape& shape, const DecodeLinearOptions& options, const DeviceProfile& device,
                            const Config* config = nullptr, const std::string& problem_key = "",
                            const std::string& bucket = "");
// The splits (and the ring's shared memory) for `fit` blocks an SM (0 taken as 1) on `sm_count`
// SMs (0 taken as 1).
void set_decode_splits(DecodeSpec& spec, int fit, int sm_count);
// The ring's dynamic shared memory for a block over `chunk` columns: its list (16 bytes a column),
// the warps' stages, or at the end the warps' sums, whichever is larger.
unsigned decode_ring_smem(int64_t chunk, int stage_chunks);

// Tiles: a warp's stage and the block's shared memory for a layout whose largest chunk of values
// spans `max_chunk_pieces` 16-byte pieces (make_decode_spec assumes every weight kept; the plan sets
// the layout's own).
void set_tiles_stage(DecodeSpec& spec, int max_chunk_pieces);

// The product kernel's launch: thread blocks and threads a block.
struct DecodeLaunchShape {
  unsigned grid = 0, block = 0;
};
DecodeLaunchShape decode_launch_shape(const DecodeSpec& spec);

// DecodeLinearPlan::explain's line.
std::string explain_decode_spec(const DecodeSpec& spec, const KernelInfo& kernel);

}  // namespace dbsparse

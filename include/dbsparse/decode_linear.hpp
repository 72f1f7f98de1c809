#pragma once
// A pruned linear layer for batch-1 decoding in the model's dtype (fp16, bf16 or f32): W in the
// column bitmap layout (column_bitmap.hpp), x thresholded by magnitude (|x_i| >= tau) inside the
// product kernel, y = W x summed in fp32 and rounded once. Only the kept columns' weights are read.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dbsparse/context.hpp"
#include "dbsparse/device_profile.hpp"
#include "dbsparse/features.hpp"
#include "dbsparse/matrix.hpp"
#include "dbsparse/op_config.hpp"
#include "dbsparse/tuning_db.hpp"

namespace dbsparse {

struct CompactLayer;
namespace detail {
struct DecodeSource;
}

enum class DecodeDtype { F16, BF16, F32 };
const char* to_string(DecodeDtype d);

// How the product's work is cut, and so how the plan holds W. On the column bitmap (1 bit of index a
// weight plus the kept values): Ring (decode_lanes_ring: a block per 1024-row strip and a share of
// the columns, lanes across the rows of each mask word, each warp's segments brought in by cp.async
// through a ring of stages), Lanes (the same kernel: the name of the mapping it replaced), Columns
// (decode_fused: lanes across the mask words) and RowBlocks (decode_rows: a block per
// 32 * row_block_words rows and every kept column, each y row written once). Dense layouts (zeros
// where pruned, twice the bytes of the kept values at 50%): DenseColumns (decode_dense_cols: W
// column-major, only the kept activations' columns read, each contiguous, as TEAL does) and Dense
// (decode_dense: W row-major, all of it read with tensor-core mma whatever x is; f16 and bf16 only,
// the columns a multiple of 8). Tiles (decode_tiles: the tile bitmap layout, 1 bit of index a weight
// plus the kept values as the column bitmap, in 16-row x 256-column chunks in tensor-core fragment
// order, every column read whatever x is; f16 and bf16 only, the columns a multiple of 8): the
// weights-only mapping. Auto estimates each one's time from the layer's bytes and the
// expected share of activations kept (estimate_decode_costs) and takes the cheapest.
enum class DecodeMapping { Auto, Columns, RowBlocks, Lanes, Ring, Dense, DenseColumns, Tiles };
const char* to_string(DecodeMapping m);
// The mapping a to_string name names; UsageError naming the known names otherwise.
DecodeMapping decode_mapping_from_string(const std::string& name);

// The decode op's config (op_config.hpp): DecodeLinearOptions' tunable part, what dbtune searches
// and the tuning DB stores per problem (decode_problem_key) and activation-density bucket
// (decode_density_bucket). Its defaults are the options' own: mapping auto, the calibrated cost
// model's choice. How tuned rows and the model combine: docs/decisions/decode-cost-model.md.
struct DecodeConfig {
  static constexpr const char* kOp = "decode";
  static constexpr bool kBlockFeatures = false;

  std::string mapping = "auto";
  int row_block_words = 1;
  int blocks_per_sm = 0;
  int allow_dense = 1;

  template <class V>
  void visit(V& v) {
    v.choice("mapping", mapping, {"auto", "ring", "dense-columns", "dense", "columns", "row-blocks", "tiles"},
             "how the product's work is cut (DecodeMapping); auto: the cheapest by the cost model");
    v.integer("row_block_words", row_block_words, 1, 4, "row-blocks: mask words (32 rows each) a block");
    v.integer("blocks_per_sm", blocks_per_sm, 0, 64,
              "ring, dense, dense-columns, tiles: blocks an SM (0: as many as fit)");
    v.integer("allow_dense", allow_dense, 0, 1, "auto may hold W dense where that is estimated faster");
  }
  void check() const {
    if (row_block_words == 3) throw UsageError("decode config: 'row_block_words' must be 1, 2 or 4, got 3");
  }
};

// The tuning DB's key of a decoding layer, in place of the structure fingerprint (hashing a model's
// weights at plan time would cost seconds): "decode.<rows>x<cols>.<dtype>.w<density>", the share of
// weights kept rounded to the nearest 0.05 with two decimals, e.g. "decode.4096x4096.f16.w0.50".
std::string decode_problem_key(int32_t rows, int32_t cols, DecodeDtype dtype, double weight_density);
// The activation-density classes decode is tuned and stored under: "a1", "a0.5", "a0.3", "a0.1",
// densest first.
const std::vector<std::string>& decode_density_buckets();
// The class nearest to `act_density` (a tie goes to the denser one).
std::string decode_density_bucket(double act_density);
// The density a class stands for (1, 0.5, 0.3, 0.1); UsageError for a name not listed.
double decode_bucket_density(const std::string& bucket);
// What prediction compares (tuning_db.hpp), from the shape and density alone, with no pass over the
// weights: the features compute_features gives a layer pruned per row, each row keeping the same
// share of weights spread over all the columns (the generator's "pruned:", Wanda and magnitude
// pruning per output row).
MatrixFeatures decode_problem_features(int32_t rows, int32_t cols, double weight_density);

// Estimated time of one call in us on `device` (its profile's bandwidth, SMs and the mappings'
// calibrated shares: runtime/decode/decode_costs.cpp, docs/decisions/decode-cost-model.md), by
// mapping: what Auto compares and what explain() prints. NaN where a mapping does not apply.
struct DecodeCosts {
  double ring_us = 0, dense_columns_us = 0, dense_us = 0, tiles_us = 0;
};
DecodeCosts estimate_decode_costs(int32_t rows, int32_t cols, DecodeDtype dtype, double weight_density,
                                  double act_density, const DeviceProfile& device);
// The cheapest mapping by estimate_decode_costs; with allow_dense false, only the bitmap ones (ring, tiles).
DecodeMapping choose_decode_mapping(int32_t rows, int32_t cols, DecodeDtype dtype, double weight_density,
                                    double act_density, const DeviceProfile& device, bool allow_dense = true);

// The model's terms for one mapping, independent of the device: its fixed cost, the bytes it reads
// and its grid's blocks (applies = false where the mapping cannot run the layer).
struct DecodeModelTerms {
  double fixed_us = 0, bytes = 0, blocks = 1;
  bool applies = true;
};
DecodeModelTerms decode_model_terms(DecodeMapping m, int32_t rows, int32_t cols, DecodeDtype dtype,
                                    double weight_density, double act_density);
// A call's work: its bytes over its grid's fill of the device's SMs.
double decode_model_work(const DecodeModelTerms& t, const DeviceProfile& device);
// The terms' time at a share of the device's copy bandwidth: fixed + work / (share x bandwidth).
// Each mapping's fixed cost and share come from the device's calibration, from the segment the
// call's work falls in, else the constants fitted where the model was first built.
double decode_model_us(const DecodeModelTerms& t, double share, const DeviceProfile& device);

// Times the ring, dense-columns and dense mappings on three synthetic f16 layers of LLM shapes
// (1024, 4096 and 14336 x 4096, half the weights kept; all and half of the activations), by CUDA
// graph replay with the weights rotated past the L2, and stores each one's fixed cost and share
// fitted through the two larger layers ("decode.<mapping>.fixed_us|share.full|half"), through the
// two smaller ones (the same names + ".small") and the work between them
// ("decode.<mapping>.split_bytes.full|half"); `progress` gets a line per mapping. About 4 s.
void calibrate_decode(Context& ctx, DeviceProfile& device,
                      const std::function<void(const std::string&)>& progress = {});

struct DecodeLinearOptions {
  DecodeDtype dtype = DecodeDtype::F16;
  float tau = 0.0f;  // x_i kept where |x_i| >= tau ...
  DecodeMapping mapping = DecodeMapping::Auto;
  int row_block_words = 1;  // RowBlocks: 1, 2 or 4 mask words (32 rows each) per block
  // Tiles: warps a block (4 or 8) and shared-memory stages a warp (2 or 3); 0: the defaults (8, 2).
  int tiles_warps = 0, tiles_stages = 0;
  // Tiles: a warp per 16-row tile and split (decode_tiles_warp) instead of a block's warps splitting
  // one tile's chunks.
  bool tiles_per_warp = false;
  int blocks_per_sm = 0;  // Lanes, Ring, Dense, DenseColumns, Tiles: thread blocks to aim for per SM (splits of
                          // the columns); 0: as many as fit (registers and shared memory)
  // Auto: the share of activations expected to be kept, which decides between the layouts (0: keep
  // when given, else 1 with tau = 0, else 0.5, what TEAL-style thresholds are calibrated to).
  double act_density = 0.0;
  // Auto may hold W dense (DenseColumns, Dense) where that is estimated faster: ~1.8x the device
  // memory of the bitmap at 50% pruned. false keeps the column bitmap whatever the cost.
  bool allow_dense = true;
  double keep = 0.0;  // ... or, when > 0, the ceil(keep * cols) largest |x_i| (exact, ties all kept), found
                      // on the GPU per call; needs cols <= 16384
  // A DecodeConfig (its params) instead of the tuning DB's row: what the tuner times. With mapping
  // Auto and no config, the plan looks up the DB's row for the layer's decode_problem_key and
  // decode_density_bucket (tuned, else predicted from the nearest tuned shape, else the cost model).
  // An explicit mapping reads neither. The options' row_block_words and blocks_per_sm, where not at
  // their defaults, win over the config's; allow_dense false keeps a config's dense mappings out (the
  // model then picks among the column bitmap ones).
  const Config* config = nullptr;
};

class DecodeLinearPlan {
 public:
  // The layer in the model's dtype (fp16, bf16, f32) on the column bitmap layout.
  // plan_decode_linear(ctx, w, options) is the same call.
  static DecodeLinearPlan build(Context& ctx, const CsrMatrix<float>& w, const DecodeLinearOptions& options);
  // The same from a layer `dbsparse prune` saved (compact_weights.hpp): no pruning, no conversion;
  // the values keep the layer's dtype, so options.dtype must match it (UsageError otherwise).
  static DecodeLinearPlan build(Context& ctx, const CompactLayer& w, const DecodeLinearOptions& options);

  // x: cols() values and y: rows() values of the plan's dtype, on the device. One launch (two with keep), no
  // allocation, no host synchronisation (capturable).
  void run(uint64_t x, uint64_t y, void* stream) const;
  // `batch` rows of x (row-major, cols() apart) into as many rows of y (rows() apart): several
  // sequences or speculative tokens at one step. The tiles mapping reads each weight once for up to
  // 8 rows a launch; the others launch once a row. UsageError for batch < 1 and, past one row, with
  // keep (its threshold is one vector's).
  void run_batch(uint64_t x, uint64_t y, int batch, void* stream) const;
  // An independent plan on a device copy of the same weights (no conversion): for benchmarks that
  // rotate over copies so the L2 cannot serve the weights, as it could not in a whole model.
  DecodeLinearPlan clone() const;
  void set_tau(float tau);
  float tau() const;
  // With keep: the threshold the last run found (waits for the stream: not for the hot path).
  float last_tau(void* stream) const;
  int32_t rows() const;
  int32_t cols() const;
  DecodeDtype dtype() const;
  int64_t weight_bytes() const;   // W as the plan holds it (bitmap: no word offsets but for RowBlocks; dense: padded)
  DecodeMapping mapping() const;  // the one Auto chose, or the one asked for
  // Where the mapping came from: Explicit (a mapping or a config asked for), Tuned or Predicted (the
  // tuning DB's row), Default (the cost model). explain() says which, with the DB's note.
  ConfigSource config_source() const;
  int64_t device_bytes() const;  // everything the plan holds
  std::string explain() const;

  DecodeLinearPlan(DecodeLinearPlan&&) noexcept;
  DecodeLinearPlan& operator=(DecodeLinearPlan&&) noexcept;
  ~DecodeLinearPlan();
  struct Impl;

 private:
  static DecodeLinearPlan build_impl(Context& ctx, const detail::DecodeSource& w, const DecodeLinearOptions& options);
  explicit DecodeLinearPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The mapping and parameters a plan of a rows x cols layer with nnz weights would take with
// `options` on ctx's device, and where they came from (Explicit, Tuned, Predicted, Default: the
// model), without building it: for benchmarks that time auto's choice among forced plans.
struct DecodeChoice {
  DecodeMapping mapping = DecodeMapping::Ring;  // never Auto
  int row_block_words = 1, blocks_per_sm = 0;
  ConfigSource source = ConfigSource::Default;  // Default: the cost model's choice
  std::string note;                             // the config's note, or why its mapping was set aside
};
DecodeChoice decode_plan_choice(Context& ctx, int32_t rows, int32_t cols, int64_t nnz,
                                const DecodeLinearOptions& options);

// The op's entry point, as every op spells it: plan_<op>(ctx, problem, options...).
template <class W>
DecodeLinearPlan plan_decode_linear(Context& ctx, const W& w, const DecodeLinearOptions& options) {
  return DecodeLinearPlan::build(ctx, w, options);
}

}  // namespace dbsparse

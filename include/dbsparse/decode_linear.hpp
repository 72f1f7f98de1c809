#pragma once
// A pruned linear layer for batch-1 decoding in the model's dtype (fp16, bf16 or f32): W in the
// column bitmap layout (column_bitmap.hpp), x thresholded by magnitude (|x_i| >= tau) inside the
// product kernel, y = W x summed in fp32 and rounded once. Only the kept columns' weights are read.
#include <cstdint>
#include <memory>
#include <string>

#include "dbsparse/context.hpp"
#include "dbsparse/matrix.hpp"

namespace dbsparse {

enum class DecodeDtype { F16, BF16, F32 };
const char* to_string(DecodeDtype d);

// How the product's work is cut. Lanes (decode_lanes: a block per 1024-row strip and a share of the
// columns, lanes across the rows of each mask word, so a warp's value loads are consecutive), Columns
// (decode_fused: lanes across the mask words) or RowBlocks (decode_rows: a block per 32 *
// row_block_words rows and every kept column, each y row written once). Auto takes row blocks for
// layers of at most 1024 columns and 4096 rows, lanes otherwise (choose_decode_mapping). Ring is
// lanes with each warp's segments brought in by cp.async through a ring of stages (more bytes in
// flight, no registers holding them). Dense holds W as a dense row-major matrix (zeros where pruned)
// and reads all of it with tensor-core mma whatever x is: f16 and bf16 only, and the columns a
// multiple of 8.
enum class DecodeMapping { Auto, Columns, RowBlocks, Lanes, Ring, Dense };
const char* to_string(DecodeMapping m);
DecodeMapping choose_decode_mapping(int32_t rows, int32_t cols);

struct DecodeLinearOptions {
  DecodeDtype dtype = DecodeDtype::F16;
  float tau = 0.0f;   // x_i kept where |x_i| >= tau ...
  DecodeMapping mapping = DecodeMapping::Auto;
  int row_block_words = 1;  // RowBlocks: 1, 2 or 4 mask words (32 rows each) per block
  int blocks_per_sm = 0;    // Lanes, Ring: thread blocks to aim for per SM (splits of the columns per strip);
                            // 0: as many as fit (registers and shared memory)
  double keep = 0.0;  // ... or, when > 0, the ceil(keep * cols) largest |x_i| (exact, ties all kept), found
                      // on the GPU per call; needs cols <= 16384
};

class DecodeLinearPlan {
 public:
  // x: cols() values and y: rows() values of the plan's dtype, on the device. One launch (two with keep), no
  // allocation, no host synchronisation (capturable).
  void run(uint64_t x, uint64_t y, void* stream) const;
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
  int64_t weight_bytes() const;  // W as the plan's mapping reads it (Lanes and Columns: no word offsets)
  int64_t device_bytes() const;  // everything the plan holds
  std::string explain() const;

  DecodeLinearPlan(DecodeLinearPlan&&) noexcept;
  DecodeLinearPlan& operator=(DecodeLinearPlan&&) noexcept;
  ~DecodeLinearPlan();
  struct Impl;

 private:
  friend class Context;
  explicit DecodeLinearPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dbsparse

#pragma once
// Pruned linear layers saved once and loaded without pruning again (`dbsparse prune`): each layer
// in the column bitmap layout (column_bitmap.hpp) with its kept values as fp16 or bf16 words, in a
// safetensors file, so any safetensors tool can list it. Per layer NAME:
//   NAME.masks    U32 [cols * strips * 32]   bit b of word w of (column j, strip t): row 1024 t + 32 w + b
//   NAME.seg_ptr  I32 [cols * strips + 1]    first value of (j, t), in column-major segment order
//   NAME.values   F16 or BF16 [nnz]          the kept weights in segment order, rows ascending
// and in the metadata "format" = "dbsparse.column_bitmap.v1" and "NAME.shape" = "ROWSxCOLS".
// At 50% that is 0.5645x the dense fp16 bytes for 1024-row multiples (a bit a weight + the values).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dbsparse/column_bitmap.hpp"
#include "dbsparse/decode_linear.hpp"
#include "dbsparse/matrix.hpp"

namespace dbsparse {

inline constexpr const char* kCompactWeightsFormat = "dbsparse.column_bitmap.v1";

struct CompactLayer {
  std::string name;                      // e.g. the checkpoint's weight name
  DecodeDtype dtype = DecodeDtype::F16;  // F16 or BF16
  ColumnBitmapMatrix<uint16_t> w;        // values as 16-bit words; word_off filled
  int64_t file_bytes() const;            // what the layer's three tensors take in the file
};

// The pruned layer converted and its values rounded to dtype (F16 or BF16; UsageError otherwise).
CompactLayer make_compact_layer(std::string name, const CsrMatrix<float>& pruned, DecodeDtype dtype);

// Writes atomically (support/atomic_file.hpp). UsageError for two layers of one name.
void write_compact_weights(const std::string& path, const std::vector<CompactLayer>& layers,
                           std::map<std::string, std::string> metadata = {});

// Every layer, in name order, checked whole: each problem is an InputError naming the file and the
// tensor (a missing or mistyped tensor, sizes that do not match the shape, offsets that are not a
// running count of the mask bits, a bit past the last row).
std::vector<CompactLayer> read_compact_weights(const std::string& path);

// Checks a layer built elsewhere (from Python's arrays, or read from a file) against its shape: array
// sizes, seg_ptr the running count of the mask bits, no bit past the last row, values as many as
// the bits (UsageError "layer NAME: ..." otherwise), then sets strips and fills word_off.
void check_compact_layer(CompactLayer& layer);

// The layer back in CSR with its values widened to float (tests, `dbsparse prune --check`).
CsrMatrix<float> compact_to_csr(const CompactLayer& layer);

}  // namespace dbsparse

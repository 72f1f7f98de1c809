#pragma once
// Matrix structure features: the fingerprint that keys the tuning database and the feature vector
// that prediction uses.
#include <array>
#include <cstdint>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "dbsparse/matrix.hpp"

namespace dbsparse {

struct MatrixFeatures {
  int64_t rows = 0, cols = 0, nnz = 0;
  double row_mean = 0, row_std = 0;
  int64_t row_max = 0;
  int64_t empty_rows = 0;
  int64_t bandwidth = 0;  // max |i - j| over stored entries
  // Histogram of non-empty 16×16 blocks by nnz: bins [1,2), [2,4), [4,8), ..., [128,256), [256,257)
  std::array<int64_t, 9> block_nnz_hist{};
  int64_t nonempty_blocks = 0;

  nlohmann::json to_json() const;
  static MatrixFeatures from_json(const nlohmann::json& j);
};

template <class T>
MatrixFeatures compute_features(const CsrMatrix<T>& a);

// Hex digest of the structure (rows, cols, row_ptr, col_idx); values do not change it.
template <class T>
std::string structure_fingerprint(const CsrMatrix<T>& a);
// The same digest from the structure's arrays (a PatternGraph has no CsrMatrix to pass).
std::string structure_fingerprint(int32_t rows, int32_t cols, std::span<const int32_t> row_ptr,
                                  std::span<const int32_t> col_idx);

}  // namespace dbsparse

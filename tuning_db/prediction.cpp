// Prediction for matrices not tuned on this device: the nearest tuned matrix in a small feature
// space, or the defaults when nothing tuned is near (kPredictionRadius).
#include <algorithm>
#include <cmath>

#include "dbsparse/tuning_db.hpp"
#include "tuning_db/internal.hpp"
#include "tuning_db/schema.hpp"

namespace dbsparse {

using internal::handle;
using internal::parse_json;
using sqlite::Stmt;

// docs/DESIGN.md §6, step 2: one nearest neighbour in a small, explainable feature space. Sizes are in
// decades (log10), so a matrix twice as large is close; the row length and the nonzeros per block,
// which pick SpMV's lanes and the block types, in octaves (log2), since their cutoffs double;
// shape terms are ratios in [0, 1]. SpMV's configs depend on row lengths, not on 16x16 blocks, so
// its vector stops before the block terms: with them, FEM (27 per row) stayed nearer to banded
// (17 per row) than to the 27-point stencil (docs/decisions/tuning-prediction-radius.md).
std::vector<double> prediction_features(const MatrixFeatures& f, bool block_features) {
  auto dec = [](double v) { return std::log10(1.0 + std::max(0.0, v)); };
  auto oct = [](double v) { return std::log2(1.0 + std::max(0.0, v)); };
  const double blocks = std::max<double>(1.0, static_cast<double>(f.nonempty_blocks));
  std::vector<double> v{dec(static_cast<double>(f.rows)),
                        dec(static_cast<double>(f.nnz)),
                        oct(f.row_mean),
                        std::min(4.0, f.row_std / (f.row_mean + 1e-9)) / 2,  // spread of row lengths
                        dec(static_cast<double>(f.row_max)),
                        static_cast<double>(f.bandwidth) / std::max<double>(1.0, static_cast<double>(f.cols))};
  if (!block_features) return v;
  v.push_back(oct(static_cast<double>(f.nnz) / blocks));
  for (int64_t h : f.block_nnz_hist) v.push_back(static_cast<double>(h) / blocks);  // block-density histogram
  return v;
}

std::optional<Prediction> TuningDb::predict(const std::string& device_fp, const OpConfigInfo& op,
                                            const std::string& bucket, const MatrixFeatures& features,
                                            const std::string& exclude_fp) const {
  Stmt st(handle(db_),
          "SELECT c.matrix_fp, c.params_json, m.name, m.features_json FROM configs c"
          " JOIN matrices m ON m.fingerprint = c.matrix_fp"
          " WHERE c.device_fp = ?1 AND c.op = ?2 AND c.bucket = ?3 ORDER BY c.matrix_fp");
  st.bind(1, device_fp).bind(2, op.op).bind(3, bucket);
  const auto q = prediction_features(features, op.block_features);
  std::optional<Prediction> best;
  while (st.step()) {
    if (st.text(0) == exclude_fp) continue;
    const auto v = prediction_features(MatrixFeatures::from_json(parse_json(st.text(3), path_, "features_json")),
                                       op.block_features);
    double d = 0;
    for (size_t i = 0; i < q.size() && i < v.size(); ++i) d += (q[i] - v[i]) * (q[i] - v[i]);
    d = std::sqrt(d);
    if (!best || d < best->distance)
      best = Prediction{parse_json(st.text(1), path_, "params_json"), st.text(2), st.text(0), d};
  }
  if (best && best->distance > kPredictionRadius) {
    best->params = op.defaults;
    best->too_far = true;
  }
  return best;
}

std::vector<std::string> TuningDb::tuned_matrices(const std::string& device_fp, const std::string& op,
                                                  const std::string& bucket) const {
  Stmt st(handle(db_),
          "SELECT matrix_fp FROM configs WHERE device_fp = ?1 AND op = ?2 AND bucket = ?3 ORDER BY matrix_fp");
  st.bind(1, device_fp).bind(2, op).bind(3, bucket);
  std::vector<std::string> out;
  while (st.step()) out.push_back(st.text(0));
  return out;
}

}  // namespace dbsparse

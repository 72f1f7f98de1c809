#pragma once
// Calibration of sparse LLM decoding from activations recorded on a calibration set: per linear
// layer, the L2 norm of each input column over the tokens (what Wanda pruning weighs |W_ij| by,
// prune_wanda in pruning.hpp) and the magnitude threshold tau that keeps a given share of the
// input's entries (TEAL: x_i kept where |x_i| >= tau, threshold_activations in pruning.hpp),
// computed once here and applied on the GPU by the kernel that consumes x.
//
// Activations are row-major tokens x in_features: row t is the input x of one token.
//
// `dbsparse calibrate` writes them to a safetensors file, per weight W:
//   W.input_norm     F32 [in_features]  input_norms over every calibration token (what
//                                       `dbsparse prune --method wanda --norms` reads)
//   W.act_threshold  F32 [D]            tau at each density, in the order of the metadata entry
//                                       "densities" (comma-separated, e.g. "0.5,0.3"; D = 1 for one)
#include <cstdint>
#include <span>
#include <vector>

namespace dbsparse {

// How many of n entries a density keeps: ceil(density * n), where a density * n within 1e-9
// (relative) of an integer counts as that integer (0.3 of 10 keeps 3, although 0.3 * 10 is
// 3.0000000000000004 in double), and at least 1. UsageError for density outside (0, 1] or n < 1.
int64_t kept_count(double density, int64_t n);

// ||X_j||_2 = sqrt(sum_t x_tj^2) for each column j of x (tokens x in_features), summed in double in
// token order. UsageError when x.size() != tokens * in_features or an entry is NaN or infinite.
std::vector<float> input_norms(std::span<const float> x, int64_t tokens, int32_t in_features);

// The largest tau for which count(|v_i| >= tau) >= kept_count(density, n): the k-th largest |v_i|.
// Entries equal to tau are all kept, so with ties more than k may be. UsageError for density
// outside (0, 1], no values or a NaN or infinite one.
float magnitude_threshold(std::span<const float> values, double density);

// One weight's calibration activations, added tensor by tensor (a calibration set split over
// files); the results equal input_norms and magnitude_threshold over all added rows at once.
// Keeps |x| of every entry added (4 bytes each) for the exact quantile, and a double per column.
class ActivationCalibration {
 public:
  explicit ActivationCalibration(int32_t in_features);  // UsageError unless in_features >= 1

  int32_t in_features() const { return in_features_; }
  int64_t tokens() const { return tokens_; }

  // Whole tokens: x.size() a multiple of in_features (an empty x adds none). UsageError naming the
  // token (counted within x) and column of the first NaN or infinite entry; nothing is added then.
  void add(std::span<const float> x);

  std::vector<float> input_norms() const;  // UsageError when no token was added
  // The threshold at each density, in the order given; reorders the kept magnitudes, not the result.
  // UsageError when no token was added or for a density outside (0, 1].
  std::vector<float> thresholds(std::span<const double> densities);

 private:
  int32_t in_features_;
  int64_t tokens_ = 0;
  std::vector<double> sum_squares_;
  std::vector<float> magnitudes_;
};

}  // namespace dbsparse

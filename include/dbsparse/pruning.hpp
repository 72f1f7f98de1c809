#pragma once
// CPU building blocks of sparse LLM decoding at batch 1: pruning a linear layer's weights to a CSR
// matrix, the reference of the GPU activation sparsifier, and the layer shapes of the models used
// in the experiments. Weights are row-major rows x cols, i.e. out x in as PyTorch's
// Linear.weight, with y = W x.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dbsparse/matrix.hpp"

namespace dbsparse {

// Keeps, in every row, the round((1 - sparsity) * cols) entries of largest |W_ij| (ties: lower
// column first), values unchanged, so every row holds the same count even where kept weights are
// zero. UsageError for sparsity outside [0, 1), a size mismatch or a NaN weight.
CsrMatrix<float> prune_magnitude(std::span<const float> w, int32_t rows, int32_t cols, double sparsity);

// Wanda (Sun et al. 2023, "A Simple and Effective Pruning Approach for LLMs"): score
// |W_ij| * ||X_j||_2, compared within each output row, with the calibration activation norms given
// (length cols, non-negative). Same keep count and tie rule as prune_magnitude.
CsrMatrix<float> prune_wanda(std::span<const float> w, int32_t rows, int32_t cols, std::span<const float> act_norms,
                             double sparsity);

// Layers that read the same x (q, k and v; gate and up) as one matrix: their rows one after the
// other, so one plan and one launch serve them all and each layer's y is a slice of the stacked y
// (layer i's rows start at the sum of the rows before it). UsageError when the column counts
// differ or the stacked rows or nonzeros would pass 2^31 - 1.
CsrMatrix<float> stack_rows(std::span<const CsrMatrix<float>> parts);

// The reference of the GPU activation sparsifier: x_i where |x_i| >= tau, else 0 (NaN becomes 0).
std::vector<float> threshold_activations(std::span<const float> x, float tau);

// The tau at which threshold_activations keeps the ceil(keep * n) largest |x_i|: the k-th largest
// |x_i|. Entries equal to it are all kept, so with ties more may be kept. UsageError for keep
// outside (0, 1], an empty x or a NaN.
float topk_threshold(std::span<const float> x, double keep);

struct LayerShape {
  std::string kind;  // q, k, v, o, gate, up, down
  int32_t out = 0, in = 0;
};

struct ModelShapes {
  std::string name;
  int layers = 0;
  std::vector<LayerShape> linear;  // in the order q, k, v, o, gate, up, down
};

// "llama-3.2-1b", "qwen2.5-1.5b", "qwen3-0.6b", "llama-3.1-8b", "qwen2.5-7b"; UsageError naming the
// known ones otherwise.
ModelShapes model_shapes(const std::string& name);
std::vector<std::string> known_models();

// normal(0, 0.02), rows x cols, from std::mt19937_64(seed) and a Box-Muller transform written
// here: std::normal_distribution differs between standard libraries, the engine does not.
std::vector<float> synthetic_weights(int32_t rows, int32_t cols, uint64_t seed);

}  // namespace dbsparse

#include "dbsparse/pruning.hpp"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <numbers>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "dbsparse/calibration.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse {
namespace {

void check_shape(const char* fn, std::span<const float> w, int32_t rows, int32_t cols) {
  if (rows < 0 || cols < 0 || w.size() != static_cast<size_t>(rows) * static_cast<size_t>(cols))
    throw UsageError(fmt::format("{}: {} weights for a {} x {} matrix", fn, w.size(), rows, cols));
  if (std::any_of(w.begin(), w.end(), [](float v) { return std::isnan(v); }))
    throw UsageError(fmt::format("{}: the weights hold a NaN, which has no magnitude to rank", fn));
  if (std::any_of(w.begin(), w.end(), [](float v) { return std::isinf(v); }))
    throw UsageError(fmt::format("{}: the weights hold an infinite value (a diverged or damaged checkpoint)", fn));
}

// One pass per row: rank columns by score (ties to the lower column, which makes the order total
// and the result independent of the sort's implementation), keep the first k, store them by column.
template <class Score>
CsrMatrix<float> prune_rows(const char* fn, std::span<const float> w, int32_t rows, int32_t cols, double sparsity,
                            Score score) {
  if (!(sparsity >= 0.0 && sparsity < 1.0))
    throw UsageError(fmt::format("{}: sparsity {} outside [0, 1)", fn, sparsity));
  const auto keep = static_cast<int32_t>(std::clamp<double>(std::round((1.0 - sparsity) * cols), 0, cols));
  CsrMatrix<float> out;
  out.rows = rows;
  out.cols = cols;
  out.row_ptr.reserve(static_cast<size_t>(rows) + 1);
  out.col_idx.reserve(static_cast<size_t>(rows) * keep);
  out.values.reserve(static_cast<size_t>(rows) * keep);
  std::vector<int32_t> order(static_cast<size_t>(cols));
  std::vector<double> s(static_cast<size_t>(cols));
  for (int32_t r = 0; r < rows; ++r) {
    const float* row = w.data() + static_cast<size_t>(r) * cols;
    for (int32_t c = 0; c < cols; ++c) s[c] = score(row[c], c);
    std::iota(order.begin(), order.end(), 0);
    std::nth_element(order.begin(), order.begin() + keep, order.end(),
                     [&](int32_t a, int32_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
    std::sort(order.begin(), order.begin() + keep);
    for (int32_t i = 0; i < keep; ++i) {
      out.col_idx.push_back(order[i]);
      out.values.push_back(row[order[i]]);
    }
    out.row_ptr.push_back(static_cast<int32_t>(out.col_idx.size()));
  }
  return out;
}

struct ModelConfig {
  const char* name;
  int layers, hidden, intermediate, heads, kv_heads, head_dim;
};

// From each model's config.json on the Hugging Face hub. Qwen3 sets head_dim apart from
// hidden / heads, which is why q is wider than the hidden size there.
constexpr ModelConfig kModels[] = {
    {"llama-3.2-1b", 16, 2048, 8192, 32, 8, 64}, {"qwen2.5-1.5b", 28, 1536, 8960, 12, 2, 128},
    {"qwen3-0.6b", 28, 1024, 3072, 16, 8, 128},  {"llama-3.1-8b", 32, 4096, 14336, 32, 8, 128},
    {"qwen2.5-7b", 28, 3584, 18944, 28, 4, 128},
};

}  // namespace

CsrMatrix<float> stack_rows(std::span<const CsrMatrix<float>> parts) {
  CsrMatrix<float> out;
  if (parts.empty()) return out;
  out.cols = parts[0].cols;
  int64_t rows = 0, nnz = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].cols != out.cols)
      throw UsageError(
          fmt::format("stack_rows: part {} has {} columns, part 0 has {}: stacked layers must read the "
                      "same x",
                      i, parts[i].cols, out.cols));
    rows += parts[i].rows;
    nnz += parts[i].nnz();
  }
  if (rows > INT32_MAX || nnz > INT32_MAX)
    throw UsageError(fmt::format("stack_rows: {} rows and {} nonzeros pass the int32 index range", rows, nnz));
  out.rows = static_cast<int32_t>(rows);
  out.row_ptr.assign(1, 0);  // a default CsrMatrix may already hold its leading 0
  out.row_ptr.reserve(static_cast<size_t>(rows) + 1);
  out.col_idx.reserve(static_cast<size_t>(nnz));
  out.values.reserve(static_cast<size_t>(nnz));
  for (const auto& p : parts) {
    const int32_t base = out.row_ptr.back();
    for (int32_t r = 0; r < p.rows; ++r) out.row_ptr.push_back(base + p.row_ptr[static_cast<size_t>(r) + 1]);
    out.col_idx.insert(out.col_idx.end(), p.col_idx.begin(), p.col_idx.end());
    out.values.insert(out.values.end(), p.values.begin(), p.values.end());
  }
  return out;
}

CsrMatrix<float> prune_magnitude(std::span<const float> w, int32_t rows, int32_t cols, double sparsity) {
  check_shape("prune_magnitude", w, rows, cols);
  return prune_rows("prune_magnitude", w, rows, cols, sparsity,
                    [](float v, int32_t) { return std::fabs(static_cast<double>(v)); });
}

CsrMatrix<float> prune_wanda(std::span<const float> w, int32_t rows, int32_t cols, std::span<const float> act_norms,
                             double sparsity) {
  check_shape("prune_wanda", w, rows, cols);
  if (act_norms.size() != static_cast<size_t>(cols))
    throw UsageError(fmt::format("prune_wanda: {} activation norms for {} columns", act_norms.size(), cols));
  if (std::any_of(act_norms.begin(), act_norms.end(), [](float v) { return !(v >= 0.0f) || std::isinf(v); }))
    throw UsageError("prune_wanda: activation norms must be finite and non-negative (a norm)");
  // In double the product of two floats is exact: rounding it to float could make two different
  // scores equal and hand the choice to the tie rule.
  return prune_rows("prune_wanda", w, rows, cols, sparsity, [&](float v, int32_t c) {
    return std::fabs(static_cast<double>(v)) * static_cast<double>(act_norms[c]);
  });
}

std::vector<float> threshold_activations(std::span<const float> x, float tau) {
  std::vector<float> out(x.size(), 0.0f);
  for (size_t i = 0; i < x.size(); ++i)
    if (std::fabs(x[i]) >= tau) out[i] = x[i];
  return out;
}

float topk_threshold(std::span<const float> x, double keep) {
  if (!(keep > 0.0 && keep <= 1.0)) throw UsageError(fmt::format("topk_threshold: keep {} outside (0, 1]", keep));
  if (x.empty()) throw UsageError("topk_threshold: no activations");
  std::vector<float> a(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) throw UsageError(fmt::format("topk_threshold: x[{}] is NaN", i));
    a[i] = std::fabs(x[i]);
  }
  // kept_count: keep * n just above an integer (0.3 * 10 = 3.0000000000000004) means that integer.
  const auto kk = static_cast<size_t>(kept_count(keep, static_cast<int64_t>(x.size())));
  std::nth_element(a.begin(), a.begin() + (kk - 1), a.end(), std::greater<>());
  return a[kk - 1];
}

ModelShapes model_shapes(const std::string& name) {
  for (const auto& m : kModels) {
    if (name != m.name) continue;
    const int32_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
    return ModelShapes{m.name,
                       m.layers,
                       {{"q", q, m.hidden},
                        {"k", kv, m.hidden},
                        {"v", kv, m.hidden},
                        {"o", m.hidden, q},
                        {"gate", m.intermediate, m.hidden},
                        {"up", m.intermediate, m.hidden},
                        {"down", m.hidden, m.intermediate}}};
  }
  std::string known;
  for (const auto& m : kModels) known += (known.empty() ? "" : ", ") + std::string(m.name);
  throw UsageError(fmt::format("unknown model '{}'; known: {}", name, known));
}

std::vector<std::string> known_models() {
  std::vector<std::string> out;
  for (const auto& m : kModels) out.emplace_back(m.name);
  return out;
}

std::vector<float> synthetic_weights(int32_t rows, int32_t cols, uint64_t seed) {
  if (rows < 0 || cols < 0) throw UsageError(fmt::format("synthetic_weights: {} x {} matrix", rows, cols));
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
  std::vector<float> out(n);
  std::mt19937_64 gen(seed);
  // 53 random bits -> (0, 1]: never 0, so the log is finite. The result is computed in double and
  // rounded once, so a last-bit difference between libm's log/cos rarely reaches the float.
  auto uniform = [&] { return (static_cast<double>(gen() >> 11) + 1.0) * 0x1p-53; };
  for (size_t i = 0; i < n; i += 2) {
    const double radius = 0.02 * std::sqrt(-2.0 * std::log(uniform()));
    const double angle = 2.0 * std::numbers::pi * uniform();
    out[i] = static_cast<float>(radius * std::cos(angle));
    if (i + 1 < n) out[i + 1] = static_cast<float>(radius * std::sin(angle));
  }
  return out;
}

}  // namespace dbsparse

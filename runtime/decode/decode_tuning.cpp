// Decode's side of the tuning DB (include/dbsparse/decode_linear.hpp): the problem key and the
// activation-density buckets a layer's config is stored under, the features prediction compares,
// and the pure choice between an explicit mapping, a config (tuned, predicted or given) and the
// cost model (runtime/decode/decode_spec.hpp).
#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "dbsparse/decode_linear.hpp"
#include "runtime/decode/decode_spec.hpp"

namespace dbsparse {

DecodeMapping decode_mapping_from_string(const std::string& name) {
  for (DecodeMapping m : {DecodeMapping::Auto, DecodeMapping::Columns, DecodeMapping::RowBlocks, DecodeMapping::Lanes,
                          DecodeMapping::Ring, DecodeMapping::Dense, DecodeMapping::DenseColumns, DecodeMapping::Tiles})
    if (name == to_string(m)) return m;
  throw UsageError(fmt::format(
      "decode mapping '{}': expected auto, ring, dense-columns, dense, tiles, columns, row-blocks or lanes", name));
}

std::string decode_problem_key(int32_t rows, int32_t cols, DecodeDtype dtype, double weight_density) {
  const double w = std::isfinite(weight_density) ? std::clamp(weight_density, 0.0, 1.0) : 0.0;
  return fmt::format("decode.{}x{}.{}.w{:.2f}", rows, cols, to_string(dtype), std::round(w * 20) / 20);
}

namespace {
struct Bucket {
  const char* name;
  double density;
};
constexpr std::array<Bucket, 4> kBuckets{{{"a1", 1.0}, {"a0.5", 0.5}, {"a0.3", 0.3}, {"a0.1", 0.1}}};
}  // namespace

const std::vector<std::string>& decode_density_buckets() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& b : kBuckets) v.emplace_back(b.name);
    return v;
  }();
  return names;
}

std::string decode_density_bucket(double act_density) {
  const Bucket* best = &kBuckets[0];
  for (const auto& b : kBuckets)  // densest first; a later class must be nearer by more than rounding
    if (std::fabs(act_density - b.density) < std::fabs(act_density - best->density) - 1e-9) best = &b;
  return best->name;
}

double decode_bucket_density(const std::string& bucket) {
  for (const auto& b : kBuckets)
    if (bucket == b.name) return b.density;
  throw UsageError(fmt::format("decode bucket '{}': expected a1, a0.5, a0.3 or a0.1", bucket));
}

MatrixFeatures decode_problem_features(int32_t rows, int32_t cols, double weight_density) {
  MatrixFeatures f;
  const double per_row = std::clamp(weight_density, 0.0, 1.0) * cols;
  f.rows = rows;
  f.cols = cols;
  f.nnz = std::llround(per_row * rows);
  f.row_mean = rows > 0 ? static_cast<double>(f.nnz) / rows : 0.0;
  f.row_std = 0;  // every row keeps the same share
  f.row_max = static_cast<int64_t>(std::ceil(f.row_mean));
  f.empty_rows = f.nnz > 0 ? 0 : rows;
  // Rows spread over all the columns: the farthest entries sit in the corners.
  f.bandwidth = f.nnz > 0 ? std::max<int64_t>(rows, cols) - 1 : 0;
  return f;
}

double decode_assumed_act_density(const DecodeLinearOptions& o) {
  return o.act_density > 0 ? o.act_density : o.keep > 0 ? o.keep : o.tau == 0 ? 1.0 : 0.5;
}

namespace {

// Why the layer cannot take mapping m (empty: it can): the mma paths' limits (check_decode_options).
std::string refusal(DecodeMapping m, const DecodeLinearOptions& o, int32_t cols, bool allow_dense) {
  const bool dense = m == DecodeMapping::Dense || m == DecodeMapping::DenseColumns;
  if (dense && !allow_dense) return fmt::format("its mapping {} holds W dense and allow_dense is off", to_string(m));
  const bool mma = m == DecodeMapping::Dense || m == DecodeMapping::Tiles;
  if (mma && o.dtype == DecodeDtype::F32)
    return fmt::format("its mapping {} takes 16-bit values, not f32", to_string(m));
  if (mma && cols % 8 != 0)
    return fmt::format("its mapping {} needs the columns a multiple of 8, not {}", to_string(m), cols);
  return "";
}

}  // namespace

DecodeChoice choose_decode_config(const DecodeLinearOptions& o, int32_t cols, const Config* config,
                                  const std::function<DecodeMapping(bool allow_dense)>& model) {
  DecodeChoice c;
  c.row_block_words = o.row_block_words;
  c.blocks_per_sm = o.blocks_per_sm;
  if (o.mapping != DecodeMapping::Auto) {
    c.mapping = o.mapping;
    c.source = ConfigSource::Explicit;
    c.note = "mapping asked for";
    return c;
  }
  const bool has_config = config && config->source != ConfigSource::Default;
  if (config) c.note = config->note;
  bool allow_dense = o.allow_dense;
  if (has_config) {
    DecodeConfig cfg;
    try {
      cfg = config_from_json<DecodeConfig>(config->params);
    } catch (const UsageError& e) {
      if (config->source == ConfigSource::Explicit) throw;  // the caller's mistake: named, not hidden
      c.note = fmt::format("{}; its row is not a decode config ({}): the model's choice", c.note, e.what());
      c.mapping = model(allow_dense);
      return c;
    }
    allow_dense = allow_dense && cfg.allow_dense != 0;
    const DecodeMapping m = decode_mapping_from_string(cfg.mapping);
    const std::string why = m == DecodeMapping::Auto ? "" : refusal(m, o, cols, allow_dense);
    if (why.empty()) {
      if (o.row_block_words == DecodeLinearOptions{}.row_block_words) c.row_block_words = cfg.row_block_words;
      if (o.blocks_per_sm == DecodeLinearOptions{}.blocks_per_sm) c.blocks_per_sm = cfg.blocks_per_sm;
      c.source = config->source;
      if (m != DecodeMapping::Auto) {
        c.mapping = m;
        return c;
      }
    } else {
      c.note = fmt::format("{}; set aside: {}", c.note, why);
    }
  }
  c.mapping = model(allow_dense);
  return c;
}

}  // namespace dbsparse

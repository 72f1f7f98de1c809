// Matrix features and the structure fingerprint. Both run on every plan of a new matrix, so both are
// single O(nnz) passes.
#include "dbsparse/features.hpp"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <span>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/json_limits.hpp"

namespace dbsparse {
namespace {

constexpr int kBlock = 16;

// FNV-1a's xor-then-multiply step taken a 64-bit word at a time (over int32 pairs assembled
// arithmetically, so the digest does not depend on byte order), in four independent lanes so that
// the multiplies overlap. A final avalanche spreads high input bits, which a plain FNV multiply
// never carries down to the low output bits.
class WordHash {
 public:
  void add(std::span<const int32_t> v) {
    word(v.size());  // sections of different lengths cannot run together
    size_t i = 0;
    for (; i + 8 <= v.size(); i += 8)
      for (int l = 0; l < 4; ++l) lane_[l] = (lane_[l] ^ pair(v[i + 2 * l], v[i + 2 * l + 1])) * kPrime;
    for (; i < v.size(); ++i) word(static_cast<uint32_t>(v[i]));
  }
  void word(uint64_t w) { lane_[0] = (lane_[0] ^ w) * kPrime; }
  uint64_t digest() const {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (uint64_t l : lane_) h = avalanche((h ^ avalanche(l)) * kPrime);
    return h;
  }

 private:
  static constexpr uint64_t kPrime = 0x100000001b3ULL;
  static uint64_t pair(int32_t a, int32_t b) {
    return static_cast<uint32_t>(a) | static_cast<uint64_t>(static_cast<uint32_t>(b)) << 32;
  }
  static uint64_t avalanche(uint64_t z) {  // murmur3's fmix64
    z = (z ^ (z >> 33)) * 0xff51afd7ed558ccdULL;
    z = (z ^ (z >> 33)) * 0xc4ceb9fe1a85ec53ULL;
    return z ^ (z >> 33);
  }
  uint64_t lane_[4] = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL, 0x9ce484222325cbf2ULL, 0x2325cbf29ce48422ULL};
};

}  // namespace

template <class T>
MatrixFeatures compute_features(const CsrMatrix<T>& a) {
  MatrixFeatures f;
  f.rows = a.rows;
  f.cols = a.cols;
  f.nnz = a.nnz();
  for (int32_t i = 0; i < a.rows; ++i) {
    const int64_t len = a.row_ptr[i + 1] - a.row_ptr[i];
    f.row_max = std::max(f.row_max, len);
    f.empty_rows += len == 0;
    if (len > 0) {  // columns are sorted: the row's extremes are its first and last entries
      const int64_t lo = a.col_idx[a.row_ptr[i]], hi = a.col_idx[a.row_ptr[i + 1] - 1];
      f.bandwidth = std::max({f.bandwidth, std::abs(i - lo), std::abs(hi - i)});
    }
  }
  if (a.rows > 0) {
    f.row_mean = static_cast<double>(f.nnz) / a.rows;
    double sq = 0;
    for (int32_t i = 0; i < a.rows; ++i) {
      const double d = (a.row_ptr[i + 1] - a.row_ptr[i]) - f.row_mean;
      sq += d * d;
    }
    f.row_std = std::sqrt(sq / a.rows);
  }
  // Per block row, count each block column's nnz in a scratch array and reset only what was touched.
  std::vector<int32_t> count(static_cast<size_t>((a.cols + kBlock - 1) / kBlock), 0);
  std::vector<int32_t> touched;
  for (int32_t r0 = 0; r0 < a.rows; r0 += kBlock) {
    const int32_t r1 = std::min(a.rows, r0 + kBlock);
    for (int32_t p = a.row_ptr[r0]; p < a.row_ptr[r1]; ++p) {
      const int32_t bc = a.col_idx[p] / kBlock;
      if (count[bc]++ == 0) touched.push_back(bc);
    }
    for (int32_t bc : touched) {
      const int bin = std::min(8, static_cast<int>(std::bit_width(static_cast<uint32_t>(count[bc]))) - 1);
      ++f.block_nnz_hist[bin];
      count[bc] = 0;
    }
    f.nonempty_blocks += static_cast<int64_t>(touched.size());
    touched.clear();
  }
  return f;
}

std::string structure_fingerprint(int32_t rows, int32_t cols, std::span<const int32_t> row_ptr,
                                  std::span<const int32_t> col_idx) {
  WordHash h;
  h.word(static_cast<uint32_t>(rows));
  h.word(static_cast<uint32_t>(cols));
  h.add(row_ptr);
  h.add(col_idx);
  return fmt::format("{:016x}", h.digest());
}

template <class T>
std::string structure_fingerprint(const CsrMatrix<T>& a) {
  return structure_fingerprint(a.rows, a.cols, a.row_ptr, a.col_idx);
}

nlohmann::json MatrixFeatures::to_json() const {
  return {{"rows", rows},
          {"cols", cols},
          {"nnz", nnz},
          {"row_mean", row_mean},
          {"row_std", row_std},
          {"row_max", row_max},
          {"empty_rows", empty_rows},
          {"bandwidth", bandwidth},
          {"block_nnz_hist", block_nnz_hist},
          {"nonempty_blocks", nonempty_blocks}};
}

namespace {

// Stored features are counts and statistics this build wrote; a DB edited by hand or by another
// version may hold anything, and nlohmann's get<int64_t> of 1e300 is undefined behaviour (found by
// tests/fuzz/fuzz_tuning_db_rows): each field is checked for its kind and range first.
[[noreturn]] void bad_feature(const std::string& key, const nlohmann::json& v, const char* want) {
  throw InputError("matrix features JSON", 0, fmt::format("'{}' {}, got {}", key, want, json_brief(v)));
}
int64_t count_value(const nlohmann::json& v, const std::string& key) {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) bad_feature(key, v, "a count below 2^63");
    return static_cast<int64_t>(v.get<uint64_t>());
  }
  if (!v.is_number_integer() || v.get<int64_t>() < 0) bad_feature(key, v, "a whole count >= 0");
  return v.get<int64_t>();
}
int64_t count_field(const nlohmann::json& j, const std::string& key) { return count_value(j.at(key), key); }
double real_field(const nlohmann::json& j, const std::string& key) {
  const nlohmann::json& v = j.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>())) bad_feature(key, v, "a finite number");
  return v.get<double>();
}

}  // namespace

MatrixFeatures MatrixFeatures::from_json(const nlohmann::json& j) {
  MatrixFeatures f;
  try {
    if (!j.is_object()) bad_feature("features", j, "an object");
    f.rows = count_field(j, "rows");
    f.cols = count_field(j, "cols");
    f.nnz = count_field(j, "nnz");
    f.row_mean = real_field(j, "row_mean");
    f.row_std = real_field(j, "row_std");
    f.row_max = count_field(j, "row_max");
    f.empty_rows = count_field(j, "empty_rows");
    f.bandwidth = count_field(j, "bandwidth");
    const nlohmann::json& h = j.at("block_nnz_hist");
    if (!h.is_array() || h.size() != f.block_nnz_hist.size()) bad_feature("block_nnz_hist", h, "an array of 9 counts");
    for (size_t b = 0; b < f.block_nnz_hist.size(); ++b)
      f.block_nnz_hist[b] = count_value(h[b], fmt::format("block_nnz_hist[{}]", b));
    f.nonempty_blocks = count_field(j, "nonempty_blocks");
  } catch (const nlohmann::json::exception& e) {
    throw InputError("matrix features JSON", 0, fmt::format("every feature field ({})", e.what()));
  }
  return f;
}

template MatrixFeatures compute_features(const CsrMatrix<float>&);
template MatrixFeatures compute_features(const CsrMatrix<double>&);
template std::string structure_fingerprint(const CsrMatrix<float>&);
template std::string structure_fingerprint(const CsrMatrix<double>&);

}  // namespace dbsparse

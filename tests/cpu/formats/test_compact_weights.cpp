// Compact pruned weights (compact_weights.hpp): what is written reads back equal, every layer's
// CSR is the pruned layer with its values rounded to the stored dtype, and a damaged file is an
// InputError naming the file and the tensor. Also the I32/U32 tensors the format needs.
#include <doctest/doctest.h>

#include <bit>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dbsparse/compact_weights.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/pruning.hpp"
#include "dbsparse/safetensors.hpp"
#include "test_support.hpp"

using namespace dbsparse;
namespace fs = std::filesystem;

namespace {

const fs::path& dir() {
  static const fs::path d = dbs_test::temp_dir("compact");
  return d;
}

template <class T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// A compact file's tensors written by hand, so that a test can damage one of them.
void write_parts(const std::string& path, const CompactLayer& l, std::map<std::string, std::string> meta,
                 DType mask_type = DType::U32, bool with_values = true) {
  std::vector<TensorToWrite> t;
  t.push_back({l.name + ".masks", mask_type, {static_cast<int64_t>(l.w.masks.size())}, {}, bytes_of(l.w.masks)});
  t.push_back({l.name + ".seg_ptr", DType::I32, {static_cast<int64_t>(l.w.seg_ptr.size())}, {}, bytes_of(l.w.seg_ptr)});
  if (with_values)
    t.push_back({l.name + ".values", DType::F16, {static_cast<int64_t>(l.w.values.size())}, {}, bytes_of(l.w.values)});
  write_safetensors(path, t, meta);
}

void expect_read_error(const std::string& path, const std::vector<std::string>& needles) {
  INFO("file: " << path);
  try {
    (void)read_compact_weights(path);
    FAIL("no InputError");
  } catch (const InputError& e) {
    CHECK(e.file() == path);
    const std::string what = e.what();
    for (const auto& n : needles) {
      INFO("needle: " << n << " in " << what);
      CHECK(what.find(n) != std::string::npos);
    }
  }
}

}  // namespace

TEST_CASE("SafetensorsKeepsI32AndU32TensorsBitForBit") {
  const std::string path = (dir() / "ints.safetensors").string();
  const std::vector<uint32_t> u{0u, 1u, 0xffffffffu, 0x80000000u};
  const std::vector<int32_t> i{-1, 0, 7, INT32_MIN};
  write_safetensors(path, {{"u", DType::U32, {2, 2}, {}, bytes_of(u)}, {"i", DType::I32, {4}, {}, bytes_of(i)}});
  const SafetensorsFile f = SafetensorsFile::open(path);
  CHECK(f.info("u").dtype == DType::U32);
  CHECK(f.read_raw32("u") == u);
  const auto ib = f.read_raw32("i");
  CHECK(std::vector<int32_t>(ib.begin(), ib.end()) == i);
  CHECK_THROWS_AS((void)f.read_f32("u"), InputError);    // integers are not weights
  CHECK_THROWS_AS((void)f.read_raw16("i"), InputError);  // nor 16-bit words
  // Raw bytes must match the shape, and an integer tensor cannot come from floats.
  CHECK_THROWS_AS(write_safetensors(path, {{"u", DType::U32, {3}, {}, bytes_of(u)}}), UsageError);
  CHECK_THROWS_AS(write_safetensors(path, {{"u", DType::U32, {1}, {1.0f}}}), UsageError);
}

TEST_CASE("CompactWeightsRoundTripMatchesThePrunedLayers") {
  const std::string path = (dir() / "round.safetensors").string();
  std::vector<CompactLayer> layers;
  std::vector<CsrMatrix<float>> pruned;
  std::vector<std::pair<int32_t, int32_t>> shapes{{1, 1}, {1025, 3}, {2049, 70}, {64, 700}, {0, 5}};
  for (size_t k = 0; k < shapes.size(); ++k) {
    const auto [rows, cols] = shapes[k];
    pruned.push_back(prune_magnitude(synthetic_weights(rows, cols, 80 + k), rows, cols, 0.5));
    layers.push_back(make_compact_layer(fmt::format("layer{}.weight", k), pruned.back(),
                                        k % 2 ? DecodeDtype::BF16 : DecodeDtype::F16));
  }
  write_compact_weights(path, layers, {{"note", "test"}});
  const std::vector<CompactLayer> back = read_compact_weights(path);
  REQUIRE(back.size() == layers.size());
  CHECK(SafetensorsFile::open(path).metadata().at("note") == "test");
  for (size_t k = 0; k < layers.size(); ++k) {
    const CompactLayer& l = back[k];  // name order is the order written here
    CAPTURE(l.name);
    CHECK(l.name == layers[k].name);
    CHECK(l.dtype == layers[k].dtype);
    CHECK(l.w.rows == layers[k].w.rows);
    CHECK(l.w.cols == layers[k].w.cols);
    CHECK(l.w.masks == layers[k].w.masks);
    CHECK(l.w.seg_ptr == layers[k].w.seg_ptr);
    CHECK(l.w.word_off == layers[k].w.word_off);  // rebuilt on read
    CHECK(l.w.values == layers[k].w.values);
    const CsrMatrix<float> csr = compact_to_csr(l);
    CHECK(csr.row_ptr == pruned[k].row_ptr);
    CHECK(csr.col_idx == pruned[k].col_idx);
    for (size_t p = 0; p < csr.values.size(); ++p) {
      const float v = pruned[k].values[p];
      CHECK(csr.values[p] ==
            (l.dtype == DecodeDtype::F16 ? half_to_float(float_to_half(v)) : bf16_to_float(float_to_bf16(v))));
    }
  }
  // The bytes: a bit per weight in 1024-row strips, an offset a segment, the kept values.
  const CompactLayer& big = layers[2];
  CHECK(big.file_bytes() == int64_t{70} * 3 * (32 * 4) + (int64_t{70} * 3 + 1) * 4 + big.w.nnz() * 2);
  CHECK_THROWS_AS(write_compact_weights(path, {layers[0], layers[0]}), UsageError);
  CHECK_THROWS_AS(make_compact_layer("f32", pruned[0], DecodeDtype::F32), UsageError);
}

TEST_CASE("CompactWeightsRejectDamagedFilesNamingTheTensor") {
  const CsrMatrix<float> pw = prune_magnitude(synthetic_weights(1100, 40, 90), 1100, 40, 0.5);
  const CompactLayer good = make_compact_layer("w", pw, DecodeDtype::F16);
  const std::map<std::string, std::string> meta{{"format", kCompactWeightsFormat}, {"w.shape", "1100x40"}};
  const std::string path = (dir() / "bad.safetensors").string();

  write_safetensors(path, {{"x", DType::F32, {1}, {1.0f}}});  // a safetensors file, not a compact one
  expect_read_error(path, {"dbsparse.column_bitmap.v1", "found none"});
  write_parts(path, good, {{"format", kCompactWeightsFormat}});
  expect_read_error(path, {"at least one layer"});
  write_parts(path, good, {{"format", kCompactWeightsFormat}, {"w.shape", "1100by40"}});
  expect_read_error(path, {"layer w", "ROWSxCOLS", "1100by40"});
  write_parts(path, good, {{"format", kCompactWeightsFormat}, {"w.shape", "1100x41"}});
  expect_read_error(path, {"w.masks", "elements"});
  write_parts(path, good, meta, DType::I32);
  expect_read_error(path, {"w.masks", "dtype U32", "found I32"});
  write_parts(path, good, meta, DType::U32, /*with_values=*/false);
  expect_read_error(path, {"w.values"});
  {
    CompactLayer l = good;
    l.w.seg_ptr[5] += 1;  // an offset that is not the running count of the bits
    write_parts(path, l, meta);
    expect_read_error(path, {"w.seg_ptr", "bits set in segment"});
  }
  {
    CompactLayer l = good;
    const size_t word = (0 * l.w.strips + 1) * 32 + 31;  // column 0, strip 1: rows 1024..2047, 1100 rows
    l.w.masks[word] |= 1u;                               // row 1024 + 992: past the last
    write_parts(path, l, meta);
    expect_read_error(path, {"w.masks", "past row 1099"});
  }
  {
    CompactLayer l = good;
    l.w.values.push_back(0);  // one value more than the bits
    write_parts(path, l, meta);
    expect_read_error(path, {"w.values", "found " + std::to_string(good.w.values.size() + 1)});
  }
  write_parts(path, good, meta);  // and the undamaged parts read
  CHECK(read_compact_weights(path).at(0).w.values == good.w.values);
}

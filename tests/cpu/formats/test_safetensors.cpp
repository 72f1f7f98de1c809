// The safetensors reader and writer. Malformed files are built byte by byte here; the round trip is
// checked against the header parsed independently with nlohmann and against the half/bf16
// conversions (tested on their own in test_half.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dbsparse/error.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/safetensors.hpp"
#include "test_support.hpp"

using namespace dbsparse;

namespace {

namespace fs = std::filesystem;

const fs::path& dir() {
  static const fs::path d = dbs_test::temp_dir("safetensors");
  return d;
}

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return s;
}

std::string write_bytes(const std::string& name, const std::string& bytes) {
  const auto p = (dir() / name).string();
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

// A file with the given header text and data buffer, and a correct length field.
std::string write_raw(const std::string& name, const std::string& header, const std::string& data) {
  return write_bytes(name, le64(header.size()) + header + data);
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Opening `path` must throw InputError naming the file and every needle.
void expect_open_error(const std::string& path, const std::vector<std::string>& needles) {
  INFO("file: " << path);
  try {
    SafetensorsFile::open(path);
    FAIL("no InputError");
  } catch (const InputError& e) {
    const std::string what = e.what();
    INFO("what(): " << what);
    CHECK(e.file() == path);
    CHECK(e.line() == 0);
    for (const auto& n : needles) CHECK(what.find(n) != std::string::npos);
  }
}

float rounded(DType t, float x) {
  return t == DType::F16 ? half_to_float(float_to_half(x)) : t == DType::BF16 ? bf16_to_float(float_to_bf16(x)) : x;
}

}  // namespace

TEST_CASE("SafetensorsRoundTripKeepsNamesDtypesShapesAndRoundedValues") {
  const std::vector<std::vector<int64_t>> shapes = {{3, 5}, {7}, {2, 3, 1}};
  std::vector<TensorToWrite> in;
  auto values = dbs_test::random_vector<float>(1000, 3);
  size_t next = 0;
  for (DType t : {DType::F16, DType::BF16, DType::F32}) {
    for (size_t s = 0; s < shapes.size(); ++s) {
      TensorToWrite w{std::string(to_string(t)) + ".t" + std::to_string(s), t, shapes[s], {}};
      int64_t n = 1;
      for (auto d : shapes[s]) n *= d;
      // Spread the magnitudes so that rounding happens in several binades.
      for (int64_t i = 0; i < n; ++i, ++next) w.data.push_back(values[next] * std::ldexp(1.0f, int(next % 20) - 10));
      in.push_back(std::move(w));
    }
  }
  const auto path = (dir() / "roundtrip.safetensors").string();
  write_safetensors(path, in, {{"format", "pt"}, {"sparsity", "0.5"}});

  // The bytes, read without the library: length field, a header padded to 8, data in name order.
  const std::string bytes = read_all(path);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  CHECK(n % 8 == 0);
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  CHECK(header["__metadata__"]["sparsity"] == "0.5");
  int64_t expected_offset = 0;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") continue;
    CHECK(v["data_offsets"][0].get<int64_t>() == expected_offset);
    expected_offset = v["data_offsets"][1].get<int64_t>();
  }
  CHECK(static_cast<int64_t>(bytes.size()) == 8 + static_cast<int64_t>(n) + expected_offset);

  const auto f = SafetensorsFile::open(path);
  CHECK(f.metadata() == std::map<std::string, std::string>{{"format", "pt"}, {"sparsity", "0.5"}});
  REQUIRE(f.tensors().size() == in.size());
  for (size_t i = 1; i < f.tensors().size(); ++i) CHECK(f.tensors()[i - 1].name < f.tensors()[i].name);
  for (const auto& w : in) {
    CAPTURE(w.name);
    const TensorInfo& t = f.info(w.name);
    CHECK(t.dtype == w.dtype);
    CHECK(t.shape == w.shape);
    CHECK(t.bytes == static_cast<int64_t>(w.data.size()) * (w.dtype == DType::F32 ? 4 : 2));
    const auto got = f.read_f32(w.name);
    REQUIRE(got.size() == w.data.size());
    int wrong = 0;
    for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != rounded(w.dtype, w.data[i]);
    CHECK(wrong == 0);
    if (w.dtype != DType::F32) {
      const auto raw = f.read_raw16(w.name);
      std::vector<uint16_t> want;
      for (float x : w.data) want.push_back(w.dtype == DType::F16 ? float_to_half(x) : float_to_bf16(x));
      CHECK(raw == want);
    } else {
      CHECK_THROWS_AS(f.read_raw16(w.name), InputError);
    }
  }
}

TEST_CASE("SafetensorsScalarAndEmptyTensorsRoundTrip") {
  const auto path = (dir() / "scalar.safetensors").string();
  write_safetensors(path, {{"s", DType::F32, {}, {2.5f}}, {"e", DType::F16, {0, 4}, {}}});
  const auto f = SafetensorsFile::open(path);
  CHECK(f.read_f32("s") == std::vector<float>{2.5f});
  CHECK(f.info("e").shape == std::vector<int64_t>{0, 4});
  CHECK(f.read_f32("e").empty());
  CHECK(f.metadata().empty());
}

TEST_CASE("SafetensorsRejectsATruncatedFileAndAHeaderLengthPastTheEnd") {
  expect_open_error(write_bytes("short.safetensors", std::string("\x10\0\0", 3)), {"8-byte", "truncated"});
  expect_open_error(write_bytes("empty.safetensors", ""), {"truncated"});
  const std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  expect_open_error(write_bytes("long-header.safetensors", le64(header.size() + 100) + header + "abcd"),
                    {"past the end", std::to_string(header.size() + 100)});
  // A valid file cut inside its data buffer: the tensor's offsets now point past the end.
  const auto whole = (dir() / "whole.safetensors").string();
  write_safetensors(whole, {{"w", DType::F32, {4}, {1, 2, 3, 4}}});
  const std::string bytes = read_all(whole);
  expect_open_error(write_bytes("cut.safetensors", bytes.substr(0, bytes.size() - 3)), {"'w'", "truncated"});
}

TEST_CASE("SafetensorsRejectsBadJsonAndWrongDataOffsets") {
  expect_open_error(write_raw("bad-json.safetensors", R"({"a": {"dtype": )", ""), {"JSON", "byte"});
  expect_open_error(write_raw("array.safetensors", "[1, 2]", ""), {"JSON object"});
  // 2 x 3 F16 needs 12 bytes, not 10.
  expect_open_error(write_raw("size.safetensors", R"({"w":{"dtype":"F16","shape":[2,3],"data_offsets":[0,10]}})",
                              std::string(12, '\0')),
                    {"'w'", "12 bytes", "found 10"});
  expect_open_error(write_raw("reversed.safetensors", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})",
                              std::string(4, '\0')),
                    {"'w'", "data_offsets"});
  expect_open_error(write_raw("negative.safetensors", R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
                              std::string(4, '\0')),
                    {"'w'", "shape"});
  expect_open_error(write_raw("missing.safetensors", R"({"w":{"dtype":"F32","shape":[1]}})", std::string(4, '\0')),
                    {"'w'", "data_offsets"});
}

TEST_CASE("SafetensorsRejectsAnUnknownDtypeNamingTheTensor") {
  const std::string header = R"({"ok":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("counts":{"dtype":"I64","shape":[1],"data_offsets":[4,12]}})";
  const auto path = write_raw("i64.safetensors", header, std::string(12, '\0'));
  // The byte offset points at the key of the offending tensor.
  expect_open_error(path, {"'counts'", "I64", "header byte " + std::to_string(8 + header.find("\"counts\""))});
  expect_open_error(
      write_raw("f64.safetensors", R"({"d":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", std::string(8, '\0')),
      {"'d'", "F64"});
}

TEST_CASE("SafetensorsRejectsOverlappingTensors") {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  const auto path = write_raw("overlap.safetensors", header, std::string(12, '\0'));
  const int64_t data = 8 + static_cast<int64_t>(header.size());
  expect_open_error(path, {"overlap", "'a'", "'b'", std::to_string(data + 4)});
}

TEST_CASE("SafetensorsMissingTensorNamesTheFileAndCloseNames") {
  const auto path = (dir() / "names.safetensors").string();
  write_safetensors(path, {{"model.layers.0.mlp.up_proj.weight", DType::BF16, {1}, {1}},
                           {"model.layers.0.mlp.down_proj.weight", DType::BF16, {1}, {1}},
                           {"lm_head.weight", DType::BF16, {1}, {1}}});
  const auto f = SafetensorsFile::open(path);
  CHECK(f.contains("lm_head.weight"));
  CHECK_FALSE(f.contains("lm_head"));
  try {
    f.info("model.layers.0.mlp.up_proj.weights");
    FAIL("no InputError");
  } catch (const InputError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(e.file() == path);
    CHECK(what.find("'model.layers.0.mlp.up_proj.weights'") != std::string::npos);
    CHECK(what.find("closest: model.layers.0.mlp.up_proj.weight") != std::string::npos);
  }
  CHECK_THROWS_AS(f.read_f32("nothing"), InputError);
}

TEST_CASE("SafetensorsWriterRejectsBadTensorsAndLeavesNoFile") {
  const auto path = (dir() / "never.safetensors").string();
  CHECK_THROWS_AS(write_safetensors(path, {{"a", DType::F32, {2, 2}, {1, 2, 3}}}), UsageError);
  CHECK_THROWS_AS(write_safetensors(path, {{"a", DType::F32, {1}, {1}}, {"a", DType::F16, {1}, {1}}}), UsageError);
  CHECK_THROWS_AS(write_safetensors(path, {{"__metadata__", DType::F32, {1}, {1}}}), UsageError);
  CHECK_THROWS_AS(write_safetensors(path, {{"neg", DType::F32, {-1}, {}}}), UsageError);
  CHECK_FALSE(fs::exists(path));
  for (const auto& e : fs::directory_iterator(dir())) CHECK(e.path().string().find("never") == std::string::npos);
}

TEST_CASE("SafetensorsFindLinearLayersAcrossShardsInLayerAndKindOrder") {
  const fs::path model = dir() / "model";
  fs::create_directories(model);
  const std::vector<std::string> kinds = {"q", "k", "v", "o", "gate", "up", "down"};
  auto name = [&](int layer, const std::string& kind) {
    return "model.layers." + std::to_string(layer) + (kind.size() == 1 ? ".self_attn." : ".mlp.") + kind +
           "_proj.weight";
  };
  // Shard 1: layer 0 and the MLP of layer 10; shard 2: the attention of layer 10, layer 2, and
  // tensors that are not linear layers or only look like them.
  std::vector<TensorToWrite> s1, s2;
  for (const auto& k : kinds) s1.push_back({name(0, k), DType::BF16, {2, 3}, std::vector<float>(6, 1)});
  for (const auto& k : kinds)
    (k.size() == 1 ? s2 : s1).push_back({name(10, k), DType::BF16, {3, 2}, std::vector<float>(6, 1)});
  for (const auto& k : kinds) s2.push_back({name(2, k), DType::F16, {1, 4}, std::vector<float>(4, 1)});
  s2.push_back({"model.embed_tokens.weight", DType::BF16, {4, 2}, std::vector<float>(8, 1)});
  s2.push_back({"model.layers.2.input_layernorm.weight", DType::BF16, {2}, {1, 1}});
  s2.push_back({"model.layers.2.mlp.q_proj.weight", DType::BF16, {1, 1}, {1}});  // q is not an MLP weight
  s2.push_back({"model.layers.2.self_attn.q_proj.bias", DType::BF16, {1}, {1}});
  s1.push_back({"model.layers.3.self_attn.gate_proj.weight", DType::BF16, {1, 1}, {1}});  // nor gate attention
  write_safetensors((model / "model-00001-of-00002.safetensors").string(), s1);
  // The second shard as a Hugging Face cache snapshot holds it: a symlink to a blob elsewhere.
  fs::create_directories(dir() / "blobs");
  write_safetensors((dir() / "blobs" / "0123abcd").string(), s2);
  fs::create_symlink(dir() / "blobs" / "0123abcd", model / "model-00002-of-00002.safetensors");
  std::ofstream(model / "config.json") << "{}";

  const auto found = find_linear_layers(model.string());
  REQUIRE(found.size() == 21);
  const std::vector<int> layers = {0, 2, 10};
  for (size_t i = 0; i < found.size(); ++i) {
    const auto& f = found[i];
    const int layer = layers[i / 7];
    const std::string& kind = kinds[i % 7];
    CAPTURE(i);
    CHECK(f.layer == layer);
    CHECK(f.kind == kind);
    CHECK(f.info.name == name(layer, kind));
    const bool in_first = layer == 0 || (layer == 10 && kind.size() > 1);
    CHECK(fs::path(f.file).filename() ==
          (in_first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors"));
    CHECK(f.info.shape == (layer == 0   ? std::vector<int64_t>{2, 3}
                           : layer == 2 ? std::vector<int64_t>{1, 4}
                                        : std::vector<int64_t>{3, 2}));
  }

  // The same weight in two shards is ambiguous.
  const fs::path twice = dir() / "twice";
  fs::create_directories(twice);
  write_safetensors((twice / "a.safetensors").string(), {{name(1, "up"), DType::BF16, {1, 1}, {1}}});
  write_safetensors((twice / "b.safetensors").string(), {{name(1, "up"), DType::BF16, {1, 1}, {2}}});
  CHECK_THROWS_WITH_AS(find_linear_layers(twice.string()), doctest::Contains(name(1, "up").c_str()), InputError);
  // A linear weight must be a matrix.
  const fs::path flat = dir() / "flat";
  fs::create_directories(flat);
  write_safetensors((flat / "m.safetensors").string(), {{name(0, "q"), DType::BF16, {4}, {1, 2, 3, 4}}});
  CHECK_THROWS_WITH_AS(find_linear_layers(flat.string()), doctest::Contains("2-D"), InputError);

  const fs::path empty = dir() / "no-model";
  fs::create_directories(empty);
  CHECK_THROWS_AS(find_linear_layers(empty.string()), InputError);
  CHECK_THROWS_AS(find_linear_layers((dir() / "does-not-exist").string()), InputError);
}

// Issue 36: a tensor named twice in the header was read as its last entry, silently.
TEST_CASE("SafetensorsRejectsATensorNamedTwice") {
  const std::string h =
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  expect_open_error(write_raw("twice.safetensors", h, std::string(8, '\0')), {"'w' appears twice"});
}

// Found by fuzz_safetensors (2026-12-03): a header number past double's range threw a JSON
// out_of_range that nothing caught, ending the process.
TEST_CASE("SafetensorsHeaderNumberOutOfRangeIsAnInputError") {
  expect_open_error(write_raw("overflow.safetensors", R"({"w":{"dtype":"F32","shape":[1e999],"data_offsets":[0,4]}})",
                              std::string(4, '\0')),
                    {"numbers in range"});
}

// `dbsparse prune` on a small checkpoint written here: the file it writes holds each linear layer
// pruned per row (magnitude, or Wanda with the norms given), values rounded to the dtype, and bad
// requests get one clear error.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dbsparse/compact_weights.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/pruning.hpp"
#include "dbsparse/safetensors.hpp"
#include "test_support.hpp"

using namespace dbsparse;
namespace fs = std::filesystem;

namespace {

std::pair<int, std::string> run(const std::string& args) { return dbs_test::run_tool("dbsparse", args); }

struct Weight {
  std::string name;
  int32_t rows, cols;
  std::vector<float> w;
};

}  // namespace

TEST_CASE("PruneWritesEveryLinearLayerPrunedAndRounded") {
  REQUIRE_MESSAGE(!dbs_test::sibling_binary("dbsparse").empty(), "dbsparse binary not found beside the test binary");
  const fs::path d = dbs_test::temp_dir("prune");
  const fs::path model = d / "model";
  fs::create_directories(model);
  std::vector<Weight> ws{{"model.layers.0.self_attn.q_proj.weight", 64, 48, {}},
                         {"model.layers.0.mlp.down_proj.weight", 48, 100, {}},
                         {"model.layers.1.mlp.up_proj.weight", 100, 48, {}}};
  std::vector<TensorToWrite> t;
  for (size_t i = 0; i < ws.size(); ++i) {
    ws[i].w = synthetic_weights(ws[i].rows, ws[i].cols, 100 + i);
    t.push_back({ws[i].name, DType::F32, {ws[i].rows, ws[i].cols}, ws[i].w});
  }
  t.push_back({"model.embed_tokens.weight", DType::F32, {4, 48}, std::vector<float>(4 * 48, 1.0f)});  // not linear
  write_safetensors((model / "model.safetensors").string(), t);

  for (const char* dtype : {"f16", "bf16"}) {
    CAPTURE(dtype);
    const std::string out = (d / fmt::format("out-{}.safetensors", dtype)).string();
    auto [code, text] = run(fmt::format("prune '{}' -o '{}' --dtype {} --check", model.string(), out, dtype));
    CAPTURE(text);
    REQUIRE(code == 0);
    CHECK(text.find("3 of 3 layers read back equal") != std::string::npos);
    const auto layers = read_compact_weights(out);
    REQUIRE(layers.size() == 3);
    for (const auto& w : ws) {
      CAPTURE(w.name);
      const auto it =
          std::find_if(layers.begin(), layers.end(), [&](const CompactLayer& l) { return l.name == w.name; });
      REQUIRE(it != layers.end());
      const CsrMatrix<float> want = prune_magnitude(w.w, w.rows, w.cols, 0.5);
      const CsrMatrix<float> got = compact_to_csr(*it);
      CHECK(got.col_idx == want.col_idx);
      for (size_t p = 0; p < want.values.size(); ++p) {
        const float v = want.values[p];
        CHECK(got.values[p] ==
              (std::string(dtype) == "f16" ? half_to_float(float_to_half(v)) : bf16_to_float(float_to_bf16(v))));
      }
    }
  }

  // Wanda with the norms of each weight's input; --layers keeps block 0 only.
  std::vector<TensorToWrite> nt;
  std::vector<std::vector<float>> norms;
  for (size_t i = 0; i < ws.size(); ++i) {
    norms.push_back(synthetic_weights(1, ws[i].cols, 200 + i));
    for (auto& v : norms.back()) v = std::fabs(v);
    nt.push_back({ws[i].name + ".input_norm", DType::F32, {ws[i].cols}, norms.back()});
  }
  const std::string norms_path = (d / "norms.safetensors").string(), out = (d / "wanda.safetensors").string();
  write_safetensors(norms_path, nt);
  auto [code, text] = run(fmt::format("prune '{}' -o '{}' --method wanda --norms '{}' --layers 0 --sparsity 0.75",
                                      model.string(), out, norms_path));
  CAPTURE(text);
  REQUIRE(code == 0);
  const auto layers = read_compact_weights(out);
  CHECK(layers.size() == 2);
  for (const auto& l : layers) {
    const size_t i = l.name == ws[0].name ? 0 : 1;
    CHECK(l.name == ws[i].name);
    CHECK(compact_to_csr(l).col_idx == prune_wanda(ws[i].w, ws[i].rows, ws[i].cols, norms[i], 0.75).col_idx);
  }

  // Bad requests: one error line each.
  const auto check_error = [&](const std::string& args, const std::string& needle) {
    CAPTURE(args);
    auto [c, o] = run(args);
    CAPTURE(o);
    CHECK(c == 1);
    CHECK(o.find(needle) != std::string::npos);
  };
  check_error(fmt::format("prune '{}' -o '{}' --method wanda", model.string(), out), "needs --norms");
  check_error(fmt::format("prune '{}' -o '{}' --layers 7", model.string(), out), "--layers 7: ");
  write_safetensors(norms_path, {nt[0]});
  check_error(fmt::format("prune '{}' -o '{}' --method wanda --norms '{}'", model.string(), out, norms_path),
              "model.layers.0.mlp.down_proj.weight.input_norm");
  check_error(fmt::format("prune '{}' -o '{}'", (d / "none").string(), out), "none");
  fs::remove_all(d);
}

TEST_CASE("PruneAndCalibrateRefuseHostileFilesAndValues") {
  REQUIRE_MESSAGE(!dbs_test::sibling_binary("dbsparse").empty(), "dbsparse binary not found beside the test binary");
  const fs::path d = dbs_test::temp_dir("prune-hostile");
  const std::string name = "model.layers.0.mlp.up_proj.weight";
  std::vector<float> w = synthetic_weights(32, 16, 7);
  const std::string good = (d / "good.safetensors").string();
  write_safetensors(good, {{name, DType::F32, {32, 16}, w}});
  const auto expect_error = [](const std::string& args, std::vector<std::string> parts) {
    auto [code, text] = run(args);
    CAPTURE(args);
    CAPTURE(text);
    CHECK(code != 0);
    for (const auto& p : parts) CHECK(text.find(p) != std::string::npos);
  };
  {  // a damaged sibling does not fail a prune of one good file
    std::ofstream(d / "damaged.safetensors") << "not a safetensors file";
    auto [code, text] = run(fmt::format("prune '{}' -o '{}'", good, (d / "out.safetensors").string()));
    CAPTURE(text);
    CHECK(code == 0);
  }
  // A header nesting 100,000 arrays: refused by its depth, without a crash.
  const std::string header =
      "{\"w\":{\"dtype\":\"F16\",\"shape\":" + std::string(100000, '[') + std::string(100000, ']') + "}}";
  fs::create_directories(d / "deep");
  {
    std::ofstream out(d / "deep" / "x.safetensors", std::ios::binary);
    const uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header;
  }
  expect_error(
      fmt::format("prune '{}' -o '{}'", (d / "deep" / "x.safetensors").string(), (d / "o2.safetensors").string()),
      {"x.safetensors", "nested at most 64 levels"});
  // The output naming the input: refused, the input untouched.
  const auto before = fs::file_size(good);
  expect_error(fmt::format("prune '{}' -o '{}'", good, good), {"-o", "names the input"});
  CHECK(fs::file_size(good) == before);
  // An infinite weight, and one past f16's range, are refused by name.
  std::vector<float> bad = w;
  bad[5] = std::numeric_limits<float>::infinity();
  fs::create_directories(d / "inf");
  write_safetensors((d / "inf" / "m.safetensors").string(), {{name, DType::F32, {32, 16}, bad}});
  expect_error(
      fmt::format("prune '{}' -o '{}'", (d / "inf" / "m.safetensors").string(), (d / "o3.safetensors").string()),
      {"infinite"});
  bad[5] = 1e6f;
  fs::create_directories(d / "big");
  write_safetensors((d / "big" / "m.safetensors").string(), {{name, DType::F32, {32, 16}, bad}});
  expect_error(
      fmt::format("prune '{}' -o '{}'", (d / "big" / "m.safetensors").string(), (d / "o4.safetensors").string()),
      {"f16", "bf16"});
  // A FIFO as --norms: refused by what it is, not waited on.
  const std::string fifo = (d / "norms.fifo").string();
  REQUIRE(dbs_test::run_shell(fmt::format("mkfifo '{}'", fifo)).first == 0);
  expect_error(
      fmt::format("prune '{}' -o '{}' --method wanda --norms '{}'", good, (d / "o5.safetensors").string(), fifo),
      {"norms.fifo", "FIFO"});
  // calibrate: its output naming an input, and activations whose norms overflow.
  const std::string acts = (d / "acts.safetensors").string();
  write_safetensors(acts, {{name + ".input", DType::F32, {2, 16}, std::vector<float>(32, 3e38f)}});
  expect_error(fmt::format("calibrate '{}' -o '{}'", acts, acts), {"-o", "names the input"});
  expect_error(fmt::format("calibrate '{}' -o '{}'", acts, (d / "cal.safetensors").string()), {"overflow"});
  CHECK(!fs::exists(d / "cal.safetensors"));
}

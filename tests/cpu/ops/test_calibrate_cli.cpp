// `dbsparse calibrate` on small activation files written here: per weight the input norms and the
// thresholds of a plain reference computation over every token of every file, a file that
// `dbsparse prune --method wanda --norms` takes as it is, and one clear error (naming the file and
// the tensor) for each bad input, with no output file left behind.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
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

// The rows of one weight's activations as the files store them (after rounding to their dtype).
struct Acts {
  int32_t cols = 0;
  std::vector<float> rows;  // tokens x cols, in file order
  void add(const std::vector<float>& x) { rows.insert(rows.end(), x.begin(), x.end()); }
};

std::vector<float> rounded(std::vector<float> x, DType t) {
  for (auto& v : x)
    v = t == DType::F16 ? half_to_float(float_to_half(v)) : t == DType::BF16 ? bf16_to_float(float_to_bf16(v)) : v;
  return x;
}

std::vector<float> reference_norms(const Acts& a) {
  std::vector<float> out(static_cast<size_t>(a.cols));
  for (int32_t c = 0; c < a.cols; ++c) {
    double s = 0;
    for (size_t i = static_cast<size_t>(c); i < a.rows.size(); i += static_cast<size_t>(a.cols))
      s += static_cast<double>(a.rows[i]) * a.rows[i];
    out[static_cast<size_t>(c)] = static_cast<float>(std::sqrt(s));
  }
  return out;
}

// The k-th largest |x| by a full sort, k = ceil(density * n) (densities here make density * n exact
// or clearly fractional).
float reference_threshold(const Acts& a, double density) {
  std::vector<float> m;
  for (float v : a.rows) m.push_back(std::fabs(v));
  std::sort(m.begin(), m.end(), std::greater<>());
  const auto k = static_cast<size_t>(std::ceil(density * static_cast<double>(m.size()) - 1e-9));
  return m[std::max<size_t>(k, 1) - 1];
}

// Heavy-tailed activations (a few large columns, as LLM inputs have), x of the given tokens.
std::vector<float> activations(int64_t tokens, int32_t cols, uint64_t seed) {
  auto x = dbs_test::random_vector<float>(static_cast<size_t>(tokens * cols), seed);
  for (size_t i = 0; i < x.size(); ++i)
    if (i % static_cast<size_t>(cols) % 7 == 0) x[i] *= 20.0f;
  return x;
}

TensorToWrite tensor(const std::string& name, DType t, std::vector<int64_t> shape, const std::vector<float>& x) {
  return {name, t, std::move(shape), x, {}};
}

}  // namespace

TEST_CASE("CalibrateMatchesReferenceOverEveryFileAndDtype") {
  REQUIRE_MESSAGE(!dbs_test::sibling_binary("dbsparse").empty(), "dbsparse binary not found beside the test binary");
  const fs::path d = dbs_test::temp_dir("calibrate");
  const std::string q = "model.layers.0.self_attn.q_proj.weight", down = "model.layers.0.mlp.down_proj.weight",
                    up = "model.layers.1.mlp.up_proj.weight";
  std::map<std::string, Acts> want{{q, {48, {}}}, {down, {100, {}}}, {up, {48, {}}}};
  // File 1: q in f32 (2-D), down in bf16 (1-D: one token), something else that is not an input.
  // File 2: q again in f16, down in f32, up in f16: each weight's calibration set spans the files.
  std::vector<TensorToWrite> f1, f2;
  const auto put = [&](std::vector<TensorToWrite>& f, const std::string& w, DType t, int64_t tokens, bool one_d,
                       uint64_t seed) {
    const auto x = rounded(activations(tokens, want[w].cols, seed), t);
    want[w].add(x);
    f.push_back(tensor(w + ".input", t,
                       one_d ? std::vector<int64_t>{want[w].cols} : std::vector<int64_t>{tokens, want[w].cols}, x));
  };
  put(f1, q, DType::F32, 33, false, 1);
  put(f1, down, DType::BF16, 1, true, 2);
  f1.push_back(tensor("model.embed_tokens.weight", DType::F32, {4, 48}, std::vector<float>(4 * 48, 1.0f)));
  put(f2, q, DType::F16, 20, false, 3);
  put(f2, down, DType::F32, 40, false, 4);
  put(f2, up, DType::F16, 17, false, 5);
  const std::string a1 = (d / "acts1.safetensors").string(), a2 = (d / "acts2.safetensors").string();
  write_safetensors(a1, f1);
  write_safetensors(a2, f2);

  const std::string out = (d / "calib.safetensors").string();
  auto [code, text] = run(fmt::format("calibrate '{}' '{}' -o '{}' --density 0.5,0.1,1", a1, a2, out));
  CAPTURE(text);
  REQUIRE(code == 0);
  // The progress lines, in name order.
  CHECK(text.find("[1/3] " + down + ": 41 tokens x 100") != std::string::npos);
  CHECK(text.find("[2/3] " + q + ": 53 tokens x 48") != std::string::npos);
  CHECK(text.find("[3/3] " + up + ": 17 tokens x 48") != std::string::npos);
  const auto f = SafetensorsFile::open(out);
  CHECK(f.metadata().at("densities") == "0.5,0.1,1");
  CHECK(f.tensors().size() == 6);  // the embedding had no .input: nothing for it
  for (const auto& [w, acts] : want) {
    CAPTURE(w);
    const TensorInfo& n = f.info(w + ".input_norm");
    CHECK(n.dtype == DType::F32);
    CHECK(n.shape == std::vector<int64_t>{acts.cols});
    CHECK(f.read_f32(w + ".input_norm") == reference_norms(acts));
    const TensorInfo& t = f.info(w + ".act_threshold");
    CHECK(t.dtype == DType::F32);
    CHECK(t.shape == std::vector<int64_t>{3});
    const auto tau = f.read_f32(w + ".act_threshold");
    CHECK(tau == std::vector<float>{reference_threshold(acts, 0.5), reference_threshold(acts, 0.1),
                                    reference_threshold(acts, 1.0)});
  }

  // Tensors named as the weights themselves (--suffix ''), default density: one threshold, [1].
  std::vector<TensorToWrite> plain;
  for (auto& t : f2) {
    t.name.resize(t.name.size() - std::string(".input").size());
    plain.push_back(t);
  }
  const std::string a3 = (d / "plain.safetensors").string(), out3 = (d / "calib3.safetensors").string();
  write_safetensors(a3, plain);
  auto [code3, text3] = run(fmt::format("calibrate '{}' -o '{}' --suffix ''", a3, out3));
  CAPTURE(text3);
  REQUIRE(code3 == 0);
  const auto g = SafetensorsFile::open(out3);
  CHECK(g.metadata().at("densities") == "0.5");
  Acts up_only = want[up];
  CHECK(g.info(up + ".act_threshold").shape == std::vector<int64_t>{1});
  CHECK(g.read_f32(up + ".act_threshold") == std::vector<float>{reference_threshold(up_only, 0.5)});
  CHECK(g.read_f32(up + ".input_norm") == reference_norms(up_only));
  fs::remove_all(d);
}

TEST_CASE("CalibrateThenPruneWandaRoundTrip") {
  const fs::path d = dbs_test::temp_dir("calibrate-prune");
  const fs::path model = d / "model";
  fs::create_directories(model);
  struct Weight {
    std::string name;
    int32_t rows, cols;
    std::vector<float> w;
  };
  std::vector<Weight> ws{{"model.layers.0.self_attn.q_proj.weight", 64, 48, {}},
                         {"model.layers.0.mlp.down_proj.weight", 48, 100, {}}};
  std::vector<TensorToWrite> wt, at;
  std::vector<Acts> acts;
  for (size_t i = 0; i < ws.size(); ++i) {
    ws[i].w = synthetic_weights(ws[i].rows, ws[i].cols, 100 + i);
    wt.push_back(tensor(ws[i].name, DType::F32, {ws[i].rows, ws[i].cols}, ws[i].w));
    acts.push_back({ws[i].cols, activations(25, ws[i].cols, 300 + i)});
    at.push_back(tensor(ws[i].name + ".input", DType::F32, {25, ws[i].cols}, acts.back().rows));
  }
  write_safetensors((model / "model.safetensors").string(), wt);
  const std::string acts_path = (d / "acts.safetensors").string(), calib = (d / "calib.safetensors").string(),
                    out = (d / "pruned.safetensors").string();
  write_safetensors(acts_path, at);
  auto [c1, t1] = run(fmt::format("calibrate '{}' -o '{}'", acts_path, calib));
  CAPTURE(t1);
  REQUIRE(c1 == 0);
  auto [c2, t2] =
      run(fmt::format("prune '{}' -o '{}' --method wanda --norms '{}' --sparsity 0.5", model.string(), out, calib));
  CAPTURE(t2);
  REQUIRE(c2 == 0);
  const auto layers = read_compact_weights(out);
  REQUIRE(layers.size() == ws.size());
  for (size_t i = 0; i < ws.size(); ++i) {
    CAPTURE(ws[i].name);
    const auto it =
        std::find_if(layers.begin(), layers.end(), [&](const CompactLayer& l) { return l.name == ws[i].name; });
    REQUIRE(it != layers.end());
    const auto want = prune_wanda(ws[i].w, ws[i].rows, ws[i].cols, reference_norms(acts[i]), 0.5).col_idx;
    CHECK(compact_to_csr(*it).col_idx == want);
    // The norms matter here: magnitude pruning keeps other columns.
    CHECK(prune_magnitude(ws[i].w, ws[i].rows, ws[i].cols, 0.5).col_idx != want);
  }
  fs::remove_all(d);
}

TEST_CASE("CalibrateRejectsBadInputsNamingFileAndTensor") {
  const fs::path d = dbs_test::temp_dir("calibrate-errors");
  const std::string w = "model.layers.0.mlp.gate_proj.weight";
  const std::string good = (d / "good.safetensors").string(), out = (d / "calib.safetensors").string();
  write_safetensors(good, {tensor(w + ".input", DType::F32, {3, 8}, activations(3, 8, 1))});
  // Each bad request: exit 1, one message holding every needle, and no output file.
  const auto check_error = [&](const std::string& args, const std::vector<std::string>& needles) {
    CAPTURE(args);
    fs::remove(out);
    auto [c, o] = run(args);
    CAPTURE(o);
    CHECK(c == 1);
    for (const auto& n : needles) CHECK_MESSAGE(o.find(n) != std::string::npos, n);
    CHECK(!fs::exists(out));
    for (const auto& e : fs::directory_iterator(d))
      CHECK(e.path().filename().string().find("calib") == std::string::npos);
  };
  const auto bad_file = [&](const std::string& name, const std::vector<TensorToWrite>& t) {
    const std::string p = (d / name).string();
    write_safetensors(p, t);
    return p;
  };

  check_error(fmt::format("calibrate '{}' -o '{}'", (d / "missing.safetensors").string(), out),
              {"missing.safetensors"});
  const std::string rank3 =
      bad_file("rank3.safetensors", {tensor(w + ".input", DType::F32, {2, 3, 8}, std::vector<float>(48, 1.0f))});
  check_error(fmt::format("calibrate '{}' -o '{}'", rank3, out), {"rank3.safetensors", w + ".input", "[2, 3, 8]"});
  const std::string rank0 = bad_file("rank0.safetensors", {tensor(w + ".input", DType::F32, {}, {1.0f})});
  check_error(fmt::format("calibrate '{}' -o '{}'", rank0, out), {"rank0.safetensors", w + ".input"});
  // in_features 8 in good, 9 here: the weight's two tensors disagree.
  const std::string wide =
      bad_file("wide.safetensors", {tensor(w + ".input", DType::F32, {2, 9}, activations(2, 9, 2))});
  check_error(fmt::format("calibrate '{}' '{}' -o '{}'", good, wide, out),
              {"wide.safetensors", "good.safetensors", w + ".input", "in_features 8", "[2, 9]"});
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
    auto x = activations(3, 8, 3);
    x[13] = bad;  // token 1, column 5
    const std::string nonfinite = bad_file("nonfinite.safetensors", {tensor(w + ".input", DType::F32, {3, 8}, x)});
    check_error(fmt::format("calibrate '{}' '{}' -o '{}'", good, nonfinite, out),
                {"nonfinite.safetensors", w + ".input", "token 1, column 5", std::isnan(bad) ? "nan" : "-inf"});
  }
  const std::string ints = bad_file("ints.safetensors", {{w + ".input", DType::I32, {2}, {}, std::string(8, '\0')}});
  check_error(fmt::format("calibrate '{}' -o '{}'", ints, out), {"ints.safetensors", w + ".input", "I32"});
  const std::string empty = bad_file("empty.safetensors", {tensor(w + ".input", DType::F32, {0, 8}, {})});
  check_error(fmt::format("calibrate '{}' -o '{}'", empty, out), {"empty.safetensors", w, "at least one token"});
  for (const char* density : {"0", "1.5", "-0.5", "0.5,0.5"})
    check_error(fmt::format("calibrate '{}' -o '{}' --density {}", good, out, density), {"--density"});
  check_error(fmt::format("calibrate '{}' -o '{}' --suffix .acts", good, out),
              {"good.safetensors", "<weight>.acts", w + ".input"});

  // A failing run leaves an existing output as it was.
  write_safetensors(out, {tensor("keep", DType::F32, {1}, {1.0f})});
  auto [c, o] = run(fmt::format("calibrate '{}' '{}' -o '{}'", good, wide, out));
  CHECK(c == 1);
  CHECK(SafetensorsFile::open(out).contains("keep"));
  fs::remove_all(d);
}

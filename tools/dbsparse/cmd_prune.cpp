// `dbsparse prune MODEL_DIR -o OUT.safetensors`: every linear layer of a Llama/Qwen-style checkpoint
// pruned per output row (magnitude, or Wanda with calibration norms) and saved in the compact
// column bitmap layout (include/dbsparse/compact_weights.hpp), which plan_decode_linear loads
// without pruning or converting again.
#include <fmt/format.h>

#include <cstdint>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "dbsparse/compact_weights.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/pruning.hpp"
#include "dbsparse/safetensors.hpp"
#include "tools/dbsparse/commands.hpp"
#include "tools/cli_checks.hpp"

namespace dbsparse::cli {

Runner add_prune(CLI::App& sub) {
  struct Args {
    std::string model, out, method = "magnitude", norms, dtype = "f16";
    double sparsity = 0.5;
    std::vector<int> layers;
    bool check = false;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("model", a->model, "Checkpoint directory (its *.safetensors shards) or one .safetensors file")
      ->required();
  sub.add_option("-o,--out", a->out, "The compact weights file to write (safetensors)")->required();
  sub.add_option("--sparsity", a->sparsity, "Share of each output row's weights pruned (default 0.5)")
      ->check(finite_range(0.0, 0.99));
  sub.add_option("--method", a->method, "magnitude (|W|) or wanda (|W| x the input's calibration norm)")
      ->check(CLI::IsMember({"magnitude", "wanda"}));
  sub.add_option("--norms", a->norms,
                 "With wanda: a safetensors file holding, per weight W, a tensor W.input_norm of its input size");
  sub.add_option("--dtype", a->dtype, "Stored values: f16 (default) or bf16")->check(CLI::IsMember({"f16", "bf16"}));
  sub.add_option("--layers", a->layers, "Only these transformer blocks (comma-separated; default all)")->delimiter(',');
  sub.add_flag("--check", a->check, "Read the file back and compare every layer with the pruned weights");
  return [a]() {
    namespace fs = std::filesystem;
    if (a->method == "wanda" && a->norms.empty())
      throw UsageError("prune: --method wanda needs --norms FILE (per weight W, a tensor W.input_norm)");
    if (a->method != "wanda" && !a->norms.empty()) throw UsageError("prune: --norms applies to --method wanda only");
    {
      std::vector<std::string> inputs{a->model};
      if (!a->norms.empty()) inputs.push_back(a->norms);
      std::error_code ec;  // an unreadable directory is reported by find_linear_layers below
      for (std::filesystem::directory_iterator it(a->model, ec), end; !ec && it != end; it.increment(ec))
        inputs.push_back(it->path().string());
      if (auto why = output_is_an_input("prune: -o", a->out, inputs); !why.empty()) throw UsageError(why);
    }
    std::vector<LinearLayerRef> refs = find_linear_layers(a->model);  // a file, or a directory's shards
    if (!a->layers.empty() && !refs.empty()) {
      int lo = refs.front().layer, hi = refs.front().layer;
      for (const auto& r : refs) lo = std::min(lo, r.layer), hi = std::max(hi, r.layer);
      for (int l : a->layers)
        if (std::none_of(refs.begin(), refs.end(), [&](const LinearLayerRef& r) { return r.layer == l; }))
          throw UsageError(
              fmt::format("prune: --layers {}: {} has transformer blocks {}..{} only", l, a->model, lo, hi));
    }
    if (!a->layers.empty())
      refs.erase(std::remove_if(refs.begin(), refs.end(),
                                [&](const LinearLayerRef& r) {
                                  return std::find(a->layers.begin(), a->layers.end(), r.layer) == a->layers.end();
                                }),
                 refs.end());
    if (refs.empty()) throw InputError(a->model, 0, "linear layer weights (model.layers.N.*_proj.weight) to prune");
    std::unique_ptr<SafetensorsFile> norms;
    if (!a->norms.empty()) norms = std::make_unique<SafetensorsFile>(SafetensorsFile::open(a->norms));
    const DecodeDtype dt = a->dtype == "bf16" ? DecodeDtype::BF16 : DecodeDtype::F16;
    fmt::print("pruning {} linear layers of {}: {:.0f}% of each row by {}, values in {}\n", refs.size(), a->model,
               100 * a->sparsity, a->method, a->dtype);
    std::vector<CompactLayer> layers;
    std::vector<CsrMatrix<float>> kept;  // for --check
    int64_t dense_bytes = 0, file_bytes = 0;
    for (size_t i = 0; i < refs.size(); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const LinearLayerRef& r = refs[i];
      // A shape past int32 was cut to 32 bits here ([0, 2^32 + 16] pruned as 0 x 16, silently).
      if (r.info.shape.size() != 2 || r.info.shape[0] < 1 || r.info.shape[1] < 1 || r.info.shape[0] > INT32_MAX ||
          r.info.shape[1] > INT32_MAX)
        throw InputError(r.file, 0,
                         fmt::format("tensor {} of 2 dimensions, each 1 .. 2^31 - 1 (a linear weight), not [{}]",
                                     r.info.name, fmt::join(r.info.shape, ", ")));
      const auto rows = static_cast<int32_t>(r.info.shape[0]), cols = static_cast<int32_t>(r.info.shape[1]);
      const std::vector<float> w = SafetensorsFile::open(r.file).read_f32(r.info.name);
      CsrMatrix<float> pw;
      // The library's messages (NaN weights, a negative norm) name no file: this layer's do.
      try {
        if (norms) {
          const std::vector<float> n = norms->read_f32(r.info.name + ".input_norm");
          if (static_cast<int64_t>(n.size()) != cols)
            throw InputError(a->norms, 0,
                             fmt::format("tensor {}.input_norm of {} elements, the weight's input size (found {})",
                                         r.info.name, cols, n.size()));
          pw = prune_wanda(w, rows, cols, n, a->sparsity);
        } else {
          pw = prune_magnitude(w, rows, cols, a->sparsity);
        }
      } catch (const UsageError& e) {
        throw InputError(norms ? fmt::format("{} (norms {})", r.file, a->norms) : r.file, 0,
                         fmt::format("tensor {} that can be pruned: {}", r.info.name, e.what()));
      }
      layers.push_back(make_compact_layer(r.info.name, pw, dt));
      if (a->check) kept.push_back(std::move(pw));
      dense_bytes += int64_t{rows} * cols * 2;
      file_bytes += layers.back().file_bytes();
      fmt::print("  [{}/{}] {} {}x{}: {} kept, {:.2f} MB ({:.3f}x dense fp16), {:.2f} s\n", i + 1, refs.size(),
                 r.info.name, rows, cols, layers.back().w.nnz(), layers.back().file_bytes() / 1e6,
                 double(layers.back().file_bytes()) / (2.0 * rows * cols),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      std::fflush(stdout);
    }
    write_compact_weights(a->out, layers,
                          {{"source", a->model},
                           {"sparsity", fmt::format("{}", a->sparsity)},
                           {"method", a->method},
                           {"dtype", a->dtype}});
    fmt::print("wrote {}: {:.1f} MB of layers, {:.3f}x their dense fp16 bytes\n", a->out, file_bytes / 1e6,
               double(file_bytes) / std::max<double>(double(dense_bytes), 1));
    if (a->check) {
      const std::vector<CompactLayer> back = read_compact_weights(a->out);
      int64_t differ = 0;
      for (size_t i = 0; i < layers.size(); ++i) {
        const auto it =
            std::find_if(back.begin(), back.end(), [&](const CompactLayer& l) { return l.name == layers[i].name; });
        if (it == back.end()) throw Error(fmt::format("prune --check: {} is missing from {}", layers[i].name, a->out));
        const CsrMatrix<float> got = compact_to_csr(*it);
        const CsrMatrix<float>& want = kept[i];
        if (got.row_ptr != want.row_ptr || got.col_idx != want.col_idx) {
          ++differ;
          continue;
        }
        for (size_t p = 0; p < want.values.size(); ++p) {
          const float r = dt == DecodeDtype::F16 ? half_to_float(float_to_half(want.values[p]))
                                                 : bf16_to_float(float_to_bf16(want.values[p]));
          if (got.values[p] != r) {
            ++differ;
            break;
          }
        }
      }
      fmt::print("check: {} of {} layers read back equal to the pruned weights (values rounded to {})\n",
                 layers.size() - differ, layers.size(), a->dtype);
      if (differ) return 4;
    }
    return 0;
  };
}

}  // namespace dbsparse::cli

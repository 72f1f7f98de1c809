// `dbsparse calibrate ACTS.safetensors... -o CALIB.safetensors`: from activations a user recorded
// on a calibration set, per linear weight W the input norms Wanda prunes with (W.input_norm, read
// by `dbsparse prune --method wanda --norms`) and TEAL's activation thresholds at each density
// (W.act_threshold); the format is in include/dbsparse/calibration.hpp.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dbsparse/calibration.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/safetensors.hpp"
#include "tools/cli_checks.hpp"
#include "tools/dbsparse/commands.hpp"

namespace dbsparse::cli {
namespace {

constexpr const char* kNaming =
    R"(Activation tensors: per linear weight W (e.g. model.layers.0.mlp.gate_proj.weight), the inputs
x it read on the calibration set, as a tensor named W + SUFFIX (default ".input", so
model.layers.0.mlp.gate_proj.weight.input; --suffix '' for tensors named W itself): 2-D
[tokens, in_features] or 1-D [in_features] (one token), F32, F16 or BF16. Tensors of the same name
in several files are one calibration set; other tensors are ignored.

Output, per W: W.input_norm (F32 [in_features], the L2 norm of each input column over all tokens)
and W.act_threshold (F32 [D], one tau per --density, in the order of the file's "densities"
metadata entry): |x_i| >= tau keeps at least that share of the calibration entries, and no larger
tau does.)";

// One activation tensor of a weight: which file holds it, and its header.
struct Part {
  size_t file;
  TensorInfo info;
};

int64_t in_features_of(const TensorInfo& t) { return t.shape.back(); }

}  // namespace

Runner add_calibrate(CLI::App& sub) {
  struct Args {
    std::vector<std::string> inputs;
    std::string out, suffix = ".input";
    std::vector<double> densities{0.5};
  };
  auto a = std::make_shared<Args>();
  sub.add_option("inputs", a->inputs, "Safetensors files of calibration activations (see below)")->required();
  sub.add_option("-o,--out", a->out, "The calibration file to write (safetensors)")->required();
  sub.add_option(
         "--density", a->densities,
         "Share of activation entries each threshold keeps, in (0, 1]; comma-separated for several (default 0.5)")
      ->delimiter(',')
      ->allow_extra_args(false);  // `--density 0.5 ACTS` leaves ACTS to the inputs
  sub.add_option("--suffix", a->suffix, "The activation tensor of weight W is named W + SUFFIX (default .input)");
  sub.footer(kNaming);
  return [a]() {
    if (a->densities.empty()) throw UsageError("calibrate: --density needs at least one value");
    for (size_t i = 0; i < a->densities.size(); ++i) {
      const double d = a->densities[i];
      if (!(d > 0.0 && d <= 1.0)) throw UsageError(fmt::format("calibrate: --density {} outside (0, 1]", d));
      if (std::find(a->densities.begin(), a->densities.begin() + static_cast<std::ptrdiff_t>(i), d) !=
          a->densities.begin() + static_cast<std::ptrdiff_t>(i))
        throw UsageError(fmt::format("calibrate: --density {} given twice", d));
    }

    if (auto why = output_is_an_input("calibrate: -o", a->out, a->inputs); !why.empty()) throw UsageError(why);
    // Every header first, so that a bad name, rank or size stops the run before any data is read.
    std::vector<SafetensorsFile> files;
    for (const auto& path : a->inputs) files.push_back(SafetensorsFile::open(path));
    std::map<std::string, std::vector<Part>> weights;
    size_t seen = 0;
    std::vector<std::string> examples;
    for (size_t f = 0; f < files.size(); ++f) {
      for (const TensorInfo& t : files[f].tensors()) {
        ++seen;
        if (examples.size() < 3) examples.push_back(t.name);
        if (t.name.size() <= a->suffix.size() || !t.name.ends_with(a->suffix)) continue;
        const std::string w = t.name.substr(0, t.name.size() - a->suffix.size());
        const std::string& path = files[f].path();
        if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
          throw InputError(
              path, 0,
              fmt::format("activations as F32, F16 or BF16 in tensor '{}', found {}", t.name, to_string(t.dtype)));
        if (t.shape.size() != 1 && t.shape.size() != 2)
          throw InputError(path, 0,
                           fmt::format("a 2-D [tokens, in_features] or 1-D [in_features] shape for "
                                       "activations '{}', found [{}]",
                                       t.name, fmt::join(t.shape, ", ")));
        if (in_features_of(t) < 1 || in_features_of(t) > INT32_MAX)
          throw InputError(path, 0,
                           fmt::format("in_features between 1 and 2^31 - 1 in tensor '{}', found [{}]", t.name,
                                       fmt::join(t.shape, ", ")));
        auto& parts = weights[w];
        if (!parts.empty() && in_features_of(parts[0].info) != in_features_of(t))
          throw InputError(path, 0,
                           fmt::format("tensor '{}' of in_features {}, as '{}' in {} for the same weight; "
                                       "found [{}]",
                                       t.name, in_features_of(parts[0].info), parts[0].info.name,
                                       files[parts[0].file].path(), fmt::join(t.shape, ", ")));
        parts.push_back({f, t});
      }
    }
    if (weights.empty())
      throw InputError(fmt::format("{}", fmt::join(a->inputs, ", ")), 0,
                       fmt::format("activation tensors named <weight>{} (none among {} tensors{}{})", a->suffix, seen,
                                   examples.empty() ? "" : ", e.g. ", fmt::join(examples, ", ")));

    fmt::print("calibrating {} weights from {} file(s) at density {}\n", weights.size(), files.size(),
               fmt::join(a->densities, ","));
    std::fflush(stdout);
    std::vector<TensorToWrite> out;
    size_t done = 0;
    for (const auto& [w, parts] : weights) {
      const auto t0 = std::chrono::steady_clock::now();
      ActivationCalibration cal(static_cast<int32_t>(in_features_of(parts[0].info)));
      for (const Part& p : parts) {
        const SafetensorsFile& file = files[p.file];
        try {
          cal.add(file.read_f32(p.info.name));
        } catch (const UsageError& e) {
          throw InputError(file.path(), 0, fmt::format("finite activations in tensor '{}'; {}", p.info.name, e.what()));
        }
      }
      if (cal.tokens() == 0)
        throw InputError(files[parts[0].file].path(), 0,
                         fmt::format("at least one token of activations for {} (tensor '{}' and any others of its "
                                     "name hold none)",
                                     w, parts[0].info.name));
      std::vector<float> tau = cal.thresholds(a->densities);
      const std::vector<float> norms = cal.input_norms();
      if (std::any_of(norms.begin(), norms.end(), [](float v) { return !std::isfinite(v); }))
        throw InputError(files[parts[0].file].path(), 0,
                         fmt::format("activations for {} whose input norms fit in float (a sum of squares "
                                     "overflowed: values near float's largest)",
                                     w));
      out.push_back({w + ".input_norm", DType::F32, {cal.in_features()}, norms, {}});
      out.push_back({w + ".act_threshold", DType::F32, {static_cast<int64_t>(tau.size())}, tau, {}});
      fmt::print(stderr, "  [{}/{}] {}: {} tokens x {}, tau {} ({:.2f} s)\n", ++done, weights.size(), w, cal.tokens(),
                 cal.in_features(), fmt::join(tau, ","),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    write_safetensors(a->out, out,
                      {{"densities", fmt::format("{}", fmt::join(a->densities, ","))},
                       {"source", fmt::format("{}", fmt::join(a->inputs, ","))},
                       {"suffix", a->suffix}});
    fmt::print("wrote {}: input_norm and act_threshold of {} weights\n", a->out, weights.size());
    return 0;
  };
}

}  // namespace dbsparse::cli

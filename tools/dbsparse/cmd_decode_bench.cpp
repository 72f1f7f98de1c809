// `dbsparse decode-bench`: one transformer block's linear layers at batch 1, pruned and with
// activations thresholded at several densities, in the model's dtype: dbsparse's column bitmap
// layers (each mapping) against dense cuBLAS GEMV and cuSPARSE CSR SpMV on the same stream, every
// row timed by CUDA graph replay with the weights rotated past the L2.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dbsparse/abi/decode.h"
#include "dbsparse/decode_linear.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/pruning.hpp"
#include "dbsparse/reference.hpp"
#include "dbsparse/safetensors.hpp"
#include "dbsparse/sparse_linear.hpp"
#include "tools/baselines/cublas_gemv.hpp"
#include "tools/baselines/cusparse_spmv.hpp"
#include "tools/bench/stats.hpp"
#include "tools/bench/timing.hpp"
#include "tools/dbsparse/commands.hpp"
#include "support/atomic_file.hpp"
#include "tools/cli_checks.hpp"

namespace dbsparse::cli {
namespace {

struct DecodeArgs {
  std::string model, weights, dtype = "f16", prune = "wanda", json_path;
  double weight_sparsity = 0.5;
  int batch = 1;  // rows of x a step: plans run_batch, cuBLAS a GEMM of that many columns
  std::vector<double> act_densities{1.0, 0.5, 0.3, 0.1};
  int layer = 0;
  int blocks_per_sm = DecodeLinearOptions{}.blocks_per_sm;
  bool ablation = false;          // also the f32 SpMSpV engine: auto, push-only, pull-only
  bool no_fuse = false;           // leave out the stacked q|k|v and gate|up rows
  std::vector<std::string> only;  // time only these layer kinds (no block sums): for profiling one kernel
};

// The column bitmap plans the bench times, by the name of their row.
const std::vector<std::pair<std::string, DecodeMapping>> kMappings{
    {"ring", DecodeMapping::Ring},       {"dbcols", DecodeMapping::DenseColumns},
    {"columns", DecodeMapping::Columns}, {"rowblocks", DecodeMapping::RowBlocks},
    {"dbdense", DecodeMapping::Dense},   {"tiles", DecodeMapping::Tiles}};

// The dense weights in the benchmark's dtype, as device bytes.
DeviceBuffer<uint16_t> dense16(const std::vector<float>& w, tools::DenseType t) {
  const auto h = t == tools::DenseType::F16 ? floats_to_half(w) : floats_to_bf16(w);
  return DeviceBuffer<uint16_t>(std::span<const uint16_t>(h));
}

// The plans a layer is timed with: each forced mapping's row, then auto's choice at each density
// (decode_plan_choice: the tuning DB's row for the layer, else the model) where no forced row is
// that plan (another blocks_per_sm or row_block_words), under a name of its own. `auto_row` gets
// the row auto's time is read from at each density, with the choice.
std::vector<std::pair<std::string, DecodeLinearOptions>> plans_to_time(
    Context& ctx, const DecodeArgs& a, const CsrMatrix<float>& pw, DecodeDtype dtype,
    std::map<double, std::pair<std::string, DecodeChoice>>& auto_row) {
  std::vector<std::pair<std::string, DecodeLinearOptions>> out;
  for (const auto& [name, mapping] : kMappings) {
    if ((mapping == DecodeMapping::Dense || mapping == DecodeMapping::Tiles) && dtype == DecodeDtype::F32)
      continue;  // 16-bit only
    DecodeLinearOptions o;
    o.dtype = dtype;
    o.mapping = mapping;
    o.blocks_per_sm = a.blocks_per_sm;
    out.emplace_back(name, o);
  }
  // The tiles path's other kernel variants (warps a block x stages a warp; "tiles" is the default).
  if (dtype != DecodeDtype::F32)
    for (auto [warps, stages, per_warp] :
         {std::tuple{8, 3, false}, {4, 2, false}, {8, 2, true}, {4, 2, true}, {4, 3, true}}) {
      DecodeLinearOptions o;
      o.dtype = dtype;
      o.mapping = DecodeMapping::Tiles;
      o.tiles_warps = warps;
      o.tiles_stages = stages;
      o.tiles_per_warp = per_warp;
      out.emplace_back(fmt::format("tiles-{}w{}s{}", per_warp ? "warp-" : "", warps, stages), o);
    }
  for (double density : a.act_densities) {
    DecodeLinearOptions o;
    o.dtype = dtype;
    o.act_density = density;
    o.blocks_per_sm = a.blocks_per_sm;
    const DecodeChoice c = decode_plan_choice(ctx, pw.rows, pw.cols, pw.nnz(), o);
    const bool splits = c.mapping == DecodeMapping::Ring || c.mapping == DecodeMapping::Dense ||
                        c.mapping == DecodeMapping::DenseColumns || c.mapping == DecodeMapping::Tiles;
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) {
      return p.second.mapping == c.mapping && (!splits || p.second.blocks_per_sm == c.blocks_per_sm) &&
             (c.mapping != DecodeMapping::RowBlocks || p.second.row_block_words == c.row_block_words) &&
             p.second.tiles_warps == 0;
    });
    if (it == out.end()) {
      DecodeLinearOptions f;
      f.dtype = dtype;
      f.mapping = c.mapping;
      f.blocks_per_sm = c.blocks_per_sm;
      f.row_block_words = c.row_block_words;
      out.emplace_back(fmt::format("auto-{}-b{}-w{}", to_string(c.mapping), c.blocks_per_sm, c.row_block_words), f);
      it = std::prev(out.end());
    }
    auto_row[density] = {it->first, c};
  }
  return out;
}

// One layer at every activation density: dense cuBLAS (once: it reads all of W whatever x is),
// cuSPARSE f32 CSR SpMV (once, at the first density), and each column bitmap mapping in the dtype at
// each density, its y checked against the CPU on the same rounded inputs. Returns the layer's record
// with one entry per density under "at".
nlohmann::json bench_layer(Context& ctx, const Stream& s, const DecodeArgs& a, const LayerShape& shape,
                           std::vector<float> w, double copy_gbs, tools::CublasGemv& cublas) {
  const tools::DenseType dt = tools::dense_type_from_string(a.dtype);
  const int32_t rows = shape.out, cols = shape.in;
  // A synthetic activation (normal); Wanda scores |W| by its magnitudes (a one-token calibration).
  const std::vector<float> x = synthetic_weights(1, cols, 1000 + static_cast<uint64_t>(shape.in) * 7 + shape.out);
  std::vector<float> norms(static_cast<size_t>(cols));
  for (int32_t j = 0; j < cols; ++j) norms[static_cast<size_t>(j)] = std::fabs(x[static_cast<size_t>(j)]);
  const CsrMatrix<float> pw = a.prune == "wanda" ? prune_wanda(w, rows, cols, norms, a.weight_sparsity)
                                                 : prune_magnitude(w, rows, cols, a.weight_sparsity);
  const int64_t esize = tools::dense_type_bytes(dt), strips = (rows + 1023) / 1024;
  const size_t dense_bytes = static_cast<size_t>(rows) * cols * static_cast<size_t>(esize);
  // Dense rows read all of W: copies until W x copies is three times the L2 (rotation_copies, <= 64).
  const int copies = std::max(1, tools::rotation_copies(dense_bytes, ctx.device().l2_bytes, size_t(8) << 30));
  tools::TimingOptions timing;
  timing.graph = true;
  timing.samples = 15;
  timing.batch = 20;
  nlohmann::json rec{{"layer", shape.kind},    {"rows", rows},
                     {"cols", cols},           {"copies", copies},
                     {"weight_nnz", pw.nnz()}, {"dense_bytes", static_cast<int64_t>(dense_bytes)}};
  auto round = [&](float v) {
    return dt == tools::DenseType::F16    ? half_to_float(float_to_half(v))
           : dt == tools::DenseType::BF16 ? bf16_to_float(float_to_bf16(v))
                                          : v;
  };
  std::vector<float> xr(x.size());
  for (size_t i = 0; i < x.size(); ++i) xr[i] = round(x[i]);

  // --batch: the same x in every row (each row's y is then row 0's, which is checked).
  std::vector<float> xrep;
  for (int b = 0; b < a.batch; ++b) xrep.insert(xrep.end(), x.begin(), x.end());
  const size_t y_len = static_cast<size_t>(rows) * static_cast<size_t>(a.batch);
  DeviceBuffer<float> xd{std::span<const float>(xrep)}, yd{y_len};
  DeviceBuffer<uint16_t> x16 = dt == tools::DenseType::F32 ? DeviceBuffer<uint16_t>(1) : dense16(xrep, dt), y16(y_len);
  {
    std::vector<DeviceBuffer<uint16_t>> w16;
    std::vector<DeviceBuffer<float>> w32;
    for (int c = 0; c < copies; ++c) {
      if (dt == tools::DenseType::F32)
        w32.emplace_back(std::span<const float>(w));
      else
        w16.push_back(dense16(w, dt));
    }
    rec["dense_us"] = tools::time_on_stream(s.handle(), timing, [&](int64_t i) {
                        const auto c = static_cast<size_t>(i % copies);
                        if (dt == tools::DenseType::F32)
                          cublas.run(dt, rows, cols, w32[c].ptr(), xd.ptr(), yd.ptr(), a.batch);
                        else
                          cublas.run(dt, rows, cols, w16[c].ptr(), x16.ptr(), y16.ptr(), a.batch);
                      }).median_us;
  }
  w.clear();
  w.shrink_to_fit();
  const double dense_us = rec["dense_us"].get<double>();
  {
    // cuSPARSE CSR SpMV (f32, ALG1) on the pruned W, x dense: what a user without dbsparse runs.
    const int sp_copies = std::min(copies, 8);
    std::vector<std::unique_ptr<tools::CusparseSpmv<float>>> cs;
    for (int c = 0; c < sp_copies; ++c) cs.push_back(std::make_unique<tools::CusparseSpmv<float>>(pw, s.handle()));
    DeviceBuffer<float> ys{static_cast<size_t>(rows)};
    rec["cusparse_f32_us"] =
        tools::time_on_stream(s.handle(), timing, [&](int64_t i) {
          for (int b = 0; b < a.batch; ++b)  // an SpMV a row of x
            cs[static_cast<size_t>(i % sp_copies)]->run(tools::CusparseSpmvAlg::CsrAlg1, xd.ptr(), ys.ptr());
        }).median_us;
  }
  std::vector<int64_t> col_nnz(static_cast<size_t>(cols), 0);
  for (int32_t j : pw.col_idx) ++col_nnz[static_cast<size_t>(j)];

  // The plans, with copies enough that the bytes of a call at the sparsest density, summed over
  // the copies, pass three times the L2 (a whole model's weights never sit in the L2 either).
  const double min_density = *std::min_element(a.act_densities.begin(), a.act_densities.end());
  const auto touched_at = [&](const std::vector<float>& xs) {
    int64_t kept = 0, nnz = 0;
    for (int32_t j = 0; j < cols; ++j)
      if (xs[static_cast<size_t>(j)] != 0.0f) ++kept, nnz += col_nnz[static_cast<size_t>(j)];
    // Per kept column: each strip's 32 mask words and its offset; then its values; then x and y.
    return std::pair{kept, kept * strips * (32 * 4 + 4) + nnz * esize + (int64_t{cols} + rows) * esize};
  };
  // The bytes a call reads at the sparsest density: what the plans' copies must outgrow the L2 by.
  const float tau_min = min_density >= 1.0 ? 0.0f : topk_threshold(xr, min_density);
  const int64_t touched_min = touched_at(threshold_activations(xr, tau_min)).second;
  std::map<std::string, std::vector<DecodeLinearPlan>> plans;
  std::map<double, std::pair<std::string, DecodeChoice>> auto_row;
  for (const auto& [name, o] : plans_to_time(ctx, a, pw, static_cast<DecodeDtype>(static_cast<int>(dt)), auto_row)) {
    auto& v = plans[name];
    v.push_back(plan_decode_linear(ctx, pw, o));
    const int64_t touched = touched_min;
    const int64_t budget = int64_t{12} << 30;
    const int n = static_cast<int>(std::clamp<int64_t>(
        (3 * ctx.device().l2_bytes + std::max<int64_t>(touched, 1) - 1) / std::max<int64_t>(touched, 1), 1,
        std::max<int64_t>(1, std::min<int64_t>(256, budget / std::max<int64_t>(v[0].device_bytes(), 1)))));
    for (int c = 1; c < n; ++c) v.push_back(v[0].clone());
    rec["weight_bytes"][name] = v[0].weight_bytes();
    rec["plan"][name] = v[0].explain();
  }
  const uint64_t xin = dt == tools::DenseType::F32 ? xd.ptr() : x16.ptr();
  const uint64_t yout = dt == tools::DenseType::F32 ? yd.ptr() : y16.ptr();
  for (double density : a.act_densities) {
    const float tau = density >= 1.0 ? 0.0f : topk_threshold(xr, density);
    const std::vector<float> xs = threshold_activations(xr, tau);
    const auto [kept, touched] = touched_at(xs);
    // The reference on the rounded inputs, and sum |w||x| per row: the error's yardstick.
    std::vector<double> ref(static_cast<size_t>(rows)), scale(static_cast<size_t>(rows));
    for (int32_t i = 0; i < rows; ++i)
      for (int32_t p = pw.row_ptr[i]; p < pw.row_ptr[i + 1]; ++p) {
        const float xv = xs[static_cast<size_t>(pw.col_idx[p])];
        if (xv == 0.0f) continue;
        ref[static_cast<size_t>(i)] += double(round(pw.values[p])) * xv;
        scale[static_cast<size_t>(i)] += std::fabs(double(round(pw.values[p])) * xv);
      }
    nlohmann::json at{{"density", density}, {"tau", tau}, {"act_kept", kept}, {"touched_bytes", touched}};
    for (auto& [name, v] : plans) {
      for (auto& plan : v) plan.set_tau(tau);
      v[0].run_batch(xin, yout, a.batch, s.handle());
      s.synchronize();
      std::vector<float> got;
      if (dt == tools::DenseType::F32) {
        got = yd.download();
      } else {
        const auto h = y16.download();
        got = dt == tools::DenseType::F16 ? half_to_floats(h) : bf16_to_floats(h);
      }
      double err = 0;
      for (int32_t i = 0; i < rows; ++i)
        err = std::max(err, std::fabs(got[static_cast<size_t>(i)] - ref[static_cast<size_t>(i)]) /
                                std::max(scale[static_cast<size_t>(i)], 1e-30));
      const double us =
          tools::time_on_stream(s.handle(), timing, [&](int64_t i) {
            v[static_cast<size_t>(i % static_cast<int64_t>(v.size()))].run_batch(xin, yout, a.batch, s.handle());
          }).median_us;
      // The bytes this row reads: the bitmap's touched segments; a dense-columns plan the kept columns
      // whole (padded); the dense (mma) one all of W; the tiles one all of its layout, whatever x is.
      const int64_t slab = abi::decode_cols_slab_rows(static_cast<int>(esize)),
                    rows_pad = (rows + slab - 1) / slab * slab;
      const DecodeMapping held = v[0].mapping();
      const int64_t read =
          held == DecodeMapping::DenseColumns ? kept * rows_pad * esize + (int64_t{cols} + rows) * esize
          : held == DecodeMapping::Dense      ? static_cast<int64_t>(dense_bytes) + (int64_t{cols} + rows) * esize
          : held == DecodeMapping::Tiles      ? v[0].weight_bytes() + (int64_t{cols} + rows) * esize
                                              : touched;
      at[name] = {{"us", us},
                  {"read_bytes", read},
                  {"speedup_over_dense", dense_us / us},
                  {"max_rel_err", err},
                  {"copies", v.size()},
                  {"pct_copy_bw", 100.0 * (static_cast<double>(read) / (us * 1e-6)) / (copy_gbs * 1e9)}};
    }
    if (a.ablation) {
      // The f32 SpMSpV engine (DB format), auto and forced directions, on the f32 x.
      const float tau32 = density >= 1.0 ? 0.0f : topk_threshold(x, density);
      for (auto [name, dir] : {std::pair{"spmspv_auto", SpmspvDirection::Auto},
                               {"spmspv_push", SpmspvDirection::Push},
                               {"spmspv_pull", SpmspvDirection::Pull}}) {
        SparseLinearOptions o;
        o.tau = tau32;
        o.direction = dir;
        auto plan = plan_sparse_linear(ctx, pw, o);
        DeviceBuffer<float> y(static_cast<size_t>(rows));
        at[name] = {{"us", tools::time_on_stream(s.handle(), timing, [&](int64_t) { plan.run(xd, y, s); }).median_us},
                    {"note", "one copy: the L2 may serve part of W"}};
      }
    }
    // What a plan with the default mapping runs when told the density it will see: the tuning
    // DB's row for the layer, else the model's choice.
    const auto& [auto_name, chosen] = auto_row.at(density);
    at["auto"] = at[auto_name];
    at["auto"]["mapping"] = to_string(chosen.mapping);
    at["auto"]["blocks_per_sm"] = chosen.blocks_per_sm;
    at["auto"]["source"] = chosen.source == ConfigSource::Default ? "model" : to_string(chosen.source);
    rec["at"].push_back(at);
    double best = INFINITY;
    for (const auto& pl : plans) best = std::min(best, at[pl.first]["us"].get<double>());
    fmt::print(
        "{:<6} {:>5}x{:<5} {:>5.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>7.2f}x {:>7.2f}x {:>6.1f}% {:>6.3f} {:>9.1e}\n",
        shape.kind, rows, cols, density, dense_us, rec["cusparse_f32_us"].get<double>(), at["ring"]["us"].get<double>(),
        at["dbcols"]["us"].get<double>(), at["columns"]["us"].get<double>(), at["rowblocks"]["us"].get<double>(),
        at.contains("dbdense") ? at["dbdense"]["us"].get<double>() : NAN,
        at.contains("tiles") ? at["tiles"]["us"].get<double>() : NAN, at["auto"]["speedup_over_dense"].get<double>(),
        dense_us / best, at["auto"]["pct_copy_bw"].get<double>(),
        double(rec["weight_bytes"]["ring"].get<int64_t>()) / (2.0 * rows * cols),
        at["auto"]["max_rel_err"].get<double>());
    std::fflush(stdout);
  }
  return rec;
}

}  // namespace

Runner add_decode_bench(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto a = std::make_shared<DecodeArgs>();
  sub->add_option("--model", a->model, "Model whose layer shapes are timed")
      ->required()
      ->check(CLI::IsMember(known_models()));
  sub->add_option("--weights", a->weights,
                  "Directory of the model's .safetensors files (default: synthetic weights, normal(0, 0.02), seeded)");
  sub->add_option("--layer", a->layer, "With --weights: the transformer block whose linear layers are timed")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--weight-sparsity", a->weight_sparsity, "Share of each row's weights pruned")
      ->check(finite_range(0.0, 0.99));
  sub->add_option("--act-density", a->act_densities,
                  "Shares of activations kept, each timed (default 1,0.5,0.3,0.1; tau per layer from a synthetic x)")
      ->delimiter(',')
      ->check(finite_range(1e-4, 1.0));
  sub->add_option("--dtype", a->dtype,
                  "Weights' and activations' dtype, of the dense cuBLAS baseline and of dbsparse's layers")
      ->check(CLI::IsMember({"f16", "bf16", "f32"}));
  sub->add_option("--prune", a->prune, "wanda (|W| x |x| of the synthetic activation) or magnitude")
      ->check(CLI::IsMember({"wanda", "magnitude"}));
  sub->add_option("--json", a->json_path, "Write every layer's record as JSON");
  sub->add_option("--blocks-per-sm", a->blocks_per_sm, "The lanes mapping's thread blocks per SM (column splits)")
      ->check(CLI::Range(1, 64));
  sub->add_option("--batch", a->batch,
                  "Rows of x a step (several sequences or speculative tokens): plans run_batch, the dense baseline a "
                  "GEMM of that many columns, cuSPARSE an SpMV a row")
      ->check(CLI::Range(1, 64));
  sub->add_flag("--no-fuse", a->no_fuse, "Leave out the stacked q|k|v and gate|up rows (one plan and one launch each)");
  sub->add_option("--only", a->only, "Time only these layers (q,k,v,o,gate,up,down); no stacked rows or block sums")
      ->delimiter(',')
      ->check(CLI::IsMember({"q", "k", "v", "o", "gate", "up", "down"}));
  sub->add_flag("--ablation", a->ablation, "Also time the f32 SpMSpV engine (DB format): auto, push-only, pull-only");
  return [a]() {
    const ModelShapes m = model_shapes(a->model);
    std::vector<LinearLayerRef> refs;
    if (!a->weights.empty()) refs = find_linear_layers(a->weights);
    Context ctx;
    Stream s(ctx);
    const double copy_gbs = tools::measure_copy_bandwidth(s.handle());
    tools::CublasGemv cublas(s.handle());
    fmt::print(
        "device {}, copy bandwidth {:.0f} GB/s; {} ({} layers), weights {}, {:.0f}% pruned ({}); dtype {}; "
        "batch {}; CUDA graph replay, median of 15 x 20, weights rotated past the L2\n",
        ctx.device().name, copy_gbs, m.name, m.layers, a->weights.empty() ? "synthetic" : a->weights,
        100 * a->weight_sparsity, a->prune, a->dtype, a->batch);
    fmt::print("{:<6} {:>11} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>7} {:>6} {:>9}\n",
               "layer", "shape", "act", "dense us", "cusp f32", "ring", "dbcols", "columns", "rowblks", "dbdense",
               "tiles", "auto x", "best x", "%BW", "w/f16", "err");
    nlohmann::json layers = nlohmann::json::array();
    std::map<std::string, std::vector<float>> kept_w;  // dense weights of the layers stacked below
    std::map<std::string, nlohmann::json> by_kind;
    const bool partial = !a->only.empty();
    if (partial) a->no_fuse = true;
    for (const LayerShape& shape : m.linear) {
      if (partial && std::find(a->only.begin(), a->only.end(), shape.kind) == a->only.end()) continue;
      std::vector<float> w;
      if (refs.empty()) {
        w = synthetic_weights(shape.out, shape.in, 17 + static_cast<uint64_t>(layers.size()));
      } else {
        auto it = std::find_if(refs.begin(), refs.end(),
                               [&](const LinearLayerRef& r) { return r.layer == a->layer && r.kind == shape.kind; });
        if (it == refs.end())
          throw UsageError(fmt::format("{}: no {} weight of layer {}", a->weights, shape.kind, a->layer));
        w = SafetensorsFile::open(it->file).read_f32(it->info.name);
      }
      if (!a->no_fuse && shape.kind != "o" && shape.kind != "down") kept_w[shape.kind] = w;
      nlohmann::json rec = bench_layer(ctx, s, *a, shape, std::move(w), copy_gbs, cublas);
      by_kind[shape.kind] = rec;
      layers.push_back(std::move(rec));
    }
    // q, k, v read the same x, and so do gate and up: stacked, each group is one plan and one
    // launch (stack_rows; Wanda prunes per output row, so stacking before or after pruning is the
    // same). Dense is timed stacked too: a serving stack fuses these GEMVs as well.
    nlohmann::json fused = nlohmann::json::object();
    if (!a->no_fuse) {
      const std::vector<std::pair<std::string, std::vector<std::string>>> groups{{"qkv", {"q", "k", "v"}},
                                                                                 {"gateup", {"gate", "up"}}};
      for (const auto& [name, kinds] : groups) {
        std::vector<float> w;
        LayerShape st{name, 0, 0};
        for (const auto& kind : kinds) {
          const auto& part = kept_w.at(kind);
          w.insert(w.end(), part.begin(), part.end());
          st.out += by_kind.at(kind)["rows"].get<int32_t>();
          st.in = by_kind.at(kind)["cols"].get<int32_t>();
        }
        for (const auto& kind : kinds) kept_w.erase(kind);
        fused[name] = bench_layer(ctx, s, *a, st, std::move(w), copy_gbs, cublas);
      }
    }
    // The whole block per density: the seven layers one by one, and stacked (q|k|v, o, gate|up, down).
    nlohmann::json blocks = nlohmann::json::array();
    for (size_t d = 0; d < a->act_densities.size() && !partial; ++d) {
      nlohmann::json b{{"density", a->act_densities[d]}};
      const auto sum = [&](const std::vector<const nlohmann::json*>& recs, const std::string& row) {
        double t = 0;
        for (const auto* r : recs) {
          if (row != "dense" && !(*r)["at"][d].contains(row)) return double(NAN);  // no such row in this dtype
          t += row == "dense" ? (*r)["dense_us"].get<double>() : (*r)["at"][d][row]["us"].get<double>();
        }
        return t;
      };
      std::vector<const nlohmann::json*> one;
      for (const auto& l : layers) one.push_back(&l);
      for (const std::string row : {"dense", "ring", "dbcols", "columns", "rowblocks", "dbdense", "tiles", "auto"})
        b["layers_us"][row] = sum(one, row);
      std::string line =
          fmt::format("block  act {:.2f}: seven layers dense {:.1f} us, auto {:.1f} us ({:.2f}x)", a->act_densities[d],
                      b["layers_us"]["dense"].get<double>(), b["layers_us"]["auto"].get<double>(),
                      b["layers_us"]["dense"].get<double>() / b["layers_us"]["auto"].get<double>());
      if (!a->no_fuse) {
        const std::vector<const nlohmann::json*> st{&fused["qkv"], &by_kind["o"], &fused["gateup"], &by_kind["down"]};
        for (const std::string row : {"dense", "ring", "dbcols", "columns", "rowblocks", "dbdense", "tiles", "auto"})
          b["stacked_us"][row] = sum(st, row);
        line += fmt::format("; stacked dense {:.1f} us, auto {:.1f} us ({:.2f}x)",
                            b["stacked_us"]["dense"].get<double>(), b["stacked_us"]["auto"].get<double>(),
                            b["stacked_us"]["dense"].get<double>() / b["stacked_us"]["auto"].get<double>());
      }
      double worst = INFINITY;
      std::string worst_name;
      for (const auto& l : layers)
        if (const double x = l["at"][d]["auto"]["speedup_over_dense"].get<double>(); x < worst)
          worst = x, worst_name = l["layer"].get<std::string>();
      b["worst_layer"] = {{"layer", worst_name}, {"speedup_over_dense", worst}};
      fmt::print("{}; worst layer {} {:.2f}x\n", line, worst_name, worst);
      blocks.push_back(std::move(b));
    }
    if (!a->json_path.empty()) {
      nlohmann::json j{{"tool", "dbsparse decode-bench"},
                       {"model", m.name},
                       {"dtype", a->dtype},
                       {"weight_sparsity", a->weight_sparsity},
                       {"batch", a->batch},
                       {"act_densities", a->act_densities},
                       {"prune", a->prune},
                       {"device", ctx.device().name},
                       {"copy_bandwidth_gbs", copy_gbs},
                       {"layers", layers},
                       {"stacked", fused},
                       {"blocks", blocks},
                       {"date", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)))}};
      support::write_file_atomic(a->json_path, j.dump(2) + "\n");  // an unwritable path is an error, not exit 0
      fmt::print("wrote {}\n", a->json_path);
    }
    return 0;
  };
}

}  // namespace dbsparse::cli

// `dbsparse decode-bench`: one transformer block's linear layers at batch 1, pruned and with
// sparsified activations (DB-Decoding), against dense cuBLAS GEMV and cuSPARSE CSR SpMV on the same
// stream, every row timed by CUDA graph replay with the weights rotated past the L2.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

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

namespace dbsparse::cli {
namespace {

struct DecodeArgs {
  std::string model, weights, dtype = "f16", prune = "wanda", json_path;
  double weight_sparsity = 0.5, act_density = 0.1;
  int layer = 0;
  bool ablation = false;  // also push-only, pull-only and the f32 column bitmap
  bool no_fuse = false;   // leave out the stacked q|k|v and gate|up rows
};

// The dense weights in the benchmark's dtype, as device bytes.
DeviceBuffer<uint16_t> dense16(const std::vector<float>& w, tools::DenseType t) {
  const auto h = t == tools::DenseType::F16 ? floats_to_half(w) : floats_to_bf16(w);
  return DeviceBuffer<uint16_t>(std::span<const uint16_t>(h));
}

nlohmann::json bench_layer(Context& ctx, const Stream& s, const DecodeArgs& a, const LayerShape& shape,
                           std::vector<float> w, double copy_gbs, tools::CublasGemv& cublas) {
  const tools::DenseType dt = tools::dense_type_from_string(a.dtype);
  const int32_t rows = shape.out, cols = shape.in;
  // A synthetic activation (normal), its per-layer tau for the target density, the sparsified x.
  std::vector<float> x = synthetic_weights(1, cols, 1000 + static_cast<uint64_t>(shape.in) * 7 + shape.out);
  const float tau = topk_threshold(x, a.act_density);
  const std::vector<float> xs = threshold_activations(x, tau);
  std::vector<float> norms(static_cast<size_t>(cols));
  for (int32_t j = 0; j < cols; ++j) norms[static_cast<size_t>(j)] = std::fabs(x[static_cast<size_t>(j)]);
  const CsrMatrix<float> pw = a.prune == "wanda" ? prune_wanda(w, rows, cols, norms, a.weight_sparsity)
                                                 : prune_magnitude(w, rows, cols, a.weight_sparsity);
  const size_t dense_bytes = static_cast<size_t>(rows) * cols * static_cast<size_t>(tools::dense_type_bytes(dt));
  // Dense rows read all of W: copies until W x copies is three times the L2 (rotation_copies, <= 64).
  const int copies = std::max(1, tools::rotation_copies(dense_bytes, ctx.device().l2_bytes, size_t(8) << 30));
  // The f32 SpMSpV rows convert each copy (no clone yet): at most 8, recorded with the row.
  const int sp_copies = std::min(copies, 8);
  tools::TimingOptions timing;
  timing.graph = true;
  timing.samples = 15;
  timing.batch = 20;
  nlohmann::json rec{{"layer", shape.kind}, {"rows", rows}, {"cols", cols}, {"tau", tau}, {"copies", copies},
                     {"weight_nnz", pw.nnz()}};
  int64_t kept = 0;
  for (float v : xs) kept += v != 0.0f;
  rec["act_kept"] = kept;
  // The kept columns' stored weights: what any push over the active columns must read. The column
  // bitmap layout reads, per kept column, each 1024-row strip's 32 mask words and its offset too.
  int64_t kept_nnz = 0;
  {
    std::vector<int64_t> col_nnz(static_cast<size_t>(cols), 0);
    for (int32_t j : pw.col_idx) ++col_nnz[static_cast<size_t>(j)];
    for (int32_t j = 0; j < cols; ++j)
      if (xs[static_cast<size_t>(j)] != 0.0f) kept_nnz += col_nnz[static_cast<size_t>(j)];
  }
  const int64_t esize = tools::dense_type_bytes(dt), strips = (rows + 1023) / 1024;
  const int64_t touched = kept * strips * (32 * 4 + 4) + kept_nnz * esize;

  // Dense cuBLAS in the dtype (f32 uses the float data directly).
  DeviceBuffer<float> xd{std::span<const float>(x)}, yd{static_cast<size_t>(rows)};
  std::vector<DeviceBuffer<uint16_t>> w16;
  std::vector<DeviceBuffer<float>> w32;
  DeviceBuffer<uint16_t> x16, y16(static_cast<size_t>(rows));
  if (dt == tools::DenseType::F32) {
    for (int c = 0; c < copies; ++c) w32.emplace_back(std::span<const float>(w));
  } else {
    for (int c = 0; c < copies; ++c) w16.push_back(dense16(w, dt));
    x16 = dense16(x, dt);
  }
  auto dense_call = [&](int64_t i) {
    const int c = static_cast<int>(i % copies);
    if (dt == tools::DenseType::F32) cublas.run(dt, rows, cols, w32[c].ptr(), xd.ptr(), yd.ptr());
    else cublas.run(dt, rows, cols, w16[c].ptr(), x16.ptr(), y16.ptr());
  };
  const double dense_us = tools::time_on_stream(s.handle(), timing, dense_call).median_us;
  w16.clear();
  w32.clear();

  // cuSPARSE CSR SpMV on the pruned W with the sparsified x (dense, zeros kept): f32.
  DeviceBuffer<float> xsd{std::span<const float>(xs)}, ys{static_cast<size_t>(rows)};
  double cusparse_us = NAN;
  {
    std::vector<std::unique_ptr<tools::CusparseSpmv<float>>> cs;
    for (int c = 0; c < sp_copies; ++c) cs.push_back(std::make_unique<tools::CusparseSpmv<float>>(pw, s.handle()));
    cusparse_us = tools::time_on_stream(s.handle(), timing, [&](int64_t i) {
                    cs[static_cast<size_t>(i % sp_copies)]->run(tools::CusparseSpmvAlg::CsrAlg1, xsd.ptr(), ys.ptr());
                  }).median_us;
  }

  // dbsparse: auto, push-only, pull-only; the first auto plan's y is checked against the CPU.
  const std::vector<double> ref = reference::spmv(pw, std::span<const float>(xs));
  double scale = 0;  // sum |w| |x| per row, the error's yardstick
  nlohmann::json rows_json = nlohmann::json::object();
  struct Variant {
    const char* name;
    SparseLinearLayout layout;
    SpmspvDirection direction;
  };
  std::vector<Variant> variants{Variant{"auto", SparseLinearLayout::Spmspv, SpmspvDirection::Auto}};
  if (a.ablation) {
    variants.push_back(Variant{"push", SparseLinearLayout::Spmspv, SpmspvDirection::Push});
    variants.push_back(Variant{"pull", SparseLinearLayout::Spmspv, SpmspvDirection::Pull});
    variants.push_back(Variant{"colbitmap", SparseLinearLayout::ColumnBitmap, SpmspvDirection::Auto});
  }
  for (const Variant& var : variants) {
    SparseLinearOptions o;
    o.tau = tau;
    o.direction = var.direction;
    o.layout = var.layout;
    std::vector<SparseLinearPlan<float>> plans;
    for (int c = 0; c < sp_copies; ++c) plans.push_back(ctx.plan_sparse_linear(pw, o));
    DeviceBuffer<float> y(static_cast<size_t>(rows));
    plans[0].run(xd, y, s);
    s.synchronize();
    const auto got = y.download();
    double err = 0;
    for (int32_t i = 0; i < rows; ++i) {
      double si = 0;
      for (int32_t p = pw.row_ptr[i]; p < pw.row_ptr[i + 1]; ++p) si += std::fabs(pw.values[p] * xs[pw.col_idx[p]]);
      scale = std::max(scale, si);
      err = std::max(err, std::fabs(got[static_cast<size_t>(i)] - ref[static_cast<size_t>(i)]) / std::max(si, 1e-30));
    }
    const double us = tools::time_on_stream(s.handle(), timing, [&](int64_t i) {
                        plans[static_cast<size_t>(i % sp_copies)].run(xd, y, s);
                      }).median_us;
    rows_json[var.name] = {{"us", us}, {"max_rel_err", err}, {"speedup_over_dense", dense_us / us}, {"copies", sp_copies},
                           {"device_bytes", plans[0].device_bytes()},
                           {"direction", var.layout == SparseLinearLayout::Spmspv
                                             ? to_string(plans[0].spmspv().last_direction(s))
                                             : "push"}};
  }
  // The column bitmap layout in the benchmark's dtype, cut by columns (decode_fused) and by row
  // blocks (decode_rows): the rows the targets are about. Their error is against the CPU
  // on the same rounded inputs (accumulation in fp32 on both sides).
  for (const auto& [row_name, mapping] : {std::pair{std::string("colbitmap_"), DecodeMapping::Columns},
                                          std::pair{std::string("rowblocks_"), DecodeMapping::RowBlocks}}) {
    DecodeLinearOptions o;
    o.dtype = static_cast<DecodeDtype>(static_cast<int>(dt));
    o.tau = tau;
    o.mapping = mapping;
    std::vector<DecodeLinearPlan> plans;
    plans.push_back(ctx.plan_decode_linear(pw, o));
    // A call reads only the active columns' weights: enough copies that those bytes, summed over
    // the copies, are three times the L2 (a whole model's weights never sit in the L2 either).
    const int64_t budget = int64_t{16} << 30;
    const int cb_copies = static_cast<int>(std::clamp<int64_t>(
        (3 * ctx.device().l2_bytes + std::max<int64_t>(touched, 1) - 1) / std::max<int64_t>(touched, 1), 1,
        std::max<int64_t>(1, std::min<int64_t>(1024, budget / std::max<int64_t>(plans[0].device_bytes(), 1)))));
    for (int c = 1; c < cb_copies; ++c) plans.push_back(plans[0].clone());
    auto round = [&](float v) {
      return dt == tools::DenseType::F16 ? half_to_float(float_to_half(v))
             : dt == tools::DenseType::BF16 ? bf16_to_float(float_to_bf16(v))
                                            : v;
    };
    const uint64_t xin = dt == tools::DenseType::F32 ? xd.ptr() : x16.ptr();
    const uint64_t yout = dt == tools::DenseType::F32 ? yd.ptr() : y16.ptr();
    plans[0].run(xin, yout, s.handle());
    s.synchronize();
    std::vector<float> got(static_cast<size_t>(rows));
    if (dt == tools::DenseType::F32) {
      got = yd.download();
    } else {
      const auto h = y16.download();
      got = dt == tools::DenseType::F16 ? half_to_floats(h) : bf16_to_floats(h);
    }
    double err = 0;
    for (int32_t i = 0; i < rows; ++i) {
      double ref = 0, si = 0;
      for (int32_t p = pw.row_ptr[i]; p < pw.row_ptr[i + 1]; ++p) {
        const float xr = round(x[static_cast<size_t>(pw.col_idx[p])]);
        if (!(std::fabs(xr) >= tau) || xr == 0.0f) continue;
        ref += double(round(pw.values[p])) * xr;
        si += std::fabs(double(round(pw.values[p])) * xr);
      }
      err = std::max(err, std::fabs(got[static_cast<size_t>(i)] - ref) / std::max(si, 1e-30));
    }
    const double us = tools::time_on_stream(s.handle(), timing, [&](int64_t i) {
                        plans[static_cast<size_t>(i % cb_copies)].run(xin, yout, s.handle());
                      }).median_us;
    rows_json[row_name + a.dtype] = {{"us", us}, {"max_rel_err", err}, {"speedup_over_dense", dense_us / us},
                                          {"copies", cb_copies}, {"touched_bytes_per_call", touched},
                                          {"weight_bytes", plans[0].weight_bytes()},
                                          {"weight_over_dense_fp16", double(plans[0].weight_bytes()) / (2.0 * rows * cols)}};
    if (mapping == DecodeMapping::RowBlocks) {
      // The same kernel with no column kept: it still reads x and writes y, so this is the floor of
      // any one-launch layer in this harness (launch, the x round trip, the y write).
      for (auto& p : plans) p.set_tau(std::numeric_limits<float>::infinity());
      rows_json["rowblocks_floor"] = {{"us", tools::time_on_stream(s.handle(), timing, [&](int64_t i) {
                                                plans[static_cast<size_t>(i % cb_copies)].run(xin, yout, s.handle());
                                              }).median_us}};
    }
  }
  // The bytes a push over the active columns needs: their entries (4-byte index, value) and x.
  const int64_t needed = static_cast<int64_t>(cols) * 4 + static_cast<int64_t>(rows) * 4 + kept_nnz * 8;
  const double auto_us = rows_json["auto"]["us"].get<double>();
  rec["dense_us"] = dense_us;
  rec["cusparse_us"] = cusparse_us;
  {
    // What a plan with the default mapping (Auto) runs: one of the two rows above.
    const DecodeMapping chosen = choose_decode_mapping(rows, cols);
    rows_json["auto_mapping"] = {
        {"mapping", to_string(chosen)},
        {"us", rows_json[(chosen == DecodeMapping::RowBlocks ? "rowblocks_" : "colbitmap_") + a.dtype]["us"]}};
  }
  rec["dbsparse"] = rows_json;
  rec["needed_bytes"] = needed;
  rec["needed_pct_copy_bw"] = 100.0 * (static_cast<double>(needed) / (auto_us * 1e-6)) / (copy_gbs * 1e9);
  {
    // The column bitmap row needs the active columns' mask words and values (dtype) and x, y.
    const int64_t cb_needed = (static_cast<int64_t>(cols) + rows) * esize + touched;
    const double cb_us = rows_json["colbitmap_" + a.dtype]["us"].get<double>();
    rec["colbitmap_needed_bytes"] = cb_needed;
    rec["colbitmap_pct_copy_bw"] = 100.0 * (static_cast<double>(cb_needed) / (cb_us * 1e-6)) / (copy_gbs * 1e9);
  }
  rec["dense_fp16_bytes"] = static_cast<int64_t>(rows) * cols * 2;
  rec["converted_over_dense_fp16"] = rows_json["auto"]["device_bytes"].get<double>() / (double(rows) * cols * 2);
  const auto& cb = rows_json["colbitmap_" + a.dtype];
  const double rb_us = rows_json["rowblocks_" + a.dtype]["us"].get<double>();
  fmt::print("{:<6} {:>5}x{:<5} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>7.2f} {:>7.2f}x {:>7.2f}x {:>7.2f}x {:<5} {:>8.1f}% {:>6.2f} {:>9.1e} {:>9.1e}\n",
             shape.kind, rows, cols, dense_us, cusparse_us, auto_us, rows_json.value("push", nlohmann::json{{"us", NAN}})["us"].get<double>(),
             rows_json.value("pull", nlohmann::json{{"us", NAN}})["us"].get<double>(),
             rows_json.value("colbitmap", nlohmann::json{{"us", NAN}})["us"].get<double>(), cb["us"].get<double>(), rb_us,
             rows_json["rowblocks_floor"]["us"].get<double>(), dense_us / auto_us, dense_us / cb["us"].get<double>(), dense_us / rb_us,
             rows_json["auto"]["direction"].get<std::string>(), rec["colbitmap_pct_copy_bw"].get<double>(),
             cb["weight_over_dense_fp16"].get<double>(), rows_json["auto"]["max_rel_err"].get<double>(),
             cb["max_rel_err"].get<double>());
  return rec;
}

}  // namespace

Runner add_decode_bench(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto a = std::make_shared<DecodeArgs>();
  sub->add_option("--model", a->model, "Model whose layer shapes are timed")->required()->check(CLI::IsMember(known_models()));
  sub->add_option("--weights", a->weights, "Directory of the model's .safetensors files (default: synthetic weights, normal(0, 0.02), seeded)");
  sub->add_option("--layer", a->layer, "With --weights: the transformer block whose linear layers are timed")->check(CLI::NonNegativeNumber);
  sub->add_option("--weight-sparsity", a->weight_sparsity, "Share of each row's weights pruned")->check(CLI::Range(0.0, 0.99));
  sub->add_option("--act-density", a->act_density, "Share of activations kept (tau per layer from a synthetic x)")->check(CLI::Range(1e-4, 1.0));
  sub->add_option("--dtype", a->dtype, "Weights' dtype of the dense cuBLAS baseline and the column-bitmap rows (the SpMSpV rows are f32)")->check(CLI::IsMember({"f16", "bf16", "f32"}));
  sub->add_option("--prune", a->prune, "wanda (|W| x |x| of the synthetic activation) or magnitude")->check(CLI::IsMember({"wanda", "magnitude"}));
  sub->add_option("--json", a->json_path, "Write every layer's record as JSON");
  sub->add_flag("--no-fuse", a->no_fuse, "Leave out the stacked q|k|v and gate|up rows (one plan and one launch each)");
  sub->add_flag("--ablation", a->ablation, "Also time the f32 SpMSpV forced to push and to pull, and the f32 column bitmap");
  return [a]() {
    const ModelShapes m = model_shapes(a->model);
    std::vector<LinearLayerRef> refs;
    if (!a->weights.empty()) refs = find_linear_layers(a->weights);
    Context ctx;
    Stream s(ctx);
    const double copy_gbs = tools::measure_copy_bandwidth(s.handle());
    tools::CublasGemv cublas(s.handle());
    fmt::print("device {}, copy bandwidth {:.0f} GB/s; {} ({} layers), weights {}, {:.0f}% pruned ({}), activations "
               "{:.0f}% kept; dense baseline {}; CUDA graph replay, median of 15 x 20\n",
               ctx.device().name, copy_gbs, m.name, m.layers, a->weights.empty() ? "synthetic" : a->weights,
               100 * a->weight_sparsity, a->prune, 100 * a->act_density, a->dtype);
    fmt::print("{:<6} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>8} {:>8} {:>8} {:<5} {:>9} {:>6} {:>9} {:>9}\n",
               "layer", "shape", "dense us", "cusparse", "auto f32", "push", "pull", "cb f32", "cb dtype", "rows dt",
               "floor", "auto x", "cb x", "rows x", "dir", "%BW need", "cb/f16", "err auto", "err cb");
    nlohmann::json layers = nlohmann::json::array();
    double sum_dense = 0, sum_auto = 0, sum_cb = 0, sum_rb = 0, sum_am = 0;
    std::map<std::string, std::vector<float>> kept_w;  // dense weights of the layers stacked below
    std::map<std::string, nlohmann::json> by_kind;
    for (const LayerShape& shape : m.linear) {
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
      sum_dense += rec["dense_us"].get<double>();
      sum_auto += rec["dbsparse"]["auto"]["us"].get<double>();
      sum_cb += rec["dbsparse"]["colbitmap_" + a->dtype]["us"].get<double>();
      sum_rb += rec["dbsparse"]["rowblocks_" + a->dtype]["us"].get<double>();
      sum_am += rec["dbsparse"]["auto_mapping"]["us"].get<double>();
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
      const auto block = [&](const std::string& key) {
        const auto us = [&](const nlohmann::json& r) { return r[key].get<double>(); };
        const auto sp = [&](const nlohmann::json& r) { return r["dbsparse"][key]["us"].get<double>(); };
        return key == "dense_us" ? us(fused["qkv"]) + us(by_kind["o"]) + us(fused["gateup"]) + us(by_kind["down"])
                                 : sp(fused["qkv"]) + sp(by_kind["o"]) + sp(fused["gateup"]) + sp(by_kind["down"]);
      };
      const double fd = block("dense_us"), fc = block("colbitmap_" + a->dtype), fr = block("rowblocks_" + a->dtype),
                   fa = block("auto_mapping");
      fused["block_dense_stacked_us"] = fd;
      fused["block_auto_mapping_stacked_us"] = fa;
      fused["block_colbitmap_stacked_us"] = fc;
      fused["block_rowblocks_stacked_us"] = fr;
      fmt::print("block  stacked (q|k|v, o, gate|up, down): dense {:.2f} us; column bitmap ({}) by columns {:.2f} us, "
                 "by row blocks {:.2f} us, auto mapping {:.2f} us: {:.2f}x dense per layer, {:.2f}x dense stacked\n",
                 fd, a->dtype, fc, fr, fa, sum_dense / fa, fd / fa);
    }
    fmt::print("block  sum: dense {} {:.2f} us; dbsparse auto (f32) {:.2f} us: {:.2f}x; column bitmap ({}) by columns "
               "{:.2f} us: {:.2f}x, by row blocks {:.2f} us: {:.2f}x, auto mapping {:.2f} us: {:.2f}x\n",
               a->dtype, sum_dense, sum_auto, sum_dense / sum_auto, a->dtype, sum_cb, sum_dense / sum_cb, sum_rb,
               sum_dense / sum_rb, sum_am, sum_dense / sum_am);
    if (!a->json_path.empty()) {
      nlohmann::json j{{"tool", "dbsparse decode-bench"}, {"model", m.name}, {"dtype", a->dtype},
                       {"weight_sparsity", a->weight_sparsity}, {"act_density", a->act_density}, {"prune", a->prune},
                       {"device", ctx.device().name}, {"copy_bandwidth_gbs", copy_gbs}, {"layers", layers},
                       {"block_dense_us", sum_dense}, {"block_auto_us", sum_auto}, {"block_colbitmap_us", sum_cb},
                       {"block_rowblocks_us", sum_rb}, {"block_auto_mapping_us", sum_am},
                       {"stacked", fused},
                       {"date", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)))}};
      std::ofstream(a->json_path) << j.dump(2) << "\n";
      fmt::print("wrote {}\n", a->json_path);
    }
    return 0;
  };
}

}  // namespace dbsparse::cli

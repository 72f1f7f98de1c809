#include "tools/apps/gcn.hpp"

#include <cublas_v2.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/graph.hpp"
#include "dbsparse/spmm.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/spmm/spmm_relu.hpp"
#include "tools/baselines/cusparse_spmm.hpp"
#include "tools/bench/random.hpp"
#include "tools/bench/timing.hpp"

namespace dbsparse::tools {
namespace {

void check_blas(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) throw CudaError(call, static_cast<int>(s), cublasGetStatusString(s));
}

std::vector<float> glorot(int fan_in, int fan_out, uint64_t seed) {
  std::vector<float> w = random_values<float>(size_t(fan_in) * size_t(fan_out), seed);
  const double bound = std::sqrt(6.0 / double(fan_in + fan_out));
  for (auto& v : w) v = static_cast<float>(v * bound);
  return w;
}

// C (m x n) = A (m x k) · B (k x n), row-major, in double.
std::vector<double> dense_product(std::span<const double> a, std::span<const float> b, int64_t m, int64_t k,
                                  int64_t n) {
  std::vector<double> c(size_t(m) * size_t(n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      const double v = a[size_t(i * k + p)];
      if (v == 0.0) continue;
      const float* brow = b.data() + p * n;
      double* crow = c.data() + i * n;
      for (int64_t j = 0; j < n; ++j) crow[j] += v * double(brow[j]);
    }
  return c;
}

// C (rows x n) = Â · B (cols x n), row-major, in double.
std::vector<double> sparse_product(const CsrMatrix<float>& a, const std::vector<double>& b, int64_t n) {
  std::vector<double> c(size_t(a.rows) * size_t(n), 0.0);
  for (int32_t i = 0; i < a.rows; ++i)
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const double v = a.values[p];
      const double* brow = b.data() + int64_t{a.col_idx[p]} * n;
      double* crow = c.data() + int64_t{i} * n;
      for (int64_t j = 0; j < n; ++j) crow[j] += v * brow[j];
    }
  return c;
}

template <class W>
double max_error(std::span<const float> got, std::span<const W> want, std::span<const float> scale) {
  if (got.size() != want.size() || got.size() != scale.size())
    throw UsageError(fmt::format("gcn_max_error: lengths {}, {} and {} differ", got.size(), want.size(), scale.size()));
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(want[i]));
    const double e = scale[i] > 0 ? d / double(scale[i]) : (d == 0 ? 0.0 : std::numeric_limits<double>::infinity());
    if (std::isnan(e)) return e;
    worst = std::max(worst, e);
  }
  return worst;
}

void check_dims(const GcnDims& d) {
  if (d.nodes < 0 || d.features < 1 || d.hidden < 1 || d.classes < 1)
    throw UsageError(fmt::format("gcn: nodes {}, features {}, hidden {}, classes {}: sizes must be positive", d.nodes,
                                 d.features, d.hidden, d.classes));
}

}  // namespace

GcnAdjacency gcn_normalized_adjacency(const CsrMatrix<double>& a) {
  if (a.rows != a.cols)
    throw UsageError(fmt::format("gcn: the graph must be square (an adjacency matrix), got {} x {}", a.rows, a.cols));
  GcnAdjacency out;
  PatternGraph g = pattern_of(a);
  for (int32_t i = 0; i < g.n; ++i)
    out.self_loops += std::binary_search(g.col_idx.begin() + g.row_ptr[i], g.col_idx.begin() + g.row_ptr[i + 1], i);
  out.symmetrised = !is_symmetric(g);
  if (out.symmetrised) g = symmetrize(g, /*drop_self_loops=*/true);
  const int32_t n = g.n;
  // Row i of A + I: its off-diagonal entries plus the diagonal, once.
  std::vector<double> inv_sqrt(static_cast<size_t>(n));
  int64_t entries = 0;
  for (int32_t i = 0; i < n; ++i) {
    int64_t d = 1;
    for (int32_t p = g.row_ptr[i]; p < g.row_ptr[i + 1]; ++p) d += g.col_idx[p] != i;
    inv_sqrt[i] = 1.0 / std::sqrt(double(d));
    entries += d;
  }
  if (entries > std::numeric_limits<int32_t>::max())
    throw UsageError(fmt::format("gcn: A + I would have {} entries, past 2^31-1", entries));
  CsrMatrix<float>& h = out.a_hat;
  h.rows = h.cols = n;
  h.row_ptr.reserve(size_t(n) + 1);
  h.col_idx.reserve(size_t(entries));
  h.values.reserve(size_t(entries));
  auto push = [&](int32_t i, int32_t j) {
    h.col_idx.push_back(j);
    h.values.push_back(static_cast<float>(inv_sqrt[i] * inv_sqrt[j]));
  };
  for (int32_t i = 0; i < n; ++i) {
    bool diagonal = false;
    for (int32_t p = g.row_ptr[i]; p < g.row_ptr[i + 1]; ++p) {
      const int32_t j = g.col_idx[p];
      if (j == i) continue;
      if (j > i && !diagonal) {
        push(i, i);
        diagonal = true;
      }
      push(i, j);
    }
    if (!diagonal) push(i, i);
    h.row_ptr.push_back(static_cast<int32_t>(h.col_idx.size()));
  }
  return out;
}

GcnInputs gcn_inputs(const GcnDims& d, uint64_t seed) {
  check_dims(d);
  GcnInputs in;
  in.x = random_values<float>(size_t(d.nodes) * size_t(d.features), seed);
  in.w1 = glorot(d.features, d.hidden, seed ^ 0x5731ULL);
  in.w2 = glorot(d.hidden, d.classes, seed ^ 0x5732ULL);
  return in;
}

GcnInputs gcn_abs_inputs(const GcnInputs& in) {
  GcnInputs out = in;
  for (auto* v : {&out.x, &out.w1, &out.w2})
    for (auto& x : *v) x = std::fabs(x);
  return out;
}

std::vector<double> gcn_forward_reference(const CsrMatrix<float>& a_hat, const GcnInputs& in, const GcnDims& d) {
  check_dims(d);
  if (a_hat.rows != d.nodes || a_hat.cols != d.nodes || in.x.size() != size_t(d.nodes) * size_t(d.features) ||
      in.w1.size() != size_t(d.features) * size_t(d.hidden) || in.w2.size() != size_t(d.hidden) * size_t(d.classes))
    throw UsageError("gcn_forward_reference: Â or the inputs do not have the dims' sizes");
  const std::vector<double> x(in.x.begin(), in.x.end());
  const std::vector<double> z1 = dense_product(x, in.w1, d.nodes, d.features, d.hidden);
  std::vector<double> h1 = sparse_product(a_hat, z1, d.hidden);
  for (auto& v : h1) v = v < 0 ? 0.0 : v;
  const std::vector<double> z2 = dense_product(h1, in.w2, d.nodes, d.hidden, d.classes);
  return sparse_product(a_hat, z2, d.classes);
}

double gcn_max_error(std::span<const float> got, std::span<const float> want, std::span<const float> scale) {
  return max_error(got, want, scale);
}

double gcn_max_error(std::span<const float> got, std::span<const double> want, std::span<const float> scale) {
  return max_error(got, want, scale);
}

double gcn_tolerance(const CsrMatrix<float>& a_hat, bool tensor_cores) {
  if (tensor_cores) return kGcnTolTf32;
  int64_t longest = 0;
  for (int32_t r = 0; r < a_hat.rows; ++r)
    longest = std::max<int64_t>(longest, a_hat.row_ptr[r + 1] - a_hat.row_ptr[r]);
  return std::max(kGcnTolF32, 4 * 0x1p-24 * std::sqrt(static_cast<double>(longest)));
}

const char* to_string(GcnStage s) {
  switch (s) {
    case GcnStage::Gemm1:
      return "gemm1 (X W1)";
    case GcnStage::Spmm1:
      return "spmm1 (A Z1)";
    case GcnStage::Relu:
      return "relu";
    case GcnStage::Gemm2:
      return "gemm2 (H1 W2)";
    case GcnStage::Spmm2:
      return "spmm2 (A Z2)";
  }
  return "?";
}

struct GcnPipeline::State {
  GcnDims d;
  CUstream stream = nullptr;
  DeviceBuffer<float> x, w1, w2, z1, p1, z2, h2;
  cublasHandle_t blas = nullptr;
  detail::ReluPass relu;  // P1 = ReLU(P1) in place, the pass cuSPARSE's pipeline needs

  // C (m x n) = A (m x k) · B (k x n), all row-major: column-major cuBLAS sees row-major M as Mᵀ,
  // so it computes Cᵀ = Bᵀ · Aᵀ, with no transposition of the data.
  void gemm(int32_t m, int n, int k, uint64_t a, uint64_t b, uint64_t c) const {
    const float one = 1.0f, zero = 0.0f;
    check_blas(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, reinterpret_cast<const float*>(b), n,
                           reinterpret_cast<const float*>(a), k, &zero, reinterpret_cast<float*>(c), n),
               "cublasSgemm");
  }
};

GcnPipeline::GcnPipeline(Context& ctx, const Stream& stream, const GcnDims& d, const GcnInputs& in)
    : s_(std::make_unique<State>()) {
  check_dims(d);
  if (d.nodes < 1) throw UsageError("GcnPipeline: the graph has no vertices");
  ctx.make_current();
  State& s = *s_;
  s.d = d;
  s.stream = static_cast<CUstream>(stream.handle());
  const size_t n = size_t(d.nodes);
  s.x = DeviceBuffer<float>(n * size_t(d.features));
  s.w1 = DeviceBuffer<float>(size_t(d.features) * size_t(d.hidden));
  s.w2 = DeviceBuffer<float>(size_t(d.hidden) * size_t(d.classes));
  s.z1 = DeviceBuffer<float>(n * size_t(d.hidden));
  s.p1 = DeviceBuffer<float>(n * size_t(d.hidden));
  s.z2 = DeviceBuffer<float>(n * size_t(d.classes));
  s.h2 = DeviceBuffer<float>(n * size_t(d.classes));
  set_inputs(in);
  check_blas(cublasCreate(&s.blas), "cublasCreate");
  check_blas(cublasSetStream(s.blas, static_cast<cudaStream_t>(stream.handle())), "cublasSetStream");
  // Plain f32 (no TF32 tensor cores), so that the dense products add no error of their own to the
  // comparison and both pipelines get the same ones.
  check_blas(cublasSetMathMode(s.blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  s.relu = detail::relu_pass(ctx, SpmmDtype::F32, static_cast<long long>(s.p1.size()));
}

GcnPipeline::~GcnPipeline() {
  if (s_ && s_->blas) cublasDestroy(s_->blas);
}

void GcnPipeline::set_inputs(const GcnInputs& in) {
  State& s = *s_;
  if (in.x.size() != s.x.size() || in.w1.size() != s.w1.size() || in.w2.size() != s.w2.size())
    throw UsageError(fmt::format("GcnPipeline: inputs of {}, {} and {} floats, the dims need {}, {} and {}",
                                 in.x.size(), in.w1.size(), in.w2.size(), s.x.size(), s.w1.size(), s.w2.size()));
  DBS_CU(cuStreamSynchronize(s.stream));  // the upload is not ordered with the stream's kernels
  s.x.upload(in.x);
  s.w1.upload(in.w1);
  s.w2.upload(in.w2);
}

void GcnPipeline::stage(GcnStage st, const GcnSparseProduct& sparse, bool relu_in_spmm1) {
  State& s = *s_;
  const GcnDims& d = s.d;
  if (d.nodes == 0) return;
  switch (st) {
    case GcnStage::Gemm1:
      s.gemm(d.nodes, d.hidden, d.features, s.x.ptr(), s.w1.ptr(), s.z1.ptr());
      break;
    case GcnStage::Spmm1:
      sparse(0, s.z1.ptr(), s.p1.ptr());
      break;
    case GcnStage::Relu:
      if (!relu_in_spmm1) s.relu.run(s.p1.ptr(), s.stream);
      break;
    case GcnStage::Gemm2:
      s.gemm(d.nodes, d.classes, d.hidden, s.p1.ptr(), s.w2.ptr(), s.z2.ptr());
      break;
    case GcnStage::Spmm2:
      sparse(1, s.z2.ptr(), s.h2.ptr());
      break;
  }
}

void GcnPipeline::forward(const GcnSparseProduct& sparse, bool relu_in_spmm1) {
  for (GcnStage st : kGcnStages) stage(st, sparse, relu_in_spmm1);
}

uint64_t GcnPipeline::output() const { return s_->h2.ptr(); }

std::vector<float> GcnPipeline::download_output() const {
  DBS_CU(cuStreamSynchronize(s_->stream));
  return s_->h2.download();
}

const GcnDims& GcnPipeline::dims() const { return s_->d; }

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

SpmmOptions spmm_options(const std::string& path) {
  SpmmOptions o;
  if (path == "auto") {
    // SpmmOptions::path Auto means "the config decides": an explicit auto goes through a config.
  } else if (path == "brp") {
    o.path = SpmmPath::Brp;
  } else if (path == "csr") {
    o.path = SpmmPath::CsrCudaCore;
  } else if (path == "condensed") {
    o.path = SpmmPath::Condensed;
  } else if (path != "config") {
    throw UsageError(fmt::format("gcn: --path '{}' (expected config, auto, brp, csr or condensed)", path));
  }
  return o;
}

}  // namespace

nlohmann::json bench_gcn(Context& ctx, const Stream& stream, const NamedMatrix& m, const GcnBenchOptions& opt) {
  const auto t_norm = std::chrono::steady_clock::now();
  const GcnAdjacency adj = gcn_normalized_adjacency(m.csr);
  const double normalize_ms = ms_since(t_norm);
  const CsrMatrix<float>& a = adj.a_hat;
  GcnDims d = opt.dims;
  d.nodes = a.rows;
  check_dims(d);
  if (d.nodes < 1) throw UsageError(fmt::format("gcn: {} has no vertices", m.name));
  const int widths[2] = {d.hidden, d.classes};
  fmt::print("graph {}: {} vertices, {} entries in A + I{}{}; features {}, hidden {}, classes {}\n", m.name, d.nodes,
             a.nnz(), adj.symmetrised ? " (A was not symmetric: A + A^T)" : "",
             adj.self_loops ? fmt::format(" ({} self loops replaced by I's)", adj.self_loops) : "", d.features,
             d.hidden, d.classes);
  fmt::print("normalisation D^-1/2 (A + I) D^-1/2 on the host: {:.1f} ms (shared by both pipelines, not timed below)\n",
             normalize_ms);
  const GcnInputs in = gcn_inputs(d, opt.seed);
  GcnPipeline pipe(ctx, stream, d, in);

  nlohmann::json rec;
  rec["graph"] = m.name;
  rec["nodes"] = d.nodes;
  rec["entries"] = a.nnz();
  rec["symmetrised"] = adj.symmetrised;
  rec["self_loops_replaced"] = adj.self_loops;
  rec["dims"] = {{"features", d.features}, {"hidden", d.hidden}, {"classes", d.classes}};
  rec["seed"] = opt.seed;
  rec["normalize_ms"] = normalize_ms;

  // dbsparse: one plan per layer (a plan is made for one width). The first plans may compile or
  // read kernels from the disk cache; the second ones find them loaded, which leaves the analysis,
  // conversion and upload that every new graph pays.
  std::optional<Config> explicit_auto;
  SpmmOptions sopt = spmm_options(opt.path);
  if (opt.reorder != "config") sopt.reorder = parse_reorder(opt.reorder);
  double reorder_ms_total = 0;  // the row orders' host time, both layers' plans
  if (opt.path == "auto") {
    explicit_auto =
        Config{"spmm", nlohmann::json{{"path", "auto"}}, ConfigSource::Explicit, "dbsparse gcn --path auto"};
    sopt.config = &*explicit_auto;
  }
  std::vector<SpmmPlan> plans;
  nlohmann::json ours = nlohmann::json::object();
  ours["layers"] = nlohmann::json::array();
  bool any_tc = false;  // a layer on tensor cores (BRP or condensed windows): TF32's tolerance
  double plan_ms_total = 0, replan_ms_total = 0;
  for (int layer = 0; layer < 2; ++layer) {
    sopt.epilogue = layer == 0 && opt.fuse_relu ? SpmmEpilogue::Relu : SpmmEpilogue::None;
    stream.synchronize();
    auto t0 = std::chrono::steady_clock::now();
    SpmmPlan first = plan_spmm(ctx, a, widths[layer], sopt);
    const double plan_ms = ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    SpmmPlan again = plan_spmm(ctx, a, widths[layer], sopt);
    const double replan_ms = ms_since(t0);
    plan_ms_total += plan_ms;
    reorder_ms_total += first.reorder_ms();
    replan_ms_total += replan_ms;
    any_tc = any_tc || again.path() != SpmmPath::CsrCudaCore;
    nlohmann::json kernels = nlohmann::json::array();
    std::string kernel_text;
    for (const KernelInfo& k : first.kernels()) {
      kernels.push_back({{"key", k.key}, {"origin", k.origin}, {"acquire_ms", k.acquire_ms}, {"load_ms", k.load_ms}});
      kernel_text += fmt::format("{}{} ({})", kernel_text.empty() ? "" : ", ", k.key, k.origin);
    }
    fmt::print("dbsparse layer {} (n = {}): plan_spmm {:.1f} ms first ({}), {:.1f} ms again; path {}{}{}\n", layer + 1,
               widths[layer], plan_ms, kernel_text, replan_ms, to_string(again.path()),
               again.path() == SpmmPath::Brp
                   ? fmt::format(" (f {}, g {}, TC share {:.3f})", again.f(), again.g(), again.tc_share())
               : again.path() == SpmmPath::Condensed
                   ? fmt::format(" (g {}, fill {:.3f})", again.g(), again.condensed_fill())
                   : "",
               again.epilogue() == SpmmEpilogue::None ? ""
               : again.epilogue_fused()               ? "; relu fused into its stores"
                                                      : "; relu as a pass of the plan's own after the product");
    ours["layers"].push_back({{"n", widths[layer]},
                              {"plan_ms", plan_ms},
                              {"plan_again_ms", replan_ms},
                              {"path", to_string(again.path())},
                              {"config", config_to_json(again.typed_config())},
                              {"config_source", to_string(again.config().source)},
                              {"tc_share", again.tc_share()},
                              {"epilogue", to_string(again.epilogue())},
                              {"epilogue_fused", again.epilogue_fused()},
                              {"device_bytes", again.device_bytes()},
                              {"kernels", kernels}});
    plans.push_back(std::move(again));
  }
  ours["plan_ms"] = plan_ms_total;
  ours["plan_again_ms"] = replan_ms_total;
  const GcnSparseProduct dbs = [&](int layer, uint64_t b, uint64_t c) {
    plans[static_cast<size_t>(layer)].run(b, c, stream.handle());
  };
  const bool relu_in_ours = opt.fuse_relu;  // layer 0's plan applies it (SpmmEpilogue::Relu)
  ours["relu_in_spmm1"] = relu_in_ours;

  // cuSPARSE: per layer, every algorithm it accepts timed on this width, the fastest kept; then its
  // setup (A upload, descriptors, buffer, preprocessing) timed for that algorithm alone.
  const TimingOptions probe_timing{2, 5, 5, false};
  std::vector<std::unique_ptr<CusparseSpmm>> cs;
  std::vector<CusparseSpmmAlg> best;
  nlohmann::json theirs = nlohmann::json::object();
  theirs["layers"] = nlohmann::json::array();
  double setup_ms_total = 0;
  for (int layer = 0; layer < 2; ++layer) {
    const int n = widths[layer];
    nlohmann::json algs = nlohmann::json::object();
    std::optional<CusparseSpmmAlg> pick;
    double pick_us = 0;
    {
      DeviceBuffer<float> b(size_t(d.nodes) * size_t(n)), c(size_t(d.nodes) * size_t(n));
      b.fill_bytes(0x3c);  // 0.0115 everywhere: finite, and the time does not depend on the values
      CusparseSpmm probe(a, n, stream.handle());
      for (CusparseSpmmAlg alg : kCusparseSpmmAlgs) {
        if (!probe.supported(alg)) {
          algs[to_string(alg)] = probe.why_unsupported(alg);
          continue;
        }
        const double us =
            time_on_stream(stream.handle(), probe_timing, [&](int64_t) { probe.run(alg, b.ptr(), c.ptr()); }).median_us;
        algs[to_string(alg)] = us;
        if (!pick || us < pick_us) {
          pick = alg;
          pick_us = us;
        }
      }
    }
    if (!pick) throw Error(fmt::format("gcn: cuSPARSE accepts none of its SpMM algorithms for n = {}", n));
    stream.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    const CusparseSpmmAlg only[] = {*pick};
    cs.push_back(std::make_unique<CusparseSpmm>(a, n, stream.handle(), only));
    stream.synchronize();
    const double setup_ms = ms_since(t0);
    setup_ms_total += setup_ms;
    best.push_back(*pick);
    std::string alg_text;
    for (const auto& [name, v] : algs.items())
      alg_text += fmt::format("{}{} {}", alg_text.empty() ? "" : ", ", name,
                              v.is_number() ? fmt::format("{:.1f} us", v.get<double>()) : std::string("refused"));
    fmt::print("cuSPARSE layer {} (n = {}): {}; using {}; setup {:.1f} ms\n", layer + 1, n, alg_text, to_string(*pick),
               setup_ms);
    theirs["layers"].push_back(
        {{"n", n}, {"algorithms_us", algs}, {"algorithm", to_string(*pick)}, {"setup_ms", setup_ms}});
  }
  theirs["setup_ms"] = setup_ms_total;
  const GcnSparseProduct cus = [&](int layer, uint64_t b, uint64_t c) {
    cs[static_cast<size_t>(layer)]->run(best[static_cast<size_t>(layer)], b, c);
  };

  // The check: both outputs, and the yardstick (cuSPARSE's pipeline on |X|, |W1|, |W2|).
  pipe.forward(dbs, relu_in_ours);
  const std::vector<float> h_ours = pipe.download_output();
  pipe.forward(cus);
  const std::vector<float> h_theirs = pipe.download_output();
  pipe.set_inputs(gcn_abs_inputs(in));
  pipe.forward(cus);
  const std::vector<float> scale = pipe.download_output();
  pipe.set_inputs(in);
  const double tol = gcn_tolerance(a, any_tc);
  const double err = gcn_max_error(h_ours, h_theirs, scale);
  bool ok = err <= tol;
  nlohmann::json check = {{"max_error", err},
                          {"tolerance", tol},
                          {"relative_to", "sum of |terms| per entry of H2 (the pipeline on |X|, |W1|, |W2|)"},
                          {"ok", ok}};
  fmt::print("check: dbsparse against cuSPARSE, max error {:.3e} of sum |terms| (tolerance {:.1e}, {}): {}\n", err, tol,
             any_tc ? "TF32, a layer is on tensor cores" : "f32", ok ? "ok" : "DIFFERENT");
  if (opt.cpu_check) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<double> ref = gcn_forward_reference(a, in, d);
    const double e_ours = gcn_max_error(h_ours, ref, scale), e_theirs = gcn_max_error(h_theirs, ref, scale);
    const bool ref_ok = e_ours <= tol && e_theirs <= gcn_tolerance(a, false);
    ok = ok && ref_ok;
    check["cpu"] = {{"dbsparse_error", e_ours}, {"cusparse_error", e_theirs}, {"ok", ref_ok}, {"ms", ms_since(t0)}};
    fmt::print("check against the CPU (double): dbsparse {:.3e}, cuSPARSE {:.3e}: {}\n", e_ours, e_theirs,
               ref_ok ? "ok" : "WRONG");
  }
  check["ok"] = ok;

  // Timing: the whole forward pass, then each stage alone (the same calls), medians of reps.
  const TimingOptions t{opt.warmup, opt.reps, 1, false};
  const double fwd_ours =
      time_on_stream(stream.handle(), t, [&](int64_t) { pipe.forward(dbs, relu_in_ours); }).median_us;
  const double fwd_theirs = time_on_stream(stream.handle(), t, [&](int64_t) { pipe.forward(cus); }).median_us;
  nlohmann::json stages = nlohmann::json::array();
  fmt::print("{:<22} {:>12} {:>12}\n", "stage (median)", "dbsparse", "cuSPARSE");
  for (GcnStage st : kGcnStages) {
    // The fused ReLU is inside spmm1's time; its own stage is not run (0).
    const bool skip = st == GcnStage::Relu && relu_in_ours;
    const double us_ours =
        skip ? 0.0 : time_on_stream(stream.handle(), t, [&](int64_t) { pipe.stage(st, dbs, relu_in_ours); }).median_us;
    const double us_theirs = time_on_stream(stream.handle(), t, [&](int64_t) { pipe.stage(st, cus); }).median_us;
    stages.push_back({{"stage", to_string(st)}, {"dbsparse_us", us_ours}, {"cusparse_us", us_theirs}});
    fmt::print("{:<22} {:>12} {:>10.1f}us\n", to_string(st),
               skip ? std::string("in spmm1") : fmt::format("{:.1f}us", us_ours), us_theirs);
  }
  const double speedup = fwd_theirs / fwd_ours;
  fmt::print("{:<22} {:>10.1f}us {:>10.1f}us  dbsparse speed-up {:.2f}x\n", "forward (end to end)", fwd_ours,
             fwd_theirs, speedup);
  fmt::print("setup: dbsparse plan_spmm {:.1f} ms ({:.1f} ms with kernels loaded), cuSPARSE {:.1f} ms\n", plan_ms_total,
             replan_ms_total, setup_ms_total);
  // The order is computed per plan (two layers); a user who keeps one plan per width pays it twice.
  const double amortised_us = fwd_ours + reorder_ms_total * 1e3 / kGcnAmortisePasses;
  if (reorder_ms_total > 0) {
    fmt::print(
        "row order ({}): {:.1f} ms on the host in the two plans; over {} passes {:.1f} us a pass: amortised "
        "speed-up {:.2f}x\n",
        to_string(plans.empty() ? Reorder::None : plans.front().reorder()), reorder_ms_total, kGcnAmortisePasses,
        reorder_ms_total * 1e3 / kGcnAmortisePasses, fwd_theirs / amortised_us);
  }
  ours["reorder_ms"] = reorder_ms_total;
  rec["speedup_amortised"] = fwd_theirs / amortised_us;
  ours["forward_us"] = fwd_ours;
  theirs["forward_us"] = fwd_theirs;
  rec["dbsparse"] = ours;
  rec["cusparse"] = theirs;
  rec["stages"] = stages;
  rec["speedup"] = speedup;
  rec["check"] = check;
  rec["ok"] = ok;
  rec["timing"] = {{"reps", opt.reps}, {"warmup", opt.warmup}, {"statistic", "median of CUDA-event-timed passes"}};
  return rec;
}

}  // namespace dbsparse::tools

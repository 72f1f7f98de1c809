// Plans under CUDA graphs and on several streams (docs/DESIGN.md §1: run makes no allocation, no NVRTC
// call and no synchronisation, so it can be captured). Each replay is checked against the CPU
// reference with x changed in place between replays, so a graph that baked in stale state fails.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <functional>

#include "gpu/gpu_support.hpp"

namespace {

void cuda_ok(cudaError_t e, const char* what) {
  REQUIRE_MESSAGE(e == cudaSuccess, what << ": " << cudaGetErrorString(e));
}

// Captures what `enqueue` puts on the stream into a graph and returns it instantiated.
cudaGraphExec_t capture(const Stream& s, const std::function<void()>& enqueue) {
  auto st = static_cast<cudaStream_t>(s.handle());
  cuda_ok(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), "begin capture");
  enqueue();
  cudaGraph_t g = nullptr;
  cuda_ok(cudaStreamEndCapture(st, &g), "end capture");
  cudaGraphExec_t exec = nullptr;
  cuda_ok(cudaGraphInstantiate(&exec, g, 0), "instantiate");
  cudaGraphDestroy(g);
  return exec;
}

template <class T>
std::vector<T> sparse_x(int32_t n, double density, uint64_t seed, std::vector<int32_t>& idx, std::vector<T>& val) {
  idx = tools::sample_indices(n, density, seed);
  val = tools::random_values<T>(idx.size(), seed + 1);
  for (auto& v : val)
    if (v == T(0)) v = T(0.5);
  std::vector<T> x(static_cast<size_t>(n), T(0));
  for (size_t i = 0; i < idx.size(); ++i) x[idx[i]] = val[i];
  return x;
}

// SpMSpV's default config with every nonzero in a block: the tests of the block paths' direction.
Config blocks_only() {
  auto p = config_to_json(SpmspvConfig{});
  p["residual_below"] = 0;
  return Config{"spmspv", p, ConfigSource::Explicit, "test"};
}

}  // namespace

TEST_CASE("SpmvRunCapturedInACudaGraphMatchesReferenceOnEveryReplay") {
  // Power-law rows include long ones: the classified plan's long-row chunks and arrival counters
  // are per-call state that each replay must reset for itself.
  for (const char* spec : {"powerlaw:n=20000,avg=8,alpha=1.2,max=15000", "stencil3d:n=20,points=27"}) {
    CAPTURE(spec);
    const auto a = generate(spec).cast<double>();
    auto plan = plan_spmv(ctx(), a);
    Stream s(ctx());
    DeviceBuffer<double> x(static_cast<size_t>(a.cols)), y(static_cast<size_t>(a.rows));
    auto exec = capture(s, [&] { plan.run(x, y, s); });
    for (uint64_t replay = 0; replay < 3; ++replay) {
      const auto xh = tools::random_values<double>(static_cast<size_t>(a.cols), 40 + replay);
      x.upload(xh);
      y.fill_bytes(0xFF);  // NaN: a row the replay does not write cannot pass
      cuda_ok(cudaGraphLaunch(exec, static_cast<cudaStream_t>(s.handle())), "graph launch");
      s.synchronize();
      const auto ref = reference::spmv(a, std::span<const double>(xh));
      CHECK(reference::relative_error(std::span<const double>(ref), std::span<const double>(y.download())) < 1e-12);
    }
    cudaGraphExecDestroy(exec);
  }
}

TEST_CASE("SpmspvRunCapturedInACudaGraphPicksItsDirectionOnEveryReplay") {
  const auto a = generate("banded:n=160000,bw=8").cast<float>();
  const auto blocks = blocks_only();
  auto plan = plan_spmspv(ctx(), a, SpmspvOptions{.config = &blocks});
  Stream s(ctx());
  DeviceBuffer<float> x(static_cast<size_t>(a.cols)), y(static_cast<size_t>(a.rows));
  auto exec = capture(s, [&] { plan.run(x, y, s); });
  // Sparse, then dense, then sparse again: one graph, and the GPU switches path each replay.
  const double densities[] = {0.0001, 0.5, 0.0001};
  const SpmspvDirection expect[] = {SpmspvDirection::Push, SpmspvDirection::Pull, SpmspvDirection::Push};
  for (int k = 0; k < 3; ++k) {
    std::vector<int32_t> idx;
    std::vector<float> val;
    x.upload(sparse_x<float>(a.cols, densities[k], 70 + k, idx, val));
    cuda_ok(cudaGraphLaunch(exec, static_cast<cudaStream_t>(s.handle())), "graph launch");
    const auto ref = reference::spmspv(a, std::span<const int32_t>(idx), std::span<const float>(val));
    CHECK(plan.last_direction(s) == expect[k]);  // synchronises
    CHECK(reference::relative_error(std::span<const double>(ref), std::span<const float>(y.download())) < 1e-5);
  }
  cudaGraphExecDestroy(exec);
}

TEST_CASE("SpmspvResidualRunCapturedInACudaGraphMatchesReferenceOnEveryReplay") {
  // All of a scattered matrix in the residual: the push lists are rebuilt on the device by every
  // replay, whatever the previous replay's direction and list lengths were.
  const auto a = generate("uniform:n=50000,d=16").cast<float>();
  auto p = config_to_json(SpmspvConfig{});
  p["residual_below"] = 257;
  p["residual_pull"] = "by_density";  // so that a replay can pull
  const Config cfg{"spmspv", p, ConfigSource::Explicit, "test"};
  auto plan = plan_spmspv(ctx(), a, SpmspvOptions{.config = &cfg});
  REQUIRE(plan.stats().storage.residual_nnz == a.nnz());
  Stream s(ctx());
  DeviceBuffer<float> x(static_cast<size_t>(a.cols)), y(static_cast<size_t>(a.rows));
  auto exec = capture(s, [&] { plan.run(x, y, s); });
  const double densities[] = {0.001, 0.7, 0.0001, 0.01};
  const SpmspvDirection expect[] = {SpmspvDirection::Push, SpmspvDirection::Pull, SpmspvDirection::Push,
                                    SpmspvDirection::Push};
  for (int k = 0; k < 4; ++k) {
    CAPTURE(k);
    std::vector<int32_t> idx;
    std::vector<float> val;
    x.upload(sparse_x<float>(a.cols, densities[k], 90 + k, idx, val));
    y.fill_bytes(0xFF);
    cuda_ok(cudaGraphLaunch(exec, static_cast<cudaStream_t>(s.handle())), "graph launch");
    const auto ref = reference::spmspv(a, std::span<const int32_t>(idx), std::span<const float>(val));
    CHECK(plan.last_direction(s) == expect[k]);
    CHECK(reference::relative_error(std::span<const double>(ref), std::span<const float>(y.download())) < 1e-5);
  }
  cudaGraphExecDestroy(exec);
}

TEST_CASE("SpmspvSparseOutputCapturedInACudaGraphMatchesReferenceOnEveryReplay") {
  // Three launches and a device-side count: after one call has allocated the workspace's buffers,
  // the whole sparse-in, sparse-out call replays from a graph with new x each time.
  const auto a = generate("rmat:scale=14,ef=16,scramble=1").cast<float>();
  auto plan = plan_spmspv(ctx(), a);
  Stream s(ctx());
  const int32_t nnz = 40;
  DeviceBuffer<int32_t> xi(nnz), yi(static_cast<size_t>(a.rows)), yn(1);
  DeviceBuffer<float> xv(nnz), yv(static_cast<size_t>(a.rows));
  auto load = [&](uint64_t seed, std::vector<int32_t>& idx, std::vector<float>& val) {
    tools::Lcg rng(seed);
    idx = tools::sample_indices(a.cols, int64_t{nnz}, rng);
    val = tools::random_values<float>(idx.size(), seed + 1);
    for (auto& v : val)
      if (v == 0.f) v = 0.5f;
    xi.upload(idx);
    xv.upload(val);
  };
  std::vector<int32_t> idx;
  std::vector<float> val;
  load(1, idx, val);
  plan.run_sparse_out(xi, xv, nnz, yi, yv, yn, s);  // allocates; not captured
  auto exec = capture(s, [&] { plan.run_sparse_out(xi, xv, nnz, yi, yv, yn, s); });
  for (uint64_t replay = 0; replay < 3; ++replay) {
    load(10 + replay, idx, val);
    cuda_ok(cudaGraphLaunch(exec, static_cast<cudaStream_t>(s.handle())), "graph launch");
    s.synchronize();
    const auto ref = reference::spmspv(a, std::span<const int32_t>(idx), std::span<const float>(val));
    const int32_t n = yn.download()[0];
    // Only y's first n entries are written: the rest of the buffers is never defined (initcheck).
    std::vector<int32_t> gi(static_cast<size_t>(n));
    std::vector<float> gv(static_cast<size_t>(n));
    yi.download_bytes(gi.data(), gi.size() * sizeof(int32_t), 0);
    yv.download_bytes(gv.data(), gv.size() * sizeof(float), 0);
    std::vector<float> dense(static_cast<size_t>(a.rows), 0.f);
    for (int32_t k = 0; k < n; ++k) dense[gi[k]] = gv[k];
    int64_t want = 0;
    for (double r : ref) want += r != 0.0;
    CHECK(n == want);
    CHECK(reference::relative_error(std::span<const double>(ref), std::span<const float>(dense)) < 1e-5);
  }
  cudaGraphExecDestroy(exec);
}

TEST_CASE("SpmspvRunsOnTwoStreamsAtOnceWithAWorkspaceEach") {
  // The plan's read-only data is shared; each stream's calls work in their own workspace, so
  // 40 unsynchronised calls interleaved on two streams still give each stream its own answer.
  const auto a = generate("rmat:scale=14,ef=8").cast<float>();
  const auto blocks = blocks_only();
  auto plan = plan_spmspv(ctx(), a, SpmspvOptions{.config = &blocks});
  Stream s0(ctx()), s1(ctx());
  auto w0 = plan.make_workspace(), w1 = plan.make_workspace();
  std::vector<int32_t> i0, i1;
  std::vector<float> v0, v1;
  DeviceBuffer<float> x0{std::span<const float>(sparse_x<float>(a.cols, 0.3, 5, i0, v0))};
  DeviceBuffer<float> x1{std::span<const float>(sparse_x<float>(a.cols, 0.001, 6, i1, v1))};
  DeviceBuffer<float> y0(static_cast<size_t>(a.rows)), y1(static_cast<size_t>(a.rows));
  for (int k = 0; k < 20; ++k) {
    plan.run(x0, y0, s0, w0);
    plan.run(x1, y1, s1, w1);
  }
  CHECK(plan.last_direction(s0, w0) == SpmspvDirection::Pull);
  CHECK(plan.last_direction(s1, w1) == SpmspvDirection::Push);
  const auto r0 = reference::spmspv(a, std::span<const int32_t>(i0), std::span<const float>(v0));
  const auto r1 = reference::spmspv(a, std::span<const int32_t>(i1), std::span<const float>(v1));
  CHECK(reference::relative_error(std::span<const double>(r0), std::span<const float>(y0.download())) < 1e-5);
  CHECK(reference::relative_error(std::span<const double>(r1), std::span<const float>(y1.download())) < 1e-5);
  // Another plan's workspace is refused with a clear error, before anything is launched.
  auto other = plan_spmspv(ctx(), generate("stencil2d:n=50").cast<float>());
  auto foreign = other.make_workspace();
  CHECK_THROWS_WITH_AS(plan.run(x0, y0, s0, foreign), doctest::Contains("workspace"), UsageError);
}

// Every plan captured into a CUDA graph, through dbsparse::CudaGraph and through the user's own
// stream capture (the CUDA runtime's), replayed with its inputs changed in place between replays
// and checked against the CPU reference each time (issue 34). SpMV's and SpMSpV's user captures
// are in test_graph_streams_gpu.cpp; here SpMV and SpMSpV through CudaGraph, and SpMM, BFS and
// SpGEMM's numeric run both ways.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <functional>
#include <memory>

#include "gpu/gpu_support.hpp"

namespace {

// A captured graph either way: CudaGraph, or cudaStreamBeginCapture / cudaGraphLaunch.
class Captured {
 public:
  Captured(bool user, const Stream& s, const std::function<void()>& enqueue) : user_(user) {
    if (!user) {
      graph_ = CudaGraph::capture(s, enqueue);
      REQUIRE(graph_.nodes() > 0);
      return;
    }
    auto st = static_cast<cudaStream_t>(s.handle());
    REQUIRE(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    enqueue();
    cudaGraph_t g = nullptr;
    REQUIRE(cudaStreamEndCapture(st, &g) == cudaSuccess);
    REQUIRE(cudaGraphInstantiate(&exec_, g, 0) == cudaSuccess);
    cudaGraphDestroy(g);
  }
  ~Captured() {
    if (exec_) cudaGraphExecDestroy(exec_);
  }
  void replay(const Stream& s) const {
    if (user_)
      REQUIRE(cudaGraphLaunch(exec_, static_cast<cudaStream_t>(s.handle())) == cudaSuccess);
    else
      graph_.replay(s);
  }

 private:
  bool user_;
  CudaGraph graph_;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace

TEST_CASE("SpmvAndSpmspvCapturedThroughCudaGraphMatchReferenceOnEveryReplay") {
  const auto a = generate("powerlaw:n=20000,avg=8,alpha=1.2,max=15000").cast<float>();
  auto spmv = plan_spmv(ctx(), a);
  auto spmspv = plan_spmspv(ctx(), a);
  Stream s(ctx());
  DeviceBuffer<float> x(static_cast<size_t>(a.cols)), y1(static_cast<size_t>(a.rows)), y2(static_cast<size_t>(a.rows));
  // Two plans of two ops in one graph.
  CudaGraph g = CudaGraph::capture(s, [&] {
    spmv.run(x, y1, s);
    spmspv.run(x, y2, s);
  });
  CHECK(g.nodes() >= 2);
  for (int replay = 0; replay < 3; ++replay) {
    CAPTURE(replay);
    std::vector<float> xh(static_cast<size_t>(a.cols), 0.f);
    const auto idx = tools::sample_indices(a.cols, replay == 1 ? 0.3 : 0.001, 60 + replay);
    for (int32_t i : idx) xh[i] = 1.f + 0.25f * static_cast<float>(i % 7);
    x.upload(xh);
    y1.fill_bytes(0xFF);
    y2.fill_bytes(0xFF);
    g.replay(s);
    s.synchronize();
    const auto ref = reference::spmv(a, std::span<const float>(xh));
    CHECK(reference::relative_error(std::span<const double>(ref), std::span<const float>(y1.download())) < 1e-5);
    CHECK(reference::relative_error(std::span<const double>(ref), std::span<const float>(y2.download())) < 1e-5);
  }
  CudaGraph moved = std::move(g);
  CHECK(g.empty());
  CHECK_THROWS_AS(g.replay(s), UsageError);
  CHECK_FALSE(moved.empty());
}

TEST_CASE("CudaGraphCaptureThatThrowsLeavesTheStreamUsable") {
  const auto a = generate("uniform:n=2000,d=8").cast<float>();
  auto plan = plan_spmv(ctx(), a);
  Stream s(ctx());
  DeviceBuffer<float> x(static_cast<size_t>(a.cols)), y(static_cast<size_t>(a.rows)), small(3);
  // A size mismatch is a UsageError inside the capture: it propagates, the capture is discarded.
  CHECK_THROWS_AS(CudaGraph::capture(s, [&] { plan.run(small, y, s); }), UsageError);
  const std::vector<float> xh(static_cast<size_t>(a.cols), 1.f);
  x.upload(xh);
  plan.run(x, y, s);  // the stream is no longer capturing
  s.synchronize();
  const auto ref = reference::spmv(a, std::span<const float>(xh));
  CHECK(reference::relative_error(std::span<const double>(ref), std::span<const float>(y.download())) < 1e-5);
}

TEST_CASE("SpmmCapturedEitherWayMatchesReferenceOnEveryReplay") {
  const auto a = generate("rmat:scale=12,ef=8").cast<float>();
  const int32_t n = 32;
  auto plan = plan_spmm(ctx(), a, n);
  Stream s(ctx());
  DeviceBuffer<float> b(static_cast<size_t>(a.cols) * n), c(static_cast<size_t>(a.rows) * n);
  for (bool user : {false, true}) {
    CAPTURE(user);
    const Captured g(user, s, [&] { plan.run(b, c, s); });
    for (uint64_t replay = 0; replay < 2; ++replay) {
      const auto bh = tools::random_values<float>(b.size(), 80 + replay + (user ? 10 : 0));
      b.upload(bh);
      c.fill_bytes(0xFF);
      g.replay(s);
      s.synchronize();
      const auto ref = reference::spmm(a, std::span<const float>(bh), n);
      CHECK(reference::relative_error(std::span<const double>(ref), std::span<const float>(c.download())) < 1e-5);
    }
  }
}

TEST_CASE("BfsCapturedEitherWayMatchesReferenceOnEveryReplay") {
  const auto a = generate("rmat:scale=14,ef=8,scramble=1").cast<float>();
  const auto pattern = ones_matrix<float>(symmetrize(pattern_of(a), true));
  auto plan = plan_bfs(ctx(), pattern);
  Stream s(ctx());
  DeviceBuffer<int32_t> levels(static_cast<size_t>(pattern.rows)), parents(static_cast<size_t>(pattern.rows));
  const int32_t source = 3;
  const auto ref = reference::bfs(pattern, source);
  for (bool user : {false, true}) {
    CAPTURE(user);
    const Captured g(user, s, [&] { plan.run(source, levels, parents, s); });
    for (int replay = 0; replay < 2; ++replay) {
      levels.fill_bytes(0x7F);  // garbage a replay must overwrite
      parents.fill_bytes(0x7F);
      g.replay(s);
      s.synchronize();
      const auto lv = levels.download();
      CHECK(lv == ref.level);
      const auto pv = parents.download();
      CHECK(reference::bfs_parents_valid(pattern, source, std::span<const int32_t>(lv), std::span<const int32_t>(pv)));
    }
  }
}

TEST_CASE("SpgemmNumericRunCapturedEitherWayMatchesReferenceOnEveryReplay") {
  // C's structure known after the first run; the numeric run (side streams for the groups) is
  // captured, and each replay reads A's and B's values written in place.
  const auto g0 = generate("powerlaw:n=3000,avg=8,alpha=1.5,max=1500").cast<float>();
  Stream s(ctx());  // first: the context must be current before the uploads (run alone, no other test made it)
  DeviceCsr<float> da(g0), db(g0);
  SpgemmPlan<float> plan = plan_spgemm(ctx(), da.view(), db.view(), SpgemmOptions{}, s.handle());
  plan.run(s.handle());  // sizes C: not capturable (allocates, waits)
  s.synchronize();
  for (bool user : {false, true}) {
    CAPTURE(user);
    const Captured g(user, s, [&] { plan.run(s.handle()); });
    for (uint64_t replay = 0; replay < 2; ++replay) {
      CsrMatrix<float> a = g0, b = g0;
      a.values = tools::random_values<float>(a.values.size(), 200 + replay + (user ? 10 : 0));
      b.values = tools::random_values<float>(b.values.size(), 300 + replay + (user ? 10 : 0));
      da.values.upload(a.values);
      db.values.upload(b.values);
      g.replay(s);
      s.synchronize();
      const CsrMatrix<float> c = plan.download();
      const CsrMatrix<double> ref = reference::spgemm(a, b);
      REQUIRE(c.col_idx == ref.col_idx);
      double worst = 0;
      for (size_t p = 0; p < ref.values.size(); ++p)
        worst = std::max(worst, std::fabs(static_cast<double>(c.values[p]) - ref.values[p]) /
                                    std::max(1.0, std::fabs(ref.values[p])));
      CHECK(worst < 1e-4);
    }
  }
}

// Issue 36's device limits: a plan or product that cannot fit gets DeviceOutOfMemory with the
// sizes, leaves nothing allocated (cuMemGetInfo before and after) and the context stays usable;
// one context driven from several host threads, each with its own stream and plans, under
// thousands of mixed calls checked against the CPU reference.
#include <doctest/doctest.h>

#include <cuda.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gpu/gpu_support.hpp"

namespace {

int64_t free_device_bytes() {
  size_t free = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
  return static_cast<int64_t>(free);
}

// Takes all but `leave` bytes of the device's free memory (in 256 MB steps down from the most,
// as one allocation of exactly that much can fail to a fragmented address space).
std::vector<DeviceAllocation> fill_device_leaving(int64_t leave) {
  std::vector<DeviceAllocation> held;
  int64_t chunk = int64_t{1} << 36;
  while (chunk >= (int64_t{1} << 20)) {
    const int64_t want = free_device_bytes() - leave;
    if (want < chunk) {
      chunk /= 2;
      continue;
    }
    try {
      held.emplace_back(static_cast<size_t>(chunk));
    } catch (const DeviceOutOfMemory&) {
      chunk /= 2;
    }
  }
  return held;
}

double spmv_error_f32(const CsrMatrix<float>& a, const SpmvPlan<float>& plan, const Stream& s, uint64_t seed) {
  const auto x = dbs_test::random_vector<float>(static_cast<size_t>(a.cols), seed);
  const auto ref = reference::spmv(a, std::span<const float>(x));
  DeviceBuffer<float> dx{std::span<const float>(x)}, dy(static_cast<size_t>(a.rows));
  plan.run(dx, dy, s);
  s.synchronize();
  const auto got = dy.download();
  return reference::relative_error(std::span<const double>(ref), std::span<const float>(got));
}

}  // namespace

// With all but 64 MB of the device taken: a plan whose A alone is larger is refused by its
// estimate before it allocates; a buffer past what is free names its size; an SpGEMM whose A and B
// fit but whose product does not fails inside the analysis. Each time the free memory is what it
// was before the call (the modules the warm-up loaded are the context's, not the plan's), and
// once the memory is back the same plans run and match the reference.
TEST_CASE("DeviceOutOfMemoryNamesTheSizesAndLeavesNothingBehind") {
  Context& c = ctx();
  const auto big = generate("uniform:n=1000000,d=16").cast<float>();   // 16M entries: 136 MB in CSR
  const auto small = generate("uniform:n=200000,d=16").cast<float>();  // 3.2M: 27 MB; A^2 about 51M entries
  Stream s(c);
  {  // warm-up: every kernel these plans load is loaded now
    const auto p = plan_spmv(c, big);
    const auto q = plan_spmm(c, big, 32);
    auto g = plan_spgemm(c, small, small);
    g.run(s.handle());
    s.synchronize();
  }
  c.release_cached_memory();
  const int64_t leave = int64_t{64} << 20;
  {
    auto held = fill_device_leaving(leave);
    // A failed cuMemAlloc can make the driver give back memory that it held outside this
    // Context's pool: 32 MiB on the H100 when test_cuda_graph_gpu.cpp's cases had run earlier in
    // the same process (2026-12-05; what the driver held is not known). Provoke that once and top
    // the fill up again, so that the checks below see only what the calls under test leave.
    const int64_t before_probe = free_device_bytes();
    try {
      DeviceAllocation probe(static_cast<size_t>(4 * before_probe));
    } catch (const DeviceOutOfMemory&) {
    }
    MESSAGE("a failed allocation made the driver give back " << free_device_bytes() - before_probe << " bytes");
    for (auto& more : fill_device_leaving(leave)) held.push_back(std::move(more));
    const int64_t free0 = free_device_bytes();
    INFO("free with the device filled: " << free0);
    REQUIRE(free0 < 2 * leave);

    try {
      (void)plan_spmv(c, big);
      FAIL("plan_spmv fitted in " << free0 << " bytes");
    } catch (const DeviceOutOfMemory& e) {
      CHECK(std::string(e.what()).find("plan_spmv") != std::string::npos);
      CHECK(e.needed_bytes() > e.free_bytes());
      CHECK(e.result() == CUDA_ERROR_OUT_OF_MEMORY);
    }
    CHECK(free_device_bytes() == free0);

    try {
      (void)plan_spmm(c, big, 32);
      FAIL("plan_spmm fitted");
    } catch (const DeviceOutOfMemory& e) {
      CHECK(std::string(e.what()).find("plan_spmm") != std::string::npos);
    }
    CHECK(free_device_bytes() == free0);

    try {
      DeviceBuffer<float> too_big(static_cast<size_t>(free0));  // 4x the free bytes
      FAIL("a buffer of 4x the free memory was allocated");
    } catch (const DeviceOutOfMemory& e) {
      CHECK(e.needed_bytes() == 4 * free0);
      CHECK(std::string(e.what()).find(std::to_string(4 * free0)) != std::string::npos);
    }
    CHECK(free_device_bytes() == free0);

    bool spgemm_failed = false;
    try {
      auto g = plan_spgemm(c, small, small);
      g.run(s.handle());
      s.synchronize();
    } catch (const DeviceOutOfMemory& e) {
      spgemm_failed = true;
      MESSAGE("spgemm: " << std::string(e.what()));  // doctest prints a char* as a pointer
    }
    CHECK(spgemm_failed);
    c.release_cached_memory();
    // The driver rounds allocations to 2 MB pages: what a failed product leaves must be none of them.
    CHECK(free_device_bytes() >= free0);
  }
  c.release_cached_memory();
  const auto p = plan_spmv(c, big);
  CHECK(spmv_error_f32(big, p, s, 5) <= 1e-5);
  auto g = plan_spgemm(c, small, small);
  g.run(s.handle());
  s.synchronize();
  CHECK(g.nnz() > 0);
}

// Eight threads share one context; each makes its own stream and plans (SpMV, SpMM, SpMSpV and BFS
// on a matrix of its own: the JIT, the module registry and the tuning DB are shared) and makes 400
// calls in a mixed order, each checked against the CPU reference: 3200 calls, none wrong.
TEST_CASE("OneContextServesThreadsWithTheirOwnStreamsAndPlans") {
  constexpr int kThreads = 8, kCalls = 400;
  Context& c = ctx();
  std::atomic<int> wrong{0}, errors{0}, done{0};
  std::vector<std::string> first_error(kThreads);
  auto work = [&](int t) {
    try {
      c.make_current();
      const auto a = generate(fmt::format("rmat:scale={},ef=8,seed={}", 10 + t % 3, 11 + t)).cast<float>();
      const PatternGraph pg = pattern_of(a);
      Stream s(c);
      const auto spmv = plan_spmv(c, a);
      const int n = t % 2 ? 32 : 33;
      const auto spmm = plan_spmm(c, a, n);
      const auto spmspv = plan_spmspv(c, a);
      const auto bfs = plan_bfs(c, a);
      const auto b = dbs_test::random_vector<float>(static_cast<size_t>(a.cols) * n, 100 + t);
      std::vector<float> cref(static_cast<size_t>(a.rows) * n, 0.0f);
      reference_spmm(a, b, n, cref, 1.0f, 0.0f);
      DeviceBuffer<float> db{std::span<const float>(b)}, dc(cref.size());
      DeviceBuffer<int32_t> levels(static_cast<size_t>(a.rows));
      for (int call = 0; call < kCalls; ++call) {
        const int op = (call * 7 + t) % 4;
        bool ok = true;
        if (op == 0) {
          ok = spmv_error_f32(a, spmv, s, 1000 * t + call) <= 1e-5;
        } else if (op == 1) {
          spmm.run(db, dc, s);
          s.synchronize();
          const auto got = dc.download();
          const double err = reference::relative_error(
              std::span<const double>(std::vector<double>(cref.begin(), cref.end())), std::span<const float>(got));
          ok = err <= 1e-5;
        } else if (op == 2) {
          std::vector<int32_t> idx;
          for (int32_t j = call % 7; j < a.cols; j += 13 + call % 5) idx.push_back(j);
          std::vector<float> xd(static_cast<size_t>(a.cols), 0.0f), vals(idx.size(), 0.5f);
          for (int32_t j : idx) xd[static_cast<size_t>(j)] = 0.5f;
          const auto ref = reference::spmspv(a, std::span<const int32_t>(idx), std::span<const float>(vals));
          DeviceBuffer<float> x{std::span<const float>(xd)}, y(static_cast<size_t>(a.rows));
          spmspv.run(x, y, s);
          s.synchronize();
          ok = reference::relative_error(std::span<const double>(ref), std::span<const float>(y.download())) <= 1e-5;
        } else {
          const int32_t src = (call * 131 + t) % a.rows;
          bfs.run(src, levels, s);
          s.synchronize();
          ok = levels.download() == bfs_reference(pg, src).level;
        }
        if (!ok) wrong.fetch_add(1);
        done.fetch_add(1);
      }
    } catch (const std::exception& e) {
      errors.fetch_add(1);
      first_error[static_cast<size_t>(t)] = e.what();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) pool.emplace_back(work, t);
  for (auto& th : pool) th.join();
  for (const auto& e : first_error)
    if (!e.empty()) MESSAGE("thread error: " << e);
  CHECK(errors.load() == 0);
  CHECK(wrong.load() == 0);
  CHECK(done.load() == kThreads * kCalls);
}

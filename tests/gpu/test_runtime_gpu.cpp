// The driver-API runtime: device info, buffers, streams, events, and JIT modules from disk.
#include <doctest/doctest.h>

#include <chrono>

#include "codegen/kernel_cache.hpp"
#include "codegen/keys/spmv_key.hpp"
#include "dbsparse/context.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/module_registry.hpp"
#include "test_support.hpp"

using namespace dbsparse;

TEST_CASE("ContextDescribesTheDevice") {
  Context ctx;
  const auto& d = ctx.device();
  CHECK(!d.name.empty());
  CHECK(d.cc_major >= 7);
  CHECK(d.sm_count > 0);
  CHECK(d.memory_bytes > (int64_t(1) << 30));
  CHECK(d.arch() == "sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor));
  CHECK(d.record().fingerprint.find(d.name) == 0);
}

// cuCtxSynchronize is looked up at the version whose signature cuda.h declares (CUDA 13's lookup
// returns a variant that takes a context: called without one it failed with "context is destroyed").
TEST_CASE("ContextSynchronizeWaitsForTheDevice") {
  Context ctx;
  Stream s(ctx);
  DeviceBuffer<unsigned char> buf(size_t(64) << 20);
  DBS_CU(cuMemsetD8Async(buf.ptr(), 7, buf.size(), static_cast<CUstream>(s.handle())));
  CHECK_NOTHROW(ctx.synchronize());
  CHECK(buf.download()[buf.size() - 1] == 7);
}

TEST_CASE("DeviceBufferRoundTrips") {
  Context ctx;
  auto v = dbs_test::random_vector<double>(12345, 1);
  DeviceBuffer<double> b{std::span<const double>(v)};
  CHECK(b.download() == v);
  b.fill_bytes(0);
  CHECK(b.download() == std::vector<double>(v.size(), 0.0));
  CHECK_THROWS_AS(b.upload(std::span<const double>(v.data(), 3)), UsageError);
}

TEST_CASE("EventsTimeTheWorkBetweenThem") {
  Context ctx;
  Stream s(ctx);
  Event a, b;
  // Far past the L2 (60 MB on an H200), so the memsets run at DRAM speed and take real time.
  constexpr size_t kBytes = size_t(256) << 20;
  constexpr int kRepeats = 8;
  DeviceBuffer<unsigned char> buf(kBytes);
  const auto t0 = std::chrono::steady_clock::now();
  a.record(s);
  for (int i = 0; i < kRepeats; ++i)
    DBS_CU(cuMemsetD8Async(buf.ptr(), static_cast<unsigned char>(i), kBytes, static_cast<CUstream>(s.handle())));
  b.record(s);
  b.synchronize();
  const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const double gpu_ms = b.elapsed_ms_since(a);
  // No GPU writes DRAM at 20 TB/s (an H200 does 4.8), so less time than that means the events
  // missed the work: recorded on another stream, or in the wrong order.
  const double floor_ms = double(kBytes) * kRepeats / 20e12 * 1e3;
  MESSAGE("events: " << gpu_ms << " ms for " << kRepeats << " x 256 MiB memset; wall " << wall_ms << " ms");
  CHECK(gpu_ms >= floor_ms);
  // The events lie inside the host's window around them (plus the events' ~0.5 us resolution).
  CHECK(gpu_ms <= wall_ms + 0.01);
  CHECK(buf.download()[kBytes - 1] == kRepeats - 1);
}

TEST_CASE("ModuleLoadsFromThePersistentCache") {
  Context ctx;
  auto ks = codegen::make_source(codegen::SpmvKey{codegen::ValueType::F64, codegen::SpmvStrategy::Scalar, 512});
  auto& cache = codegen::KernelCache::global();
  cache.get(ks, ctx.device().arch());  // make sure the entry is on disk
  cache.clear_memory();
  detail::ModuleRegistry fresh;  // a registry that has loaded nothing, as in a new process
  auto k = fresh.get(ks, ctx.device().arch());
  CHECK(k.fn != nullptr);
  if (cache.persistent()) CHECK(k.info.origin == "disk");
  MESSAGE("load from disk: read " << k.info.acquire_ms << " ms + module load " << k.info.load_ms << " ms");
}

// The driver-API runtime: device info, buffers, streams, events, and JIT modules from disk.
#include <doctest/doctest.h>

#include "codegen/kernel_cache.hpp"
#include "codegen/spmv_key.hpp"
#include "dbsparse/context.hpp"
#include "runtime/module_registry.hpp"
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

TEST_CASE("DeviceBufferRoundTrips") {
  Context ctx;
  auto v = dbs_test::random_vector<double>(12345, 1);
  DeviceBuffer<double> b{std::span<const double>(v)};
  CHECK(b.download() == v);
  b.fill_bytes(0);
  CHECK(b.download() == std::vector<double>(v.size(), 0.0));
  CHECK_THROWS_AS(b.upload(std::span<const double>(v.data(), 3)), UsageError);
}

TEST_CASE("EventsMeasureNonNegativeTime") {
  Context ctx;
  Stream s(ctx);
  Event a, b;
  a.record(s);
  DeviceBuffer<float> buf(1 << 20);
  b.record(s);
  b.synchronize();
  CHECK(b.elapsed_ms_since(a) >= 0.0f);
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

#include "dbsparse/context.hpp"

#include <fmt/format.h>

#include <cstring>

#include "codegen/kernel_cache.hpp"
#include "dbsparse/device_profile.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/fork_join.hpp"
#include "runtime/gpu/module_registry.hpp"

namespace dbsparse {

bool cuda_device_available(std::string* why) { return cuda::driver_available(why); }

void add_kernel_dir(const std::string& path) {
  if (!codegen::KernelCache::aot_disabled()) codegen::KernelCache::global().add_aot_dir(path);
}

std::string DeviceInfo::arch() const { return fmt::format("sm_{}{}", cc_major, cc_minor); }

DeviceRecord DeviceInfo::record() const {
  DeviceRecord r;
  // The driver version is part of the identity: a driver update can change what is fastest.
  r.fingerprint = fmt::format("{}|sm_{}{}|{}sm|{}MiB|drv{}", name, cc_major, cc_minor, sm_count, memory_bytes >> 20,
                              driver_version);
  r.name = name;
  r.cc_major = cc_major;
  r.cc_minor = cc_minor;
  r.sm_count = sm_count;
  r.memory_bytes = memory_bytes;
  r.driver_version = driver_version;
  return r;
}

// --- Context -------------------------------------------------------------------------------------

Context::Context(int ordinal) : device_(ordinal) {
  const auto& api = cuda::driver();
  int count = 0;
  DBS_CU(cuDeviceGetCount(&count));
  if (ordinal < 0 || ordinal >= count)
    throw NoDeviceError(fmt::format("device ordinal {} requested, {} present", ordinal, count));
  CUdevice dev = 0;
  DBS_CU(cuDeviceGet(&dev, ordinal));
  device_ = dev;
  CUcontext ctx = nullptr;
  DBS_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  ctx_ = ctx;
  DBS_CU(cuCtxSetCurrent(ctx));

  char name[256] = {};
  DBS_CU(cuDeviceGetName(name, sizeof name, dev));
  info_.ordinal = ordinal;
  info_.name = name;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    cuda::check(api.cuDeviceGetAttribute(&v, a, dev), "cuDeviceGetAttribute");
    return v;
  };
  info_.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info_.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info_.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info_.threads_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  info_.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info_.shared_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  info_.reserved_shared_per_block = attr(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  info_.memory_clock_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  info_.memory_bus_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  size_t mem = 0;
  DBS_CU(cuDeviceTotalMem(&mem, dev));
  info_.memory_bytes = static_cast<int64_t>(mem);
  DBS_CU(cuDriverGetVersion(&info_.driver_version));
  modules_ = std::make_unique<detail::ModuleRegistry>();
}

Context::~Context() {
  fork_join_.reset();
  // Every pooled allocation is gone by now (plans must not outlive their context).
  if (pool_) cuda::driver().cuMemPoolDestroy(static_cast<CUmemoryPool>(pool_));
  modules_.reset();  // modules belong to the context: unload before releasing it
  // Releasing the primary context is safe while cuSPARSE handles elsewhere retain it too.
  if (ctx_) cuda::driver().cuDevicePrimaryCtxRelease(static_cast<CUdevice>(device_));
}

const DeviceProfile& Context::profile() const {
  std::lock_guard lock(profile_mu_);
  if (!profile_) profile_ = std::make_unique<DeviceProfile>(resolve_device_profile(info_));
  return *profile_;
}

void Context::set_profile(DeviceProfile p) {
  std::lock_guard lock(profile_mu_);
  profile_ = std::make_unique<DeviceProfile>(std::move(p));
}

detail::ForkJoin& Context::fork_join() const {
  std::call_once(fork_join_once_, [this] { fork_join_ = std::make_unique<detail::ForkJoin>(*this); });
  return *fork_join_;
}

PoolSlot Context::pool_on(void* stream) const {
  std::call_once(pool_once_, [this] {
    CUdevice dev = 0;
    DBS_CU(cuDeviceGet(&dev, info_.ordinal));
    int supported = 0;
    DBS_CU(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev));
    if (!supported) return;
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = info_.ordinal;
    CUmemoryPool pool = nullptr;
    DBS_CU(cuMemPoolCreate(&pool, &props));
    // Freed memory above this stays with the device; below it, with the pool for the next plan.
    cuuint64_t keep = static_cast<cuuint64_t>(info_.memory_bytes / 8);
    DBS_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    pool_ = pool;
  });
  return {pool_, stream};
}

void Context::release_cached_memory() const {
  if (!pool_) return;
  make_current();
  DBS_CU(cuCtxSynchronize());  // frees still queued reach the pool first
  DBS_CU(cuMemPoolTrimTo(static_cast<CUmemoryPool>(pool_), 0));
}

void Context::make_current() const { DBS_CU(cuCtxSetCurrent(static_cast<CUcontext>(ctx_))); }

void Context::synchronize() const {
  make_current();
  DBS_CU(cuCtxSynchronize());
}

// --- Stream --------------------------------------------------------------------------------------

Stream::Stream(Context& ctx) {
  ctx.make_current();
  CUstream s = nullptr;
  DBS_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  stream_ = s;
}

Stream::~Stream() {
  if (stream_) cuda::driver().cuStreamDestroy(static_cast<CUstream>(stream_));
}

Stream::Stream(Stream&& o) noexcept : stream_(o.stream_) { o.stream_ = nullptr; }

void Stream::synchronize() const { DBS_CU(cuStreamSynchronize(static_cast<CUstream>(stream_))); }

// --- DeviceAllocation ----------------------------------------------------------------------------

DeviceAllocation::DeviceAllocation(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  CUdeviceptr p = 0;
  cuda::check(cuda::driver().cuMemAlloc(&p, bytes), "cuMemAlloc", bytes);
  ptr_ = p;
}

DeviceAllocation::DeviceAllocation(size_t bytes, const PoolSlot& from) : bytes_(bytes) {
  if (bytes == 0) return;
  CUdeviceptr p = 0;
  if (from.pool) {
    cuda::check(cuda::driver().cuMemAllocFromPoolAsync(&p, bytes, static_cast<CUmemoryPool>(from.pool),
                                                       static_cast<CUstream>(from.stream)),
                "cuMemAllocFromPoolAsync", bytes);
    pooled_ = true;
  } else {
    cuda::check(cuda::driver().cuMemAlloc(&p, bytes), "cuMemAlloc", bytes);
  }
  ptr_ = p;
}

void require_device_bytes(const std::string& what, int64_t bytes) {
  if (bytes <= 0) return;
  size_t free = 0, total = 0;
  DBS_CU(cuMemGetInfo(&free, &total));
  if (static_cast<uint64_t>(bytes) > free)
    throw DeviceOutOfMemory(what, bytes, static_cast<long long>(free), static_cast<long long>(total));
}

namespace {
// Pooled: back to the pool in `stream`'s order, without a wait (the owner has waited for its users,
// or they are queued on that stream); plain: cuMemFree, which waits for the device itself.
CUresult free_allocation(uint64_t p, bool pooled, CUstream stream = CU_STREAM_LEGACY) {
  if (!p) return CUDA_SUCCESS;
  if (pooled) return cuda::driver().cuMemFreeAsync(static_cast<CUdeviceptr>(p), stream);
  return cuda::driver().cuMemFree(static_cast<CUdeviceptr>(p));
}
}  // namespace

DeviceAllocation::~DeviceAllocation() { free_allocation(ptr_, pooled_); }  // no throw from a destructor

void DeviceAllocation::release(void* stream) {
  cuda::check(free_allocation(ptr_, pooled_, static_cast<CUstream>(stream)), "DeviceAllocation::release");
  ptr_ = 0;
  bytes_ = 0;
  pooled_ = false;
}

DeviceAllocation::DeviceAllocation(DeviceAllocation&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_), pooled_(o.pooled_) {
  o.ptr_ = 0;
  o.bytes_ = 0;
  o.pooled_ = false;
}

DeviceAllocation& DeviceAllocation::operator=(DeviceAllocation&& o) noexcept {
  if (this != &o) {
    free_allocation(ptr_, pooled_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    pooled_ = o.pooled_;
    o.ptr_ = 0;
    o.bytes_ = 0;
    o.pooled_ = false;
  }
  return *this;
}

// --- MappedHostAllocation ------------------------------------------------------------------------

MappedHostAllocation::MappedHostAllocation(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  DBS_CU(cuMemHostAlloc(&host_, bytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  std::memset(host_, 0, bytes);
}

MappedHostAllocation::~MappedHostAllocation() {
  if (host_) cuda::driver().cuMemFreeHost(host_);
}

MappedHostAllocation::MappedHostAllocation(MappedHostAllocation&& o) noexcept : host_(o.host_), bytes_(o.bytes_) {
  o.host_ = nullptr;
  o.bytes_ = 0;
}

MappedHostAllocation& MappedHostAllocation::operator=(MappedHostAllocation&& o) noexcept {
  if (this != &o) {
    if (host_) cuda::driver().cuMemFreeHost(host_);
    host_ = o.host_;
    bytes_ = o.bytes_;
    o.host_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceAllocation::upload(const void* src, size_t bytes, size_t offset) {
  if (offset + bytes > bytes_) throw UsageError("DeviceAllocation::upload past the end");
  if (bytes) DBS_CU(cuMemcpyHtoD(static_cast<CUdeviceptr>(ptr_ + offset), src, bytes));
  // A pageable copy may still be in flight when cuMemcpyHtoD returns, and work on non-blocking
  // streams does not wait for it: finish it here (set-up path, never plan.run).
  DBS_CU(cuStreamSynchronize(CU_STREAM_LEGACY));
}

void DeviceAllocation::download(void* dst, size_t bytes, size_t offset) const {
  if (offset + bytes > bytes_) throw UsageError("DeviceAllocation::download past the end");
  if (bytes) DBS_CU(cuMemcpyDtoH(dst, static_cast<CUdeviceptr>(ptr_ + offset), bytes));
}

void DeviceAllocation::memset8(unsigned char v) {
  if (bytes_) {
    DBS_CU(cuMemsetD8(static_cast<CUdeviceptr>(ptr_), v, bytes_));
    DBS_CU(cuStreamSynchronize(CU_STREAM_LEGACY));  // as upload: visible to every stream after
  }
}

// --- Event ---------------------------------------------------------------------------------------

Event::Event() {
  CUevent e = nullptr;
  DBS_CU(cuEventCreate(&e, CU_EVENT_DEFAULT));
  event_ = e;
}

Event::~Event() {
  if (event_) cuda::driver().cuEventDestroy(static_cast<CUevent>(event_));
}

void Event::record(const Stream& s) { record(s.handle()); }
void Event::record(void* stream) { DBS_CU(cuEventRecord(static_cast<CUevent>(event_), static_cast<CUstream>(stream))); }
void Event::synchronize() const { DBS_CU(cuEventSynchronize(static_cast<CUevent>(event_))); }
float Event::elapsed_ms_since(const Event& start) const {
  float ms = 0;
  DBS_CU(cuEventElapsedTime(&ms, static_cast<CUevent>(start.event_), static_cast<CUevent>(event_)));
  return ms;
}

}  // namespace dbsparse

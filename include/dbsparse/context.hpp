#pragma once
// The GPU side of the public API: a Context on one device's primary context (so cuSPARSE and other
// runtime-API code share it), streams, device buffers and events. libcuda is dlopen'd: without a
// driver or a device every constructor here throws NoDeviceError and nothing else breaks.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "dbsparse/error.hpp"
#include "dbsparse/matrix.hpp"
#include "dbsparse/tuning_db.hpp"

namespace dbsparse {

// True when libcuda loads, cuInit succeeds and a device exists; otherwise *why says which failed.
bool cuda_device_available(std::string* why = nullptr);

// Adds a folder of precompiled kernels (what `dbsparse precompile --aot DIR` writes) to those the
// process-wide kernel cache reads before compiling: how the Python package registers the kernels it
// ships. Read-only; a folder that does not exist is a miss, not an error. Ignored under
// DBSPARSE_AOT_DIR=off.
void add_kernel_dir(const std::string& path);

// Throws DeviceOutOfMemory naming `what` when the current context's device has fewer than
// `bytes` free: a plan checks its estimated peak here before it allocates anything.
void require_device_bytes(const std::string& what, int64_t bytes);
// A CSR's device bytes (row pointers, column indices, values of value_bytes each): the least a
// plan of it uploads, which its check above weighs.
inline int64_t csr_device_bytes(int64_t rows, int64_t nnz, int value_bytes) {
  return (rows + 1) * 4 + nnz * (4 + value_bytes);
}

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int threads_per_sm = 2048;  // resident threads a multiprocessor holds at most
  int64_t memory_bytes = 0;
  int64_t l2_bytes = 0;
  int64_t shared_per_sm = 0;              // L1 and shared memory's shared part at most, bytes
  int64_t reserved_shared_per_block = 0;  // what the system keeps of it a resident block
  int driver_version = 0;
  int64_t memory_clock_khz = 0;  // peak memory clock (0 where the driver does not say)
  int memory_bus_bits = 0;       // global memory bus width
  std::string arch() const;      // "sm_90"
  DeviceRecord record() const;
};

class Context;
struct DeviceProfile;

class Stream {
 public:
  explicit Stream(Context& ctx);  // a non-blocking stream
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& o) noexcept;
  void* handle() const { return stream_; }  // CUstream == cudaStream_t
  void synchronize() const;

 private:
  void* stream_ = nullptr;
};

// A stream-ordered allocation's source (Context::pool_on): the context's memory pool and the
// stream the allocation is ordered on. pool == nullptr (a device without memory pools): a plain,
// synchronous allocation.
struct PoolSlot {
  void* pool = nullptr;    // CUmemoryPool
  void* stream = nullptr;  // CUstream; null: the legacy default stream
};

// Untyped RAII device allocation; DeviceBuffer<T> adds the element type.
class DeviceAllocation {
 public:
  DeviceAllocation() = default;
  explicit DeviceAllocation(size_t bytes);
  // From the pool, usable on from.stream after this point of its order (on other streams once they
  // are ordered after it, e.g. by a synchronisation). Freed back to the pool without a wait: its
  // owner must have waited for the work that uses it (a plain allocation's cuMemFree waits itself).
  DeviceAllocation(size_t bytes, const PoolSlot& from);
  ~DeviceAllocation();
  DeviceAllocation(DeviceAllocation&& o) noexcept;
  DeviceAllocation& operator=(DeviceAllocation&& o) noexcept;
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;
  uint64_t ptr() const { return ptr_; }  // CUdeviceptr
  size_t bytes() const { return bytes_; }
  // Freed now, in `stream`'s order: pooled memory goes back to the pool once the work queued on
  // the stream so far is done; plain memory at once (cuMemFree waits for the device).
  void release(void* stream);
  void upload(const void* src, size_t bytes, size_t offset = 0);
  void download(void* dst, size_t bytes, size_t offset = 0) const;
  void memset8(unsigned char v);

 private:
  uint64_t ptr_ = 0;
  size_t bytes_ = 0;
  bool pooled_ = false;
};

// Page-locked host memory mapped into the device's address space (one address on both sides
// under unified addressing): a kernel writes a few words of feedback that the host reads later
// without a synchronisation (SpmspvWorkspace: the last call's x blocks, which size the next grid).
class MappedHostAllocation {
 public:
  MappedHostAllocation() = default;
  explicit MappedHostAllocation(size_t bytes);  // zero-filled
  ~MappedHostAllocation();
  MappedHostAllocation(MappedHostAllocation&& o) noexcept;
  MappedHostAllocation& operator=(MappedHostAllocation&& o) noexcept;
  MappedHostAllocation(const MappedHostAllocation&) = delete;
  MappedHostAllocation& operator=(const MappedHostAllocation&) = delete;
  void* data() const { return host_; }  // also the device address
  size_t bytes() const { return bytes_; }

 private:
  void* host_ = nullptr;
  size_t bytes_ = 0;
};

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) : alloc_(n * sizeof(T)), size_(n) {}
  DeviceBuffer(size_t n, const PoolSlot& from) : alloc_(n * sizeof(T), from), size_(n) {}
  explicit DeviceBuffer(std::span<const T> host) : DeviceBuffer(host.size()) { upload(host); }
  size_t size() const { return size_; }
  uint64_t ptr() const { return alloc_.ptr(); }
  T* data() const { return reinterpret_cast<T*>(alloc_.ptr()); }
  void upload(std::span<const T> host) {
    if (host.size() != size_) throw UsageError("DeviceBuffer::upload: size mismatch");
    if (size_) alloc_.upload(host.data(), size_ * sizeof(T));
  }
  std::vector<T> download() const {
    std::vector<T> out(size_);
    if (size_) alloc_.download(out.data(), size_ * sizeof(T));
    return out;
  }
  void fill_bytes(unsigned char v) {
    if (size_) alloc_.memset8(v);
  }
  void release(void* stream) {  // DeviceAllocation::release; the buffer is empty afterwards
    alloc_.release(stream);
    size_ = 0;
  }
  // Part of the buffer, `bytes` from byte `offset` (synchronous, like download()).
  void download_bytes(void* dst, size_t bytes, size_t offset) const {
    if (offset + bytes > size_ * sizeof(T)) throw UsageError("DeviceBuffer::download_bytes: past the end");
    if (bytes) alloc_.download(dst, bytes, offset);
  }

 private:
  DeviceAllocation alloc_;
  size_t size_ = 0;
};

class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(const Stream& s);
  void record(void* stream);
  void synchronize() const;
  float elapsed_ms_since(const Event& start) const;
  void* handle() const { return event_; }

 private:
  void* event_ = nullptr;
};

template <class T>
class SpmvPlan;
struct SpmvOptions;
template <class T>
class SpmspvPlan;
struct SpmspvOptions;
class BfsPlan;
struct BfsOptions;
template <class T>
class SparseLinearPlan;
struct SparseLinearOptions;
class DecodeLinearPlan;
struct DecodeLinearOptions;
struct CompactLayer;
template <class T>
class SpgemmPlan;
struct SpgemmOptions;
template <class T>
struct DeviceCsrView;
template <class T>
struct DeviceCsrView64;
class SpmmPlan;
struct SpmmOptions;
struct PatternGraph;
struct DeviceGraphView64;
namespace detail {
class ModuleRegistry;
class ForkJoin;
}  // namespace detail

class Context {
 public:
  // Retains device `ordinal`'s primary context and makes it current on this thread.
  explicit Context(int ordinal = 0);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& device() const { return info_; }
  // What the cost models read of this device (device_profile.hpp): resolved on first use (the
  // tuning DB's measured profile, else the built-in one) and kept for the context's life.
  const DeviceProfile& profile() const;
  // Replaces it (dbtune after measuring; tests that replay a recorded card's profile).
  void set_profile(DeviceProfile p);
  // Makes this context current on the calling thread (plans do it for you).
  void make_current() const;
  void synchronize() const;

  detail::ModuleRegistry& modules() const { return *modules_; }
  // Side streams for independent launches of one run (runtime/gpu/fork_join.hpp), made on first use.
  detail::ForkJoin& fork_join() const;
  // Stream-ordered allocations from this context's memory pool (made on first use), ordered on
  // `stream`. The pool keeps freed memory up to an eighth of the device's for the next plan, so a
  // fresh SpGEMM product (a dozen buffers, C among them) does not pay cuMemAlloc and cuMemFree
  // each time; a device without memory pools gets plain allocations.
  PoolSlot pool_on(void* stream) const;
  // Returns the pool's cached (freed, kept) memory to the device.
  void release_cached_memory() const;

 private:
  DeviceInfo info_;
  std::unique_ptr<detail::ModuleRegistry> modules_;
  mutable std::unique_ptr<detail::ForkJoin> fork_join_;
  mutable std::once_flag fork_join_once_;
  mutable void* pool_ = nullptr;  // CUmemoryPool; null until pool_on, or where pools are unsupported
  mutable std::once_flag pool_once_;
  mutable std::unique_ptr<DeviceProfile> profile_;
  mutable std::mutex profile_mu_;
  int device_ = 0;
  void* ctx_ = nullptr;  // CUcontext
};

}  // namespace dbsparse

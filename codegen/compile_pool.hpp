#pragma once
// Many kernel variants into the cache at once: NVRTC is thread-safe and KernelCache::get compiles
// outside its lock, so independent variants compile on every core. What `dbsparse precompile` and
// dbtune's kernel pass use; a plan still compiles the one variant it needs on its own thread.
#include <functional>
#include <string>
#include <vector>

#include "codegen/kernel_cache.hpp"

namespace dbsparse::codegen {

// One variant's outcome: its kernel, or the error that stopped it (kernel null).
struct PoolOutcome {
  size_t index = 0;  // into the sources given
  CachedKernel kernel;
  std::string error;
};

// Gets sources[i] for arch from cache on `threads` workers (0: the host's cores, at least 1).
// done() is called once per variant, one call at a time, in the order they finish; stop() (when
// given) is polled before each variant starts, and variants not started are left out. A variant
// whose compile throws is reported through done(), never thrown; done() itself must not throw.
void cache_all(KernelCache& cache, const std::vector<KernelSource>& sources, const std::string& arch, int threads,
               const std::function<void(const PoolOutcome&)>& done, const std::function<bool()>& stop = {});

// The workers cache_all starts for `threads` (0: the host's cores) and n variants.
int pool_threads(int threads, size_t n);

}  // namespace dbsparse::codegen

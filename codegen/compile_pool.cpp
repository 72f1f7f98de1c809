#include "codegen/compile_pool.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace dbsparse::codegen {

int pool_threads(int threads, size_t n) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int want = threads > 0 ? threads : cores;
  return static_cast<int>(std::clamp<size_t>(n, 1, static_cast<size_t>(std::max(want, 1))));
}

void cache_all(KernelCache& cache, const std::vector<KernelSource>& sources, const std::string& arch, int threads,
               const std::function<void(const PoolOutcome&)>& done, const std::function<bool()>& stop) {
  std::atomic<size_t> next{0};
  std::mutex report;
  auto work = [&] {
    for (;;) {
      if (stop && stop()) return;
      const size_t i = next.fetch_add(1);
      if (i >= sources.size()) return;
      PoolOutcome o;
      o.index = i;
      try {
        o.kernel = cache.get(sources[i], arch);
      } catch (const std::exception& e) {  // a worker must not throw: the process would end
        o.error = e.what();
      }
      std::lock_guard lock(report);
      done(o);
    }
  };
  const int n = pool_threads(threads, sources.size());
  std::vector<std::jthread> workers;
  workers.reserve(static_cast<size_t>(n - 1));
  for (int t = 1; t < n; ++t) workers.emplace_back(work);
  work();  // the caller's thread is one of the workers
}

}  // namespace dbsparse::codegen

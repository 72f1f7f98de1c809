#include "tools/ops/op_support.hpp"

#include <fmt/format.h>

#include <chrono>
#include <set>

namespace dbsparse::tools {

void for_each_matrix(const std::vector<std::string>& specs,
                     const std::function<void(const NamedMatrix&, bool generated)>& bench) {
  for (size_t i = 0; i < specs.size(); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    NamedMatrix m = load_matrix(specs[i]);
    bench(m, is_generator_spec(specs[i]));
    auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(stderr, "[{}/{}] {} done in {:.1f} s\n", i + 1, specs.size(), m.name, secs);
  }
}

void print_jit(const std::vector<const BenchRow*>& rows) {
  std::set<std::string> shown;  // rows of one plan repeat its kernel
  for (const auto* r : rows)
    if (!r->key.empty() && r->kernel_origin != "loaded" && r->kernel_origin != "memory" && shown.insert(r->key).second)
      fmt::print("jit: {} from {}: {:.2f} ms + module load {:.2f} ms\n", r->key, r->kernel_origin, r->acquire_ms,
                 r->load_ms);
}

}  // namespace dbsparse::tools

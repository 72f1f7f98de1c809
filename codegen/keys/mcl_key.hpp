#pragma once
// Markov clustering's elementwise kernels (templates/apps/mcl.cuh), one module per key, e.g.
// "mcl.f64.b256": the value type of P (the GPU MCL computes in its graph's type) and the threads
// of the block that prunes one row. Nothing else is compile-time: the inflation, the threshold and
// the top-k are kernel arguments, so one module serves every MclOptions.
#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_source.hpp"
#include "codegen/keys/value_type.hpp"

namespace dbsparse::codegen {

struct MclKey {
  ValueType value = ValueType::F64;
  int block = 256;  // threads per block of mcl_prune (a block per row of P·P): a multiple of 32 in [32, 1024]
  std::string to_string() const;
  static MclKey parse(std::string_view text);  // throws UsageError
  auto operator<=>(const MclKey&) const = default;
};

// Entry points, by role (the kernel is mcl_<role>): "prune" (inflation, pruning, normalisation of
// each row, in place), "gather" (the kept entries into the next P), "change" (the largest
// |difference| between two P's); the ends (templates/apps/mcl_ends.cuh): "start_count",
// "start_scatter", "rows_merge", "start_scale", "cc_hook" (each <T, BLOCK>), "cc_init",
// "cc_compress", "cc_label" (each <BLOCK>).
KernelSource make_source(const MclKey& key);
// Both value types with blocks of 128, 256 (the library's) and 512 threads.
std::vector<MclKey> mcl_search_space();

}  // namespace dbsparse::codegen

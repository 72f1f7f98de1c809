#pragma once
// The DB-SpMSpV kernel variant, e.g. "spmspv.auto.f32.plus_times.bs16.t=coo+dense+csr": direction
// (auto compiles both paths; push / pull only one), value type, semiring, block size and the set
// of block types present, so a matrix without Dense blocks gets a kernel without a Dense branch.
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_source.hpp"
#include "codegen/keys/value_type.hpp"
#include "dbsparse/semiring.hpp"

namespace dbsparse::codegen {

enum class Direction { Auto, Push, Pull };
using dbsparse::Semiring;
// How the pull path walks COO blocks: each by the lane that holds it (Lane), or all of a segment
// pair's COO entries spread over the warp, coalesced (Warp; the key gains ".coo=warp").
enum class PullCoo { Lane, Warp };
const char* to_string(Direction d);
using dbsparse::to_string;

struct SpmspvKey {
  Direction direction = Direction::Auto;
  ValueType value = ValueType::F32;
  Semiring semiring = Semiring::PlusTimes;
  uint8_t types = 0x0f;  // bit i: block type i present (coo, dense, csr, csc: abi/spmspv.h)
  PullCoo pull_coo = PullCoo::Lane;

  std::string to_string() const;
  static SpmspvKey parse(std::string_view text);  // throws UsageError
  auto operator<=>(const SpmspvKey&) const = default;
};

// Entry points by role, each dbs::spmspv_<role>: "prep", "compute", "scatter", "unscatter",
// "fused" (prep + compute in one cooperative launch), "sparse_prep" and "sparse_finish"
// (run_sparse_out's first and last launch), "sparse_tiny" (run_sparse_out's one-launch path).
KernelSource make_source(const SpmspvKey& key);

// Every variant a plan can pick by default (what dbtune and `dbsparse precompile` compile ahead);
// with include_opt_in, also those only an explicit config selects (pull_coo = warp).
std::vector<SpmspvKey> spmspv_search_space(bool include_opt_in = false);

}  // namespace dbsparse::codegen

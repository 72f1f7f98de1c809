#pragma once
// The SpMV kernel variant: a small value type with a stable text form (docs/DESIGN.md §2), e.g.
// "spmv.scalar.f32.b256", "spmv.vector.f32.b256.l8" or "spmv.classified.f32.b256.l2.l4.l8.l32"
// (".w64": its rows up to 64 long in memory order). The text names the kernel, keys both caches
// and appears in logs. Strategies follow adaptive CSR SpMV (docs/DESIGN.md [2]): a thread, LANES lanes, a block,
// or several blocks per row (long-row split, with a finalize pass); Classified serves every bin of
// the row classifier in one launch, with the four vector bins' lanes in its key. A key ending
// ".o64" (e.g. "spmv.vector.f32.b256.l8.o64") reads 64-bit row offsets. Classify is the
// row classifier itself ("spmv.classify.b256"): it reads only row_ptr, so its key has no value
// type (value stays F32 in it, so that parse(to_string(k)) == k); get it from spmv_classify_key().
// Gather ("spmv.gather.f32.b256") copies x into a plan's column order (SpmvConfig::reorder) before
// the row kernels run.
#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_source.hpp"
#include "codegen/keys/value_type.hpp"

namespace dbsparse::codegen {

// The longest rows a classified key's window takes (".w<N>"): a warp's run is at most 32 N entries.
constexpr int kMaxSpmvWindow = 1024;

enum class SpmvStrategy { Scalar, Vector, Block, LongRow, Classified, Classify, Gather };
const char* to_string(SpmvStrategy s);

struct SpmvKey {
  ValueType value = ValueType::F32;
  SpmvStrategy strategy = SpmvStrategy::Scalar;
  int block_size = 256;                    // threads per block: a multiple of 32 in [32, 1024]
  int lanes = 0;                           // Vector, Classified: lanes per row, 2..32, a power of two; 0 otherwise
  int lanes2 = 0, lanes3 = 0, lanes4 = 0;  // Classified only: the other vector bins' lanes
  // Classified only: rows of length <= window run in memory order, 32 a warp, instead of from
  // their bins' lists (SpmvConfig::window_max_len); text ".w<window>", nothing for 0.
  int window = 0;
  // Scalar, Vector, Block: 64-bit row offsets (a matrix past 2^31 entries, plan_spmv of a
  // DeviceCsrView64); text ".o64" at the end, nothing for 32-bit ones.
  bool offsets64 = false;

  std::string to_string() const;
  // Throws UsageError naming the malformed part.
  static SpmvKey parse(std::string_view text);
  auto operator<=>(const SpmvKey&) const = default;
};

// The row classifier of classified plans: one kernel for every value type.
SpmvKey spmv_classify_key(int block_size = 256);

// Pure: key -> source, options and the kernels' entry points, by role (KernelSource::add_entry):
// "rows" (Scalar, Vector, Block), "classified", "classify", "gather", and for LongRow "partial"
// then "finalize". Golden-tested. Throws UsageError for a Classify key with a value type other
// than F32.
KernelSource make_source(const SpmvKey& key);

// Every variant the nvrtc tier compiles and `precompile --op spmv` fills the cache with.
std::vector<SpmvKey> spmv_search_space();

}  // namespace dbsparse::codegen

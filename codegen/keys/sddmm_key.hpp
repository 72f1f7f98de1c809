#pragma once
// The SDDMM kernel variants, e.g. "sddmm.f32.v4.l8.c1.w4" or "sddmm.bf16.v1.l32.c16.w4.scale"
// (templates/sddmm/sddmm_csr.cuh): the value type of X, Y and out; `vec` values a lane's load (1
// or 4); `lanes` lanes a group (1 .. 32, a power of two; a warp holds 32 / lanes groups); `chunks`
// of lanes x vec values of X's row each lane keeps in registers (lanes x vec x chunks >= k);
// `warps` a block; ".scale" multiplies each dot by A's value.
#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_source.hpp"

namespace dbsparse::codegen {

// include/dbsparse/sddmm.hpp's dtype (SpmmDtype), enumerator for enumerator.
enum class SddmmValue { F32, F16, BF16 };
const char* to_string(SddmmValue v);  // "f32", "f16", "bf16"

struct SddmmKey {
  SddmmValue value = SddmmValue::F32;
  int vec = 4;     // 1 or 4
  int lanes = 32;  // 1, 2, 4, 8, 16 or 32
  int chunks = 1;  // 1, 2, 4, 8 or 16
  int warps = 4;   // 1, 2, 4 or 8
  bool scale = false;

  std::string to_string() const;
  static SddmmKey parse(std::string_view text);  // throws UsageError naming the bad part
  auto operator<=>(const SddmmKey&) const = default;
};

// One entry point, role "sddmm": dbs::sddmm_csr<V, warps, vec, lanes, chunks, scale>, taking
// abi::SddmmArgs. Throws UsageError for a key parse would refuse (lanes x vec x chunks past 512
// values, above which no k needs it).
KernelSource make_source(const SddmmKey& key);

// The shape a plan takes for width k (1 .. 512) and `vec` values a load: the fewest lanes (up to
// 32) whose lanes x vec cover k, then the fewest chunks covering the rest.
SddmmKey sddmm_key_for(int k, int vec, SddmmValue value, bool scale, int warps);

// Every key sddmm_key_for gives for k in 1 .. 512 (vec 4 where k % 4 == 0, and vec 1), in each
// value type, scaled and not, at `warps` warps.
std::vector<SddmmKey> sddmm_keys(int warps = 4);

}  // namespace dbsparse::codegen

#pragma once
// The SpMM kernel variants, e.g. "spmm.brp.f1.g4.w4" or "spmm.csr.v4.l8.w8" (f32: TF32 tensor
// cores, f32 CUDA cores), "spmm.brp.f16.f1.g4.w4" or "spmm.csr.bf16.v4.l8.w8" (A, B and C in f16 or
// bf16, mma.m16n8k16 and f32 sums). The f32 texts name no value type: they are the texts tuning
// databases and kernel caches written before f16 hold.
//  - Brp: BRP-SpMM with f nonzeros per slot and g TC blocks per group (brp.hpp), `warps` warps per
//    window's thread block (templates/spmm/spmm_tc.cuh); the module also holds the residual rows and
//    the C = beta * C kernels (templates/spmm/spmm_rows.cuh), which do not depend on (f, g).
//  - Csr: the CUDA-core CSR product, a warp per row, `warps` warps per block, `vec` columns per
//    lane and load (1 or 4), `lanes` lanes across N (the warp's 32 / lanes subgroups split the
//    row's entries; a plan takes the fewest lanes whose lanes * vec covers N, up to 32) and, when
//    `rows` > 1 ("spmm.csr.v4.l8.w4.r4"), that many rows a warp, each on 32 / rows lanes
//    (lanes * rows <= 32; the text of rows 1 names none, as before the field). A max or min
//    (SpmmOptions::reduce) is named last: "spmm.csr.v4.l8.w4.max"; its module holds
//    csr_spmm_reduce alone (templates/spmm/spmm_reduce.cuh), long rows in parts. The mean has no key
//    of its own: it runs the sum's modules over values scaled at plan time.
// Fields a path's text does not name keep their defaults, so parse(to_string(k)) == k holds for
// every key of spmm_search_space().
#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_source.hpp"

namespace dbsparse::codegen {

enum class SpmmKernelPath { Brp, Csr };
// include/dbsparse/spmm.hpp's SpmmDtype, enumerator for enumerator (spmm_plan.cpp checks).
enum class SpmmValue { F32, F16, BF16 };
const char* to_string(SpmmValue v);  // "f32", "f16", "bf16"
// include/dbsparse/spmm.hpp's SpmmReduce, enumerator for enumerator (spmm_spec.cpp casts).
enum class SpmmReduceOp { Sum, Mean, Max, Min };
const char* to_string(SpmmReduceOp r);  // "sum", "mean", "max", "min"

struct SpmmKey {
  SpmmKernelPath path = SpmmKernelPath::Brp;
  int f = 1, g = 4;  // Brp: 1, 2, 4 or 8 each
  int warps = 4;     // 1, 2, 4 or 8
  int vec = 1;       // Csr: 1 or 4
  int lanes = 32;    // Csr: 1, 2, 4, 8, 16 or 32
  SpmmValue value =
      SpmmValue::F32;      // after the fields above, so that positional initialisers of the f32 keys stay valid
  int rows = 1;            // Csr: rows a warp, 1, 2 or 4 (SpmmConfig::csr_rows_per_warp)
  bool offsets64 = false;  // Csr, f32: 64-bit row offsets (a DeviceCsrView64), text ".o64"
  SpmmReduceOp reduce = SpmmReduceOp::Sum;  // Csr: max or min named last; not with offsets64

  std::string to_string() const;
  static SpmmKey parse(std::string_view text);  // throws UsageError naming the bad part
  auto operator<=>(const SpmmKey&) const = default;
};

// Entry points by role (KernelSource::add_entry), in this order. Brp: "windows"
// brp_tc_windows<f, g, warps, false, false>, "residual" brp_residual<V, 8, 1>, "residual_vec4"
// brp_residual<V, 8, 4>, "window_pieces" brp_tc_windows<f, g, warps, true, false> (the long
// windows' pieces), "windows_frags" and "window_pieces_frags" (the two with FRAGS = true: A operands
// expanded ahead), "expand_frags" brp_expand_frags<f, g, warps> (f16 / bf16: brp_tc_windows16<V, ..>
// and brp_expand_frags16<V, ..>, then "finalize" spmm_finalize16<V>). Csr: "rows"
// csr_spmm_rows<V, warps, vec, lanes, false>, "pieces" <.., true> (the long rows' pieces), "relu"
// relu_inplace<V, warps> (x = max(x, 0) in place: SpmmEpilogue::Relu where a plan cannot fuse it,
// and `dbsparse gcn`'s cuSPARSE pipeline); f16 / bf16: csr_spmm_rows16 in place of csr_spmm_rows,
// then "finalize" spmm_finalize16<V>; f32 with vec 4: then "staged" csr_spmm_staged<lanes>. Csr
// with offsets64: "rows" csr_spmm_rows64<V, warps, vec, lanes, rows> alone. Csr with a reduce
// max or min: "reduce" csr_spmm_reduce<V, warps, vec, lanes, rows, op> alone, which takes
// (SpmmArgs, int32_t* arg). V is dbs::ValF32,
// ValF16 or ValBF16.
// The 16-bit brp_tc_windows16, csr_spmm_rows16 and spmm_finalize16 take (SpmmArgs, SpmmAcc), every
// other entry SpmmArgs alone (abi/spmm.h): 16-bit plans sum the rows and windows cut into pieces in
// an f32 workspace.
// Throws UsageError for a key parse would refuse.
KernelSource make_source(const SpmmKey& key);

// Brp: every (f, g) in {1, 2, 4, 8}^2 with 1, 2, 4 and 8 warps; Csr: vec 1 and 4, every lanes, 8
// warps; each in f32, f16 and bf16. Sum only: the tuner times the sum.
std::vector<SpmmKey> spmm_search_space();

// The reductions max and min: Csr keys at 4 warps (SpmmConfig::csr_warps' default) with
// every vec, lanes and rows a warp a plan can pick, in f32, f16 and bf16 (not tuned).
std::vector<SpmmKey> spmm_reduce_keys();

}  // namespace dbsparse::codegen

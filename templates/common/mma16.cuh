// One warp-wide mma.m16n8k16 with fp32 sums, for f16 and bf16 operands (A row-major 16 x 16 in the
// fragment order of the PTX ISA, B col-major 16 x 8): BRP-SpMM (spmm_tc_half.cuh) and the dense
// decoding layer (decode_dense.cuh). Needs sm_80 or later.
#pragma once
#include "value_types.cuh"

namespace dbs {

template <typename V>
struct MmaK16;
template <>
struct MmaK16<ValF16> {
  static __device__ __forceinline__ void run(float (&d)[4], const uint4& a, unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
  }
};
template <>
struct MmaK16<ValBF16> {
  static __device__ __forceinline__ void run(float (&d)[4], const uint4& a, unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
  }
};

}  // namespace dbs

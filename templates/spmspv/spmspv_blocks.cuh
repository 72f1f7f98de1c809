// DB-SpMSpV block microkernels (the DB-SpMSpV paper Alg. 2-4). Each one multiplies one 16×16 block
// by its 16-element x block for one warp, and leaves row r's partial in lane r (r < 16); other
// lanes return zero. Which microkernel runs is decided per block by its type and, for Dense, the
// popcount of the x block's mask: the local half of the two-level adaptivity. COO blocks are too
// small for a warp; spmspv.cuh walks each with a single lane (coo_by_lane).
#pragma once
#include "dbs_common.cuh"
#include "dbsparse/abi/spmspv.h"

namespace dbs {
using namespace dbsparse::abi;  // the host/kernel contract: block types, BlockMeta, constants

// (+, ×): numeric SpMSpV. The Boolean (OR, AND) semiring for BFS plugs in with the same members.
template <typename T>
struct PlusTimes {
  static __device__ __forceinline__ T zero() { return T(0); }
  static __device__ __forceinline__ T add(T a, T b) { return a + b; }
  static __device__ __forceinline__ T mul(T a, T b) { return a * b; }
  static __device__ __forceinline__ void atomic_add(T* p, T v) { atomicAdd(p, v); }
};

template <typename T>
__device__ __forceinline__ T shfl_xor(T v, int m) {
  return __shfl_xor_sync(kFull, v, m);
}
template <typename T>
__device__ __forceinline__ T shfl(T v, int src) {
  return __shfl_sync(kFull, v, src);
}

// Dense (Alg. 4): two rows per step, 16 lanes per row, coalesced 64-byte row loads. With one or
// two active columns, reading only those columns touches fewer sectors than all 256 values.
template <typename T, typename SR>
__device__ __forceinline__ T dense_block(unsigned xm, const T* sx, const T* val, int lane) {
  if (__popc(xm) <= 2) {
    T acc = SR::zero();
    if (lane < 16)
      for (unsigned a = xm; a; a &= a - 1) {
        int c = __ffs(a) - 1;
        acc = SR::add(acc, SR::mul(val[lane * 16 + c], sx[c]));
      }
    return acc;
  }
  const int half = lane >> 4, c = lane & 15;
  const T xv = sx[c];
  T acc = SR::zero();
#pragma unroll
  for (int rb = 0; rb < 16; rb += 2) {
    T v = SR::mul(val[(rb + half) * 16 + c], xv);
#pragma unroll
    for (int o = 8; o; o >>= 1) v = SR::add(v, shfl_xor(v, o));
    T other = shfl_xor(v, 16);  // half 0 now also holds row rb+1's sum
    if (lane == rb) acc = v;
    if (lane == rb + 1) acc = other;
  }
  return lane < 16 ? acc : SR::zero();
}

// ForceCSR (Alg. 2): two interleaved lanes per row over the row's active columns. rm and base are
// row (lane >> 1)'s mask and first value, from the block's aux: the pull path loads them a block
// ahead (csr_rows_aux), so here only the value loads remain.
template <typename T, typename SR>
__device__ __forceinline__ T csr_rows_from(unsigned xm, const T* sx, const T* val, unsigned rm, unsigned base,
                                           int lane) {
  const int sub = lane & 1;
  T sum = SR::zero();
  int nz = 0;
  for (unsigned a = rm & xm; a; a &= a - 1, ++nz) {
    if ((nz & 1) != sub) continue;
    int c = __ffs(a) - 1;
    unsigned p = base + __popc(rm & ((1u << c) - 1u));
    sum = SR::add(sum, SR::mul(val[p], sx[c]));
  }
  sum = SR::add(sum, shfl_xor(sum, 1));
  T mine = shfl(sum, (2 * lane) & 31);  // lane r takes row r from lane 2r
  return lane < 16 ? mine : SR::zero();
}

// The blocks walked row by row: ForceCSR (which the paper's patched CSR is stored as).
__device__ __forceinline__ bool is_row_walk(unsigned type) { return DBS_HAS_CSR && type == kForceCsr; }

// Row (lane >> 1)'s first value and mask of a row-walk block: aux holds row_ptr[17], row_mask[16].
__device__ __forceinline__ void csr_rows_aux(const unsigned char* aux, int lane, unsigned& base, unsigned& rm) {
  const unsigned short* a16 = reinterpret_cast<const unsigned short*>(aux);
  base = a16[lane >> 1];
  rm = a16[17 + (lane >> 1)];
}

template <typename T, typename SR>
__device__ __forceinline__ T csr_rows(unsigned xm, const T* sx, const T* val, const unsigned char* aux, int lane) {
  unsigned base, rm;
  csr_rows_aux(aux, lane, base, rm);
  return csr_rows_from<T, SR>(xm, sx, val, rm, base, lane);
}

// ForceCSC (Alg. 3): the two half-warps split the columns; lane r owns row r in each half.
template <typename T, typename SR>
__device__ __forceinline__ T csc_cols(unsigned xm, const T* sx, const T* val, const unsigned short* col_ptr,
                                      const unsigned short* col_mask, int lane) {
  const int r = lane & 15, part = lane >> 4;
  T sum = SR::zero();
  for (unsigned a = xm & (part ? 0xff00u : 0x00ffu); a; a &= a - 1) {
    int c = __ffs(a) - 1;
    unsigned cm = col_mask[c];
    if ((cm >> r) & 1u) {
      unsigned p = col_ptr[c] + __popc(cm & ((1u << r) - 1u));
      sum = SR::add(sum, SR::mul(val[p], sx[c]));
    }
  }
  sum = SR::add(sum, shfl_xor(sum, 16));
  return lane < 16 ? sum : SR::zero();
}

template <typename T, typename SR>
__device__ __forceinline__ T block_product(const BlockMeta& m, unsigned xm, const T* sx, const T* values,
                                           const unsigned char* aux_all, int lane) {
  const T* val = values + m.val_off;
  const unsigned char* aux = aux_all + m.aux_off;
  const unsigned short* a16 = reinterpret_cast<const unsigned short*>(aux);
  switch (m.type) {
#if DBS_HAS_DENSE
    case kDense:
      return dense_block<T, SR>(xm, sx, val, lane);
#endif
#if DBS_HAS_CSR
    case kForceCsr:
      return csr_rows<T, SR>(xm, sx, val, aux, lane);
#endif
#if DBS_HAS_CSC
    case kForceCsc:
      return csc_cols<T, SR>(xm, sx, val, a16, a16 + 17, lane);
#endif
    default:
      return SR::zero();
  }
}

}  // namespace dbs

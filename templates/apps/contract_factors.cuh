// Graph contraction's factors built on the device (include/dbsparse/spgemm_apps.hpp,
// contraction_factors from device labels): S (k x n, row a the vertices labelled a, ascending,
// values 1) and Sᵀ (n x k, row j the single entry (j, labels[j])). Compiled into the SpGEMM
// analysis module, whose scan (spgemm_tile_sums, spgemm_scan_tiles, spgemm_row_ptr) turns the
// counts into S's row pointers:
//  contract_count    vertices per label (atomics), the first vertex with a label outside [0, k)
//                    and the largest count (how many merge passes S's rows need)
//  contract_scatter  every vertex into its label's row of S in atomic order; Sᵀ's row pointers
//                    and both value arrays
//  contract_merge    one pass of a merge sort inside every row of S (templates/apps/row_merge.cuh)
// Why a merge and not a stable counting sort: the per-block prefix a stable scatter needs is a
// k x blocks table, too large for k near n; the passes cost log2(the largest row) reads of S.
#pragma once
#include "dbs_common.cuh"
#include "row_merge.cuh"

namespace dbs {

// check[0]: the first vertex with a bad label (atomicMin; starts at 0xffffffff); check[1]: the
// largest count (atomicMax; starts at 0). counts: k zeros on entry.
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) contract_count(int n, const int* __restrict__ labels, int k,
                                                        int* __restrict__ counts, unsigned* __restrict__ check) {
  const int j = blockIdx.x * BLOCK + threadIdx.x;
  unsigned seen = 0;
  if (j < n) {
    const int l = labels[j];
    if ((unsigned)l >= (unsigned)k)
      atomicMin(&check[0], (unsigned)j);
    else
      seen = (unsigned)atomicAdd(&counts[l], 1) + 1u;  // the last vertex of a label sees its count
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) seen = max(seen, __shfl_xor_sync(kFull, seen, o));
  // Most warps see no new maximum once a few have: read before the atomic on one address.
  if ((threadIdx.x & 31) == 0 && seen > *(volatile unsigned*)&check[1]) atomicMax(&check[1], seen);
}

// Thread j <= n: st_ptr[j] = j; j < n also places vertex j in S (s_ptr from the scan, cursor k
// zeros on entry) and writes the ones of both value arrays (raw words of val_bytes, 4 or 8, so
// one module serves f32 and f64).
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    contract_scatter(int n, const int* __restrict__ labels, const int* __restrict__ s_ptr, int* __restrict__ cursor,
                     int* __restrict__ s_col, int* __restrict__ st_ptr, void* __restrict__ s_val,
                     void* __restrict__ st_val, int val_bytes) {
  const int j = blockIdx.x * BLOCK + threadIdx.x;
  if (j > n) return;
  st_ptr[j] = j;
  if (j == n) return;
  const int l = labels[j];
  s_col[s_ptr[l] + atomicAdd(&cursor[l], 1)] = j;
  if (val_bytes == 8) {
    const unsigned long long one = 0x3ff0000000000000ull;  // 1.0
    ((unsigned long long*)s_val)[j] = one;
    ((unsigned long long*)st_val)[j] = one;
  } else {
    const unsigned one = 0x3f800000u;  // 1.0f
    ((unsigned*)s_val)[j] = one;
    ((unsigned*)st_val)[j] = one;
  }
}

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    contract_merge(int n, const int* __restrict__ labels, const int* __restrict__ s_ptr, const int* __restrict__ in,
                   int* __restrict__ out, int w) {
  const int e = blockIdx.x * BLOCK + threadIdx.x;
  if (e >= n) return;
  const int x = in[e], l = labels[x], rs = s_ptr[l];
  out[rs + row_merge_target(in + rs, s_ptr[l + 1] - rs, e - rs, w, x)] = x;
}

}  // namespace dbs

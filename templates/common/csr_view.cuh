// Kernels over a CSR matrix the caller keeps on the device (plans that read it in place).
//
// csr_check: the matrix is checked before a plan trusts it (one pass each,
// a few ms even past 2^31 entries; runtime/gpu/device_csr_view.cpp launches them):
//   pass 0, a thread a row: offsets in [0, nnz] and not decreasing, row 0 starting at 0 and the
//     last row ending at nnz;
//   pass 1, grid-stride over the entries: columns in [0, cols);
//   pass 2 (where the plan needs it), a warp a row: each entry above the one before it (columns
//     sorted and unique). Passes 1 and 2 run only after pass 0 found the offsets sound.
// csr_length_histogram, csr_degree_scatter: the rows by decreasing length (the SpMM degree order,
// SpmmConfig::reorder), made where the matrix is: the buckets counted (and the lengths' moments
// for reorder auto), scanned on the host (kDegreeBuckets values), then each row placed at its
// bucket's cursor. Rows of one bucket land in any order: a row's sum does not depend on which
// warp computes it, so C does not either.
// Off: the row offsets' type, int or long long (key csr_view.o32 / .o64).
#pragma once
#include "dbs_common.cuh"
#include "dbsparse/abi/csr_view.h"

namespace dbs {

__device__ __forceinline__ unsigned long long check_warp_sum(unsigned long long v) {
#pragma unroll
  for (int d = 16; d >= 1; d >>= 1) v += __shfl_xor_sync(kFull, v, d);
  return v;
}

template <typename Off>
__global__ void __launch_bounds__(256) csr_check(const Off* ptr, const int32_t* idx, int rows, long long nnz, int cols,
                                                 int pass, dbsparse::abi::CsrCheck* out) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long nt = (long long)gridDim.x * blockDim.x;
  const unsigned lane = threadIdx.x & 31u;
  unsigned long long bad = 0;
  if (pass == 0) {
    for (long long i = tid; i < rows; i += nt) {
      const long long b = (long long)ptr[i], e = (long long)ptr[i + 1];
      if (!(b >= 0 && b <= e && e <= nnz && (i != 0 || b == 0) && (i != rows - 1 || e == nnz))) {
        ++bad;
        atomicMin(&out->first_bad_row, (unsigned long long)i);
      }
    }
    if (rows == 0 && tid == 0 && ((long long)ptr[0] != 0 || nnz != 0)) {  // no rows: nothing stored
      ++bad;
      atomicMin(&out->first_bad_row, 0ull);
    }
    bad = check_warp_sum(bad);
    if (lane == 0 && bad) atomicAdd(&out->bad_rows, bad);
  } else if (pass == 1) {
    for (long long k = tid; k < nnz; k += nt) {
      const int j = idx[k];
      if (j < 0 || j >= cols) {
        ++bad;
        atomicMin(&out->first_bad_entry, (unsigned long long)k);
      }
    }
    bad = check_warp_sum(bad);
    if (lane == 0 && bad) atomicAdd(&out->bad_cols, bad);
  } else {
    for (long long i = tid >> 5; i < rows; i += nt >> 5) {
      const long long begin = (long long)ptr[i], end = (long long)ptr[i + 1];
      for (long long k = begin + lane; k < end; k += 32)
        if (k > begin && idx[k - 1] >= idx[k]) {
          ++bad;
          atomicMin(&out->first_unsorted, (unsigned long long)i);
        }
    }
    bad = check_warp_sum(bad);
    if (lane == 0 && bad) atomicAdd(&out->unsorted, bad);
  }
}

__device__ __forceinline__ int degree_bucket(long long length) {
  return dbsparse::abi::kDegreeCap - (int)(length < dbsparse::abi::kDegreeCap ? length : dbsparse::abi::kDegreeCap);
}

// counts[kDegreeBuckets] += the rows of each bucket, through a block-wide histogram in shared
// memory (most rows of a graph share a few lengths: one global atomic a bucket a block).
template <typename Off>
__global__ void __launch_bounds__(256)
    csr_length_histogram(const Off* ptr, int rows, unsigned* counts, dbsparse::abi::CsrLengthMoments* moments) {
  __shared__ unsigned local[dbsparse::abi::kDegreeBuckets];
  for (int b = threadIdx.x; b < dbsparse::abi::kDegreeBuckets; b += blockDim.x) local[b] = 0;
  __syncthreads();
  double sum = 0, sum_sq = 0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < rows;
       i += (long long)gridDim.x * blockDim.x) {
    const long long len = (long long)ptr[i + 1] - (long long)ptr[i];
    atomicAdd(&local[degree_bucket(len)], 1u);
    sum += (double)len;
    sum_sq += (double)len * (double)len;
  }
#pragma unroll
  for (int d = 16; d >= 1; d >>= 1) {
    sum += __shfl_xor_sync(kFull, sum, d);
    sum_sq += __shfl_xor_sync(kFull, sum_sq, d);
  }
  if ((threadIdx.x & 31u) == 0 && sum_sq > 0) {
    atomicAdd(&moments->sum, sum);
    atomicAdd(&moments->sum_sq, sum_sq);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < dbsparse::abi::kDegreeBuckets; b += blockDim.x)
    if (local[b]) atomicAdd(&counts[b], local[b]);
}

// order[cursor[bucket]++] = row, with cursor the buckets' exclusive scan: the lanes of a warp
// that share a bucket take their places with one atomic (match_any), so a graph's common lengths
// do not serialise on one counter.
template <typename Off>
__global__ void __launch_bounds__(256) csr_degree_scatter(const Off* ptr, int rows, unsigned* cursor, int* order) {
  const unsigned lane = threadIdx.x & 31u;
  for (long long base = (long long)blockIdx.x * blockDim.x; base < rows; base += (long long)gridDim.x * blockDim.x) {
    const long long i = base + threadIdx.x;
    const bool live = i < rows;
    const int bucket = live ? degree_bucket((long long)ptr[i + 1] - (long long)ptr[i]) : -1;
    const unsigned peers = __match_any_sync(kFull, bucket);
    const unsigned leader = __ffs(peers) - 1;
    unsigned at = 0;
    if (live && lane == leader) at = atomicAdd(&cursor[bucket], (unsigned)__popc(peers));
    at = __shfl_sync(kFull, at, leader);
    if (live) order[at + __popc(peers & ((1u << lane) - 1u))] = (int)i;
  }
}

}  // namespace dbs

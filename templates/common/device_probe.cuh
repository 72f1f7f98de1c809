// The device profile's probe kernels (runtime/profile/profile_measure.cpp times them): what the
// cost models need to know of a GPU that its attributes do not say.
#pragma once
#include "dbs_common.cuh"

namespace dbs {

// A streaming copy of n 16-byte words: device memory's bandwidth when the buffers exceed the L2.
__global__ void __launch_bounds__(256)
    probe_copy(const float4* __restrict__ in, float4* __restrict__ out, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = in[i];
}

// Reads n 16-byte words reps times, past L1 (ld.global.cg): the L2's read bandwidth when the
// buffer fits in it. The sum is written only on an impossible value, so the loads stay.
__global__ void __launch_bounds__(256) probe_read(const float4* __restrict__ in, long long n, int reps, float* out) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  float acc = 0.f;
  for (int r = 0; r < reps; ++r)
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
      const float4 v = __ldcg(in + i);
      acc += v.x + v.y + v.z + v.w;
    }
  if (acc == -1.2345e-30f) out[0] = acc;
}

// Nothing: the launch's own cost.
__global__ void probe_empty() {}

// One thread, count global atomics each depending on the one before: the atomic's round trip.
__global__ void probe_atomic_chain(unsigned* word, int count, unsigned* out) {
  unsigned v = 1u;
  for (int i = 0; i < count; ++i) v = (atomicAdd(word, v) & 2u) | 1u;
  out[0] = v;
}

// count barriers across the whole grid, which must be co-resident (a cooperative launch): each
// block's first thread arrives on a counter; the last to arrive resets it and opens the next
// generation, the others wait for that.
__global__ void probe_grid_barrier(unsigned* arrive, unsigned* generation, int count) {
  volatile unsigned* gen = generation;
  for (int i = 0; i < count; ++i) {
    __syncthreads();
    if (threadIdx.x == 0) {
      const unsigned g = *gen;
      __threadfence();
      if (atomicAdd(arrive, 1u) == gridDim.x - 1) {
        atomicExch(arrive, 0u);
        __threadfence();
        atomicAdd(generation, 1u);
      } else {
        while (*gen == g) {
        }
      }
      __threadfence();
    }
    __syncthreads();
  }
}

}  // namespace dbs

// DB-Decoding's activation sparsifier (the DB-SpMSpV paper §4.3; TEAL's magnitude threshold): x_i kept
// where |x_i| >= tau, else 0, so the SpMSpV mask pass that follows sees ~keep of x as nonzero.
// Fusing it into the mask pass (one read of x instead of two) is an open step. The
// decoding kernels on the column bitmap layout are in decode_bitmap.cuh.
#pragma once
#include "dbs_common.cuh"
#include "dbsparse/abi/abi_types.h"

namespace dbs {

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    sparsify_threshold(const T* __restrict__ x, T* __restrict__ xs, int n, float tau) {
  for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) {
    const T v = x[i];
    xs[i] = fabsf((float)v) >= tau ? v : T(0);
  }
}

}  // namespace dbs

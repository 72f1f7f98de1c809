#pragma once
// The SpMV host/kernel contract (docs/DESIGN.md §10). runtime/spmv/spmv_plan.cpp includes it, and so do the
// SpMV templates under NVRTC: what both sides must agree on is written once. The static_asserts
// run in both compilers, so a layout that differs between them fails to build, not at run time.
// Device pointers are typed pointers on both sides (the host fills them from CUdeviceptr); sizes
// match because host and device are both 64-bit.
#include "dbsparse/abi/abi_types.h"

namespace dbsparse::abi {

// The classifier (templates/spmv/spmv_classify.cuh) puts each row in the first bin whose max_len is
// at least its length; it has room for this many bins.
constexpr int kSpmvClassifyMaxBins = 8;

struct SpmvClassifyBounds {
  int32_t max_len[kSpmvClassifyMaxBins];  // bin b takes rows with max_len[b-1] < length <= max_len[b]
  int32_t nbins;                          // the last bin takes every longer row
};
static_assert(sizeof(SpmvClassifyBounds) == 36, "SpmvClassifyBounds layout");
static_assert(DBS_ABI_OFFSETOF(SpmvClassifyBounds, nbins) == 32, "SpmvClassifyBounds layout");

// The classifier's counting pass adds each bin's rows and nonzeros here (one per bin).
struct SpmvBinCount {
  uint64_t rows, nnz;
};
static_assert(sizeof(SpmvBinCount) == 16, "SpmvBinCount layout");
static_assert(DBS_ABI_OFFSETOF(SpmvBinCount, nnz) == 8, "SpmvBinCount layout");

// A long row is split into chunks of nonzeros [first, end), one thread block each; slot is the
// row's index in the plan's long-row list. 16-byte aligned so a kernel reads a chunk in one load.
struct alignas(16) SpmvChunk {
  int32_t row, first, end, slot;
};
static_assert(sizeof(SpmvChunk) == 16 && alignof(SpmvChunk) == 16, "SpmvChunk layout");
static_assert(DBS_ABI_OFFSETOF(SpmvChunk, first) == 4 && DBS_ABI_OFFSETOF(SpmvChunk, end) == 8 &&
                  DBS_ABI_OFFSETOF(SpmvChunk, slot) == 12,
              "SpmvChunk layout");

// The one-launch classified kernel's bins, in row-length order; its grid runs them in the
// reverse order (heavy thread blocks first).
constexpr int kSpmvClassBins = 7;
constexpr int kSpmvScalarBin = 0;  // bins 1 .. 4: vector, with the key's four lane counts
constexpr int kSpmvBlockBin = 5;
constexpr int kSpmvLongRowBin = 6;  // counted in chunks, not rows

// The classified kernel's only argument, taken by value.
template <typename T>
struct SpmvClassifiedArgs {
  const int32_t* row_ptr;
  const int32_t* col_idx;
  const T* vals;
  const T* x;
  T* y;
  const int32_t* lists;               // rows of the row bins, bin after bin
  const SpmvChunk* chunks;            // the long-row bin
  const int32_t* chunk_ptr;           // chunks of long-row slot s: chunk_ptr[s] .. chunk_ptr[s + 1]
  T* partial;                         // one per chunk
  uint32_t* arrivals;                 // per long-row slot; zero between runs
  int32_t list_off[kSpmvClassBins];   // first entry of bin k in lists
  int32_t count[kSpmvClassBins];      // rows of bin k (long-row bin: chunks)
  int32_t block_end[kSpmvClassBins];  // cumulative thread blocks, in grid order (long-row bin first)
  T alpha, beta;
};
static_assert(DBS_ABI_OFFSETOF(SpmvClassifiedArgs<float>, x) == 24, "SpmvClassifiedArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmvClassifiedArgs<float>, chunks) == 48, "SpmvClassifiedArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmvClassifiedArgs<float>, arrivals) == 72, "SpmvClassifiedArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmvClassifiedArgs<float>, list_off) == 80, "SpmvClassifiedArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmvClassifiedArgs<float>, count) == 108, "SpmvClassifiedArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmvClassifiedArgs<float>, block_end) == 136, "SpmvClassifiedArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmvClassifiedArgs<float>, alpha) == 164, "SpmvClassifiedArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmvClassifiedArgs<float>, beta) == 168, "SpmvClassifiedArgs layout");
static_assert(sizeof(SpmvClassifiedArgs<float>) == 176, "SpmvClassifiedArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmvClassifiedArgs<double>, block_end) == 136, "SpmvClassifiedArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmvClassifiedArgs<double>, alpha) == 168, "SpmvClassifiedArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmvClassifiedArgs<double>, beta) == 176, "SpmvClassifiedArgs layout");
static_assert(sizeof(SpmvClassifiedArgs<double>) == 184, "SpmvClassifiedArgs layout");

}  // namespace dbsparse::abi

// One pass of a merge sort inside the rows of a CSR array, shared by the sorts that place entries
// by atomics first (templates/apps/contract_factors.cuh, templates/apps/mcl_ends.cuh): sorted runs of w
// become runs of 2w. Keys are unique in a row, so an entry's place in the merged run is its place
// in its own run plus the number of smaller keys in the other run: no shared memory, no barrier.
#pragma once

namespace dbs {

// Where key x, at index p of a row of len keys (row[0..len), runs of w sorted), goes in the pass.
__device__ __forceinline__ int row_merge_target(const int* __restrict__ row, int len, int p, int w, int x) {
  const int own = p & ~(w - 1), base = p & ~(2 * w - 1), other = own ^ w;
  const int lo0 = min(other, len);
  int lo = lo0, hi = min(other + w, len);
  while (lo < hi) {  // the first key of the other run not below x
    const int mid = (lo + hi) >> 1;
    if (row[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return base + (p - own) + (lo - lo0);
}

}  // namespace dbs

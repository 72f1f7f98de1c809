#pragma once
// What the host can hold, checked before an input's size turns into allocations: Linux overcommits,
// so a 2e9 x 2e9 Matrix Market header with three entries did not fail with std::bad_alloc but
// paged a 23 GB host for minutes. The limit is 80% of the host's physical memory, or
// DBSPARSE_HOST_MEMORY (bytes, or with a K, M, G or T suffix) where set.
#include <cstdint>
#include <string>

namespace dbsparse {

double host_memory_bytes();

// Throws HostMemoryError naming `what` when `bytes` exceed host_memory_bytes().
void require_host_bytes(double bytes, const std::string& what);

}  // namespace dbsparse

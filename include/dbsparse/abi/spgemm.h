// Hash SpGEMM's host/kernel contract (DESIGN.md §10): the constants of the per-row hash tables,
// shared by the CPU spec (runtime/spgemm_hash_cpu.cpp) and the kernels to come, so that both
// probe the same slots in the same order.
//
// A table has a power-of-two number of slots; a key is a column of C (int32, >= 0). A key's first
// slot is (uint32(key) * kSpgemmHashMultiplier) & (slots - 1), computed in uint32 arithmetic (it
// wraps; only the low log2(slots) bits are kept, and they are the same as the exact product's).
// Probing is linear: slot + 1, slot + 2, ... modulo slots. An empty slot holds kSpgemmEmptyKey
// and is claimed by atomicCAS(kSpgemmEmptyKey -> key).
#pragma once
#include "dbsparse/abi/abi_types.h"

namespace dbsparse::abi {

// Odd, so key -> key * 107 mod 2^k is a bijection of the low k bits: the columns of a row that lie
// within one aligned window of `slots` columns (banded, stencil, grid rows) never share a first
// slot. 107 is Nagasaka et al.'s HASH_SCAL (nsparse, ICPP'17), the value the article's design
// descends from.
constexpr uint32_t kSpgemmHashMultiplier = 107u;
constexpr int32_t kSpgemmEmptyKey = -1;

// Groups by intermediate products (IP): 0, 1, 2 use a table in shared memory, 3 a table in global
// memory (SpgemmConfig holds the bounds and the sizes).
constexpr int kSpgemmGroups = 4;
constexpr int kSpgemmGlobalGroup = 3;

}  // namespace dbsparse::abi

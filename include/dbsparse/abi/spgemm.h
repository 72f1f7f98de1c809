// Hash SpGEMM's host/kernel contract (docs/DESIGN.md §10): the constants of the per-row hash tables,
// shared by the CPU spec (runtime/spgemm/spgemm_hash_cpu.cpp) and the kernels, so that both probe the
// same slots in the same order; and the analysis's rules and counters, shared by the plan and
// the analysis kernels.
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

// --- the analysis on the GPU (templates/spgemm/spgemm_analysis.cuh) ---------------------------------

// A row's code, one byte per row of A: -1 when IP == 0 (no group, no launch), else its group, with
// kSpgemmMayOverflow added for a row of groups 0-2 that may overflow its shared table and so also
// gets a global table (only under overflow_to_global).
constexpr int kSpgemmIdleRow = -1;
constexpr int kSpgemmMayOverflow = 4;

// The config's rules as the kernels take them (a kernel argument, by value).
struct SpgemmGroupRule {
  int32_t bound[3];  // b0, b1, b2
  int32_t table[3];  // t0, t1, t2
  int32_t b_cols;    // no row of C is longer
  int32_t global_scale;
  int32_t overflow_to_global;
  int32_t pad;
};
static_assert(sizeof(SpgemmGroupRule) == 40, "SpgemmGroupRule is 40 bytes on both sides");

// Slots of a row's global table: the next power of two >= global_scale * max(1, min(ip, b_cols)),
// at most 2^31 (B has at most 2^31 - 1 columns, so that holds any row and slot numbers fit uint32);
// b_cols instead where that is at most twice as many, and then the table is dense (slot = column,
// templates/spgemm/spgemm.cuh: no hashing, C's row written in order without a sort).
DBS_ABI_FN int64_t spgemm_table_slots(int64_t ip, int32_t b_cols, int32_t global_scale) {
  int64_t m = ip < b_cols ? ip : b_cols;
  if (m < 1) m = 1;
  const int64_t want = global_scale * m;
  int64_t slots = 1;
  while (slots < want && slots < (int64_t(1) << 31)) slots *= 2;
  if (slots < b_cols && 2 * slots >= b_cols) slots = b_cols;
  return slots;
}

// The group of a row with `ip` products: kSpgemmIdleRow when ip <= 0, else the first g of 0..2
// with ip < bound[g], else kSpgemmGlobalGroup. The one definition of the groups' boundaries: the
// analysis kernel (spgemm_row_code), the plan and the CPU spec (spgemm_group_of) all call it.
DBS_ABI_FN int spgemm_ip_group(int64_t ip, const int32_t bound[3]) {
  if (ip <= 0) return kSpgemmIdleRow;
  for (int g = 0; g < kSpgemmGlobalGroup; ++g)
    if (ip < bound[g]) return g;
  return kSpgemmGlobalGroup;
}

// Whether a row of `ip` products can have more distinct columns (at most min(ip, b_cols)) than a
// shared table of `table` slots holds: only such a row can overflow it.
DBS_ABI_FN bool spgemm_may_overflow(int64_t ip, int32_t b_cols, int32_t table) {
  const int64_t distinct = ip < b_cols ? ip : b_cols;
  return distinct > table;
}

// The code of a row with `ip` products (see kSpgemmIdleRow).
DBS_ABI_FN int spgemm_row_code(int64_t ip, const SpgemmGroupRule& r) {
  const int g = spgemm_ip_group(ip, r.bound);
  if (g < 0 || g == kSpgemmGlobalGroup) return g;
  return r.overflow_to_global && spgemm_may_overflow(ip, r.b_cols, r.table[g]) ? g + kSpgemmMayOverflow : g;
}

// Where a global-table row's table lies in the plan's one array of slots (per position of the
// global row list; the scatter pass hands out the offsets, so their order is not the list's).
struct SpgemmTable {
  int64_t offset;
  int64_t slots;
  int64_t ip;  // the row's products: the global kernels' blocks split them evenly
};
static_assert(sizeof(SpgemmTable) == 24, "SpgemmTable is 24 bytes on both sides");

// What the analysis and the symbolic phase count on the device, read back by the host in two
// small copies (after the analysis: the groups; after the symbolic phase: nnz(C)). Everything up
// to first_bad_b is zeroed before the analysis; first_bad_b and first_bad_a are set to all ones
// (none found) and lowered by atomicMin.
struct SpgemmStats {
  int64_t ip[kSpgemmGroups];          // products of each group's rows
  int64_t max_ip;                     // the largest IP of a row
  int64_t global_slots;               // the global tables' slots together
  uint64_t table_cursor;              // the scatter pass's next free slot
  int64_t nnz;                        // nnz(C), from the symbolic phase's row lengths (int64: it may pass 2^31-1)
  int32_t rows[kSpgemmGroups];        // rows per group
  int32_t idle;                       // rows with IP == 0
  int32_t may_overflow;               // rows of groups 0-2 with a global table too
  int32_t cursor[kSpgemmGroups + 1];  // the scatter pass's: groups 0-3, then the may-overflow rows
  int32_t overflowed;                 // rows the symbolic phase found over their shared table
  int32_t bad_ptr;                    // bit 0: A's row_ptr does not run 0..nnz(A); bit 1: B's
  int32_t pad;
  int32_t group_max_ip[3];  // the largest IP of a row of groups 0-2 (< b2 <= 2^30): their tables' fit
  int32_t pad3;
  uint64_t first_bad_b;  // the first position of B with a column outside [0, B's columns)
  uint32_t first_bad_a;  // the first row of A with a column outside [0, A's columns)
  uint32_t pad2;
};
static_assert(sizeof(SpgemmStats) == 152, "SpgemmStats is 152 bytes on both sides");
static_assert(DBS_ABI_OFFSETOF(SpgemmStats, first_bad_b) == 136, "SpgemmStats: the all-ones tail starts at 136");

}  // namespace dbsparse::abi

// Hash SpGEMM's analysis (include/dbsparse/spgemm.hpp): the config's rules, intermediate
// products, row groups, and the bounds a plan sizes its buffers by.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/spgemm.hpp"
#include "runtime/spgemm/spgemm_plan_spec.hpp"

namespace dbsparse {
namespace {

bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

[[noreturn]] void fail(const std::string& key, const std::string& what) {
  config_detail::fail(SpgemmConfig::kOp, key, what);
}

std::string key(const char* base, int group) { return fmt::format("{}{}", base, group); }

}  // namespace

void SpgemmConfig::check() const {
  for (int g = 1; g < 3; ++g)
    if (bound(g) <= bound(g - 1))
      fail(key("b", g), fmt::format("must be greater than '{}' (the group bounds increase: b0 < b1 < b2), got {} = {}, "
                                    "{} = {}",
                                    key("b", g - 1), key("b", g - 1), bound(g - 1), key("b", g), bound(g)));
  for (int g = 0; g < 3; ++g)
    if (!is_pow2(table(g)))
      fail(key("t", g),
           fmt::format("must be a power of two (a key's slot is its hash & (slots - 1)), got {}", table(g)));
  if (!is_pow2(lanes0))
    fail("lanes0", fmt::format("must be a power of two up to 32 (a row's lanes share one warp), got {}", lanes0));
  for (int g = 1; g < 3; ++g) {
    const int l = g == 1 ? lanes1 : lanes2;
    if (l != 0 && !is_pow2(l))
      fail(key("lanes", g), fmt::format("must be a power of two up to 32 (a row's lanes share one warp) or 0 (the "
                                        "whole block), got {}",
                                        l));
  }
  if (merge2 != 0 && lanes2 != 0)
    fail("merge2", fmt::format("needs 'lanes2' = 0 (a block a row: the merge ranks a row's products over the "
                               "whole block), got lanes2 = {}",
                               lanes2));
  for (int g = 0; g < kSpgemmGroups; ++g)
    if (block(g) % 32 != 0)
      fail(key("block", g), fmt::format("must be a multiple of 32 (whole warps), got {}", block(g)));
  // Without the fallback nothing catches a full table, so every row of the group must leave an
  // empty slot: a row of group g has at most b_g - 1 distinct columns.
  if (overflow_to_global == 0)
    for (int g = 0; g < 3; ++g)
      if (table(g) < bound(g))
        fail(key("t", g),
             fmt::format("must be at least '{}' = {} when 'overflow_to_global' is 0 (a row of group {} can "
                         "have {} distinct columns and its table must keep an empty slot), got {}",
                         key("b", g), bound(g), g, bound(g) - 1, table(g)));
  for (int g = 0; g < 3; ++g) {
    // A block per row also keeps a chunk of A entries (two ints and a value each) in static shared memory.
    const int64_t bytes = spgemm_shared_bytes(*this, g, 8) + (lanes(g) > 32 ? int64_t{block(g)} * 16 : 0);
    if (bytes > kSpgemmMaxSharedBytes)
      fail(key("t", g),
           fmt::format("= {} needs {} bytes of shared memory per block in group {} ({} table(s) per block, {} bytes a "
                       "slot in f64), over the {} a block can have on sm_90{}",
                       table(g), bytes, g, rows_per_block(g), kSpgemmSlotBytesF64, kSpgemmMaxSharedBytes,
                       rows_per_block(g) > 1 ? fmt::format(": lower 't{0}' or 'block{0}', or raise 'lanes{0}'", g)
                                             : std::string()));
  }
}

int64_t spgemm_shared_bytes(const SpgemmConfig& c, int group, int value_bytes) {
  if (group < 0 || group >= 3) return 0;
  const int rpb = c.rows_per_block(group);
  return rpb * spgemm_table_stride(c.table(group), c.lanes(group)) * (4 + value_bytes);
}

template <class T>
std::vector<int64_t> intermediate_products(const CsrMatrix<T>& a, const CsrMatrix<T>& b) {
  if (a.cols != b.rows)
    throw UsageError(fmt::format("spgemm: A is {}x{} but B is {}x{}: A's columns must equal B's rows", a.rows, a.cols,
                                 b.rows, b.cols));
  if (a.row_ptr.size() != static_cast<size_t>(a.rows) + 1 || b.row_ptr.size() != static_cast<size_t>(b.rows) + 1)
    throw UsageError(fmt::format("spgemm: row_ptr must have rows + 1 entries: A has {} for {} rows, B {} for {} rows",
                                 a.row_ptr.size(), a.rows, b.row_ptr.size(), b.rows));
  std::vector<int64_t> ips(static_cast<size_t>(a.rows), 0);
  for (int32_t i = 0; i < a.rows; ++i) {
    int64_t ip = 0;
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const int32_t k = a.col_idx[p];
      if (k < 0 || k >= a.cols)
        throw UsageError(fmt::format("spgemm: row {} of A has column {}, outside [0, {})", i, k, a.cols));
      ip += b.row_ptr[k + 1] - b.row_ptr[k];
    }
    ips[i] = ip;
  }
  return ips;
}

int spgemm_group_of(int64_t ip, const SpgemmConfig& c) {
  const int32_t bound[3] = {c.b0, c.b1, c.b2};
  return abi::spgemm_ip_group(ip, bound);
}

namespace detail {
abi::SpgemmGroupRule spgemm_group_rule(const SpgemmConfig& c, int32_t b_cols) {
  abi::SpgemmGroupRule r{};
  for (int g = 0; g < abi::kSpgemmGlobalGroup; ++g) {
    r.bound[g] = c.bound(g);
    r.table[g] = c.table(g);
  }
  r.b_cols = b_cols;
  r.global_scale = c.global_scale;
  r.overflow_to_global = c.overflow_to_global;
  return r;
}
}  // namespace detail

SpgemmGrouping group_rows(std::span<const int64_t> ips, const SpgemmConfig& c) {
  SpgemmGrouping out;
  for (size_t i = 0; i < ips.size(); ++i) {
    const int g = spgemm_group_of(ips[i], c);
    if (g < 0) {
      ++out.idle_rows;
      continue;
    }
    out.rows[g].push_back(static_cast<int32_t>(i));
    out.ip[g] += ips[i];
  }
  return out;
}

int64_t spgemm_flops(std::span<const int64_t> ips) {
  int64_t sum = 0;
  for (int64_t ip : ips) sum += ip;
  return 2 * sum;
}

int64_t spgemm_nnz_upper_bound(std::span<const int64_t> ips, int32_t b_cols) {
  int64_t sum = 0;
  for (int64_t ip : ips) sum += std::min<int64_t>(ip, b_cols);
  return sum;
}

int64_t spgemm_global_table_slots(int64_t ip, int32_t b_cols, const SpgemmConfig& c) {
  return abi::spgemm_table_slots(ip, b_cols, c.global_scale);  // the analysis kernel's rule
}

bool spgemm_row_may_overflow(int64_t ip, int32_t b_cols, const SpgemmConfig& c) {
  const int g = spgemm_group_of(ip, c);
  return g >= 0 && g < abi::kSpgemmGlobalGroup && abi::spgemm_may_overflow(ip, b_cols, c.table(g));
}

SpgemmChunkLayout spgemm_chunk_layout(std::span<const int64_t> slots, int64_t budget_slots) {
  SpgemmChunkLayout out;
  out.offset.resize(slots.size());
  int64_t at = 0;
  for (size_t q = 0; q < slots.size(); ++q) {
    if (q == 0 || (at > 0 && at + slots[q] > budget_slots)) {
      out.first.push_back(static_cast<int32_t>(q));
      at = 0;
    }
    out.offset[q] = at;
    at += slots[q];
    out.widest = std::max(out.widest, at);
  }
  return out;
}

int64_t check_nnz_fits(std::span<const int32_t> row_lengths) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  int64_t total = 0;
  for (size_t i = 0; i < row_lengths.size(); ++i) {
    if (row_lengths[i] < 0)
      throw UsageError(fmt::format("spgemm: row {} of C has a negative length, {}", i, row_lengths[i]));
    total += row_lengths[i];
    if (total > kMax)
      throw UsageError(
          fmt::format("spgemm: C would have more than 2^31-1 nonzeros (int32 indices): the count passes "
                      "it at row {}, which has {}, for {} in rows 0..{}",
                      i, row_lengths[i], total, i));
  }
  return total;
}

template std::vector<int64_t> intermediate_products(const CsrMatrix<float>&, const CsrMatrix<float>&);
template std::vector<int64_t> intermediate_products(const CsrMatrix<double>&, const CsrMatrix<double>&);

}  // namespace dbsparse

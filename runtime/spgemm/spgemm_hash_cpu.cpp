// hash_spgemm_cpu: the hash SpGEMM kernels' phases run on the CPU, one row at a time, as their
// executable spec (include/dbsparse/spgemm.hpp lists the phases). It shares nothing with
// reference::spgemm (a dense accumulator), which the tests hold it to.
#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/spgemm.hpp"

namespace dbsparse {
namespace {

using abi::kSpgemmEmptyKey;
using abi::kSpgemmGlobalGroup;

// One row's table, as a block (or a partial warp) holds it in shared memory, or a global table.
template <class T>
class RowTable {
 public:
  // dense: slot = column, as a kernel keeps a table of at least B's width (spgemm_dense_row).
  void reset(int64_t slots, bool dense) {
    keys_.assign(static_cast<size_t>(slots), kSpgemmEmptyKey);
    vals_.assign(static_cast<size_t>(slots), T(0));
    mask_ = static_cast<uint32_t>(slots - 1);
    dense_ = dense;
    accesses_ = 0;
  }
  // The slot that holds `key` after the call (claimed when it was empty: `claimed` says so), or -1
  // when all slots hold other keys. On the GPU the claim is atomicCAS(empty -> key); a lost race
  // is a slot taken by another key (probe on) or by the same one (use it), so the keys a row ends
  // with, and whether one found no slot, do not depend on the threads' order.
  int64_t insert(int32_t key, bool& claimed) {
    claimed = false;
    if (dense_) {
      ++accesses_;
      claimed = keys_[key] == kSpgemmEmptyKey;
      keys_[key] = key;
      return key;
    }
    const uint32_t first = spgemm_first_slot(key, mask_ + 1u);
    for (uint64_t step = 0; step <= mask_; ++step) {
      const uint32_t s = static_cast<uint32_t>((first + step) & mask_);
      ++accesses_;
      if (keys_[s] == key) return s;
      if (keys_[s] == kSpgemmEmptyKey) {
        keys_[s] = key;
        claimed = true;
        return s;
      }
    }
    return -1;
  }
  T& value(int64_t slot) { return vals_[static_cast<size_t>(slot)]; }
  int64_t slots() const { return static_cast<int64_t>(keys_.size()); }
  int32_t key(int64_t slot) const { return keys_[static_cast<size_t>(slot)]; }
  // Slots read by insert() since reset() or the last take_accesses().
  int64_t take_accesses() { return std::exchange(accesses_, 0); }

 private:
  int64_t accesses_ = 0;
  bool dense_ = false;
  std::vector<int32_t> keys_;
  std::vector<T> vals_;
  uint32_t mask_ = 0;
};

template <class T>
class HashSpgemm {
 public:
  HashSpgemm(const CsrMatrix<T>& a, const CsrMatrix<T>& b, const SpgemmConfig& c) : a_(a), b_(b), c_(c) {}

  HashSpgemmResult<T> run() {
    c_.check();
    c_ = spgemm_for_width(c_, b_.cols);  // as the plan does
    HashSpgemmResult<T> r;
    r.ip = intermediate_products(a_, b_);  // phase 1
    // A key below 0 would read as the empty slot's -1.
    for (int32_t k = 0; k < b_.rows; ++k)
      for (int32_t q = b_.row_ptr[k]; q < b_.row_ptr[k + 1]; ++q)
        if (b_.col_idx[q] < 0 || b_.col_idx[q] >= b_.cols)
          throw UsageError(
              fmt::format("spgemm: row {} of B has column {}, outside [0, {})", k, b_.col_idx[q], b_.cols));
    r.grouping = group_rows(r.ip, c_);  // phase 2
    const auto rows = static_cast<size_t>(a_.rows);
    r.group.assign(rows, -1);
    r.overflowed.assign(rows, 0);
    position_.assign(rows, 0);
    for (int g = 0; g < kSpgemmGroups; ++g)
      for (size_t pos = 0; pos < r.grouping.rows[g].size(); ++pos) {
        r.group[r.grouping.rows[g][pos]] = static_cast<int8_t>(g);
        position_[r.grouping.rows[g][pos]] = static_cast<int32_t>(pos);
      }
    if (c_.stage_b_ranges != 0) stage(r);
    // The tables the kernels use: fitted to each group's longest row (fit_tables), as the plan does.
    std::array<int64_t, 3> longest{};
    for (int g = 0; g < kSpgemmGlobalGroup; ++g)
      for (int32_t i : r.grouping.rows[g]) longest[g] = std::max(longest[g], r.ip[i]);
    const SpgemmConfig fitted = spgemm_fitted(c_, longest, b_.cols);

    // Phase 3, a launch per shared group, then the global rows: group 3's and the overflowed.
    std::vector<int32_t> length(rows, 0);
    for (int g = 0; g < kSpgemmGlobalGroup; ++g)
      for (int32_t i : r.grouping.rows[g]) {
        if (merged(fitted, g, i, r.ip[i])) {
          length[i] = merged_count(i);
          ++r.merged_rows;
          continue;
        }
        const int32_t n = count_row(i, g, fitted.table(g), shared_dense(fitted, g));
        if (n >= 0) {
          length[i] = n;
        } else if (c_.overflow_to_global != 0) {
          r.overflowed[i] = 1;
        } else {  // check() made every table big enough for its group: cannot happen
          throw std::logic_error(
              fmt::format("hash_spgemm_cpu: row {} overflowed a table of {} slots", i, fitted.table(g)));
        }
      }
    for (int32_t i = 0; i < a_.rows; ++i)
      if (r.group[i] == kSpgemmGlobalGroup || r.overflowed[i]) r.global_rows.push_back(i);
    for (int32_t i : r.global_rows) {
      const int64_t slots = spgemm_global_table_slots(r.ip[i], b_.cols, c_);
      r.global_slots += slots;
      length[i] = count_row(i, r.group[i], slots, slots >= b_.cols);
      if (length[i] < 0) throw std::logic_error(fmt::format("hash_spgemm_cpu: row {} overflowed its global table", i));
    }

    // Phase 4: the count is checked before C is allocated.
    const int64_t nnz = check_nnz_fits(length);
    CsrMatrix<T>& out = r.c;
    out.rows = a_.rows;
    out.cols = b_.cols;
    out.row_ptr.assign(rows + 1, 0);
    for (size_t i = 0; i < rows; ++i) out.row_ptr[i + 1] = out.row_ptr[i] + length[i];
    out.col_idx.assign(static_cast<size_t>(nnz), 0);
    out.values.assign(static_cast<size_t>(nnz), T(0));

    // Phases 5 and 6, in the same tables as phase 3.
    for (int g = 0; g < kSpgemmGlobalGroup; ++g)
      for (int32_t i : r.grouping.rows[g])
        if (merged(fitted, g, i, r.ip[i])) {
          merged_write(i, out);
        } else if (!r.overflowed[i]) {
          accumulate_row(i, g, fitted.table(g), shared_dense(fitted, g), out);
          r.table_accesses += table_.take_accesses();
        }
    for (int32_t i : r.global_rows) {
      const int64_t slots = spgemm_global_table_slots(r.ip[i], b_.cols, c_);
      accumulate_row(i, r.group[i], slots, slots >= b_.cols, out);
      r.table_accesses += table_.take_accesses();
    }
    return r;
  }

 private:
  // stage_b_ranges: per group, the (begin, end) of B's row for each A nonzero of the group's rows,
  // row after row, so that the phases read one contiguous array instead of chasing A's column to
  // B's row pointers. staged_offset_[g][pos] is where the group's pos-th row starts in it.
  void stage(const HashSpgemmResult<T>& r) {
    for (int g = 0; g < kSpgemmGroups; ++g) {
      auto& offset = staged_offset_[g];
      auto& range = staged_[g];
      offset.assign(1, 0);
      for (int32_t i : r.grouping.rows[g]) {
        for (int32_t p = a_.row_ptr[i]; p < a_.row_ptr[i + 1]; ++p) {
          const int32_t k = a_.col_idx[p];
          range.push_back({b_.row_ptr[k], b_.row_ptr[k + 1]});
        }
        offset.push_back(static_cast<int64_t>(range.size()));
      }
    }
  }

  // f(column, A value, B value) for every product of row i (of group g).
  template <class F>
  void for_each_product(int32_t i, int g, F&& f) const {
    const int32_t first = a_.row_ptr[i];
    for (int32_t p = first; p < a_.row_ptr[i + 1]; ++p) {
      std::pair<int32_t, int32_t> range;
      if (c_.stage_b_ranges != 0) {
        range = staged_[g][static_cast<size_t>(staged_offset_[g][position_[i]] + (p - first))];
      } else {
        const int32_t k = a_.col_idx[p];
        range = {b_.row_ptr[k], b_.row_ptr[k + 1]};
      }
      for (int32_t q = range.first; q < range.second; ++q) f(b_.col_idx[q], a_.values[p], b_.values[q]);
    }
  }

  // A shared group's rows keep slot = column where a block holds one row and its table is as wide
  // as B (spgemm_dense_row in the kernels).
  bool shared_dense(const SpgemmConfig& fitted, int g) const {
    return fitted.rows_per_block(g) == 1 && fitted.table(g) >= b_.cols;
  }

  // Group 2's merge path (templates/spgemm/spgemm.cuh, spgemm_merge_*): a block a row, a table
  // narrower than B, at most merge2 A entries and products filling at most half the table's slots
  // (the other half holds the B rows' columns).
  bool merged(const SpgemmConfig& fitted, int g, int32_t i, int64_t ip) const {
    return g == 2 && fitted.merge2 > 0 && fitted.rows_per_block(g) == 1 && !shared_dense(fitted, g) &&
           a_.row_ptr[i + 1] - a_.row_ptr[i] <= fitted.merge2 && 2 * ip <= fitted.table(g);
  }
  // The merge's lists: row i's B rows, [begin, end) in B, in A's order.
  std::vector<std::pair<int32_t, int32_t>> merge_lists(int32_t i) const {
    std::vector<std::pair<int32_t, int32_t>> lists;
    for (int32_t p = a_.row_ptr[i]; p < a_.row_ptr[i + 1]; ++p)
      lists.emplace_back(b_.row_ptr[a_.col_idx[p]], b_.row_ptr[a_.col_idx[p] + 1]);
    return lists;
  }
  // The entries of B's columns [begin, end) below c (upper: not above c), as spgemm_rank_in.
  int32_t rank_in(std::pair<int32_t, int32_t> list, int32_t c, bool upper) const {
    const auto* first = b_.col_idx.data() + list.first;
    const auto* last = b_.col_idx.data() + list.second;
    return static_cast<int32_t>((upper ? std::upper_bound(first, last, c) : std::lower_bound(first, last, c)) - first);
  }
  // Symbolic: a product counts where its own list's previous entry and every list before its own
  // lack its column.
  int32_t merged_count(int32_t i) const {
    const auto lists = merge_lists(i);
    int32_t n = 0;
    for (size_t j = 0; j < lists.size(); ++j)
      for (int32_t q = lists[j].first; q < lists[j].second; ++q) {
        const int32_t c = b_.col_idx[q];
        bool head = q == lists[j].first || b_.col_idx[q - 1] != c;
        for (size_t o = 0; o < j && head; ++o) {
          const int32_t at = lists[o].first + rank_in(lists[o], c, false);
          head = !(at < lists[o].second && b_.col_idx[at] == c);
        }
        n += head ? 1 : 0;
      }
    return n;
  }
  // Numeric: each product at its rank in the lists' stable merge, then each run of one column
  // summed in list order into C's row. The ranks must be a permutation of the row's products.
  void merged_write(int32_t i, CsrMatrix<T>& out) {
    const auto lists = merge_lists(i);
    int64_t ip = 0;
    for (const auto& l : lists) ip += l.second - l.first;
    merge_keys_.assign(static_cast<size_t>(ip), kSpgemmEmptyKey);
    merge_vals_.assign(static_cast<size_t>(ip), T(0));
    for (size_t j = 0; j < lists.size(); ++j)
      for (int32_t q = lists[j].first; q < lists[j].second; ++q) {
        const int32_t c = b_.col_idx[q];
        int64_t r = q - lists[j].first;
        for (size_t o = 0; o < lists.size(); ++o)
          if (o != j) r += rank_in(lists[o], c, o < j);
        if (merge_keys_[static_cast<size_t>(r)] != kSpgemmEmptyKey)
          throw std::logic_error(fmt::format("hash_spgemm_cpu: row {}'s merge put two products at {}", i, r));
        merge_keys_[static_cast<size_t>(r)] = c;
        merge_vals_[static_cast<size_t>(r)] = a_.values[a_.row_ptr[i] + static_cast<int32_t>(j)] * b_.values[q];
      }
    int32_t at = out.row_ptr[i];
    for (size_t q = 0; q < merge_keys_.size(); ++q) {
      if (q > 0 && merge_keys_[q] == merge_keys_[q - 1]) {
        out.values[at - 1] += merge_vals_[q];
        continue;
      }
      if (at == out.row_ptr[i + 1])
        throw std::logic_error(fmt::format("hash_spgemm_cpu: row {} merged to more columns than counted", i));
      out.col_idx[at] = merge_keys_[q];
      out.values[at] = merge_vals_[q];
      ++at;
    }
    if (at != out.row_ptr[i + 1])
      throw std::logic_error(fmt::format("hash_spgemm_cpu: row {} merged to fewer columns than counted", i));
  }

  // Phase 3 for one row in a table of `slots`: its distinct columns, or -1 when they do not fit.
  int32_t count_row(int32_t i, int g, int64_t slots, bool dense) {
    table_.reset(slots, dense);
    int32_t count = 0;
    bool full = false;
    for_each_product(i, g, [&](int32_t col, T, T) {
      if (full) return;  // the kernel's lanes stop at the row's overflow flag
      bool claimed = false;
      if (table_.insert(col, claimed) < 0)
        full = true;
      else
        count += claimed ? 1 : 0;
    });
    return full ? -1 : count;
  }

  // Phases 5 and 6 for one row.
  void accumulate_row(int32_t i, int g, int64_t slots, bool dense, CsrMatrix<T>& out) {
    table_.reset(slots, dense);
    for_each_product(i, g, [&](int32_t col, T av, T bv) {
      bool claimed = false;
      const int64_t s = table_.insert(col, claimed);
      if (s < 0)
        throw std::logic_error(fmt::format("hash_spgemm_cpu: row {} fit its table in the symbolic phase only", i));
      table_.value(s) += av * bv;
    });
    const int32_t begin = out.row_ptr[i], end = out.row_ptr[i + 1];
    int32_t at = begin;
    for (int64_t s = 0; s < table_.slots(); ++s) {
      if (table_.key(s) == kSpgemmEmptyKey) continue;
      if (at == end) throw std::logic_error(fmt::format("hash_spgemm_cpu: row {} grew after the symbolic phase", i));
      out.col_idx[at] = table_.key(s);
      out.values[at] = table_.value(s);
      ++at;
    }
    if (at != end) throw std::logic_error(fmt::format("hash_spgemm_cpu: row {} shrank after the symbolic phase", i));
    row_.clear();
    for (int32_t p = begin; p < end; ++p) row_.emplace_back(out.col_idx[p], out.values[p]);
    std::sort(row_.begin(), row_.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (int32_t p = begin; p < end; ++p) std::tie(out.col_idx[p], out.values[p]) = row_[p - begin];
  }

  const CsrMatrix<T>& a_;
  const CsrMatrix<T>& b_;
  SpgemmConfig c_;
  std::vector<int32_t> position_;  // a row's place in its group's row list
  std::array<std::vector<std::pair<int32_t, int32_t>>, kSpgemmGroups> staged_;
  std::array<std::vector<int64_t>, kSpgemmGroups> staged_offset_;
  RowTable<T> table_;
  std::vector<std::pair<int32_t, T>> row_;
  std::vector<int32_t> merge_keys_;
  std::vector<T> merge_vals_;
};

}  // namespace

template <class T>
int64_t HashSpgemmResult<T>::overflow_rows() const {
  return std::count(overflowed.begin(), overflowed.end(), uint8_t{1});
}

template <class T>
HashSpgemmResult<T> hash_spgemm_cpu(const CsrMatrix<T>& a, const CsrMatrix<T>& b, const SpgemmConfig& c) {
  return HashSpgemm<T>(a, b, c).run();
}

template struct HashSpgemmResult<float>;
template struct HashSpgemmResult<double>;
template HashSpgemmResult<float> hash_spgemm_cpu(const CsrMatrix<float>&, const CsrMatrix<float>&, const SpgemmConfig&);
template HashSpgemmResult<double> hash_spgemm_cpu(const CsrMatrix<double>&, const CsrMatrix<double>&,
                                                  const SpgemmConfig&);

}  // namespace dbsparse

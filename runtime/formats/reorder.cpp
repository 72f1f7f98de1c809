#include "dbsparse/reorder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <utility>

#include "dbsparse/error.hpp"

namespace dbsparse {
namespace {

int32_t degree(const PatternGraph& g, int32_t v) { return g.row_ptr[v + 1] - g.row_ptr[v]; }

// Increasing degree, ties by index: Cuthill-McKee's neighbour order and RCM's start order.
void sort_by_degree(const PatternGraph& g, std::vector<int32_t>& v) {
  std::sort(v.begin(), v.end(), [&](int32_t x, int32_t y) {
    const int32_t dx = degree(g, x), dy = degree(g, y);
    return dx != dy ? dx < dy : x < y;
  });
}

// Breadth-first levels from `root` over the vertices with label[v] == want (all when label is
// empty); returns the vertices in visit order, neighbours of each in increasing degree
// (Cuthill-McKee). mark[v] == stamp: seen in this search.
std::vector<int32_t> cm_order(const PatternGraph& g, int32_t root, const std::vector<int32_t>& label, int32_t want,
                              std::vector<int32_t>& mark, int32_t stamp, int32_t* last_level_start = nullptr,
                              int32_t* depth = nullptr) {
  std::vector<int32_t> order{root};
  mark[root] = stamp;
  std::vector<int32_t> next;
  size_t level_begin = 0;
  int32_t levels = 0;
  while (level_begin < order.size()) {
    const size_t level_end = order.size();
    ++levels;
    if (last_level_start) *last_level_start = static_cast<int32_t>(level_begin);
    for (size_t k = level_begin; k < level_end; ++k) {
      const int32_t v = order[k];
      next.clear();
      for (int32_t q = g.row_ptr[v]; q < g.row_ptr[v + 1]; ++q) {
        const int32_t u = g.col_idx[q];
        if (mark[u] == stamp || (!label.empty() && label[u] != want)) continue;
        mark[u] = stamp;
        next.push_back(u);
      }
      sort_by_degree(g, next);
      order.insert(order.end(), next.begin(), next.end());
    }
    level_begin = level_end;
  }
  if (depth) *depth = levels;
  return order;
}

// George-Liu: from `start`, move to the least-degree vertex of the last BFS level while that makes
// the search deeper (its eccentricity grows); a few rounds on real graphs, capped at 8.
int32_t pseudo_peripheral(const PatternGraph& g, int32_t start, const std::vector<int32_t>& label, int32_t want,
                          std::vector<int32_t>& mark, int32_t& stamp) {
  int32_t root = start, depth = -1;
  for (int round = 0; round < 8; ++round) {
    int32_t last = 0, d = 0;
    const std::vector<int32_t> order = cm_order(g, root, label, want, mark, ++stamp, &last, &d);
    if (d <= depth) break;
    depth = d;
    int32_t best = order[static_cast<size_t>(last)];
    for (size_t k = static_cast<size_t>(last); k < order.size(); ++k)
      if (degree(g, order[k]) < degree(g, best)) best = order[k];
    if (best == root) break;
    root = best;
  }
  return root;
}

// RCM over the vertices with label == want (all when label is empty), appended to `out`.
void rcm_append(const PatternGraph& g, const std::vector<int32_t>& members, const std::vector<int32_t>& label,
                int32_t want, std::vector<int32_t>& mark, int32_t& stamp, std::vector<uint8_t>& placed,
                std::vector<int32_t>& out) {
  std::vector<int32_t> by_degree = members;
  sort_by_degree(g, by_degree);
  for (const int32_t s : by_degree) {
    if (placed[s]) continue;
    const int32_t root = pseudo_peripheral(g, s, label, want, mark, stamp);
    std::vector<int32_t> comp = cm_order(g, root, label, want, mark, ++stamp);
    std::reverse(comp.begin(), comp.end());
    for (const int32_t v : comp) placed[v] = 1;
    out.insert(out.end(), comp.begin(), comp.end());
  }
}

std::vector<int32_t> label_propagation(const PatternGraph& g, int rounds) {
  std::vector<int32_t> label(static_cast<size_t>(g.n));
  std::iota(label.begin(), label.end(), 0);
  std::vector<int32_t> seen;
  for (int r = 0; r < rounds; ++r) {
    int64_t changed = 0;
    for (int32_t v = 0; v < g.n; ++v) {
      if (degree(g, v) == 0) continue;
      seen.clear();
      for (int32_t q = g.row_ptr[v]; q < g.row_ptr[v + 1]; ++q) seen.push_back(label[g.col_idx[q]]);
      seen.push_back(label[v]);  // a vertex keeps its label on a tie with it
      std::sort(seen.begin(), seen.end());
      int32_t best = seen[0], best_count = 0;
      for (size_t k = 0; k < seen.size();) {
        size_t e = k;
        while (e < seen.size() && seen[e] == seen[k]) ++e;
        if (static_cast<int32_t>(e - k) > best_count) best = seen[k], best_count = static_cast<int32_t>(e - k);
        k = e;
      }
      if (best != label[v]) label[v] = best, ++changed;
    }
    if (changed == 0) break;
  }
  return label;
}

}  // namespace

Reorder parse_reorder(const std::string& name) {
  if (name == "none") return Reorder::None;
  if (name == "degree") return Reorder::Degree;
  if (name == "rcm") return Reorder::Rcm;
  if (name == "community") return Reorder::Community;
  throw UsageError(fmt::format("reorder: '{}' is not one of none, degree, rcm, community", name));
}

const char* to_string(Reorder r) {
  switch (r) {
    case Reorder::None:
      return "none";
    case Reorder::Degree:
      return "degree";
    case Reorder::Rcm:
      return "rcm";
    case Reorder::Community:
      return "community";
  }
  return "?";
}

bool Permutation::identity() const {
  for (size_t v = 0; v < new_of_old.size(); ++v)
    if (new_of_old[v] != static_cast<int32_t>(v)) return false;
  return true;
}

Permutation identity_permutation(int32_t n) {
  Permutation p;
  p.new_of_old.resize(static_cast<size_t>(std::max(n, 0)));
  std::iota(p.new_of_old.begin(), p.new_of_old.end(), 0);
  p.old_of_new = p.new_of_old;
  return p;
}

Permutation permutation_from_order(std::vector<int32_t> old_of_new) {
  Permutation p;
  const auto n = static_cast<int32_t>(old_of_new.size());
  p.new_of_old.assign(old_of_new.size(), -1);
  for (int32_t k = 0; k < n; ++k) {
    const int32_t v = old_of_new[static_cast<size_t>(k)];
    if (v < 0 || v >= n || p.new_of_old[static_cast<size_t>(v)] != -1)
      throw UsageError(fmt::format("permutation: entry {} is {}, not a new vertex of [0, {})", k, v, n));
    p.new_of_old[static_cast<size_t>(v)] = k;
  }
  p.old_of_new = std::move(old_of_new);
  return p;
}

Permutation reorder(const PatternGraph& g, Reorder how) {
  std::vector<int32_t> order;
  order.reserve(static_cast<size_t>(g.n));
  std::vector<int32_t> all(static_cast<size_t>(g.n));
  std::iota(all.begin(), all.end(), 0);
  switch (how) {
    case Reorder::None:
      return identity_permutation(g.n);
    case Reorder::Degree:
      order = all;
      std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return degree(g, x) > degree(g, y); });
      break;
    case Reorder::Rcm: {
      std::vector<int32_t> mark(static_cast<size_t>(g.n), 0);
      std::vector<uint8_t> placed(static_cast<size_t>(g.n), 0);
      int32_t stamp = 0;
      rcm_append(g, all, {}, 0, mark, stamp, placed, order);
      break;
    }
    case Reorder::Community: {
      const std::vector<int32_t> label = label_propagation(g, 5);
      // Communities in order of their first vertex, each as a list of members.
      std::vector<std::vector<int32_t>> members;
      std::vector<int32_t> slot(static_cast<size_t>(g.n), -1);
      for (int32_t v = 0; v < g.n; ++v) {
        const auto l = static_cast<size_t>(label[static_cast<size_t>(v)]);
        if (slot[l] < 0) slot[l] = static_cast<int32_t>(members.size()), members.emplace_back();
        members[static_cast<size_t>(slot[l])].push_back(v);
      }
      std::vector<int32_t> mark(static_cast<size_t>(g.n), 0);
      std::vector<uint8_t> placed(static_cast<size_t>(g.n), 0);
      int32_t stamp = 0;
      for (const auto& m : members)
        rcm_append(g, m, label, label[static_cast<size_t>(m[0])], mark, stamp, placed, order);
      break;
    }
  }
  return permutation_from_order(std::move(order));
}

template <class T>
Permutation reorder(const CsrMatrix<T>& a, Reorder how) {
  if (a.rows != a.cols)
    throw UsageError(
        fmt::format("reorder: the matrix is {}x{}; a symmetric reordering needs a square one", a.rows, a.cols));
  if (how == Reorder::None) return identity_permutation(a.rows);
  return reorder(symmetrize(pattern_of(a), true), how);
}

template <class T>
CsrMatrix<T> permute_symmetric(const CsrMatrix<T>& a, const Permutation& p) {
  if (a.rows != a.cols || p.size() != a.rows)
    throw UsageError(
        fmt::format("permute_symmetric: a {}x{} matrix and a permutation of {}", a.rows, a.cols, p.size()));
  CsrMatrix<T> out;
  out.rows = out.cols = a.rows;
  out.row_ptr.assign(static_cast<size_t>(a.rows) + 1, 0);
  out.col_idx.resize(a.col_idx.size());
  out.values.resize(a.values.size());
  std::vector<std::pair<int32_t, T>> row;
  for (int32_t r = 0; r < a.rows; ++r) {
    const int32_t old = p.old_of_new[static_cast<size_t>(r)];
    row.clear();
    for (int32_t q = a.row_ptr[old]; q < a.row_ptr[old + 1]; ++q)
      row.emplace_back(p.new_of_old[static_cast<size_t>(a.col_idx[q])], a.values[q]);
    std::sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    const int32_t at = out.row_ptr[r];
    for (size_t k = 0; k < row.size(); ++k) {
      out.col_idx[static_cast<size_t>(at) + k] = row[k].first;
      out.values[static_cast<size_t>(at) + k] = row[k].second;
    }
    out.row_ptr[r + 1] = at + static_cast<int32_t>(row.size());
  }
  return out;
}

template <class T>
CsrMatrix<T> permute_rows(const CsrMatrix<T>& a, const Permutation& p) {
  if (p.size() != a.rows)
    throw UsageError(fmt::format("permute_rows: the permutation has {} entries, A has {} rows", p.size(), a.rows));
  CsrMatrix<T> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr.assign(static_cast<size_t>(a.rows) + 1, 0);
  out.col_idx.reserve(a.col_idx.size());
  out.values.reserve(a.values.size());
  for (int32_t r = 0; r < a.rows; ++r) {
    const int32_t old = p.old_of_new[static_cast<size_t>(r)];
    out.col_idx.insert(out.col_idx.end(), a.col_idx.begin() + a.row_ptr[old], a.col_idx.begin() + a.row_ptr[old + 1]);
    out.values.insert(out.values.end(), a.values.begin() + a.row_ptr[old], a.values.begin() + a.row_ptr[old + 1]);
    out.row_ptr[r + 1] = static_cast<int32_t>(out.col_idx.size());
  }
  return out;
}

template <class T>
std::vector<T> permute_vector(const std::vector<T>& x, const Permutation& p) {
  if (x.size() != p.new_of_old.size()) throw UsageError("permute_vector: sizes differ");
  std::vector<T> out(x.size());
  for (size_t v = 0; v < x.size(); ++v) out[static_cast<size_t>(p.new_of_old[v])] = x[v];
  return out;
}

template <class T>
std::vector<T> unpermute_vector(const std::vector<T>& x_new, const Permutation& p) {
  if (x_new.size() != p.new_of_old.size()) throw UsageError("unpermute_vector: sizes differ");
  std::vector<T> out(x_new.size());
  for (size_t v = 0; v < x_new.size(); ++v) out[v] = x_new[static_cast<size_t>(p.new_of_old[v])];
  return out;
}

template <class T>
LocalityStats locality(const CsrMatrix<T>& a) {
  LocalityStats s;
  double dist = 0, lines = 0;
  for (int32_t r = 0; r < a.rows; ++r) {
    int32_t last_line = -1;
    for (int32_t q = a.row_ptr[r]; q < a.row_ptr[r + 1]; ++q) {
      const int64_t d = std::abs(static_cast<int64_t>(a.col_idx[q]) - r);
      s.bandwidth = std::max(s.bandwidth, d);
      dist += static_cast<double>(d);
      const int32_t line = a.col_idx[q] >> 5;
      if (line != last_line) lines += 1, last_line = line;  // columns sorted within a row
    }
  }
  const auto nnz = static_cast<double>(std::max<size_t>(a.col_idx.size(), 1));
  s.mean_distance = dist / nnz;
  s.lines_per_row = a.rows ? lines / a.rows : 0;
  return s;
}

#define DBS_REORDER(T)                                                                 \
  template Permutation reorder(const CsrMatrix<T>&, Reorder);                          \
  template CsrMatrix<T> permute_symmetric(const CsrMatrix<T>&, const Permutation&);    \
  template CsrMatrix<T> permute_rows(const CsrMatrix<T>&, const Permutation&);         \
  template std::vector<T> permute_vector(const std::vector<T>&, const Permutation&);   \
  template std::vector<T> unpermute_vector(const std::vector<T>&, const Permutation&); \
  template LocalityStats locality(const CsrMatrix<T>&);
DBS_REORDER(float)
DBS_REORDER(double)
#undef DBS_REORDER

}  // namespace dbsparse

// CPU references (docs/DESIGN.md §7). Deliberately the textbook loops, accumulating in double: these are
// what every GPU result is judged by, so they must be easy to believe, not fast.
#include "dbsparse/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <thread>

#include <fmt/format.h>

#include "dbsparse/error.hpp"

namespace dbsparse::reference {
namespace {

void check_size(const char* what, size_t got, size_t want) {
  if (got != want) throw UsageError(fmt::format("{}: expected length {}, got {}", what, want, got));
}

template <class T>
bool has_edge(const CsrMatrix<T>& a, int32_t u, int32_t v) {
  const auto begin = a.col_idx.begin() + a.row_ptr[u], end = a.col_idx.begin() + a.row_ptr[u + 1];
  return std::binary_search(begin, end, v);
}

}  // namespace

template <class T>
std::vector<double> spmv(const CsrMatrix<T>& a, std::span<const T> x, double alpha, double beta,
                         std::span<const T> y0) {
  check_size("spmv x", x.size(), static_cast<size_t>(a.cols));
  if (beta != 0.0) check_size("spmv y0", y0.size(), static_cast<size_t>(a.rows));
  std::vector<double> y(static_cast<size_t>(a.rows));
  for (int32_t i = 0; i < a.rows; ++i) {
    double sum = 0;
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      sum += static_cast<double>(a.values[p]) * static_cast<double>(x[a.col_idx[p]]);
    // beta == 0 must not even read y0: 0 * NaN would be NaN.
    y[i] = alpha * sum + (beta == 0.0 ? 0.0 : beta * static_cast<double>(y0[i]));
  }
  return y;
}

template <class T>
std::vector<double> spmspv(const CsrMatrix<T>& a, std::span<const int32_t> x_idx, std::span<const T> x_val,
                           Semiring semiring) {
  check_size("spmspv x values", x_val.size(), x_idx.size());
  // Expand x and do a dense-x product: the simplest route that is clearly right.
  std::vector<double> x(static_cast<size_t>(a.cols), 0.0);
  for (size_t k = 0; k < x_idx.size(); ++k) {
    if (x_idx[k] < 0 || x_idx[k] >= a.cols)
      throw UsageError(fmt::format("spmspv: x index {} out of range [0, {})", x_idx[k], a.cols));
    x[x_idx[k]] += static_cast<double>(x_val[k]);
  }
  std::vector<double> y(static_cast<size_t>(a.rows));
  for (int32_t i = 0; i < a.rows; ++i) {
    double sum = 0;
    bool any = false;  // or-and: reached when some stored nonzero A(i, j) meets a nonzero x_j
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      sum += static_cast<double>(a.values[p]) * x[a.col_idx[p]];
      any = any || (a.values[p] != T(0) && x[a.col_idx[p]] != 0.0);
    }
    switch (semiring) {
      case Semiring::PlusTimes:
        y[i] = sum;
        break;
      case Semiring::OrAnd:
        y[i] = any ? 1.0 : 0.0;
        break;
    }
  }
  return y;
}

// Every stored entry is an edge, whatever its value: the GPU BFS works on the pattern alone.
template <class T>
BfsResult bfs(const CsrMatrix<T>& a, int32_t source) {
  if (a.rows != a.cols) throw UsageError(fmt::format("bfs: matrix must be square, is {}x{}", a.rows, a.cols));
  if (source < 0 || source >= a.rows)
    throw UsageError(fmt::format("bfs: source {} out of range [0, {})", source, a.rows));
  BfsResult r;
  r.level.assign(static_cast<size_t>(a.rows), -1);
  r.parent.assign(static_cast<size_t>(a.rows), -1);
  std::queue<int32_t> queue;
  r.level[source] = 0;
  r.parent[source] = source;
  queue.push(source);
  while (!queue.empty()) {
    const int32_t u = queue.front();
    queue.pop();
    for (int32_t p = a.row_ptr[u]; p < a.row_ptr[u + 1]; ++p) {
      const int32_t v = a.col_idx[p];
      if (r.level[v] != -1) continue;
      r.level[v] = r.level[u] + 1;
      r.parent[v] = u;
      queue.push(v);
    }
  }
  return r;
}

template <class T>
bool bfs_parents_valid(const CsrMatrix<T>& a, int32_t source, std::span<const int32_t> level,
                       std::span<const int32_t> parent) {
  const auto n = static_cast<size_t>(a.rows);
  if (level.size() != n || parent.size() != n) return false;
  // Levels are unique (shortest distances), so they are compared outright; parents may differ.
  const BfsResult ref = bfs(a, source);
  if (!std::equal(level.begin(), level.end(), ref.level.begin())) return false;
  if (parent[source] != source) return false;
  for (int32_t v = 0; v < a.rows; ++v) {
    if (v == source) continue;
    const int32_t p = parent[v];
    if (level[v] == -1) {
      if (p != -1) return false;
      continue;
    }
    if (p < 0 || p >= a.rows || level[p] != level[v] - 1 || !has_edge(a, p, v)) return false;
  }
  return true;
}

template <class T>
std::vector<double> spmm(const CsrMatrix<T>& a, std::span<const T> b, int32_t n) {
  if (n < 0) throw UsageError(fmt::format("spmm: n must be >= 0, got {}", n));
  check_size("spmm B", b.size(), static_cast<size_t>(a.cols) * static_cast<size_t>(n));
  std::vector<double> c(static_cast<size_t>(a.rows) * static_cast<size_t>(n), 0.0);
  for (int32_t i = 0; i < a.rows; ++i) {
    double* ci = c.data() + static_cast<size_t>(i) * n;
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const double av = static_cast<double>(a.values[p]);
      const T* bk = b.data() + static_cast<size_t>(a.col_idx[p]) * n;
      for (int32_t j = 0; j < n; ++j) ci[j] += av * static_cast<double>(bk[j]);
    }
  }
  return c;
}

template <class T>
std::vector<double> sddmm(const CsrMatrix<T>& a, std::span<const T> x, std::span<const T> y, int32_t k,
                          bool scale_by_values) {
  if (k < 0) throw UsageError(fmt::format("sddmm: k must be >= 0, got {}", k));
  check_size("sddmm X", x.size(), static_cast<size_t>(a.rows) * static_cast<size_t>(k));
  check_size("sddmm Y", y.size(), static_cast<size_t>(a.cols) * static_cast<size_t>(k));
  std::vector<double> out(static_cast<size_t>(a.nnz()), 0.0);
  for (int32_t i = 0; i < a.rows; ++i) {
    const T* xi = x.data() + static_cast<size_t>(i) * k;
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const T* yj = y.data() + static_cast<size_t>(a.col_idx[p]) * k;
      double dot = 0;
      for (int32_t j = 0; j < k; ++j) dot += static_cast<double>(xi[j]) * static_cast<double>(yj[j]);
      out[static_cast<size_t>(p)] = scale_by_values ? dot * static_cast<double>(a.values[p]) : dot;
    }
  }
  return out;
}

// Gustavson's row-by-row product with a dense accumulator. A column is in the result when some
// product term reaches it, even if the terms cancel to zero. Rows are split into contiguous ranges
// of about equal products, one per hardware thread: each row is computed exactly as by one thread,
// so the result does not depend on the split. Why: dbtune checks every SpGEMM candidate against it,
// and on one thread that check was too slow for the larger matrices
// (docs/decisions/spgemm-kernel-design.md).
template <class T>
CsrMatrix<double> spgemm(const CsrMatrix<T>& a, const CsrMatrix<T>& b) {
  if (a.cols != b.rows)
    throw UsageError(fmt::format("spgemm: A is {}x{} but B is {}x{}", a.rows, a.cols, b.rows, b.cols));
  CsrMatrix<double> c;
  c.rows = a.rows;
  c.cols = b.cols;
  c.row_ptr.assign(static_cast<size_t>(a.rows) + 1, 0);
  // Products before each row, for the split.
  std::vector<int64_t> before(static_cast<size_t>(a.rows) + 1, 0);
  for (int32_t i = 0; i < a.rows; ++i) {
    int64_t ip = 0;
    for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      ip += b.row_ptr[a.col_idx[p] + 1] - b.row_ptr[a.col_idx[p]];
    before[i + 1] = before[i] + ip + 1;  // + 1: empty rows cost something too
  }
  const int64_t total = before.back();
  const int parts = static_cast<int>(std::clamp<int64_t>(
      std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()), total / 1'000'000 + 1), 1, 64));
  struct Part {
    int32_t first = 0, end = 0;
    std::vector<int32_t> len, cols;
    std::vector<double> vals;
  };
  std::vector<Part> part(static_cast<size_t>(parts));
  for (int t = 0; t < parts; ++t) {
    auto at = [&](int q) {
      return static_cast<int32_t>(std::lower_bound(before.begin(), before.end(), total * q / parts) - before.begin());
    };
    part[t].first = t == 0 ? 0 : std::min(at(t), a.rows);
    part[t].end = t + 1 == parts ? a.rows : std::min(at(t + 1), a.rows);
  }
  auto run = [&](Part& pt) {
    std::vector<double> acc(static_cast<size_t>(b.cols), 0.0);
    std::vector<bool> seen(static_cast<size_t>(b.cols), false);
    std::vector<int32_t> cols;
    for (int32_t i = pt.first; i < pt.end; ++i) {
      cols.clear();
      for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        const int32_t k = a.col_idx[p];
        const double av = static_cast<double>(a.values[p]);
        for (int32_t q = b.row_ptr[k]; q < b.row_ptr[k + 1]; ++q) {
          const int32_t j = b.col_idx[q];
          if (!seen[j]) {
            seen[j] = true;
            cols.push_back(j);
          }
          acc[j] += av * static_cast<double>(b.values[q]);
        }
      }
      std::sort(cols.begin(), cols.end());
      for (int32_t j : cols) {
        pt.cols.push_back(j);
        pt.vals.push_back(acc[j]);
        acc[j] = 0.0;
        seen[j] = false;
      }
      pt.len.push_back(static_cast<int32_t>(cols.size()));
    }
  };
  if (parts == 1) {
    run(part[0]);
  } else {
    std::vector<std::thread> threads;
    for (int t = 1; t < parts; ++t) threads.emplace_back(run, std::ref(part[t]));
    run(part[0]);
    for (auto& th : threads) th.join();
  }
  size_t nnz = 0;
  for (const Part& pt : part) nnz += pt.cols.size();
  if (nnz > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    throw UsageError("spgemm: the result has more than 2^31-1 nonzeros");
  c.col_idx.reserve(nnz);
  c.values.reserve(nnz);
  for (const Part& pt : part) {
    for (size_t r = 0; r < pt.len.size(); ++r)
      c.row_ptr[static_cast<size_t>(pt.first) + r + 1] = c.row_ptr[static_cast<size_t>(pt.first) + r] + pt.len[r];
    c.col_idx.insert(c.col_idx.end(), pt.cols.begin(), pt.cols.end());
    c.values.insert(c.values.end(), pt.vals.begin(), pt.vals.end());
  }
  return c;
}

double relative_error(std::span<const double> ref, std::span<const double> y) {
  check_size("relative_error y", y.size(), ref.size());
  double diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    // Any non-finite value is a failure, not a number to average away; inf - inf would be NaN anyway.
    if (!std::isfinite(ref[i]) || !std::isfinite(y[i])) return std::numeric_limits<double>::infinity();
    const double d = y[i] - ref[i];
    diff2 += d * d;
    ref2 += ref[i] * ref[i];
  }
  const double diff = std::sqrt(diff2);
  return ref2 == 0.0 ? diff : diff / std::sqrt(ref2);
}

template <class T>
double relative_error(std::span<const double> ref, std::span<const T> y) {
  const std::vector<double> yd(y.begin(), y.end());
  return relative_error(ref, std::span<const double>(yd));
}

#define DBS_INSTANTIATE(T)                                                                                           \
  template std::vector<double> spmv(const CsrMatrix<T>&, std::span<const T>, double, double, std::span<const T>);    \
  template std::vector<double> spmspv(const CsrMatrix<T>&, std::span<const int32_t>, std::span<const T>, Semiring);  \
  template BfsResult bfs(const CsrMatrix<T>&, int32_t);                                                              \
  template bool bfs_parents_valid(const CsrMatrix<T>&, int32_t, std::span<const int32_t>, std::span<const int32_t>); \
  template std::vector<double> spmm(const CsrMatrix<T>&, std::span<const T>, int32_t);                               \
  template std::vector<double> sddmm(const CsrMatrix<T>&, std::span<const T>, std::span<const T>, int32_t, bool);    \
  template CsrMatrix<double> spgemm(const CsrMatrix<T>&, const CsrMatrix<T>&);                                       \
  template double relative_error(std::span<const double>, std::span<const T>);
DBS_INSTANTIATE(float)
DBS_INSTANTIATE(double)
#undef DBS_INSTANTIATE

}  // namespace dbsparse::reference

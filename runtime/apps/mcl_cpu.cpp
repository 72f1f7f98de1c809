// Markov clustering on the CPU (include/dbsparse/spgemm_apps.hpp): on P = Mᵀ, so that every
// column operation of MCL is a row operation on CSR; expansions through hash_spgemm_cpu.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/spgemm.hpp"
#include "dbsparse/spgemm_apps.hpp"

namespace dbsparse {
namespace {

// Row sums to 1 (an empty row stays empty: a vertex with no way out, no self loop).
void normalise_row(std::vector<std::pair<int32_t, double>>& row) {
  double sum = 0;
  for (const auto& e : row) sum += e.second;
  if (sum > 0)
    for (auto& e : row) e.second /= sum;
}

void append_row(CsrMatrix<double>& m, const std::vector<std::pair<int32_t, double>>& row) {
  for (const auto& [c, v] : row) {
    m.col_idx.push_back(c);
    m.values.push_back(v);
  }
  m.row_ptr.push_back(static_cast<int32_t>(m.col_idx.size()));
}

CsrMatrix<double> empty_like(const CsrMatrix<double>& p) {
  CsrMatrix<double> m;
  m.rows = p.rows;
  m.cols = p.cols;
  m.row_ptr.reserve(static_cast<size_t>(p.rows) + 1);
  return m;
}

int32_t find_root(std::vector<int32_t>& parent, int32_t v) {
  while (parent[v] != v) {
    parent[v] = parent[parent[v]];
    v = parent[v];
  }
  return v;
}

}  // namespace

void MclOptions::check() const {
  auto bad = [](const char* field, const std::string& rule, double got) {
    throw UsageError(fmt::format("mcl: '{}' must be {}, got {}", field, rule, got));
  };
  if (!(inflation >= 1.0) || !std::isfinite(inflation)) bad("inflation", ">= 1 and finite", inflation);
  if (!(prune_below >= 0.0 && prune_below < 1.0)) bad("prune_below", "in [0, 1)", prune_below);
  if (keep_top_k < 1) bad("keep_top_k", ">= 1", keep_top_k);
  if (max_iterations < 1) bad("max_iterations", ">= 1", max_iterations);
  if (!(tolerance >= 0.0)) bad("tolerance", ">= 0", tolerance);
}

template <class T>
CsrMatrix<double> mcl_start(const CsrMatrix<T>& g, const MclOptions& o) {
  o.check();
  if (g.rows != g.cols) throw UsageError(fmt::format("mcl: the graph must be square, is {}x{}", g.rows, g.cols));
  // Row j of P = column j of G: j's out-edges.
  CsrMatrix<double> w;
  w.rows = g.rows;
  w.cols = g.cols;
  for (int32_t i = 0; i < g.rows; ++i) {
    for (int32_t p = g.row_ptr[i]; p < g.row_ptr[i + 1]; ++p) {
      const double v = o.weighted ? std::fabs(static_cast<double>(g.values[p])) : 1.0;
      if (v == 0.0) continue;  // a zero weight is no edge
      w.col_idx.push_back(g.col_idx[p]);
      w.values.push_back(v);
    }
    w.row_ptr.push_back(static_cast<int32_t>(w.col_idx.size()));
  }
  const CsrMatrix<double> t = transpose(w);
  CsrMatrix<double> p = empty_like(t);
  std::vector<std::pair<int32_t, double>> row;
  for (int32_t j = 0; j < t.rows; ++j) {
    row.clear();
    double largest = 0;
    for (int32_t q = t.row_ptr[j]; q < t.row_ptr[j + 1]; ++q) {
      largest = std::max(largest, t.values[q]);
      if (!(o.add_self_loops && t.col_idx[q] == j)) row.emplace_back(t.col_idx[q], t.values[q]);
    }
    if (o.add_self_loops) {
      row.emplace_back(j, largest > 0 ? largest : 1.0);
      std::sort(row.begin(), row.end());
    }
    normalise_row(row);
    append_row(p, row);
  }
  return p;
}

CsrMatrix<double> mcl_step(const CsrMatrix<double>& p, const MclOptions& o) {
  o.check();
  const CsrMatrix<double> q = hash_spgemm_cpu(p, p).c;  // expansion
  CsrMatrix<double> out = empty_like(q);
  std::vector<std::pair<int32_t, double>> row, kept;
  for (int32_t i = 0; i < q.rows; ++i) {
    row.clear();
    for (int32_t e = q.row_ptr[i]; e < q.row_ptr[i + 1]; ++e)
      row.emplace_back(q.col_idx[e], std::pow(q.values[e], o.inflation));
    normalise_row(row);  // inflation
    // Pruning: largest first, ties to the smaller column; the largest always stays.
    std::sort(row.begin(), row.end(), [](const auto& x, const auto& y) {
      return x.second != y.second ? x.second > y.second : x.first < y.first;
    });
    kept.clear();
    for (const auto& e : row) {
      if (static_cast<int32_t>(kept.size()) == o.keep_top_k) break;
      if (!kept.empty() && e.second < o.prune_below) break;  // sorted: the rest are smaller too
      kept.push_back(e);
    }
    std::sort(kept.begin(), kept.end());
    normalise_row(kept);
    append_row(out, kept);
  }
  return out;
}

double mcl_change(const CsrMatrix<double>& a, const CsrMatrix<double>& b) {
  if (a.rows != b.rows || a.cols != b.cols)
    throw UsageError(
        fmt::format("mcl: matrices of {}x{} and {}x{} cannot be compared", a.rows, a.cols, b.rows, b.cols));
  double change = 0;
  for (int32_t i = 0; i < a.rows; ++i) {
    int32_t p = a.row_ptr[i], q = b.row_ptr[i];
    const int32_t pe = a.row_ptr[i + 1], qe = b.row_ptr[i + 1];
    while (p < pe || q < qe) {
      if (q == qe || (p < pe && a.col_idx[p] < b.col_idx[q])) {
        change = std::max(change, std::fabs(a.values[p++]));
      } else if (p == pe || b.col_idx[q] < a.col_idx[p]) {
        change = std::max(change, std::fabs(b.values[q++]));
      } else {
        change = std::max(change, std::fabs(a.values[p++] - b.values[q++]));
      }
    }
  }
  return change;
}

MclResult mcl_labels(const CsrMatrix<double>& p) {
  std::vector<int32_t> parent(static_cast<size_t>(p.rows));
  std::iota(parent.begin(), parent.end(), 0);
  for (int32_t j = 0; j < p.rows; ++j)
    for (int32_t e = p.row_ptr[j]; e < p.row_ptr[j + 1]; ++e) {
      if (!(p.values[e] > 0)) continue;
      const int32_t x = find_root(parent, j), y = find_root(parent, p.col_idx[e]);
      if (x != y) parent[std::max(x, y)] = std::min(x, y);
    }
  MclResult r;
  r.labels.assign(static_cast<size_t>(p.rows), -1);
  std::vector<int32_t> label_of_root(static_cast<size_t>(p.rows), -1);
  for (int32_t v = 0; v < p.rows; ++v) {  // ascending: a cluster is numbered when its smallest vertex comes
    int32_t& l = label_of_root[find_root(parent, v)];
    if (l < 0) l = r.clusters++;
    r.labels[v] = l;
  }
  return r;
}

template <class T>
MclResult mcl_cpu(const CsrMatrix<T>& g, const MclOptions& o) {
  CsrMatrix<double> p = mcl_start(g, o);
  int32_t iterations = 0;
  bool converged = false;
  while (iterations < o.max_iterations && !converged) {
    CsrMatrix<double> next = mcl_step(p, o);
    ++iterations;
    converged = mcl_change(p, next) <= o.tolerance;
    p = std::move(next);
  }
  MclResult r = mcl_labels(p);
  r.iterations = iterations;
  r.converged = converged;
  return r;
}

template CsrMatrix<double> mcl_start(const CsrMatrix<float>&, const MclOptions&);
template CsrMatrix<double> mcl_start(const CsrMatrix<double>&, const MclOptions&);
template MclResult mcl_cpu(const CsrMatrix<float>&, const MclOptions&);
template MclResult mcl_cpu(const CsrMatrix<double>&, const MclOptions&);

}  // namespace dbsparse

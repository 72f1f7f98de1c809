// The L1 model of SpMM's B-row gathers (runtime/spmm/spmm_l1_model.hpp), which `dbsparse reorder`
// prints and issue 35's decisions lean on: its intrusive LRU against a plain std::list LRU replaying
// the same SM streams, on generated graphs, in A's order and a shuffled one, with and without
// staged hub rows.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <list>
#include <numeric>
#include <random>
#include <vector>

#include "dbsparse/generators.hpp"
#include "runtime/spmm/spmm_l1_model.hpp"

using namespace dbsparse;

namespace {

// The reference: each SM's stream replayed through a std::list (front: most recent); the hub
// columns are the staged_bytes / row_bytes most frequent (ties to the smaller column).
SpmmL1Shares list_lru(const CsrMatrix<float>& a, const std::vector<int32_t>& order, const SpmmL1Geometry& g) {
  const int64_t row_bytes = std::max<int64_t>(int64_t{4} * g.n_cols, 32);
  const size_t capacity = static_cast<size_t>((g.l1_bytes - g.staged_bytes) / row_bytes);
  std::vector<int64_t> count(static_cast<size_t>(a.cols), 0);
  for (const int32_t c : a.col_idx) ++count[static_cast<size_t>(c)];
  std::vector<int32_t> by(static_cast<size_t>(a.cols));
  std::iota(by.begin(), by.end(), 0);
  std::stable_sort(by.begin(), by.end(),
                   [&](int32_t x, int32_t y) { return count[static_cast<size_t>(x)] > count[static_cast<size_t>(y)]; });
  std::vector<char> hub(static_cast<size_t>(a.cols), 0);
  for (int64_t i = 0; i < std::min<int64_t>(g.staged_bytes / row_bytes, a.cols); ++i) hub[static_cast<size_t>(by[static_cast<size_t>(i)])] = 1;
  int64_t l1 = 0, staged = 0;
  for (int32_t sm = 0; sm < g.sms; ++sm) {
    std::list<int32_t> lru;
    for (int64_t i = 0; i < a.rows; ++i) {
      if ((i / g.rows_per_block) % g.sms != sm) continue;
      const int32_t r = order.empty() ? static_cast<int32_t>(i) : order[static_cast<size_t>(i)];
      for (int32_t q = a.row_ptr[r]; q < a.row_ptr[r + 1]; ++q) {
        const int32_t c = a.col_idx[q];
        if (hub[static_cast<size_t>(c)]) {
          ++staged;
          continue;
        }
        auto it = std::find(lru.begin(), lru.end(), c);
        if (it != lru.end()) {
          ++l1;
          lru.erase(it);
        }
        if (capacity == 0) continue;
        lru.push_front(c);
        if (lru.size() > capacity) lru.pop_back();
      }
    }
  }
  const double nnz = static_cast<double>(a.nnz());
  return {static_cast<double>(l1) / nnz, static_cast<double>(staged) / nnz};
}

}  // namespace

TEST_CASE("SpmmL1ModelMatchesAListLruOnTheSameStreams") {
  for (const char* spec : {"rmat:scale=10,ef=8,seed=3,scramble=1", "powerlaw:n=2000,avg=6,alpha=1.5,max=300,seed=2",
                           "stencil2d:n=40"}) {
    CAPTURE(spec);
    const CsrMatrix<float> a = generate(spec).cast<float>();
    std::vector<int32_t> shuffled(static_cast<size_t>(a.rows));
    std::iota(shuffled.begin(), shuffled.end(), 0);
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
    for (const bool reordered : {true, false}) {
      const std::vector<int32_t> o = reordered ? shuffled : std::vector<int32_t>{};
      // Small caches, so that evictions happen: 8 and 40 rows of B of 128 bytes, some staged.
      for (const SpmmL1Geometry g : {SpmmL1Geometry{32, 5, 1024, 0, 4}, SpmmL1Geometry{32, 3, 5120, 1024, 16},
                                     SpmmL1Geometry{8, 7, 2048, 0, 1}, SpmmL1Geometry{32, 2, 1024, 1024, 8}}) {
        CAPTURE(g.sms);
        CAPTURE(g.l1_bytes);
        CAPTURE(g.staged_bytes);
        CAPTURE(reordered);
        const SpmmL1Shares got = spmm_l1_model(a, o, g), want = list_lru(a, o, g);
        CHECK(got.l1 == doctest::Approx(want.l1).epsilon(1e-12));
        CHECK(got.staged == doctest::Approx(want.staged).epsilon(1e-12));
        CHECK(got.l2() >= 0.0);
      }
    }
  }
}

TEST_CASE("SpmmL1ModelCountsEveryRepeatOfOneColumnAsAHit") {
  // Every row reads column 0 only: one SM misses once, each of s SMs once.
  CsrMatrix<float> a;
  a.rows = a.cols = 64;
  for (int32_t r = 0; r < a.rows; ++r) {
    a.col_idx.push_back(0);
    a.values.push_back(1.0f);
    a.row_ptr.push_back(r + 1);
  }
  CHECK(spmm_l1_model(a, {}, SpmmL1Geometry{32, 1, 1024, 0, 4}).l1 == doctest::Approx(63.0 / 64.0));
  CHECK(spmm_l1_model(a, {}, SpmmL1Geometry{32, 4, 1024, 0, 4}).l1 == doctest::Approx(60.0 / 64.0));
  const SpmmL1Shares hub = spmm_l1_model(a, {}, SpmmL1Geometry{32, 4, 1024, 128, 4});
  CHECK(hub.staged == doctest::Approx(1.0));
  CHECK(hub.l1 == 0.0);
  CHECK(spmm_l1_model(a, {}, SpmmL1Geometry{32, 1, 0, 0, 4}).l1 == 0.0);  // no L1: every gather goes on
}

// The L1 model of SpMM's B-row and SpMV's x gathers (tools/bench/gather_l1_model.hpp), which
// `dbsparse reorder` prints and issue 35's decisions lean on: its intrusive LRU against a plain
// std::list LRU replaying the same SM streams, on generated graphs, in A's order and a shuffled
// one, with and without staged hub rows, whole rows and 32-byte sectors, A's column numbers and
// the count order.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <list>
#include <numeric>
#include <random>
#include <vector>

#include "dbsparse/generators.hpp"
#include "tools/bench/gather_l1_model.hpp"

using namespace dbsparse;

namespace {

// The reference, written the obvious way: items per row de-duplicated through a sorted copy,
// hubs and the count order from a fresh sort of the column counts, one std::list a SM.
GatherL1Counts list_lru(const CsrMatrix<float>& a, const std::vector<int32_t>& order, const GatherL1Geometry& g) {
  GatherL1Counts out;
  out.entries = a.nnz();
  out.item_bytes = std::max<int64_t>(4 * g.n_cols, 32);
  const int32_t per_item = std::max<int32_t>(32 / (4 * g.n_cols), 1);
  const size_t capacity = static_cast<size_t>((g.l1_bytes - g.staged_bytes) / out.item_bytes);
  std::vector<int64_t> count(static_cast<size_t>(a.cols), 0);
  for (const int32_t c : a.col_idx) ++count[static_cast<size_t>(c)];
  std::vector<int32_t> by(static_cast<size_t>(a.cols)), rank(static_cast<size_t>(a.cols));
  std::iota(by.begin(), by.end(), 0);
  std::stable_sort(by.begin(), by.end(),
                   [&](int32_t x, int32_t y) { return count[static_cast<size_t>(x)] > count[static_cast<size_t>(y)]; });
  for (int32_t i = 0; i < a.cols; ++i) rank[static_cast<size_t>(by[static_cast<size_t>(i)])] = i;
  const int64_t hubs = g.staged_bytes / out.item_bytes;
  for (int32_t sm = 0; sm < g.sms; ++sm) {
    std::list<int32_t> lru;
    for (int64_t i = 0; i < a.rows; ++i) {
      if ((i / g.rows_per_block) % g.sms != sm) continue;
      const int32_t r = order.empty() ? static_cast<int32_t>(i) : order[static_cast<size_t>(i)];
      std::vector<int32_t> items;
      for (int32_t q = a.row_ptr[r]; q < a.row_ptr[r + 1]; ++q) {
        const int32_t c = a.col_idx[q];
        if (rank[static_cast<size_t>(c)] < hubs) {
          ++out.requests;
          ++out.staged;
          continue;
        }
        const int32_t item = (g.count_order ? rank[static_cast<size_t>(c)] : c) / per_item;
        if (std::find(items.begin(), items.end(), item) == items.end()) items.push_back(item);
      }
      for (const int32_t item : items) {
        ++out.requests;
        auto it = std::find(lru.begin(), lru.end(), item);
        if (it != lru.end()) {
          ++out.l1;
          lru.erase(it);
        }
        if (capacity == 0) continue;
        lru.push_front(item);
        if (lru.size() > capacity) lru.pop_back();
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("GatherL1ModelMatchesAListLruOnTheSameStreams") {
  for (const char* spec :
       {"rmat:scale=10,ef=8,seed=3,scramble=1", "powerlaw:n=2000,avg=6,alpha=1.5,max=300,seed=2", "stencil2d:n=40"}) {
    CAPTURE(spec);
    const CsrMatrix<float> a = generate(spec).cast<float>();
    std::vector<int32_t> shuffled(static_cast<size_t>(a.rows));
    std::iota(shuffled.begin(), shuffled.end(), 0);
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
    for (const bool reordered : {true, false}) {
      const std::vector<int32_t> o = reordered ? shuffled : std::vector<int32_t>{};
      // Small caches, so that evictions happen: whole rows of 128 and 32 bytes, some staged, and
      // sectors of 8 and 2 columns (n 1 and 4), in A's numbering and the count order.
      for (const GatherL1Geometry g :
           {GatherL1Geometry{32, 5, 1024, 0, 4, false}, GatherL1Geometry{32, 3, 5120, 1024, 16, false},
            GatherL1Geometry{8, 7, 2048, 0, 1, false}, GatherL1Geometry{32, 2, 1024, 1024, 8, false},
            GatherL1Geometry{1, 3, 1024, 0, 8, false}, GatherL1Geometry{1, 3, 1024, 0, 8, true},
            GatherL1Geometry{4, 4, 640, 0, 2, true}}) {
        CAPTURE(g.n_cols);
        CAPTURE(g.sms);
        CAPTURE(g.l1_bytes);
        CAPTURE(g.staged_bytes);
        CAPTURE(g.count_order);
        CAPTURE(reordered);
        const GatherL1Counts got = gather_l1_model(a, o, g), want = list_lru(a, o, g);
        CHECK(got.requests == want.requests);
        CHECK(got.l1 == want.l1);
        CHECK(got.staged == want.staged);
        CHECK(got.l2() >= 0);
        if (g.n_cols >= 8)
          CHECK(got.requests == a.nnz());  // a row of B per entry
        else
          CHECK(got.requests <= a.nnz());
      }
    }
  }
}

TEST_CASE("GatherL1ModelCountsEveryRepeatOfOneColumnAsAHit") {
  // Every row reads column 0 only: one SM misses once, each of s SMs once.
  CsrMatrix<float> a;
  a.rows = a.cols = 64;
  for (int32_t r = 0; r < a.rows; ++r) {
    a.col_idx.push_back(0);
    a.values.push_back(1.0f);
    a.row_ptr.push_back(r + 1);
  }
  CHECK(gather_l1_model(a, {}, GatherL1Geometry{32, 1, 1024, 0, 4}).l1 == 63);
  CHECK(gather_l1_model(a, {}, GatherL1Geometry{32, 4, 1024, 0, 4}).l1 == 60);
  const GatherL1Counts hub = gather_l1_model(a, {}, GatherL1Geometry{32, 4, 1024, 128, 4});
  CHECK(hub.staged_share() == doctest::Approx(1.0));
  CHECK(hub.l1 == 0);
  CHECK(gather_l1_model(a, {}, GatherL1Geometry{32, 1, 0, 0, 4}).l2_share() == 1.0);  // no L1: every gather goes on
}

TEST_CASE("GatherL1ModelPutsAHubsColumnsInSharedSectorsInTheCountOrder") {
  // Rows read columns 0, 100, 200, ..., 700 (eight hubs a sector apart) and one column of their
  // own; in the count order the hubs share one sector, so a row asks for 2 sectors instead of 9,
  // and the rows' own columns (ranked after the hubs, ties by index) share 8 a sector.
  CsrMatrix<float> a;
  a.rows = 32;
  a.cols = 2000;
  for (int32_t r = 0; r < a.rows; ++r) {
    for (int32_t h = 0; h < 8; ++h) a.col_idx.push_back(100 * h);
    a.col_idx.push_back(1000 + 8 * r);
    a.values.resize(a.col_idx.size(), 1.0f);
    a.row_ptr.push_back(static_cast<int32_t>(a.col_idx.size()));
  }
  const GatherL1Counts own = gather_l1_model(a, {}, GatherL1Geometry{1, 1, 1 << 20, 0, 1, false});
  const GatherL1Counts counted = gather_l1_model(a, {}, GatherL1Geometry{1, 1, 1 << 20, 0, 1, true});
  CHECK(own.requests == 32 * 9);
  CHECK(own.l2() == 8 + 32);
  CHECK(counted.requests == 32 * 2);
  CHECK(counted.l2() == 1 + 4);
}

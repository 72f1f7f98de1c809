// Problem -> key(s) for SpMV: the strategy named by the config, the uniform choice by mean row
// length, or the classified bins, with every cutoff taken from the config.
#include <doctest/doctest.h>

#include <algorithm>

#include "dbsparse/error.hpp"
#include "dbsparse/tuning_db.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/reference.hpp"
#include "runtime/spmv/spmv_column_order.hpp"
#include "runtime/spmv/spmv_strategy.hpp"

using namespace dbsparse;
using codegen::SpmvStrategy;
using codegen::ValueType;

// The config as JSON, as the tuning DB and --config give it: read through SpmvConfig.
static dbsparse::codegen::SpmvKey key_of(const nlohmann::json& j, int64_t rows, int64_t nnz,
                                         dbsparse::codegen::ValueType v) {
  return dbsparse::choose_spmv_key(dbsparse::config_from_json<dbsparse::SpmvConfig>(j), rows, nnz, v);
}
static dbsparse::SpmvLayout layout_of(const nlohmann::json& j, int64_t rows, int64_t nnz,
                                      dbsparse::codegen::ValueType v) {
  return dbsparse::choose_spmv_layout(dbsparse::config_from_json<dbsparse::SpmvConfig>(j), rows, nnz, v);
}

TEST_CASE("SpmvKeyFollowsTheNamedStrategy") {
  auto k = key_of({{"strategy", "scalar"}, {"block_size", 128}}, 1000, 5000, ValueType::F64);
  CHECK(k.to_string() == "spmv.scalar.f64.b128");
  CHECK(key_of({{"strategy", "vector"}, {"lanes", 4}}, 10, 1000, ValueType::F32).to_string() ==
        "spmv.vector.f32.b256.l4");
  CHECK(key_of({{"strategy", "block"}}, 10, 1000, ValueType::F32).strategy == SpmvStrategy::Block);
  CHECK(key_of({{"strategy", "longrow"}}, 10, 10, ValueType::F32).strategy == SpmvStrategy::LongRow);
  CHECK_THROWS_AS(key_of({{"strategy", "classified"}}, 10, 10, ValueType::F32), UsageError);
  CHECK_THROWS_AS(key_of({{"strategy", "warp"}}, 10, 10, ValueType::F32), UsageError);
  CHECK_THROWS_AS(key_of({{"strategy", "vector"}, {"lanes", 3}}, 10, 10, ValueType::F32), UsageError);
  CHECK_THROWS_AS(key_of({{"strategy", "scalar"}, {"block_size", 100}}, 10, 10, ValueType::F32), UsageError);
  // A value of the wrong kind names its key instead of leaking a JSON type error.
  CHECK_THROWS_WITH_AS(key_of({{"strategy", "scalar"}, {"block_size", "big"}}, 10, 10, ValueType::F32),
                       doctest::Contains("block_size"), UsageError);
  CHECK_THROWS_WITH_AS(key_of({{"strategy", 3}}, 10, 10, ValueType::F32), doctest::Contains("strategy"), UsageError);
}

TEST_CASE("SpmvUniformChoiceFollowsMeanRowLength") {
  const nlohmann::json conf = {{"strategy", "uniform"}};
  // A matrix of rows x 1000 rows, past scalar_min_rows: the precision's own scalar cutoff.
  auto pick = [&](int64_t rows, int64_t nnz, ValueType v = ValueType::F32) {
    return key_of(conf, rows * 1000, nnz * 1000, v);
  };
  // f32: 8 entries per lane.
  CHECK(pick(1000, 3000).strategy == SpmvStrategy::Scalar);  // mean 3
  CHECK(pick(1000, 8000).strategy == SpmvStrategy::Scalar);  // mean 8: the cutoff is inclusive
  auto v = pick(1000, 27000);                                // mean 27: 4 lanes x 8 entries cover it
  CHECK(v.strategy == SpmvStrategy::Vector);
  CHECK(v.lanes == 4);
  CHECK(pick(1000, 9000).lanes == 2);
  CHECK(pick(1000, 64000).lanes == 8);
  CHECK(pick(1000, 256000).lanes == 32);
  CHECK(pick(1000, 257000).strategy == SpmvStrategy::Block);
  CHECK(pick(0, 0).strategy == SpmvStrategy::Scalar);  // no rows: nothing to share
  // f64: 4 entries per lane.
  CHECK(pick(1000, 5000, ValueType::F64).lanes == 2);
  CHECK(pick(1000, 27000, ValueType::F64).lanes == 8);
  // The cutoffs are data: the tuner moves them.
  auto moved = key_of({{"strategy", "uniform"}, {"lane_entries_f32", 1}}, 1000000, 3000000, ValueType::F32);
  CHECK(moved.strategy == SpmvStrategy::Vector);
  CHECK(moved.lanes == 4);
  CHECK_THROWS_AS(key_of({{"strategy", "uniform"}, {"lane_entries_f32", 0}}, 10, 10, ValueType::F32), UsageError);
}

TEST_CASE("SpmvClassifiedLayoutComesFromTheConfig") {
  auto l = layout_of(config_to_json(SpmvConfig{}), 1000000, 5000000, ValueType::F32);
  REQUIRE(l.classified);
  REQUIRE(l.bins.size() == 7);
  CHECK(l.bins[0].key.to_string() == "spmv.scalar.f32.b256");
  CHECK(l.bins[0].max_len == 8);
  CHECK(l.bins[1].key.to_string() == "spmv.vector.f32.b256.l2");
  CHECK(l.bins[1].max_len == 16);
  CHECK(l.bins[2].key.to_string() == "spmv.vector.f32.b256.l4");
  CHECK(l.bins[3].key.to_string() == "spmv.vector.f32.b256.l8");
  CHECK(l.bins[4].key.to_string() == "spmv.vector.f32.b256.l32");
  CHECK(l.bins[4].max_len == 256);
  CHECK(l.bins[5].key.strategy == SpmvStrategy::Block);
  CHECK(l.bins[5].max_len == 4096);
  CHECK(l.bins[6].key.strategy == SpmvStrategy::LongRow);
  CHECK(l.longrow_chunk == 2048);
  CHECK(l.fuse_bins);
  CHECK(l.fused_key.to_string() == "spmv.classified.f32.b256.l2.l4.l8.l32");
  CHECK(l.window == 0);
  auto d = layout_of(config_to_json(SpmvConfig{}), 1000000, 5000000, ValueType::F64);
  CHECK(d.bins[0].max_len == 4);
  CHECK(d.bins[4].max_len == 128);
  CHECK(codegen::SpmvKey::parse("spmv.classified.f64.b128.l2.l4.l16.l32").lanes3 == 16);
  CHECK_THROWS_AS(codegen::SpmvKey::parse("spmv.classified.f32.b256.l4.l8.l32"), UsageError);
  CHECK_THROWS_AS(codegen::SpmvKey::parse("spmv.classified.f32.b256.l2.l4.l8.l3"), UsageError);
  auto p = config_to_json(SpmvConfig{});
  p["v3_lanes"] = 16;
  p["block_max_len"] = 8192;
  auto m = layout_of(p, 1000, 5000, ValueType::F64);
  CHECK(m.bins[3].key.to_string() == "spmv.vector.f64.b256.l16");
  CHECK(m.bins[5].max_len == 8192);
  p["v4_lanes"] = 8;  // narrower than v3: cutoffs must not decrease
  CHECK_THROWS_AS(layout_of(p, 1000, 5000, ValueType::F32), UsageError);
  auto q = config_to_json(SpmvConfig{});
  q["longrow_chunk"] = 10;
  CHECK_THROWS_AS(layout_of(q, 1000, 5000, ValueType::F32), UsageError);
  auto single = layout_of({{"strategy", "uniform"}}, 1000, 27000, ValueType::F32);
  CHECK_FALSE(single.classified);
  CHECK(single.bins.size() == 1);
}

// scalar_max_len moves only the scalar bin's bound (and uniform's scalar cutoff); the vector bins
// keep lanes x E.
TEST_CASE("SpmvScalarBinBoundIsItsOwnKnob") {
  auto p = config_to_json(SpmvConfig{});
  p["scalar_max_len"] = 4;
  for (auto v : {ValueType::F32, ValueType::F64}) {
    auto l = layout_of(p, 1000, 5000, v);
    CHECK(l.bins[0].max_len == 4);
    CHECK(l.bins[1].max_len == (v == ValueType::F32 ? 16 : 8));
  }
  CHECK(key_of({{"strategy", "uniform"}, {"scalar_max_len", 4}}, 1000, 5000, ValueType::F32).strategy ==
        SpmvStrategy::Vector);
  CHECK(key_of({{"strategy", "uniform"}, {"scalar_max_len", 4}}, 1000, 4000, ValueType::F32).strategy ==
        SpmvStrategy::Scalar);
  p["scalar_max_len"] = 9;  // past f64's first vector bin (2 lanes x 4)
  CHECK_THROWS_WITH_AS(layout_of(p, 1000, 5000, ValueType::F32), doctest::Contains("scalar_max_len"), UsageError);
}

// scalar_max_len 0 on a matrix of fewer than scalar_min_rows rows: rows past 2 entries take the
// first vector bin, in the classified layout and uniform's choice alike; an explicit
// scalar_max_len, or scalar_min_rows 0, keeps the bound whatever the size.
TEST_CASE("SpmvSmallMatricesKeepOnlyTheShortestRowsScalar") {
  const auto defaults = config_to_json(SpmvConfig{});
  const int64_t small = SpmvConfig{}.scalar_min_rows - 1, large = SpmvConfig{}.scalar_min_rows;
  for (auto v : {ValueType::F32, ValueType::F64}) {
    CAPTURE(to_string(v));
    CHECK(layout_of(defaults, small, small * 6, v).bins[0].max_len == 2);
    CHECK(layout_of(defaults, small, small * 6, v).bins[1].max_len == (v == ValueType::F32 ? 16 : 8));
    CHECK(layout_of(defaults, large, large * 6, v).bins[0].max_len == (v == ValueType::F32 ? 8 : 4));
    auto fixed = defaults;
    fixed["scalar_max_len"] = 4;
    CHECK(layout_of(fixed, small, small * 6, v).bins[0].max_len == 4);
    auto off = defaults;
    off["scalar_min_rows"] = 0;
    CHECK(layout_of(off, small, small * 6, v).bins[0].max_len == (v == ValueType::F32 ? 8 : 4));
  }
  const nlohmann::json uniform = {{"strategy", "uniform"}};
  CHECK(key_of(uniform, 15606, 91756, ValueType::F32).strategy == SpmvStrategy::Vector);  // 4elt: rows of ~6
  CHECK(key_of(uniform, 15606, 31212, ValueType::F32).strategy == SpmvStrategy::Scalar);  // mean 2
  CHECK(key_of(uniform, large, large * 6, ValueType::F32).strategy == SpmvStrategy::Scalar);
  auto bad = defaults;
  bad["scalar_min_rows"] = -1;
  CHECK_THROWS_WITH_AS(layout_of(bad, 10, 10, ValueType::F32), doctest::Contains("scalar_min_rows"), UsageError);
}

TEST_CASE("SpmvGridCoversEveryRow") {
  CHECK(spmv_grid(codegen::SpmvKey{ValueType::F32, SpmvStrategy::Scalar, 256}, 1000) == 4);
  CHECK(spmv_grid(codegen::SpmvKey{ValueType::F32, SpmvStrategy::Vector, 256, 8}, 1000) == 32);
  CHECK(spmv_grid(codegen::SpmvKey{ValueType::F32, SpmvStrategy::Vector, 256, 32}, 9) == 2);
  CHECK(spmv_grid(codegen::SpmvKey{ValueType::F32, SpmvStrategy::Block, 256}, 1000) == 1000);
}

// reorder degree: the order is a permutation with counts non-increasing along it (ties in the
// user's order), and A Q applied to Q^T x is A x entry for entry.
TEST_CASE("SpmvDegreeColumnOrderIsAPermutationThatKeepsTheProduct") {
  const auto a = dbsparse::generate("powerlaw:n=3000,avg=6,alpha=1.3,max=900,seed=4");
  const auto o = spmv_degree_column_order(a.cols, a.col_idx);
  REQUIRE(o.order.size() == static_cast<size_t>(a.cols));
  REQUIRE(o.col_idx.size() == a.col_idx.size());
  std::vector<int> seen(static_cast<size_t>(a.cols), 0), count(static_cast<size_t>(a.cols), 0);
  for (int32_t c : a.col_idx) ++count[static_cast<size_t>(c)];
  bool perm = true, sorted = true;
  for (size_t k = 0; k < o.order.size(); ++k) {
    perm = perm && o.order[k] >= 0 && o.order[k] < a.cols && seen[static_cast<size_t>(o.order[k])]++ == 0;
    if (k > 0) {
      const int prev = count[static_cast<size_t>(o.order[k - 1])], cur = count[static_cast<size_t>(o.order[k])];
      sorted = sorted && (prev > cur || (prev == cur && o.order[k - 1] < o.order[k]));
    }
  }
  CHECK(perm);
  CHECK(sorted);
  for (size_t p = 0; p < a.col_idx.size(); ++p) CHECK(o.order[static_cast<size_t>(o.col_idx[p])] == a.col_idx[p]);
  std::vector<double> x(static_cast<size_t>(a.cols)), xq(static_cast<size_t>(a.cols));
  for (int32_t c = 0; c < a.cols; ++c) x[static_cast<size_t>(c)] = 0.25 + (c % 13);
  for (int32_t k = 0; k < a.cols; ++k)
    xq[static_cast<size_t>(k)] = x[static_cast<size_t>(o.order[static_cast<size_t>(k)])];
  auto aq = a;
  aq.col_idx = o.col_idx;
  CHECK(reference::spmv(aq, std::span<const double>(xq)) == reference::spmv(a, std::span<const double>(x)));
  // No columns, and columns no entry touches (they go last, in the user's order).
  CHECK(spmv_degree_column_order(0, {}).order.empty());
  CHECK(spmv_degree_column_order(4, {2, 2, 0}).order == std::vector<int32_t>{2, 0, 1, 3});
}

// reorder auto's feature: the share of entries in the k most frequent columns, against a count by hand.
TEST_CASE("SpmvTopColumnShareMatchesACountByHand") {
  // Column 3 holds 4 entries, column 1 holds 2, columns 0 and 5 one each: 8 entries.
  const std::vector<int32_t> cols{3, 1, 3, 0, 3, 5, 1, 3};
  CHECK(spmv_top_column_share(6, cols, 1) == doctest::Approx(4.0 / 8));
  CHECK(spmv_top_column_share(6, cols, 2) == doctest::Approx(6.0 / 8));
  CHECK(spmv_top_column_share(6, cols, 4) == doctest::Approx(1.0));
  CHECK(spmv_top_column_share(6, cols, 4096) == doctest::Approx(1.0));  // more hubs than columns
  CHECK(spmv_top_column_share(0, {}, 16) == 0.0);
  // A generated scrambled R-MAT graph is skewed, a uniform one is not: what auto tells apart.
  const auto rmat = dbsparse::generate("rmat:scale=14,ef=16,scramble=1,seed=1");
  const auto flat = dbsparse::generate("uniform:n=16384,d=16,seed=1");
  CHECK(spmv_top_column_share(rmat.cols, rmat.col_idx, 256) > 0.1);
  CHECK(spmv_top_column_share(flat.cols, flat.col_idx, 256) < 0.05);
}

// The plan counts A's columns once for auto's feature and the order: the counted forms give what
// the forms that count for themselves give.
TEST_CASE("SpmvColumnOrderFromCountsMatchesTheOrderFromEntries") {
  for (const char* spec : {"rmat:scale=12,ef=8,scramble=1,seed=2", "powerlaw:n=3000,avg=6,alpha=1.5,max=900,seed=4"}) {
    CAPTURE(spec);
    const auto a = dbsparse::generate(spec);
    const auto counts = spmv_column_counts(a.cols, a.col_idx);
    int64_t sum = 0;
    for (int32_t k : counts) sum += k;
    CHECK(sum == a.nnz());
    const auto from_counts = spmv_degree_column_order(counts, a.col_idx);
    const auto from_entries = spmv_degree_column_order(a.cols, a.col_idx);
    CHECK(from_counts.order == from_entries.order);
    CHECK(from_counts.col_idx == from_entries.col_idx);
    for (const int64_t top : {int64_t{1}, int64_t{64}, int64_t{4096}})
      CHECK(top_count_shares(counts, a.nnz(), {top}).front() == spmv_top_column_share(a.cols, a.col_idx, top));
  }
}

// The column passes split over threads: every entry in exactly one part, and the counts of any
// split equal one thread's.
TEST_CASE("SpmvColumnCountsSplitOverThreadsMatchOneThread") {
  for (const size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}}) {
    for (const int parts : {1, 2, 3, 16}) {
      CAPTURE(n);
      CAPTURE(parts);
      std::vector<int> seen(n, 0);
      std::vector<int> owner(n, -1);
      for_column_order_parts(n, parts, [&](size_t first, size_t end, int t) {
        for (size_t p = first; p < end; ++p) ++seen[p], owner[p] = t;
      });
      CHECK(std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; }));
      CHECK(std::is_sorted(owner.begin(), owner.end()));
    }
  }
  const auto a = dbsparse::generate("rmat:scale=12,ef=8,scramble=1,seed=5");
  const auto one = spmv_column_counts(a.cols, a.col_idx, 1);
  for (const int parts : {2, 3, 7, 16}) CHECK(spmv_column_counts(a.cols, a.col_idx, parts) == one);
}

// Past 2^21 entries the renumbering runs in parts (where the machine has two cores or more): each
// entry's new column still names its own column through the order.
TEST_CASE("SpmvDegreeColumnOrderOfAMillionsOfEntriesRenumbersEveryEntry") {
  const auto a = dbsparse::generate("rmat:scale=17,ef=17,scramble=1,seed=3");
  REQUIRE(a.col_idx.size() > (size_t{1} << 21));
  const auto o = spmv_degree_column_order(a.cols, a.col_idx);
  REQUIRE(o.col_idx.size() == a.col_idx.size());
  size_t wrong = 0;
  for (size_t p = 0; p < a.col_idx.size(); ++p) wrong += o.order[static_cast<size_t>(o.col_idx[p])] != a.col_idx[p];
  CHECK(wrong == 0);
}

// SpmvOptions::reorder replaces the looked-up config's reorder and nothing else, so a caller who
// turns the column order off keeps the tuning; an explicit options.config wins over the look-up.
TEST_CASE("SpmvOptionsReplaceOnlyTheReorderOfTheConfig") {
  const Config tuned{"spmv", {{"strategy", "vector"}, {"lanes", 4}, {"reorder", "auto"}}, ConfigSource::Tuned, ""};
  SpmvOptions o;
  Config c = apply_spmv_options(tuned, o);
  CHECK(c.params == tuned.params);
  CHECK(c.source == ConfigSource::Tuned);
  CHECK(c.note.empty());
  for (const char* r : {"none", "degree", "auto"}) {
    CAPTURE(r);
    o.reorder = r;
    c = apply_spmv_options(tuned, o);
    CHECK(c.source == ConfigSource::Tuned);
    CHECK(c.params.at("strategy") == "vector");
    CHECK(c.params.at("lanes") == 4);
    CHECK(c.params.size() == tuned.params.size());
    const SpmvConfig typed = config_from_json<SpmvConfig>(c.params);
    CHECK(typed.reorder == r);
    CHECK(c.note == std::string("reorder ") + r + " from the caller");
  }
  const Config given{"spmv", {{"strategy", "scalar"}}, ConfigSource::Explicit, "ablation"};
  o.config = &given;
  o.reorder = "degree";
  c = apply_spmv_options(tuned, o);
  CHECK(c.source == ConfigSource::Explicit);
  CHECK(c.params.at("strategy") == "scalar");
  CHECK(c.params.at("reorder") == "degree");
  CHECK(c.note == "ablation; reorder degree from the caller");
  o.reorder.clear();
  CHECK(apply_spmv_options(tuned, o).params == given.params);
  for (const char* bad : {"Degree", "rcm", " none"}) {
    CAPTURE(bad);
    o.reorder = bad;
    try {
      apply_spmv_options(tuned, o);
      FAIL("a reorder it does not know was taken");
    } catch (const UsageError& e) {
      const std::string what = e.what();
      CHECK(what.find("reorder") != std::string::npos);
      CHECK(what.find(std::string("'") + bad + "'") != std::string::npos);
    }
  }
}

TEST_CASE("SpmvWindowRoundsDownToABinBoundAndNamesItsKey") {
  auto with_window = [](int w, int fuse = 1) {
    auto p = config_to_json(SpmvConfig{});
    p["window_max_len"] = w;
    p["fuse_bins"] = fuse;
    p["scalar_min_rows"] = 0;  // the bins of a large matrix
    return p;
  };
  // f32 bounds 8, 16, 32, 64, 256; f64 4, 8, 16, 32, 128.
  CHECK(layout_of(with_window(100), 1000, 5000, ValueType::F32).window == 64);
  CHECK(layout_of(with_window(100), 1000, 5000, ValueType::F32).fused_key.to_string() ==
        "spmv.classified.f32.b256.l2.l4.l8.l32.w64");
  CHECK(layout_of(with_window(100), 1000, 5000, ValueType::F64).window == 32);
  CHECK(layout_of(with_window(1024), 1000, 5000, ValueType::F32).window == 256);
  CHECK(layout_of(with_window(8), 1000, 5000, ValueType::F32).window == 8);
  CHECK(layout_of(with_window(5), 1000, 5000, ValueType::F32).window == 0);      // below the scalar bin's bound
  CHECK(layout_of(with_window(64, 0), 1000, 5000, ValueType::F32).window == 0);  // one launch per bin: no window
  const auto k = codegen::SpmvKey::parse("spmv.classified.f64.b128.l2.l4.l16.l32.w32");
  CHECK(k.window == 32);
  CHECK(k.lanes4 == 32);
  CHECK(k.to_string() == "spmv.classified.f64.b128.l2.l4.l16.l32.w32");
  CHECK(codegen::make_source(k).name_expressions.at(0) == "dbs::spmv_csr_classified<double, 128, 2, 4, 16, 32, 32>");
  for (const char* bad : {"spmv.classified.f32.b256.l2.l4.l8.l32.w0", "spmv.classified.f32.b256.l2.l4.l8.l32.w2000",
                          "spmv.classified.f32.b256.l2.l4.l8.l32.wx", "spmv.vector.f32.b256.l8.w64",
                          "spmv.classified.f32.b256.l2.l4.l8.w64"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(codegen::SpmvKey::parse(bad), UsageError);
  }
  codegen::SpmvKey vector{ValueType::F32, SpmvStrategy::Vector, 256, 8};
  vector.window = 64;
  CHECK_THROWS_AS(codegen::make_source(vector), UsageError);
  auto too_wide = config_to_json(SpmvConfig{});
  too_wide["window_max_len"] = 2048;
  CHECK_THROWS_AS(config_from_json<SpmvConfig>(too_wide), UsageError);
}

// The small-matrix path: one vector kernel as wide as the device's resident threads allow, up to
// 32 lanes and up to the longest row; off past the widest vector bin, for other strategies and at
// fill_threads 0.
TEST_CASE("SpmvSmallMatrixTakesTheWidestRowsThatFitTheDevice") {
  const SpmvConfig cfg;
  constexpr int64_t kH100 = 132 * 2048;
  // rows of mean length 2 unless said: the mean asks for the fewest lanes, 2
  auto fill = [&](const SpmvConfig& c, int64_t rows, int64_t max_len, int64_t nnz = -1, ValueType v = ValueType::F32) {
    return spmv_fill_lanes(c, rows, nnz < 0 ? 2 * rows : nnz, max_len, v, kH100);
  };
  CHECK(fill(cfg, 2548, 50) == 32);   // 2.5K rows of at most 50: a warp a row
  CHECK(fill(cfg, 13436, 27) == 16);  // 13K rows: 16 lanes fill the device
  CHECK(fill(cfg, 3081, 9) == 8);     // no more lanes than the longest row
  CHECK(fill(cfg, 114599, 6) == 2);   // 115K rows: 2 lanes fit, 4 do not
  CHECK(fill(cfg, 258569, 4) == 0);   // 2 lanes a row past the device: classify
  CHECK(fill(cfg, 2708, 166) == 32);  // within 32 lanes x 8 entries
  CHECK(fill(cfg, 2708, 257) == 0);   // past it: block rows, classify
  CHECK(fill(cfg, 10, 1) == 2);       // rows of one entry still take 2 lanes
  CHECK(fill(cfg, 0, 0) == 0);
  // 100K rows of mean 50 (uniform: 8 lanes in f32, 16 in f64) fit only 2 lanes: classify.
  CHECK(fill(cfg, 100000, 100, 5000000) == 0);
  CHECK(fill(cfg, 100000, 100, 5000000, ValueType::F64) == 0);
  CHECK(fill(cfg, 8000, 100, 400000, ValueType::F64) == 32);
  SpmvConfig off = cfg;
  off.fill_threads = 0;
  CHECK(fill(off, 2548, 50) == 0);
  SpmvConfig fixed = cfg;
  fixed.fill_threads = 2548 * 8;  // a caller's own thread count replaces the device's
  CHECK(fill(fixed, 2548, 50) == 8);
  SpmvConfig uniform = cfg;
  uniform.strategy = "uniform";
  CHECK(fill(uniform, 2548, 50) == 0);
  const SpmvLayout l = spmv_fill_layout(cfg, ValueType::F64, 16, kH100, 27);
  CHECK_FALSE(l.classified);
  REQUIRE(l.bins.size() == 1);
  CHECK(l.bins[0].key.to_string() == "spmv.vector.f64.b256.l16");
  CHECK(l.fill_lanes == 16);
  // Read from JSON as the tuning DB gives it, range-checked.
  CHECK(config_from_json<SpmvConfig>({{"fill_threads", 0}}).fill_threads == 0);
  CHECK_THROWS_AS(config_from_json<SpmvConfig>({{"fill_threads", -2}}), UsageError);
}

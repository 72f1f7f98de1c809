// Hash SpGEMM on the GPU (spgemm.hpp, templates/spgemm/spgemm.cuh) against reference::spgemm (a dense
// accumulator in double): the same structure exactly, values within 1e-5 (f32) / 1e-12 (f64) of
// sum |a||b| per entry; the plan's groups and overflows against hash_spgemm_cpu, the kernels' spec.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "cases/spgemm_cases.hpp"
#include "dbsparse/spgemm.hpp"
#include "gpu/gpu_support.hpp"

namespace {

using dbs_test::Entry;  // (row, col, value)

template <class T>
CsrMatrix<T> from_entries(int32_t rows, int32_t cols, const std::vector<Entry>& e) {
  return dbs_test::csr_from_entries<T>(rows, cols, e);
}

template <class T>
CsrMatrix<T> random_rows(int32_t cols, const std::vector<int32_t>& lengths, uint64_t seed) {
  return dbs_test::csr_with_row_lengths<T>(cols, lengths, seed);
}

template <class T>
CsrMatrix<T> absolute(const CsrMatrix<T>& m) {
  CsrMatrix<T> out = m;
  for (auto& v : out.values) v = std::fabs(v);
  return out;
}

template <class T>
void check_values(const CsrMatrix<T>& got, const CsrMatrix<T>& a, const CsrMatrix<T>& b) {
  const CsrMatrix<double> ref = reference::spgemm(a, b);
  const CsrMatrix<double> bound = reference::spgemm(absolute(a), absolute(b));
  REQUIRE(got.rows == ref.rows);
  REQUIRE(got.cols == ref.cols);
  REQUIRE(got.row_ptr == ref.row_ptr);
  REQUIRE(got.col_idx == ref.col_idx);
  const double rel = sizeof(T) == 4 ? 1e-5 : 1e-12;
  int64_t bad = 0;
  for (size_t p = 0; p < ref.values.size(); ++p) {
    const double tol = rel * std::max(bound.values[p], 1e-300);
    if (!(std::fabs(static_cast<double>(got.values[p]) - ref.values[p]) <= tol) && bad++ == 0)
      MESSAGE(fmt::format("entry {}: got {}, want {}, tolerance {}", p, got.values[p], ref.values[p], tol));
  }
  CHECK(bad == 0);
}

// C = A·B through a plan against the reference; the plan's groups and overflows against the spec.
template <class T>
SpgemmPlan<T> check_plan(const CsrMatrix<T>& a, const CsrMatrix<T>& b, const SpgemmConfig& cfg = {}) {
  SpgemmOptions o;
  o.config = cfg;
  SpgemmPlan<T> plan = plan_spgemm(ctx(), a, b, o);
  Stream s(ctx());
  plan.run(s.handle());
  const CsrMatrix<T> c = plan.download();
  check_values(c, a, b);
  const HashSpgemmResult<T> spec = hash_spgemm_cpu(a, b, cfg);
  for (int g = 0; g < kSpgemmGroups; ++g) CHECK(plan.grouping().rows[g] == spec.grouping.rows[g]);
  CHECK(plan.overflow_rows() == spec.overflow_rows());
  CHECK(plan.nnz() == spec.c.nnz());
  // A second run (numeric only) gives the same C.
  plan.run(s.handle());
  const CsrMatrix<T> again = plan.download();
  CHECK(again.col_idx == c.col_idx);
  check_values(again, a, b);
  return plan;
}

template <class T>
void check_both(const CsrMatrix<double>& a, const CsrMatrix<double>& b, const SpgemmConfig& cfg = {}) {
  check_plan(a.cast<T>(), b.cast<T>(), cfg);
}

const char* const kGenerated[] = {"rmat:scale=10,ef=8",    "powerlaw:n=3000,avg=8,alpha=1.5,max=1500",
                                  "roadnet:n=6000,seed=3", "uniform:n=2000,d=8",
                                  "stencil2d:n=40",        "stencil3d:n=10,points=27"};

}  // namespace

TEST_CASE("SpgemmGpuMatchesReferenceWhenEveryRowIsInGroup0") {
  const auto [a, b, cfg] = dbs_test::one_group_case(0, 2000);  // IP 3..30
  const auto plan = check_plan(a, b);
  CHECK(plan.grouping().count(0) == 2000);
  check_both<float>(a, b);
}

TEST_CASE("SpgemmGpuMatchesReferenceWhenEveryRowIsInGroup1") {
  const auto [a, b, cfg] = dbs_test::one_group_case(1);  // IP 32..496
  CHECK(check_plan(a, b).grouping().count(1) == 120);
  check_both<float>(a, b);
  check_both<float>(a, b, SpgemmConfig::paper());  // a 256-thread block per row, not a warp
}

TEST_CASE("SpgemmGpuMatchesReferenceWhenEveryRowIsInGroup2") {
  const auto [a, b, cfg] = dbs_test::one_group_case(2);  // IP 512..7999
  CHECK(check_plan(a, b).grouping().count(2) == 40);
  check_both<float>(a, b);
}

// Group 2's rows of at most merge2 A entries merged by rank (templates/spgemm/spgemm.cuh,
// spgemm_merge_*) beside hashed rows of the same launch: C as the reference's, with the one-pass
// first run and with the symbolic phase, at the default block and at 256 threads (8 products a thread).
TEST_CASE("SpgemmGpuMatchesReferenceWithGroup2RowsMerged") {
  const auto [a, b, cfg] = dbs_test::merge_case();
  CHECK(hash_spgemm_cpu(a, b, cfg).merged_rows > 0);
  for (int block2 : {1024, 256})
    for (bool one_pass : {true, false}) {
      CAPTURE(block2);
      CAPTURE(one_pass);
      SpgemmConfig c = cfg;
      c.block2 = block2;
      SpgemmOptions o;
      o.config = c;
      o.one_pass = one_pass;
      Stream s(ctx());
      auto plan = plan_spgemm(ctx(), a, b, o);
      plan.run(s.handle());
      check_values(plan.download(), a, b);
      plan.run(s.handle());  // numeric only
      check_values(plan.download(), a, b);
      auto pf = plan_spgemm(ctx(), a.cast<float>(), b.cast<float>(), o);
      pf.run(s.handle());
      check_values(pf.download(), a.cast<float>(), b.cast<float>());
    }
  check_plan(a, b, cfg);  // groups and nnz against the spec
}

// The mapping of a row onto part of a warp (lanes1 / lanes2 up to 32, several rows a block, warp
// barriers only, tables a slot apart) in every shared group, and 1 and 32 lanes in group 0.
TEST_CASE("SpgemmGpuMatchesReferenceWithAFewLanesPerRowInEachSharedGroup") {
  for (int g = 0; g < 3; ++g) {
    CAPTURE(g);
    const auto [a, b, base] = dbs_test::one_group_case(g);
    for (int lanes : {1, 8, 32}) {
      // 8192-slot tables: one row (32 lanes) a block fits, 4 do not; 1024 slots: 8 rows, not 64.
      if ((g == 2 && lanes != 32) || (g == 1 && lanes == 1)) continue;
      CAPTURE(lanes);
      SpgemmConfig cfg = base;
      if (g == 0) {
        cfg.lanes0 = lanes;
        cfg.block0 = 64;  // 64 rows of 1 lane: 64 tables
      } else if (g == 1) {
        cfg.lanes1 = lanes;
        cfg.block1 = 64;
      } else {
        cfg.lanes2 = lanes;
        cfg.block2 = 32;  // one 8192-slot table a block
      }
      const auto plan = check_plan(a, b, cfg);
      CHECK(plan.grouping().count(g) > 0);
      check_both<float>(a, b, cfg);
    }
  }
  // The same on a generated power-law graph, every group mixed.
  const CsrMatrix<double> a = generate("powerlaw:n=3000,avg=6,alpha=1.5,max=600,seed=3");
  SpgemmConfig cfg;
  cfg.lanes1 = 32;
  cfg.lanes2 = 32;
  cfg.block2 = 64;
  cfg.t2 = 8192;  // two 16384-slot tables a block pass sm_90's shared memory in f64
  check_both<float>(a, a, cfg);
}

// fit_tables: a group whose longest row needs fewer slots than its config's gets smaller tables
// (a 27-point stencil's group-2 rows have at most 729 products: 2048 slots, not 16384), and the
// plan says so; C is the same with the config's tables.
TEST_CASE("SpgemmGpuMatchesReferenceWithTablesFittedToEachGroup") {
  const CsrMatrix<double> a = generate("stencil3d:n=12,points=27");
  const auto plan = check_plan(a, a);
  CHECK(plan.grouping().count(2) > 0);
  CHECK(plan.explain().find("shared table 2048 slots (fitted; config 16384)") != std::string::npos);
  check_both<float>(a, a);
  SpgemmConfig off;
  off.fit_tables = 0;
  check_both<float>(a, a, off);
  const auto [b, c, base] = dbs_test::one_group_case(2);  // IP 512..7999: fitted to the config's 16384
  CHECK(check_plan(b, c).explain().find("shared table 16384 slots,") != std::string::npos);
  check_both<float>(b, c, SpgemmConfig::paper());  // the article's 8192, some rows near full
}

// Global rows split over 1, 3 or 64 blocks, kept densely (B with 5000 columns: tables of 16384
// slots, slot = column, C written by a scan) or hashed (B with 200000 columns: 16384 or 32768
// slots, under a quarter of them).
TEST_CASE("SpgemmGpuMatchesReferenceOnDenseAndHashedGlobalRowsOverSeveralBlocks") {
  const auto [a, b_dense, base] = dbs_test::one_group_case(3);  // IP 8192..11008
  std::vector<int32_t> len;
  for (int32_t i = 0; i < 12; ++i) len.push_back(32 + i);
  const CsrMatrix<double> a_wide = dbs_test::csr_with_row_lengths<double>(200, len, 16);
  const CsrMatrix<double> b_wide = dbs_test::csr_with_row_lengths<double>(200000, std::vector<int32_t>(200, 256), 17);
  for (int split : {1, 3, 64}) {
    CAPTURE(split);
    SpgemmConfig cfg = base;
    cfg.split3 = split;
    CHECK(check_plan(a, b_dense, cfg).grouping().count(3) == 12);
    check_both<float>(a, b_dense, cfg);
    const auto hashed = check_plan(a_wide, b_wide, cfg);
    CHECK(hashed.grouping().count(3) == 12);
    CHECK(hashed.global_slots() < 12 * int64_t{200000});  // hashed: smaller than B's columns
    check_both<float>(a_wide, b_wide, cfg);
  }
  // Hashed rows of ~17900 distinct columns, more than the 16384 pairs a block sorts in shared
  // memory: written by column segments (19 of 16384 columns), each sorted by a block.
  std::vector<int32_t> long_len(6, 70);
  const CsrMatrix<double> a_long = dbs_test::csr_with_row_lengths<double>(200, long_len, 18);
  const CsrMatrix<double> b_long = dbs_test::csr_with_row_lengths<double>(300000, std::vector<int32_t>(200, 256), 19);
  const auto big = check_plan(a_long, b_long);
  CHECK(big.grouping().count(3) == 6);
  check_both<float>(a_long, b_long);
}

TEST_CASE("SpgemmGpuMatchesReferenceWhenEveryRowIsInGroup3") {
  const auto [a, b, cfg] = dbs_test::one_group_case(3);  // IP 8192..11008
  const auto plan = check_plan(a, b, cfg);
  CHECK(plan.grouping().count(3) == 12);
  CHECK(plan.global_slots() == 12 * 16384);
  check_both<float>(a, b, cfg);
}

// The same rows with narrow_dense (the default): B's 5000 columns fit group 2's table, so they run
// there in dense shared tables, no global table; one pass; explain says so.
TEST_CASE("SpgemmGpuMatchesReferenceWhenBFitsGroup2sDenseTable") {
  const auto [a, b, cfg] = dbs_test::one_group_case(3);
  const auto plan = check_plan(a, b);
  CHECK(plan.grouping().count(2) == 12);
  CHECK(plan.grouping().count(3) == 0);
  CHECK(plan.global_slots() == 0);
  CHECK(plan.explain().find("narrow_dense") != std::string::npos);
  check_both<float>(a, b);
  for (const char* spec : {"rmat:scale=12,ef=16", "powerlaw:n=3000,avg=8,alpha=1.5,max=1500"}) {
    CAPTURE(spec);
    const CsrMatrix<double> g = generate(spec);
    const auto sq = check_plan(g, g);
    CHECK(sq.grouping().count(3) == 0);
    check_both<float>(g, g);
  }
}

TEST_CASE("SpgemmGpuMatchesReferenceOnGeneratedMatricesWithAllGroupsMixed") {
  std::array<int64_t, kSpgemmGroups> rows_in_group{};
  SpgemmConfig global;  // these graphs are narrow enough for group 2's dense tables: group 3 needs this off
  global.narrow_dense = 0;
  for (const char* spec : kGenerated) {
    CAPTURE(spec);
    const CsrMatrix<double> a = generate(spec);
    const CsrMatrix<double> at = transpose(a);
    const auto sq = check_plan(a, a, global);
    check_plan(a, at);
    check_both<float>(a, a);
    check_both<float>(a, at, global);
    for (int g = 0; g < kSpgemmGroups; ++g) rows_in_group[g] += sq.grouping().count(g);
  }
  for (int g = 0; g < kSpgemmGroups; ++g) CHECK_MESSAGE(rows_in_group[g] > 0, "group ", g, " seen");
}

TEST_CASE("SpgemmGpuMatchesReferenceWithIpExactlyOnEachBound") {
  const auto [a, b, cfg] = dbs_test::bound_case();
  const auto plan = check_plan(a, b, cfg);
  CHECK(plan.grouping().rows[0] == std::vector<int32_t>{0});
  CHECK(plan.grouping().rows[1] == std::vector<int32_t>{1, 2, 6});
  CHECK(plan.grouping().rows[2] == std::vector<int32_t>{3, 4, 7});
  CHECK(plan.grouping().rows[3] == std::vector<int32_t>{5, 8});
  check_both<float>(a, b, cfg);
}

TEST_CASE("SpgemmGpuMatchesReferenceWhenARowOverflowsToTheGlobalTable") {
  // Three shards under a sanitizer (hardening_run.sh SAN_SHARDS): the hand-made case, the generated
  // one in f64, in f32.
  if (dbs_test::in_shard(0)) {
    const auto [a, b, cfg] = dbs_test::overflow_case();
    const auto plan = check_plan(a, b, cfg);
    CHECK(plan.overflow_rows() == 4);  // rows 1, 5, 6, 8 (the cpu test's)
    check_both<float>(a, b, cfg);
  }
  // Tiny tables everywhere on a generated matrix: many rows overflow, all groups used.
  const SpgemmConfig small = dbs_test::tiny_tables_config();
  const auto g = generate("rmat:scale=11,ef=8");
  if (dbs_test::in_shard(1)) {
    const auto gp = check_plan(g, transpose(g), small);
    CHECK(gp.overflow_rows() > 0);
  }
  if (dbs_test::in_shard(2)) check_both<float>(g, transpose(g), small);
}

// Global tables over a small budget: their rows run in chunks through one set of tables (group
// 3's 12 rows of 16384 slots, three a chunk; with tiny shared tables, group 3's rows and the rows
// that may overflow mixed in the chunks).
TEST_CASE("SpgemmGpuMatchesReferenceWithGlobalTablesInChunks") {
  const auto [a, b, cfg] = dbs_test::one_group_case(3);  // IP 8192..11008
  SpgemmOptions o;
  o.config = cfg;
  o.global_table_bytes = 3 * 16384 * 8;
  for (int run = 0; run < 2; ++run) {        // the first run lays the chunks out, the second reuses them
    if (!dbs_test::in_shard(run)) continue;  // a run a shard, then the tiny tables (hardening_run.sh SAN_SHARDS)
    SpgemmPlan<float> plan = plan_spgemm(ctx(), a.cast<float>(), b.cast<float>(), o);
    Stream s(ctx());
    plan.run(s.handle());
    if (run) plan.run(s.handle());
    check_values(plan.download(), a.cast<float>(), b.cast<float>());
    CHECK(plan.explain().find("in 4 chunk(s)") != std::string::npos);
  }
  if (!dbs_test::in_shard(2)) return;
  const SpgemmConfig small = dbs_test::tiny_tables_config();
  // Under racecheck (dbs_test::under_racecheck) rmat scale 7: about 100 chunks, not 1000 (the cpu
  // hash on the tiny tables: 47 global rows and 55 that may overflow at scale 7, 252 and 150 at 9).
  // Each chunk is launches of its own, which racecheck pays for: s30 cut scale 11 at 500 s, s31
  // scale 9 at 554 s before its first check.
  const auto g = generate(dbs_test::full_or_under_racecheck<std::string>("rmat:scale=11,ef=8", "rmat:scale=7,ef=8"));
  const auto gt = transpose(g);
  SpgemmOptions tiny;
  tiny.config = small;
  tiny.global_table_bytes = 4096;  // a chunk a row, mostly
  SpgemmPlan<double> plan = plan_spgemm(ctx(), g, gt, tiny);
  Stream s(ctx());
  plan.run(s.handle());
  CHECK(plan.overflow_rows() > 0);
  check_values(plan.download(), g, gt);
  plan.run(s.handle());
  check_values(plan.download(), g, gt);
}

TEST_CASE("SpgemmGpuMatchesReferenceOnRectangularProducts") {
  const auto a = random_rows<double>(300, std::vector<int32_t>(170, 6), 1);  // 170 x 300
  const auto b = random_rows<double>(90, std::vector<int32_t>(300, 4), 2);   // 300 x 90
  const auto p = check_plan(a, b);
  CHECK(p.rows() == 170);
  CHECK(p.cols() == 90);
  check_plan(b, random_rows<double>(7, std::vector<int32_t>(90, 3), 3));
  check_both<float>(a, b);
  const auto row = random_rows<double>(50, {50}, 4);
  const auto col = transpose(row);
  CHECK(check_plan(row, col).nnz() == 1);
  CHECK(check_plan(col, row).nnz() == 2500);
}

TEST_CASE("SpgemmGpuMatchesReferenceWithEmptyRowsAndColumnsAndEmptyMatrices") {
  const auto a = from_entries<double>(6, 5, {{0, 1, 1.5}, {0, 3, -2}, {2, 0, 0.25}, {2, 4, 1}, {5, 2, 3}});
  const auto b = from_entries<double>(5, 7, {{0, 6, 2}, {1, 0, 1}, {1, 6, -1}, {3, 0, 4}, {4, 6, 0.5}});
  const auto p = check_plan(a, b);
  CHECK(p.grouping().idle_rows == 4);
  check_plan(CsrMatrix<double>{}, CsrMatrix<double>{});
  check_plan(from_entries<double>(3, 4, {}), from_entries<double>(4, 0, {}));
  check_plan(from_entries<double>(0, 4, {}), from_entries<double>(4, 5, {{1, 1, 1}}));
  CHECK(check_plan(from_entries<float>(4, 4, {}), from_entries<float>(4, 4, {})).nnz() == 0);
  // The one-shot entry point.
  check_values(spgemm(ctx(), a, b), a, b);
}

TEST_CASE("SpgemmGpuValuesOnlyRerunEqualsAFreshPlan") {
  for (const char* spec : {"rmat:scale=10,ef=8", "powerlaw:n=3000,avg=8,alpha=1.5,max=1500"}) {
    CAPTURE(spec);
    const CsrMatrix<double> a = generate(spec);
    CsrMatrix<double> a2 = a;
    for (size_t p = 0; p < a2.values.size(); ++p) a2.values[p] = 0.5 + static_cast<double>(p % 7) * 0.125;
    CsrMatrix<double> b2 = transpose(a);
    for (size_t p = 0; p < b2.values.size(); ++p) b2.values[p] = -1.0 + static_cast<double>(p % 5) * 0.25;
    const CsrMatrix<double> b = transpose(a);
    auto plan = plan_spgemm(ctx(), a, b);
    Stream s(ctx());
    plan.run(s.handle());
    check_values(plan.download(), a, b);
    plan.run(std::span<const double>(a2.values), std::span<const double>(b2.values), s.handle());
    const CsrMatrix<double> rerun = plan.download();
    auto fresh = plan_spgemm(ctx(), a2, b2);
    fresh.run(s.handle());
    const CsrMatrix<double> want = fresh.download();
    CHECK(rerun.row_ptr == want.row_ptr);
    CHECK(rerun.col_idx == want.col_idx);
    check_values(rerun, a2, b2);
    // Same products added in a possibly different order: equal within the tolerance, not bitwise.
    CHECK_THROWS_AS(
        plan.values_changed(std::span<const double>(a2.values).first(1), std::span<const double>(b2.values)),
        UsageError);
    std::puts(plan.explain().c_str());
  }
}

namespace {

// check_plan's checks on a plan from device CSR: A and B uploaded by the test, read in place by
// the plan, the analysis on the test's stream.
template <class T>
void check_device_plan(const CsrMatrix<T>& a, const CsrMatrix<T>& b, const SpgemmConfig& cfg = {}) {
  const DeviceCsr<T> da(a), db(b);
  Stream s(ctx());
  SpgemmOptions o;
  o.config = cfg;
  SpgemmPlan<T> plan = plan_spgemm(ctx(), da.view(), db.view(), o, s.handle());
  const HashSpgemmResult<T> spec = hash_spgemm_cpu(a, b, cfg);
  for (int g = 0; g < kSpgemmGroups; ++g) {
    CHECK(plan.grouping().rows[g] == spec.grouping.rows[g]);
    CHECK(plan.grouping().ip[g] == spec.grouping.ip[g]);
  }
  CHECK(plan.grouping().idle_rows == spec.grouping.idle_rows);
  // The plan holds a table for every row that may overflow, the spec counts those that did.
  int64_t slots = 0;
  const SpgemmConfig eff = spgemm_for_width(cfg, b.cols);  // the bounds the plan uses
  for (size_t i = 0; i < spec.ip.size(); ++i)
    if (spgemm_group_of(spec.ip[i], eff) == kSpgemmGroups - 1 ||
        (eff.overflow_to_global && spgemm_row_may_overflow(spec.ip[i], b.cols, eff)))
      slots += spgemm_global_table_slots(spec.ip[i], b.cols, eff);
  CHECK(plan.global_slots() == slots);
  CHECK(plan.products() == spgemm_flops(spec.ip) / 2);
  CHECK(plan.max_row_products() == (spec.ip.empty() ? 0 : *std::max_element(spec.ip.begin(), spec.ip.end())));
  plan.run(s.handle());
  const CsrMatrix<T> c = plan.download();
  check_values(c, a, b);
  CHECK(plan.overflow_rows() == spec.overflow_rows());
  CHECK(plan.nnz() == spec.c.nnz());
  CHECK(download(plan.result()).col_idx == c.col_idx);
  plan.run(s.handle());
  check_values(plan.download(), a, b);
}

template <class T>
void check_device_both(const CsrMatrix<double>& a, const CsrMatrix<double>& b, const SpgemmConfig& cfg = {}) {
  check_device_plan(a.cast<T>(), b.cast<T>(), cfg);
}

}  // namespace

TEST_CASE("SpgemmGpuFromDeviceCsrMatchesReference") {
  ctx();  // the context current before the first DeviceCsr (the case may run alone: -tc)
  SUBCASE("each group alone") {
    if (!dbs_test::in_shard(0)) return;  // a subcase a shard (hardening_run.sh SAN_SHARDS)
    for (int g = 0; g < kSpgemmGroups; ++g) {
      CAPTURE(g);
      const auto [a, b, cfg] = dbs_test::one_group_case(g);
      check_device_both<double>(a, b, cfg);  // group 3: global rows (narrow_dense off)
      check_device_both<float>(a, b);        // group 3: B fits group 2's dense tables
    }
  }
  SUBCASE("IP exactly on each bound") {
    if (!dbs_test::in_shard(1)) return;  // a subcase a shard (hardening_run.sh SAN_SHARDS)
    const auto [a, b, cfg] = dbs_test::bound_case();
    check_device_both<double>(a, b, cfg);
  }
  SUBCASE("rows overflowing to the global table") {
    if (!dbs_test::in_shard(2)) return;  // a subcase a shard (hardening_run.sh SAN_SHARDS)
    const auto [a, b, cfg] = dbs_test::overflow_case();
    check_device_both<double>(a, b, cfg);
    check_device_both<float>(a, b, cfg);
    const auto g = generate("rmat:scale=11,ef=8");
    check_device_both<double>(g, transpose(g), dbs_test::tiny_tables_config());
  }
  SUBCASE("generated matrices, all groups mixed") {
    if (!dbs_test::in_shard(3)) return;  // a subcase a shard (hardening_run.sh SAN_SHARDS)
    for (const char* spec : kGenerated) {
      CAPTURE(spec);
      const CsrMatrix<double> a = generate(spec);
      check_device_both<double>(a, a);
      check_device_both<float>(a, transpose(a));
    }
  }
  SUBCASE("empty rows, columns and matrices") {
    if (!dbs_test::in_shard(4)) return;  // a subcase a shard (hardening_run.sh SAN_SHARDS)
    const auto a = from_entries<double>(6, 5, {{0, 1, 1.5}, {0, 3, -2}, {2, 0, 0.25}, {2, 4, 1}, {5, 2, 3}});
    const auto b = from_entries<double>(5, 7, {{0, 6, 2}, {1, 0, 1}, {1, 6, -1}, {3, 0, 4}, {4, 6, 0.5}});
    check_device_plan(a, b);
    check_device_plan(CsrMatrix<double>{}, CsrMatrix<double>{});
    check_device_plan(from_entries<double>(3, 4, {}), from_entries<double>(4, 0, {}));
    check_device_plan(from_entries<double>(0, 4, {}), from_entries<double>(4, 5, {{1, 1, 1}}));
    // A's entries all meet empty rows of B: IP 0 everywhere, nothing launched after the analysis.
    check_device_plan(from_entries<double>(3, 4, {{0, 1, 1}, {2, 3, 2}}), from_entries<double>(4, 4, {{0, 0, 1}}));
    // A view of nothing: null arrays are allowed when there is nothing to point at.
    DeviceCsrView<double> none;
    none.rows = 0;
    none.cols = 0;
    auto plan = plan_spgemm(ctx(), none, none, SpgemmOptions{});
    Stream s(ctx());
    plan.run(s.handle());
    CHECK(plan.nnz() == 0);
    CHECK(plan.download().row_ptr == std::vector<int32_t>{0});
  }
  SUBCASE("a product of a product, never on the host (contract's chain)") {
    if (!dbs_test::in_shard(5)) return;  // a subcase a shard (hardening_run.sh SAN_SHARDS)
    // Positive values: the first product's rounding then stays within the second's tolerance.
    const CsrMatrix<double> a = absolute(generate("rmat:scale=10,ef=8"));
    const CsrMatrix<double> at = transpose(a);
    const DeviceCsr<double> da(a), dat(at);
    Stream s(ctx());
    auto first = plan_spgemm(ctx(), da.view(), da.view(), SpgemmOptions{}, s.handle());
    first.run(s.handle());
    auto second = plan_spgemm(ctx(), first.result(), dat.view(), SpgemmOptions{}, s.handle());
    second.run(s.handle());
    const CsrMatrix<double> aa = reference::spgemm(a, a);
    check_values(second.download(), aa, at);
  }
  SUBCASE("bad inputs are UsageErrors naming the row") {
    if (!dbs_test::in_shard(6)) return;  // a subcase a shard (hardening_run.sh SAN_SHARDS)
    CsrMatrix<double> a = from_entries<double>(3, 4, {{0, 1, 1}, {1, 2, 1}, {2, 3, 1}});
    const CsrMatrix<double> b = from_entries<double>(4, 5, {{0, 0, 1}, {1, 1, 1}, {2, 2, 1}, {3, 4, 1}});
    a.col_idx[1] = 7;
    CHECK_THROWS_WITH_AS(plan_spgemm(ctx(), a, b), doctest::Contains("row 1 of A has column 7, outside [0, 4)"),
                         UsageError);
    CsrMatrix<double> bad_b = b;
    bad_b.col_idx[2] = -3;
    CHECK_THROWS_WITH_AS(plan_spgemm(ctx(), from_entries<double>(3, 4, {{0, 2, 1}}), bad_b),
                         doctest::Contains("row 2 of B has column -3, outside [0, 5)"), UsageError);
    const DeviceCsr<double> db(b);
    DeviceCsrView<double> short_b = db.view();
    short_b.nnz = 3;  // row_ptr ends at 4
    const DeviceCsr<double> da(from_entries<double>(3, 4, {{0, 2, 1}}));
    CHECK_THROWS_WITH_AS(plan_spgemm(ctx(), da.view(), short_b, SpgemmOptions{}),
                         doctest::Contains("B's row_ptr must start at 0 and end at nnz(B) = 3"), UsageError);
  }
}

// The plans' buffers come from the context's stream-ordered pool: a plan made on one stream and
// run on another, plans destroyed with their runs still queued, and many fresh plans in a row
// (each reusing what the last freed) all give the reference's C; so does a plan after the pool's
// cached memory went back to the device.
TEST_CASE("SpgemmGpuPooledPlansMatchReferenceAcrossStreamsAndReuse") {
  ctx();  // the context current before the first DeviceCsr (the case may run alone: -tc)
  const CsrMatrix<double> a = generate("powerlaw:n=3000,avg=8,alpha=1.5,max=1500");
  const CsrMatrix<double> b = transpose(a);
  const DeviceCsr<double> da(a), db(b);
  Stream s1(ctx()), s2(ctx());
  {
    SpgemmPlan<double> plan = plan_spgemm(ctx(), da.view(), db.view(), SpgemmOptions{}, s1.handle());
    plan.run(s2.handle());
    check_values(plan.download(), a, b);
  }
  CsrMatrix<double> first;
  for (int rep = 0; rep < 6; ++rep) {
    CAPTURE(rep);
    // Destroyed at the end of each pass with its numeric phase possibly still on s2.
    SpgemmPlan<double> plan =
        plan_spgemm(ctx(), da.view(), db.view(), SpgemmOptions{}, rep % 2 ? s1.handle() : s2.handle());
    plan.run(s2.handle());
    const DeviceCsrView<double> c = plan.result();
    CHECK(c.nnz == plan.nnz());
    if (rep == 0) {
      first = plan.download();
      check_values(first, a, b);
    } else if (rep == 5) {
      const CsrMatrix<double> last = plan.download();
      CHECK(last.row_ptr == first.row_ptr);
      CHECK(last.col_idx == first.col_idx);
      check_values(last, a, b);
    }
  }
  ctx().release_cached_memory();
  check_device_plan(a, b);
  // A product of a different shape after the trim: fresh memory from the device again.
  const CsrMatrix<double> g = generate("uniform:n=2000,d=8");
  check_device_plan(g, transpose(g));
}

// The first run without a symbolic phase (SpgemmOptions::one_pass, where no row can overflow its
// shared table: with the default fitted tables, always here, group 3's global rows included; the
// copy into C splits hub rows over warps and skips empty rows) and with it give the same C, the reference's; the one-pass plan's peak counts its scratch, and later
// (numeric-only) runs of both agree.
TEST_CASE("SpgemmGpuOnePassFirstRunMatchesReferenceAndTheTwoPassRun") {
  ctx();
  for (const char* spec : kGenerated) {
    CAPTURE(spec);
    const CsrMatrix<double> g = generate(spec);
    for (const bool one : {true, false}) {
      CAPTURE(one);
      const CsrMatrix<float> a = g.cast<float>(), b = transpose(g).cast<float>();
      const DeviceCsr<float> da(a), db(b);
      Stream s(ctx());
      SpgemmOptions o;
      o.one_pass = one;
      SpgemmPlan<float> plan = plan_spgemm(ctx(), da.view(), db.view(), o, s.handle());
      plan.run(s.handle());
      CHECK(plan.fresh_times().one_pass == one);
      if (plan.fresh_times().one_pass) CHECK(plan.peak_device_bytes() > plan.device_bytes());
      const CsrMatrix<float> c = plan.download();
      check_values(c, a, b);
      CHECK(plan.nnz() == c.nnz());
      plan.run(s.handle());
      const CsrMatrix<float> again = plan.download();
      CHECK(again.col_idx == c.col_idx);
      check_values(again, a, b);
    }
  }
  // Each group alone, in f64, one pass (group 3's rows dense: B has 5000 columns); then group 3
  // with hashed tables (B 200000 columns wide), split over several blocks a row.
  std::vector<dbs_test::SpgemmCase> cases;
  for (int g = 0; g < kSpgemmGroups; ++g) cases.push_back(dbs_test::one_group_case(g));
  std::vector<int32_t> long_rows;
  for (int32_t i = 0; i < 12; ++i) long_rows.push_back(32 + 3 * i);
  cases.push_back({dbs_test::csr_with_row_lengths<double>(200, long_rows, 31),
                   dbs_test::csr_with_row_lengths<double>(200000, std::vector<int32_t>(200, 256), 32),
                   {}});
  // The copy into C over empty rows (first, last, runs between) and a row of ~2400 entries that
  // spans several warps of spgemm_compact_rows.
  std::vector<int32_t> gappy(40, 0);
  gappy.push_back(300);
  for (int32_t i = 0; i < 600; ++i) gappy.push_back(i % 5 == 0 ? 0 : i % 7);
  gappy.insert(gappy.end(), 20, 0);
  cases.push_back({dbs_test::csr_with_row_lengths<double>(3000, gappy, 33),
                   dbs_test::csr_with_row_lengths<double>(5000, std::vector<int32_t>(3000, 8), 34),
                   {}});
  for (size_t g = 0; g < cases.size(); ++g) {
    CAPTURE(g);
    const auto& [a, b, cfg] = cases[g];
    const DeviceCsr<double> da(a), db(b);
    Stream s(ctx());
    SpgemmPlan<double> plan = plan_spgemm(ctx(), da.view(), db.view(), SpgemmOptions{}, s.handle());
    plan.run(s.handle());
    CHECK(plan.fresh_times().one_pass);
    check_values(plan.download(), a, b);
  }
}

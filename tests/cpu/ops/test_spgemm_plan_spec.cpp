// The SpGEMM plan's spec (runtime/spgemm/spgemm_plan_spec.hpp) for a small product, against
// group boundaries, table sizes and launch shapes worked out by hand below.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dbsparse/error.hpp"
#include "dbsparse/spgemm.hpp"
#include "runtime/spgemm/spgemm_plan_spec.hpp"

using namespace dbsparse;

namespace {

// Small bounds so that a few rows reach every group: IP < 4 group 0, < 16 group 1, < 64 group 2.
SpgemmConfig small_config() {
  SpgemmConfig c;
  c.b0 = 4;
  c.b1 = 16;
  c.b2 = 64;
  c.t0 = 8;
  c.t1 = 8;  // below group 1's bound: a row of 9-15 distinct columns may overflow
  c.t2 = 256;
  c.lanes0 = 4;
  c.block0 = 32;  // 8 rows a block
  c.lanes1 = 32;
  c.block1 = 64;  // 2 rows a block
  c.lanes2 = 0;
  c.block2 = 128;  // a row a block
  c.block3 = 256;
  c.split3 = 4;
  return c;
}

// B: 5 x 1000, row k with lengths 1, 3, 10, 50, 100 (columns 0, 1, ...). A: 6 x 5 with rows
// {0}, {1}, {}, {0, 1, 2}, {3}, {3, 4}: IP 1, 3, 0, 1 + 3 + 10 = 14, 50, 150.
CsrMatrix<float> matrix(int32_t rows, int32_t cols, const std::vector<std::vector<int32_t>>& row_cols) {
  CsrMatrix<float> m;
  m.rows = rows;
  m.cols = cols;
  m.row_ptr.assign(1, 0);
  for (const auto& r : row_cols) {
    for (int32_t c : r) {
      m.col_idx.push_back(c);
      m.values.push_back(1.0f);
    }
    m.row_ptr.push_back(static_cast<int32_t>(m.col_idx.size()));
  }
  return m;
}

std::vector<int32_t> first_columns(int n) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(i);
  return out;
}

// The analysis's counts for that product under small_config(), by hand: groups 0-3 hold rows
// {0, 1}, {3}, {4}, {5}; row 3's 14 distinct columns can pass t1 = 8, so it may overflow.
// Global tables: row 5, 150 products -> 2 * 150 = 300 -> 512 slots, and 1000 columns are at
// most twice that, so 1000 (dense); row 3, 14 -> 28 -> 32 slots.
abi::SpgemmStats hand_stats() {
  abi::SpgemmStats st{};
  const int32_t rows[4] = {2, 1, 1, 1};
  const int64_t ip[4] = {1 + 3, 14, 50, 150};
  for (int g = 0; g < 4; ++g) {
    st.rows[g] = rows[g];
    st.ip[g] = ip[g];
  }
  st.idle = 1;
  st.max_ip = 150;
  st.may_overflow = 1;
  st.global_slots = 1000 + 32;
  st.group_max_ip[0] = 3;
  st.group_max_ip[1] = 14;
  st.group_max_ip[2] = 50;
  return st;
}

detail::SpgemmSpecInputs hand_inputs() {
  detail::SpgemmSpecInputs in;
  in.config = small_config();
  in.config_source = "test";
  in.stats = hand_stats();
  in.rows = 6;
  in.b_cols = 1000;
  in.a_nnz = 8;
  in.b_nnz = 164;
  in.value_bytes = 4;
  in.optin_smem = 232448;  // sm_90's opt-in shared memory per block
  in.table_budget = 1 << 20;
  return in;
}

}  // namespace

TEST_CASE("SpgemmPlanSpec: the product's rows by IP, as worked out by hand") {
  const SpgemmConfig c = small_config();
  c.check();
  const CsrMatrix<float> a = matrix(6, 5, {{0}, {1}, {}, {0, 1, 2}, {3}, {3, 4}});
  const CsrMatrix<float> b =
      matrix(5, 1000, {first_columns(1), first_columns(3), first_columns(10), first_columns(50), first_columns(100)});
  CHECK(intermediate_products(a, b) == std::vector<int64_t>{1, 3, 0, 14, 50, 150});
  // The boundaries: a bound is the first IP of the next group.
  const std::vector<std::pair<int64_t, int>> at = {{0, -1}, {1, 0}, {3, 0}, {4, 1}, {15, 1}, {16, 2}, {63, 2}, {64, 3}};
  for (const auto& [ip, group] : at) {
    CAPTURE(ip);
    CHECK(spgemm_group_of(ip, c) == group);
    // The analysis kernel's code: the group, plus kSpgemmMayOverflow for row 3's 14 > t1.
    const int code = abi::spgemm_row_code(ip, detail::spgemm_group_rule(c, 1000));
    CHECK((code < 0 ? -1 : code & 3) == group);
  }
  CHECK(abi::spgemm_row_code(14, detail::spgemm_group_rule(c, 1000)) == 1 + abi::kSpgemmMayOverflow);
  CHECK(abi::spgemm_row_code(14, detail::spgemm_group_rule(c, 8)) == 1);  // B too narrow to fill 8 slots
  CHECK(spgemm_global_table_slots(150, 1000, c) == 1000);
  CHECK(spgemm_global_table_slots(14, 1000, c) == 32);
}

TEST_CASE("SpgemmPlanSpec: tables and launch shapes of a small product, by hand") {
  const detail::SpgemmPlanSpec s = detail::spgemm_plan_spec(hand_inputs());
  CHECK_FALSE(s.narrowed);  // B's 1000 columns do not fit t2 = 256
  CHECK(s.config.b2 == 64);
  CHECK(s.products == 218);
  // Fitted tables: the next power of two >= twice the longest row (at least 32), at most t.
  CHECK(s.fitted.t0 == 8);    // 2 * 3 = 6 -> 32, capped at 8
  CHECK(s.fitted.t1 == 8);    // 2 * 14 = 28 -> 32, capped at 8
  CHECK(s.fitted.t2 == 128);  // 2 * 50 = 100 -> 128 of 256
  // Group 0: 8 rows a block of 32, tables 8 + 4 lanes apart; (key) or (key, f32 value) a slot.
  CHECK(s.shared[0].rows == 2);
  CHECK(s.shared[0].rows_per_block == 8);
  CHECK(s.shared[0].grid == 1);
  CHECK(s.shared[0].block == 32);
  CHECK(s.shared[0].symbolic_smem == 8 * 12 * 4);
  CHECK(s.shared[0].numeric_smem == 8 * 12 * 8);
  // Group 1: a warp a row, 2 rows a block of 64; a warp's lanes are a row's, so no padding.
  CHECK(s.shared[1].rows_per_block == 2);
  CHECK(s.shared[1].grid == 1);
  CHECK(s.shared[1].symbolic_smem == 2 * 8 * 4);
  CHECK(s.shared[1].numeric_smem == 2 * 8 * 8);
  // Group 2: a row a block of 128.
  CHECK(s.shared[2].rows_per_block == 1);
  CHECK(s.shared[2].block == 128);
  CHECK(s.shared[2].symbolic_smem == 128 * 4);
  CHECK(s.shared[2].numeric_smem == 128 * 8);
  // Global rows: row 5 (group 3) and row 3 (may overflow), split 4 ways, blocks of 256.
  CHECK(s.global.rows == 2);
  CHECK(s.global.split == 4);
  CHECK(s.global.block == 256);
  CHECK(s.global.seg_count == 2 * 4);
  CHECK(s.global.one_chunk);  // 1032 slots * 8 bytes within the budget
  CHECK(s.global.table_slots == 1032);
  // A sort segment: the largest power of two of 8-byte pairs within 232448 - 1024 bytes.
  CHECK(s.global.sort_cap == 16384);
  CHECK(s.global.sort_smem == 16384 * 8);
  CHECK(s.global.segs == 1);
  CHECK(s.global.seg_hist == 2 * 2 * 1);
  CHECK(s.row_buffers == 6);
  // Row 3 may overflow into a global table: the symbolic phase must run first.
  CHECK_FALSE(s.one_pass);
  CHECK(s.symbolic_key[0] == "spgemm.f32.symbolic.g0.t8.l4.b32");
  CHECK(s.numeric_key[3] == "spgemm.f32.numeric.g3.global.b256");
  const std::string text = detail::spgemm_explain(s);
  CHECK(text.find("group 0: 2 rows, IP 4 (IP < 4 (largest 3), shared table 8 slots, 8 row(s) per block of 32)") !=
        std::string::npos);
  CHECK(text.find("shared table 128 slots (fitted; config 256)") != std::string::npos);
  CHECK(text.find("global tables: 2 rows (1 of group 3, 1 that may overflow a shared table), 1032 slots") !=
        std::string::npos);
}

TEST_CASE("SpgemmPlanSpec: one pass where no shared table can fill, within the budget") {
  detail::SpgemmSpecInputs in = hand_inputs();
  in.config.t1 = 16;  // row 3's 14 columns fit: no row may overflow
  in.stats.may_overflow = 0;
  in.stats.global_slots = 1000;
  detail::SpgemmPlanSpec s = detail::spgemm_plan_spec(in);
  CHECK(s.fitted.t1 == 16);  // 28 -> 32, capped at 16
  CHECK(s.global.rows == 1);
  CHECK(s.one_pass);  // 218 products * 8 bytes of scratch and 1000 slots fit 1 MiB
  in.one_pass = false;
  CHECK_FALSE(detail::spgemm_plan_spec(in).one_pass);
  // A budget under the global tables' 8000 bytes: no tables at planning, the first run chunks them.
  in.one_pass = true;
  in.table_budget = 4000;
  s = detail::spgemm_plan_spec(in);
  CHECK(s.global.table_slots == 0);
  CHECK_FALSE(s.global.one_chunk);
  CHECK_FALSE(s.one_pass);
}

TEST_CASE("SpgemmPlanSpec: B within t2 narrows the config; tables past the device's shared memory throw") {
  detail::SpgemmSpecInputs in = hand_inputs();
  in.b_cols = 200;  // <= t2 = 256, group 2 a block a row: every row from b1 up is group 2's
  const detail::SpgemmPlanSpec s = detail::spgemm_plan_spec(in);
  CHECK(s.narrowed);
  CHECK(s.config.b2 == 1 << 30);
  CHECK(detail::spgemm_plan_config(in.config, 200).b2 == 1 << 30);
  in = hand_inputs();
  in.optin_smem = 700;  // group 0's numeric tables take 768 bytes
  CHECK_THROWS_AS(detail::spgemm_plan_spec(in), UsageError);
}

// The SpMM plan's spec (runtime/spmm/spmm_spec.hpp): the host decisions of a plan, checked on the
// CPU for small matrices against values worked out by hand from the rules spmm.hpp documents
// (path choice, rows' order, rows a warp, long rows' parts and pieces, the 16-bit workspace, the
// TC windows' pieces and launch shapes, the kernel keys, the epilogue's fusion); and that the
// SpMM and BRP conversion modules declare every entry point role the plans fetch.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/keys/brp_convert_key.hpp"
#include "codegen/keys/spmm_key.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/generators.hpp"
#include "runtime/spmm/spmm_spec.hpp"

using namespace dbsparse;
using namespace dbsparse::spmm_detail;

namespace {

// Rows of the given lengths, each row's entries in columns 0, 1, ..., length - 1.
CsrMatrix<float> rows_of(const std::vector<int32_t>& lengths, int32_t cols) {
  CsrMatrix<float> a;
  a.rows = static_cast<int32_t>(lengths.size());
  a.cols = cols;
  for (int32_t len : lengths) {
    for (int32_t c = 0; c < len; ++c) {
      a.col_idx.push_back(c);
      a.values.push_back(1.0f);
    }
    a.row_ptr.push_back(static_cast<int32_t>(a.col_idx.size()));
  }
  return a;
}

CsrMatrix<float> dense(int32_t rows, int32_t cols) { return rows_of(std::vector<int32_t>(rows, cols), cols); }

Config config(nlohmann::json params) { return Config{"spmm", std::move(params), ConfigSource::Explicit, ""}; }

SpmmOptions with(SpmmDtype d, SpmmEpilogue e = SpmmEpilogue::None) {
  SpmmOptions o;
  o.dtype = d;
  o.epilogue = e;
  return o;
}

}  // namespace

TEST_CASE("SpmmSpecCsrCutsTheLongRowIntoPartsAndTakesItFirst") {
  // Five rows of 1 entry and row 3 of 300, n = 32 (float4: 8 lanes across N, scalars 32).
  const CsrMatrix<float> a = rows_of({1, 1, 1, 300, 1, 1}, 300);
  const SpmmSpec s = spmm_spec(a, 32, with(SpmmDtype::F32, SpmmEpilogue::Relu), config({{"path", "csr"}}), 132);
  CHECK(s.asked == SpmmPath::CsrCudaCore);
  CHECK(s.path == SpmmPath::CsrCudaCore);
  // Lengths' CV: mean 305 / 6, standard deviation 111.4: 2.19 >= 0.6, so the degree order, the
  // long row first and the others in A's order.
  CHECK(s.auto_cv == doctest::Approx(2.19208).epsilon(1e-5));
  CHECK(s.order == Reorder::Degree);
  CHECK(s.row_order == std::vector<int32_t>{3, 0, 1, 2, 4, 5});
  CHECK(s.vec4);
  // Mean row 50.8 > 32: a row a warp.
  CHECK(s.csr_rows1 == 1);
  CHECK(s.csr_rows4 == 1);
  CHECK(s.csr_key1.to_string() == "spmm.csr.v1.l32.w4");
  CHECK(s.csr_key4.to_string() == "spmm.csr.v4.l8.w4");
  // max_run: twice the mean row (102) but at least 32 entries per subgroup of the float4 kernel's
  // 8 lanes (32 * 4 = 128).
  CHECK(s.max_run == 128);
  // f32 splits row 3 whole: [0, 128), [128, 256), [256, 300) from its start (entry 3).
  CHECK(s.n_parts == 3);
  CHECK(s.cut_rows == 1);
  CHECK(s.n_pieces == 0);
  CHECK(s.tables.split.parts == std::vector<int32_t>{3, 3, 131, 0, 3, 131, 259, 0, 3, 259, 303, 0});
  // 6 rows + 3 parts, 4 warps a block.
  CHECK(s.csr_grid1 == 3);
  CHECK(s.csr_grid4 == 3);
  CHECK(s.acc.n_units == 0);
  CHECK(s.csr_rows == 6);
  // One writer per entry of C (no pieces, no staged windows): relu in the stores.
  CHECK(s.epilogue_fused);
}

TEST_CASE("SpmmSpecCsrPiecesAnd16BitWorkspace") {
  const CsrMatrix<float> a = rows_of({1, 1, 1, 300, 1, 1}, 300);
  // f16 never splits: the part of row 3 past its first 128 entries goes to the pieces pass, and
  // row 3's sums to a workspace of 1 row x 32 floats.
  const SpmmSpec h = spmm_spec(a, 32, with(SpmmDtype::F16, SpmmEpilogue::Relu), config({{"path", "csr"}}), 132);
  CHECK(h.csr_key1.to_string() == "spmm.csr.f16.v1.l32.w4");
  CHECK(h.n_parts == 0);
  CHECK(h.n_pieces == 2);
  CHECK(h.tables.pieces == std::vector<int32_t>{3, 131, 259, 3, 259, 303});
  CHECK(h.acc.n_units == 1);
  CHECK(h.acc.unit_rows == 1);
  CHECK(h.acc.floats == 32);
  CHECK(h.acc.finalize_grid == 1);
  CHECK(h.tables.cut.units == std::vector<int32_t>{3});
  CHECK(h.csr_grid1 == 2);        // 6 rows, 4 warps a block
  CHECK(h.csr_pieces_grid == 1);  // 2 pieces
  CHECK(h.epilogue_fused);        // 16 bits: the pieces add into the workspace, finalize writes C

  // f32 without the split: the same pieces, atomics into C, so relu takes a pass of its own.
  const SpmmSpec f =
      spmm_spec(a, 32, with(SpmmDtype::F32, SpmmEpilogue::Relu), config({{"path", "csr"}, {"csr_split", 0}}), 132);
  CHECK(f.n_pieces == 2);
  CHECK(f.acc.n_units == 0);
  CHECK_FALSE(f.epilogue_fused);
}

TEST_CASE("SpmmSpecCsrRowsAWarpFromTheMeanRowAndTheGpusWarps") {
  // One entry a row; with 1 SM the GPU holds 64 warps: 4 rows a warp from 2 * 4 * 64 = 512 rows,
  // 2 from 256, where the lanes across N leave room (float4 at n = 32: 8 lanes; scalars: 32, none).
  const SpmmSpec s600 = spmm_spec(rows_of(std::vector<int32_t>(600, 1), 4), 32, {}, config({{"path", "csr"}}), 1);
  CHECK(s600.order == Reorder::None);  // every row alike: CV 0
  CHECK(s600.csr_rows4 == 4);
  CHECK(s600.csr_rows1 == 1);
  CHECK(s600.csr_key4.to_string() == "spmm.csr.v4.l8.w4.r4");
  CHECK(s600.csr_grid4 == 38);   // 150 warps, 4 a block
  CHECK(s600.csr_grid1 == 150);  // 600 warps
  const SpmmSpec s300 = spmm_spec(rows_of(std::vector<int32_t>(300, 1), 4), 32, {}, config({{"path", "csr"}}), 1);
  CHECK(s300.csr_rows4 == 2);
  // The same rows on 132 SMs do not fill the GPU twice over: a row a warp.
  const SpmmSpec big = spmm_spec(rows_of(std::vector<int32_t>(600, 1), 4), 32, {}, config({{"path", "csr"}}), 132);
  CHECK(big.csr_rows4 == 1);
  // csr_blocks_per_sm 2 on 3 SMs: at most 6 blocks striding over the rows.
  const SpmmSpec strided = spmm_spec(rows_of(std::vector<int32_t>(600, 1), 4), 32, {},
                                     config({{"path", "csr"}, {"csr_blocks_per_sm", 2}}), 3);
  CHECK(strided.csr_grid1 == 6);
}

TEST_CASE("SpmmSpecAutoWeighsTheCondensedFill") {
  // A diagonal: each 16-row window has 16 distinct columns, one group of 8g = 32 slots, fill
  // 16 / (4 * 128) = 0.03 < 0.45; min_tc_share above 1 never weighs BRP: CSR.
  CsrMatrix<float> diag;
  diag.rows = diag.cols = 32;
  for (int32_t r = 0; r < 32; ++r) {
    diag.col_idx.push_back(r);
    diag.values.push_back(1.0f);
    diag.row_ptr.push_back(r + 1);
  }
  const SpmmSpec d = spmm_spec(diag, 32, {}, config(nlohmann::json::object()), 132);
  CHECK(d.asked == SpmmPath::Auto);
  CHECK(d.path == SpmmPath::CsrCudaCore);
  CHECK(d.auto_fill == doctest::Approx(16.0 / 512.0));
  CHECK(d.auto_share < 0);

  // Dense 16 x 16: 256 entries in one group of 4 blocks of 16 x 8, fill 256 / 512 = 0.5 >= 0.45.
  const SpmmSpec c =
      spmm_spec(dense(16, 16), 32, with(SpmmDtype::F32, SpmmEpilogue::Relu), config(nlohmann::json::object()), 132);
  CHECK(c.path == SpmmPath::Condensed);
  CHECK(c.auto_fill == doctest::Approx(0.5));
  CHECK(c.fill == doctest::Approx(0.5));
  CHECK(c.groups == 1);
  CHECK(c.csr_rows == 0);  // no residual
  CHECK(c.frags);
  CHECK(c.tc_key.to_string() == "spmm.brp.f1.g4.w8");  // BRP's module at f = 1, 8 TC warps
  CHECK(c.tables.win_group == std::vector<int32_t>{0, 1});
  CHECK(c.tc_grid == 1);  // a window, n = 32: 4 tiles of 8 columns, one chunk of 8 tiles
  CHECK(c.n_pieces == 0);
  CHECK_FALSE(c.epilogue_fused);  // not the CSR path
}

TEST_CASE("SpmmSpecCondensedWindowPastMaxRunGoesToPieces") {
  // Dense 16 x 2048: one window of 2048 / 32 = 64 groups; tc_max_run 16 leaves 3 pieces of 16.
  const SpmmSpec s =
      spmm_spec(dense(16, 2048), 128, with(SpmmDtype::BF16), config({{"path", "condensed"}, {"tc_max_run", 16}}), 132);
  CHECK(s.path == SpmmPath::Condensed);
  CHECK(s.groups == 64);
  CHECK(s.fill == doctest::Approx(1.0));
  CHECK(s.tc_key.to_string() == "spmm.brp.bf16.f1.g4.w8");
  CHECK(s.max_run == 16);
  CHECK(s.tables.pieces == std::vector<int32_t>{0, 16, 32, 0, 32, 48, 0, 48, 64});
  // n = 128: 16 tiles of 8 columns, 2 chunks of 8 tiles a window or piece.
  CHECK(s.tc_grid == 2);
  CHECK(s.tc_pieces_grid == 6);
  // bf16: the cut window's 16 rows x 128 columns summed in f32.
  CHECK(s.acc.n_units == 1);
  CHECK(s.acc.unit_rows == 16);
  CHECK(s.acc.floats == 16 * 128);
  CHECK(s.acc.finalize_grid == 8);  // 2048 floats, 256 threads a block
}

TEST_CASE("SpmmSpecBrpWindowsFromTheConvertedGroups") {
  SpmmSpec s = spmm_spec(dense(48, 8), 32, {}, config({{"path", "brp"}, {"tc_max_run", 2}}), 132);
  CHECK(s.path == SpmmPath::Brp);
  CHECK(s.tc_key.to_string() == "spmm.brp.f1.g4.w8");
  CHECK(s.local_stride == brp_local_stride(1, 4));
  CHECK(s.value_stride == brp_value_stride(1, 4, 4));
  // Groups in windows 0, 0, 0, 2, 2 of the 3 windows of 48 rows, 5 residual rows.
  place_brp(s, {0, 0, 0, 2, 2}, 5);
  CHECK(s.groups == 5);
  CHECK(s.csr_rows == 5);
  CHECK(s.tables.win_group == std::vector<int32_t>{0, 3, 3, 5});
  CHECK(s.tables.pieces == std::vector<int32_t>{0, 2, 3});  // window 0's third group
  CHECK(s.n_pieces == 1);
  CHECK(s.tc_grid == 3);
  CHECK_FALSE(s.frags);  // f = 1 < expand_min_f 4
  SpmmSpec e = spmm_spec(dense(48, 8), 32, {}, config({{"path", "brp"}, {"f", 4}}), 132);
  place_brp(e, {0}, 0);
  CHECK(e.frags);
  SpmmSpec none = spmm_spec(dense(48, 8), 32, {}, config({{"path", "brp"}, {"f", 4}}), 132);
  place_brp(none, {}, 48);
  CHECK_FALSE(none.frags);  // no groups to expand
}

TEST_CASE("SpmmSpecOptionsAndRefusals") {
  const CsrMatrix<float> a = rows_of({1, 2, 3}, 4);
  SpmmOptions o;
  o.path = SpmmPath::CsrCudaCore;
  o.reorder = Reorder::Degree;
  const SpmmSpec s = spmm_spec(a, 5, o, config({{"path", "brp"}, {"reorder", "none"}}), 132);
  CHECK(s.path == SpmmPath::CsrCudaCore);  // the explicit options win over the config
  CHECK(s.typed.path == "csr");
  CHECK(s.order == Reorder::Degree);
  CHECK(s.auto_cv < 0);  // asked for, not weighed
  CHECK(s.row_order == std::vector<int32_t>{2, 1, 0});
  CHECK(s.config.params["path"] == "brp");  // the config as read
  CHECK_FALSE(s.vec4);                      // n = 5
  // rcm orders a graph's vertices: a square A only.
  o.reorder = Reorder::Rcm;
  CHECK_THROWS_AS(spmm_spec(a, 8, o, config(nlohmann::json::object()), 132), UsageError);
}

TEST_CASE("SpmmSpecOfADeviceView") {
  // 64-bit offsets: one kernel a call, a block a csr_warps warps' rows, the epilogue always fused.
  const SpmmSpec s =
      spmm_view64_spec(1000, 1000, 1000, 32, with(SpmmDtype::F32, SpmmEpilogue::Relu), config({{"path", "auto"}}), 1);
  CHECK(s.asked == SpmmPath::Auto);
  CHECK(s.path == SpmmPath::CsrCudaCore);
  CHECK(s.csr_rows4 == 4);
  CHECK(s.csr_key4.to_string() == "spmm.csr.v4.l8.w4.r4.o64");
  CHECK(s.csr_key1.to_string() == "spmm.csr.v1.l32.w4.o64");
  CHECK(s.csr_grid4 == 63);   // 250 warps
  CHECK(s.csr_grid1 == 250);  // 1000 warps
  CHECK(s.epilogue_fused);
  SpmmOptions rcm;
  rcm.reorder = Reorder::Rcm;
  CHECK_THROWS_AS(spmm_view64_spec(4, 4, 4, 32, rcm, config(nlohmann::json::object()), 1), UsageError);
  CHECK_THROWS_AS(spmm_view64_spec(4, 4, 4, 32, {}, config({{"path", "brp"}}), 1), UsageError);
}

namespace {
bool has_role(const codegen::KernelSource& ks, const std::string& role) {
  return std::count(ks.entry_names.begin(), ks.entry_names.end(), role) == 1;
}
}  // namespace

TEST_CASE("SpmmModulesDeclareTheRolesThePlansAskFor") {
  // The roles runtime/spmm/spmm_materialize.cpp, spmm_relu.cpp and runtime/formats/brp_device.cpp
  // fetch (LoadedKernel::entry throws at plan time for a missing one, which only a GPU would see).
  for (const codegen::SpmmKey& k : codegen::spmm_search_space()) {
    CAPTURE(k.to_string());
    const codegen::KernelSource ks = codegen::make_source(k);
    REQUIRE(ks.entry_names.size() == ks.name_expressions.size());
    const bool f32 = k.value == codegen::SpmmValue::F32;
    if (k.path == codegen::SpmmKernelPath::Brp) {
      for (const char* role : {"windows", "residual", "residual_vec4", "window_pieces", "windows_frags",
                               "window_pieces_frags", "expand_frags"})
        CHECK(has_role(ks, role));
    } else if (k.offsets64) {
      CHECK(has_role(ks, "rows"));
    } else {
      for (const char* role : {"rows", "pieces", "relu"}) CHECK(has_role(ks, role));
      CHECK(has_role(ks, "staged") == (f32 && k.vec == 4));
    }
    CHECK(has_role(ks, "finalize") == (!f32 && !k.offsets64));
  }
  for (const codegen::BrpConvertKey& k :
       codegen::brp_convert_keys({codegen::ValueType::F32, codegen::ValueType::F64})) {
    const codegen::KernelSource ks = codegen::make_source(k);
    REQUIRE(ks.entry_names.size() == 8);
    for (const char* role :
         {"slots", "groups", "classify", "fill", "row_heads", "fill_rows", "scan_reduce", "scan_apply"})
      CHECK(has_role(ks, role));
  }
}

TEST_CASE("SpmmAutoTakesCondensedForABand") {
  // Rows i hold columns i-8 .. i+8: a 16-row window's 272 entries lie in its 32 columns, which the
  // condensed tiles hold at a fill well above min_condensed_fill, so auto takes the tensor-core
  // path (the premise of the gpu tier's plan-trial case).
  const auto a = dbsparse::generate("banded:n=65536,bw=8").cast<float>();
  const auto s = dbsparse::spmm_detail::spmm_spec(
      a, 32, dbsparse::SpmmOptions{}, dbsparse::Config{"spmm", dbsparse::config_to_json(dbsparse::SpmmConfig{})}, 132);
  CHECK(s.asked == dbsparse::SpmmPath::Auto);
  CHECK(s.path == dbsparse::SpmmPath::Condensed);
  CHECK(s.auto_fill >= dbsparse::SpmmConfig{}.min_condensed_fill);
}

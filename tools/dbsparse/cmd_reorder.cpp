// `dbsparse reorder MATRIX`: the vertex orderings of reorder.hpp on the CPU, each with its time and
// how local the permuted pattern is (bandwidth, mean |i - j|, lines of x a row gathers), so that
// their cost can be set against what they save a call, and how much of A the most
// frequent columns hold (what staging their rows of B or x in shared memory could serve), and the
// share of SpMM's B-row gathers each order leaves to L2 by the L1 model (tools/bench/gather_l1_model.hpp),
// plain and with the hub rows staged in shared memory, and SpMV's x sectors in A's numbering and in
// the columns' count order (SpMV's cols-degree). No GPU needed.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <functional>
#include <memory>

#include <nlohmann/json.hpp>

#include "dbsparse/abi/spmm.h"
#include "dbsparse/error.hpp"
#include "dbsparse/io.hpp"
#include "dbsparse/reorder.hpp"
#include "runtime/spmm/spmm_stage.hpp"
#include "runtime/spmv/spmv_column_order.hpp"
#include "support/atomic_file.hpp"
#include "support/host_memory.hpp"
#include "tools/bench/gather_l1_model.hpp"
#include "tools/bench/spgemm_apps_check.hpp"
#include "tools/bench/timing.hpp"
#include "tools/dbsparse/commands.hpp"

namespace dbsparse::cli {
namespace {

struct ReorderArgs {
  std::string matrix, json_path, permutation_path;
  std::vector<std::string> methods{"none", "degree", "rcm", "community"};
};

nlohmann::json locality_json(const LocalityStats& s) {
  return {{"bandwidth", s.bandwidth}, {"mean_distance", s.mean_distance}, {"lines_per_row", s.lines_per_row}};
}

// Entries over the distinct columns of each window of `rows` consecutive rows, summed: how many
// times a window could reuse a row of B (SpMM) or a line of x it staged in shared memory, at
// most. 1.0: no two rows of a window share a column, so staging saves nothing over the gathers.
double window_reuse(const CsrMatrix<float>& a, int32_t rows) {
  std::vector<int32_t> seen(static_cast<size_t>(a.cols), -1);
  int64_t distinct = 0;
  for (int32_t r = 0; r < a.rows; ++r)
    for (int32_t q = a.row_ptr[r]; q < a.row_ptr[r + 1]; ++q) {
      int32_t& w = seen[static_cast<size_t>(a.col_idx[q])];
      if (w != r / rows) w = r / rows, ++distinct;
    }
  return distinct ? static_cast<double>(a.nnz()) / static_cast<double>(distinct) : 1.0;
}

int run_reorder(const ReorderArgs& a, const NamedMatrix& m) {
  const CsrMatrix<float> csr = m.csr.cast<float>();
  fmt::print("{}: {} x {}, {} entries\n", m.name, csr.rows, csr.cols, csr.nnz());
  const std::vector<int64_t> tops{256, 1024, 4096};
  const std::vector<double> hubs = top_column_shares(csr.cols, csr.col_idx, tops);
  fmt::print("entries in the most frequent columns: top 256 {:.1f}%, top 1024 {:.1f}%, top 4096 {:.1f}%\n",
             100 * hubs[0], 100 * hubs[1], 100 * hubs[2]);
  // SpMV's x gathers by the same model (sectors of 8 entries, 64 rows a block, A's row order): what
  // the cols-degree strategy (columns renumbered by count, x gathered into that order) saves.
  nlohmann::json spmv = nlohmann::json::object();
  {
    GatherL1Geometry g;  // the model's defaults: 132 SMs, 256 KB of L1 each
    g.n_cols = 1;
    g.rows_per_block = 64;
    const GatherL1Counts own = gather_l1_model(csr, {}, g);
    g.count_order = true;
    const GatherL1Counts counted = gather_l1_model(csr, {}, g);
    fmt::print(
        "SpMV x sectors to L2 a call (L1 model): A's column numbers {:.1f} MB, columns by count {:.1f} MB "
        "(A's entries {:.1f} MB)\n",
        own.l2_bytes() / 1e6, counted.l2_bytes() / 1e6, 8.0 * static_cast<double>(csr.nnz()) / 1e6);
    spmv = {{"x_l2_bytes_own", own.l2_bytes()}, {"x_l2_bytes_count_order", counted.l2_bytes()}};
  }
  fmt::print("{:<10} {:>10} {:>12} {:>14} {:>14} {:>12} {:>16} {:>14} {:>14}\n", "order", "cpu ms", "bandwidth",
             "mean |i-j|", "x lines/row", "reuse/32 rows", "staged/saved N32", "L2 N32 (hubs)", "L2 N128 (hubs)");
  nlohmann::json rec = {
      {"tool", "dbsparse reorder"}, {"date", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)))},
      {"matrix", m.name},           {"rows", csr.rows},
      {"nnz", csr.nnz()},           {"hub_share", {{"top256", hubs[0]}, {"top1024", hubs[1]}, {"top4096", hubs[2]}}},
      {"spmv_model", spmv},         {"orders", nlohmann::json::array()}};
  for (const auto& name : a.methods) {
    const Reorder how = parse_reorder(name);
    Permutation p;
    const double ms = tools::wall_ms([&] { p = reorder(csr, how); });
    const CsrMatrix<float> permuted = how == Reorder::None ? csr : permute_symmetric(csr, p);
    const LocalityStats s = locality(permuted);
    const double reuse = window_reuse(permuted, 32);
    // SpMM's staged windows in this order at N = 32 with csr_stage_reuse 1.5 (the plan's limits:
    // 32 rows, rows of at most 64 entries, 48 KB of B rows): the entries staged, and the reads of
    // B's rows they save (each window reads a distinct column's row once).
    const SpmmStageWindows sw = spmm_stage_windows(permuted, {}, 1.5, 32, 64, abi::kSpmmStageBytes / (4 * 32));
    const double nnz = static_cast<double>(std::max<int64_t>(permuted.nnz(), 1));
    const double staged = static_cast<double>(sw.staged_entries()) / nnz;
    const double saved = static_cast<double>(sw.staged_entries() - static_cast<int64_t>(sw.cols.size())) / nnz;
    // B-row gathers left to L2 (132 SMs, 256 KB of L1 each; blocks of 4 warps of 4 rows at
    // N = 32, of 1 row at N = 128), plain and with 160 KB of hub rows staged.
    nlohmann::json l2 = nlohmann::json::object();
    std::string l2_text;
    for (const int32_t n : {32, 128}) {
      GatherL1Geometry plain;
      plain.n_cols = n;
      plain.rows_per_block = n == 32 ? 16 : 4;
      GatherL1Geometry hubs = plain;
      hubs.staged_bytes = 160 << 10;
      const double p0 = gather_l1_model(permuted, {}, plain).l2_share();
      const double p1 = gather_l1_model(permuted, {}, hubs).l2_share();
      l2[fmt::format("n{}", n)] = {{"plain", p0}, {"hubs_160k", p1}};
      l2_text += fmt::format(" {:>6.1f}% ({:>4.1f}%)", 100 * p0, 100 * p1);
    }
    fmt::print("{:<10} {:>10.1f} {:>12} {:>14.1f} {:>14.2f} {:>12.2f} {:>8.1f}% {:>5.1f}%{}\n", name, ms, s.bandwidth,
               s.mean_distance, s.lines_per_row, reuse, 100 * staged, 100 * saved, l2_text);
    nlohmann::json o = locality_json(s);
    o["window_reuse_32"] = reuse;
    o["staged_n32"] = {{"entries_share", staged}, {"b_reads_saved", saved}};
    o["spmm_l2_share_model"] = l2;
    o["order"] = name;
    o["cpu_ms"] = ms;
    rec["orders"].push_back(o);
    if (!a.permutation_path.empty() && &name == &a.methods.back()) {
      // The last method's permutation, one new index a line for each old vertex (new_of_old).
      std::string text;
      for (const int32_t k : p.new_of_old) text += fmt::format("{}\n", k);
      support::write_file_atomic(a.permutation_path, text);
      fmt::print("wrote {} ({} order: line v holds vertex v's new index)\n", a.permutation_path, name);
    }
  }
  tools::write_record(a.json_path, rec);
  return 0;
}

}  // namespace

Runner add_reorder(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto a = std::make_shared<ReorderArgs>();
  sub->add_option("matrix", a->matrix, "Matrix Market file (.mtx, .mtx.gz) or a generator string; square")->required();
  sub->add_option("--methods", a->methods, "Orders to compute (comma-separate): none, degree, rcm, community")
      ->delimiter(',')
      ->check(CLI::IsMember({"none", "degree", "rcm", "community"}));
  sub->add_option("--permutation", a->permutation_path,
                  "Write the last method's permutation (new index of each vertex, a line each)");
  sub->add_option("--json", a->json_path, "Write times and locality per order as JSON");
  return [a]() {
    const NamedMatrix m = load_matrix(a->matrix);  // InputError names the file and line
    if (m.csr.rows != m.csr.cols)
      throw UsageError(fmt::format("reorder: {} is {}x{}; a symmetric reordering needs a square matrix", m.name,
                                   m.csr.rows, m.csr.cols));
    // The orders and their statistics keep about a dozen arrays a vertex (measured: 93 bytes a row
    // for 1e8 empty rows): refused by name before the work rather than out of memory after it.
    require_host_bytes(96.0 * (double(m.csr.rows) + 1) + 24.0 * double(m.csr.nnz()), "reorder " + a->matrix);
    return run_reorder(*a, m);
  };
}

}  // namespace dbsparse::cli

// `dbsparse convert MATRIX`: converts to the DB format (or, with --format brp, to BRP-SpMM's
// format; with --format condensed, to SpMM's condensed TC windows) and reports its size against
// CSR (and CSR+CSC), and the conversion time. The DB format and the condensed windows convert on
// the CPU; BRP on the GPU when there is one (with its peak extra device memory), else on the CPU
// with a note. Needs no GPU.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "dbsparse/bfs.hpp"
#include "dbsparse/brp.hpp"
#include "dbsparse/brp_device.hpp"
#include "dbsparse/context.hpp"
#include "dbsparse/db_matrix.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/io.hpp"
#include "dbsparse/spmm.hpp"
#include "dbsparse/tc_condensed.hpp"
#include "support/atomic_file.hpp"
#include "tools/dbsparse/commands.hpp"
#include "tools/cli_checks.hpp"

namespace dbsparse::cli {
namespace {

struct ConvertArgs {
  std::string matrix;
  bool stats = false;
  DbThresholds th;
  std::string precision = "f32";
  std::string json_path;
  bool bfs = false, transpose = false;
  std::string format = "db";
  BrpParams brp;
  bool host = false;   // --format brp: csr_to_brp even when a GPU is there
  bool check = false;  // --format brp on the GPU: compare with csr_to_brp, bitwise
};

// --json's file: the report's numbers, indented; a path that cannot be written (or a write that
// fails, /dev/full) is an InputError naming it.
void write_json(const std::string& path, const nlohmann::json& j) {
  support::write_file_atomic(path, j.dump(2) + "\n");
  fmt::print("wrote {}\n", path);
}

// The BFS plan's storage for this graph (bfs.hpp): both views or one, against CSR.
int run_convert_bfs(const ConvertArgs& a, const NamedMatrix& m) {
  if (m.csr.rows != m.csr.cols)
    throw UsageError(fmt::format("convert --bfs: {} is {}x{}; a graph's adjacency matrix is square", m.name, m.csr.rows,
                                 m.csr.cols));
  const auto t0 = std::chrono::steady_clock::now();
  const PatternGraph g = pattern_of(m.csr, a.transpose);
  BfsStats s = bfs_storage(g);
  s.convert_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("{}: ", m.name);
  fmt::print("{}", s.to_text());
  if (!a.json_path.empty()) {
    nlohmann::json j = {
        {"tool", "dbsparse convert --bfs"}, {"version", DBSPARSE_VERSION},    {"matrix", m.name},
        {"vertices", s.vertices},           {"entries", s.entries},           {"symmetric", s.symmetric},
        {"bytes_format", s.bytes_format},   {"bytes_device", s.bytes_device}, {"bytes_csr", s.bytes_csr},
        {"task_capacity", s.task_capacity}, {"convert_ms", s.convert_ms}};
    write_json(a.json_path, j);
  }
  return 0;
}

template <class T>
bool same_brp(const BrpMatrix<T>& x, const BrpMatrix<T>& y) {
  auto bits = [](const auto& u, const auto& v) {
    return u.size() == v.size() && (u.empty() || std::memcmp(u.data(), v.data(), u.size() * sizeof(u[0])) == 0);
  };
  return x.rows == y.rows && x.cols == y.cols && x.value_stride == y.value_stride && x.local_stride == y.local_stride &&
         bits(x.group_window_id, y.group_window_id) && bits(x.old_col_id, y.old_col_id) &&
         bits(x.local_id, y.local_id) && bits(x.values, y.values) && bits(x.res_rows_id, y.res_rows_id) &&
         bits(x.res_row_offset, y.res_row_offset) && bits(x.res_col_id, y.res_col_id) &&
         bits(x.res_values, y.res_values);
}

// SpMM's condensed TC windows (tc_condensed.hpp) at g: groups, the tiles' fill and what SpMM's
// auto path makes of it, bytes against CSR, the host conversion's time. f32 tiles (tf32 words):
// --precision f64 is read as f32, as plan_spmm takes it.
int run_convert_condensed(const ConvertArgs& a, const NamedMatrix& m) {
  const CsrMatrix<float> csr = m.csr.cast<float>();
  const auto t0 = std::chrono::steady_clock::now();
  const CondensedTc c = csr_to_condensed(csr, a.brp.g);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const int64_t bytes_csr = c.csr_bytes();
  const double th = SpmmConfig{}.min_condensed_fill;
  const int64_t windows = static_cast<int64_t>(c.win_group.size()) - 1;
  fmt::print(
      "{} (f32 tiles): {}x{}, {} nnz -> condensed TC windows, g = {}: {} windows, {} groups of {} tiles of 16 x 8 "
      "({} used), fill {:.3f} (stored entries / tile capacity); {:.2f} MB, CSR {:.2f} MB ({:.3f}x); "
      "conversion on the host {:.1f} ms\n",
      m.name, csr.rows, csr.cols, c.nnz, c.g, windows, c.groups(), c.g, c.used_blocks, c.fill(), c.device_bytes() / 1e6,
      bytes_csr / 1e6, bytes_csr ? double(c.device_bytes()) / double(bytes_csr) : 0.0, ms);
  fmt::print("SpMM auto with the default config: {} (fill {:.3f} {} min_condensed_fill {})\n",
             c.fill() >= th && c.nnz > 0 ? "condensed TC windows" : "not the condensed windows", c.fill(),
             c.fill() >= th ? ">=" : "<", th);
  if (!a.json_path.empty()) {
    const nlohmann::json j = {{"tool", "dbsparse convert --format condensed"},
                              {"version", DBSPARSE_VERSION},
                              {"matrix", m.name},
                              {"rows", csr.rows},
                              {"cols", csr.cols},
                              {"nnz", c.nnz},
                              {"g", c.g},
                              {"windows", windows},
                              {"groups", c.groups()},
                              {"used_blocks", c.used_blocks},
                              {"fill", c.fill()},
                              {"bytes", {{"total", c.device_bytes()}, {"csr", bytes_csr}}},
                              {"ratio_condensed_csr", bytes_csr ? double(c.device_bytes()) / double(bytes_csr) : 0.0},
                              {"converted_on", "host"},
                              {"convert_ms", ms}};
    write_json(a.json_path, j);
  }
  return 0;
}

// BRP-SpMM's format (brp.hpp): the TC / residual split for (f, g), bytes against CSR, and the
// conversion's time (and on the GPU its peak extra memory against 4 * nnz * (4 + sizeof(T))).
template <class T>
int run_convert_brp(const ConvertArgs& a, const NamedMatrix& m) {
  const CsrMatrix<T> csr = m.csr.cast<T>();
  BrpStats s;
  std::string why;
  std::string check;  // --check's verdict on the GPU
  const bool device = !a.host && cuda_device_available(&why);
  if (device) {
    Context ctx;
    const BrpDeviceMatrix<T> d = csr_to_brp_device(ctx, csr, a.brp);
    s = brp_stats(d);
    if (a.check) check = same_brp(d.download(), csr_to_brp(csr, a.brp)) ? "equal" : "DIFFERENT";
  } else {
    const auto t0 = std::chrono::steady_clock::now();
    const BrpMatrix<T> brp = csr_to_brp(csr, a.brp);
    const auto t1 = std::chrono::steady_clock::now();
    s = brp_stats(brp);
    s.convert_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    if (!a.host) fmt::print("note: no CUDA device ({}): converted on the host, no device memory figures\n", why);
    if (a.check)
      fmt::print("note: --check compares the GPU conversion with the host's; there is none to compare here\n");
  }
  const std::string where =
      s.on_device ? fmt::format(
                        "conversion on the GPU {:.2f} ms, peak extra device memory {} B ({:.1f} B/nnz; bound "
                        "4 * nnz * (4 + {}) = {} B)",
                        s.convert_ms, s.peak_extra_bytes, s.nnz ? double(s.peak_extra_bytes) / double(s.nnz) : 0.0,
                        s.value_bytes, s.peak_bound_bytes())
                  : fmt::format("conversion on the host {:.1f} ms", s.convert_ms);
  fmt::print(
      "{} ({}): {}x{}, {} nnz -> BRP f = {}, g = {}: {} groups ({:.1f}% of nnz) + {} residual in {} rows; "
      "BRP {:.2f} MB, CSR {:.2f} MB ({:.3f}x); {}\n",
      m.name, a.precision, csr.rows, csr.cols, s.nnz, s.f, s.g, s.groups, 100.0 * s.tc_share, s.residual_nnz,
      s.residual_rows, s.bytes / 1e6, s.bytes_csr / 1e6, s.bytes_csr ? double(s.bytes) / double(s.bytes_csr) : 0.0,
      where);
  if (!check.empty()) fmt::print("check: the GPU's arrays and csr_to_brp's are {}\n", check);
  if (a.stats) fmt::print("{}", s.to_text());
  if (!a.json_path.empty()) {
    nlohmann::json j = {
        {"tool", "dbsparse convert --format brp"},
        {"version", DBSPARSE_VERSION},
        {"matrix", m.name},
        {"precision", a.precision},
        {"rows", csr.rows},
        {"cols", csr.cols},
        {"f", s.f},
        {"g", s.g},
        {"nnz", s.nnz},
        {"tc_nnz", s.tc_nnz},
        {"residual_nnz", s.residual_nnz},
        {"tc_share", s.tc_share},
        {"groups", s.groups},
        {"windows", s.windows},
        {"tc_windows", s.tc_windows},
        {"residual_rows", s.residual_rows},
        {"padding_bytes", s.padding_bytes},
        {"bytes", {{"tc", s.bytes_tc}, {"residual", s.bytes_residual}, {"total", s.bytes}, {"csr", s.bytes_csr}}},
        {"ratio_brp_csr", s.bytes_csr ? double(s.bytes) / double(s.bytes_csr) : 0.0},
        {"converted_on", s.on_device ? "device" : "host"},
        {"convert_ms", s.convert_ms}};
    // Null on the host: no device memory was used, so there is no figure to report.
    j["peak_extra_bytes"] = s.on_device ? nlohmann::json(s.peak_extra_bytes) : nlohmann::json(nullptr);
    j["peak_bound_bytes"] = s.peak_bound_bytes();
    if (!check.empty()) j["check_equal_to_host"] = check == "equal";
    write_json(a.json_path, j);
  }
  return check == "DIFFERENT" ? 1 : 0;
}

nlohmann::json stats_json(const DbStats& s) {
  nlohmann::json blocks, nnz;
  for (int t = 0; t < kBlockTypes; ++t) {
    blocks[to_string(BlockType(t))] = s.blocks_by_type[t];
    nnz[to_string(BlockType(t))] = s.nnz_by_type[t];
  }
  return {{"blocks_by_type", blocks},
          {"nnz_by_type", nnz},
          {"residual_nnz", s.residual_nnz},
          {"bytes",
           {{"high_level", s.bytes_high_level},
            {"meta", s.bytes_meta},
            {"values", s.bytes_values},
            {"aux", s.bytes_aux},
            {"residual", s.bytes_residual},
            {"total", s.bytes_total},
            {"device_format", s.bytes_device_format},
            {"device_segments", s.bytes_segments},
            {"device_workspace", s.bytes_workspace},
            {"device_total", s.bytes_device},
            {"csr", s.bytes_csr},
            {"csr_csc", s.bytes_csr_csc}}},
          {"ratio_db_csr", double(s.bytes_total) / double(s.bytes_csr)},
          {"ratio_db_csr_csc", double(s.bytes_total) / double(s.bytes_csr_csc)},
          {"ratio_device_csr", double(s.bytes_device) / double(s.bytes_csr)},
          {"ratio_device_csr_csc", double(s.bytes_device) / double(s.bytes_csr_csc)},
          {"convert_ms", s.convert_ms}};
}

template <class T>
int run_convert(const ConvertArgs& a, const NamedMatrix& m) {
  CsrMatrix<T> csr = m.csr.cast<T>();
  auto t0 = std::chrono::steady_clock::now();
  DbMatrix<T> db = csr_to_db(csr, a.th);
  auto t1 = std::chrono::steady_clock::now();
  DbStats s = db_stats(db);
  s.convert_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  const double ratio = double(s.bytes_device) / double(s.bytes_csr_csc);
  fmt::print(
      "{} ({}): {}x{}, {} nnz -> {} blocks + {} residual; DB {:.2f} MB (device {:.2f} MB), CSR {:.2f} MB, "
      "CSR+CSC {:.2f} MB (device / (CSR+CSC) = {:.3f}, {:.1f}% {}); conversion {:.1f} ms\n",
      m.name, a.precision, db.rows, db.cols, db.nnz, db.blocks(), db.residual_nnz(), s.bytes_total / 1e6,
      s.bytes_device / 1e6, s.bytes_csr / 1e6, s.bytes_csr_csc / 1e6, ratio, 100.0 * std::abs(1.0 - ratio),
      ratio <= 1.0 ? "saved" : "larger", s.convert_ms);
  if (a.stats) fmt::print("{}", s.to_text());
  if (!a.json_path.empty()) {
    nlohmann::json j = stats_json(s);
    j["tool"] = "dbsparse convert";
    j["version"] = DBSPARSE_VERSION;
    j["matrix"] = m.name;
    j["precision"] = a.precision;
    j["rows"] = db.rows;
    j["cols"] = db.cols;
    j["nnz"] = db.nnz;
    j["blocks"] = db.blocks();
    j["thresholds"] = {
        {"th0", a.th.th0}, {"th1", a.th.th1}, {"th2", a.th.th2}, {"residual_below", db.thresholds.residual_below}};
    write_json(a.json_path, j);
  }
  return 0;
}

}  // namespace

Runner add_convert(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto a = std::make_shared<ConvertArgs>();
  sub->add_option("matrix", a->matrix, "Matrix Market file or generator string, e.g. stencil3d:n=80,points=27")
      ->required();
  sub->add_flag("--stats", a->stats, "Print the full table: blocks and nnz by type, bytes by part");
  sub->add_option("--th0", a->th.th0, "Blocks with fewer nonzeros are COO")
      ->capture_default_str()
      ->check(finite_non_negative());
  sub->add_option("--th1", a->th.th1, "Blocks with more nonzeros are Dense")
      ->capture_default_str()
      ->check(finite_non_negative());
  sub->add_option("--th2", a->th.th2, "Skew ratio above which a block is ForceCSR / ForceCSC")
      ->capture_default_str()
      ->check(finite_non_negative());
  sub->add_option("--residual-below", a->th.residual_below,
                  "Blocks with fewer nonzeros go to the residual (0: none, 257: all)")
      ->capture_default_str()
      ->check(CLI::Range(0, 257));
  sub->add_option("--precision", a->precision, "Value type: f32 or f64")
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "f64"}));
  sub->add_option("--json", a->json_path, "Write the same numbers as JSON");
  sub->add_flag("--bfs", a->bfs,
                "Instead of the DB format: the storage of a BFS plan on this graph (adjacency views, masks, "
                "lists) against CSR");
  sub->add_flag("--transpose", a->transpose, "With --bfs: A(u,v) != 0 is an edge u -> v (default: v -> u, y = A x)");
  sub->add_option("--format", a->format,
                  "db: the DB format (SpMSpV); brp: BRP-SpMM's TC groups + residual rows; condensed: SpMM's "
                  "zero-padded TC windows (--g)")
      ->capture_default_str()
      ->check(CLI::IsMember({"db", "brp", "condensed"}));
  // No range check here: BrpParams' validation gives the allowed set in the error.
  auto* opt_f =
      sub->add_option("--f", a->brp.f, "With --format brp: nonzeros per slot (1, 2, 4, 8)")->capture_default_str();
  auto* opt_g = sub->add_option("--g", a->brp.g, "With --format brp or condensed: TC blocks per group (1, 2, 4, 8)")
                    ->capture_default_str();
  sub->add_flag("--host", a->host, "With --format brp: convert on the host (csr_to_brp) even when there is a GPU");
  sub->add_flag("--check", a->check,
                "With --format brp on the GPU: compare the arrays with csr_to_brp's, bitwise (exit 1 if not equal)");
  return [a, opt_f, opt_g]() {
    const bool brp_params = opt_f->count() > 0 || a->host || a->check;
    if (brp_params && a->format != "brp") throw UsageError("convert: --f, --host and --check need --format brp");
    if (opt_g->count() > 0 && a->format == "db") throw UsageError("convert: --g needs --format brp or condensed");
    if (a->bfs && a->format != "db")
      throw UsageError("convert: --bfs and --format " + a->format + " are two different reports; give one");
    if (a->format != "db") validate(a->brp);  // before loading: a bad --f / --g is reported at once
    // Legal (COO is tested first, so every block below th0 is COO), but rarely what was meant.
    if (a->th.th0 > a->th.th1 + 1)
      fmt::print(stderr,
                 "dbsparse: warning: --th0 {} is above --th1 {}: every block of fewer than {} nonzeros is COO, so "
                 "no block between {} and {} is Dense\n",
                 a->th.th0, a->th.th1, a->th.th0, a->th.th1 + 1, a->th.th0 - 1);
    NamedMatrix m = load_matrix(a->matrix);
    if (a->bfs) return run_convert_bfs(*a, m);
    if (a->format == "condensed") return run_convert_condensed(*a, m);
    if (a->format == "brp")
      return a->precision == "f64" ? run_convert_brp<double>(*a, m) : run_convert_brp<float>(*a, m);
    return a->precision == "f64" ? run_convert<double>(*a, m) : run_convert<float>(*a, m);
  };
}

}  // namespace dbsparse::cli

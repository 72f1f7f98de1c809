#pragma once
// `dbsparse bench OP --check-auto`: auto's time against every forced path's, timed in the same run,
// per (matrix, setting). Each op says which of its rows are auto and which are forced
// (OpDescriptor::auto_checks, in its own tools/ops/<op>_op.cpp); the pairing, the report and its
// summary here are the same for every op.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace dbsparse::tools {

// A pair at or above this ratio counts as auto having picked well (auto within 5% of the best).
inline constexpr double kAutoCheckWithin = 0.95;

struct AutoCheck {
  std::string op, matrix;
  std::string setting;      // what else the rows differ in (precision, N, x density); may be empty
  double auto_us = 0;       // per call (bfs: per search, geomean over the sources)
  std::string auto_choice;  // what auto took, where the bench records it (path, directions); else empty
  std::string best_name;    // the fastest forced path
  double best_us = 0;
  // best_us / auto_us: 1 where auto is as fast as the best forced path, < 1 where it is slower,
  // > 1 where it beat every one (an op that mixes paths per level or per call can).
  double ratio = 0;
  std::vector<std::pair<std::string, double>> forced;  // every forced path that ran: name, µs
};

// One timed row of a bench's results as the checks see them: an op flattens its JSON into these.
struct TimedRow {
  std::string matrix, setting, impl;
  double us = 0;       // <= 0: the row did not run (or was wrong) and takes no part
  std::string choice;  // auto's row: what it took
  // Timed again in check-auto's second look (first_pass_us in the JSON): where auto's row was,
  // only the forced rows that were too count, so that every time compared came from one
  // interleaved timing.
  bool rechecked = false;
};

// The rows grouped by (matrix, setting), in the order first seen: every group with a timed row
// named `auto_impl` and at least one timed row that `is_forced` accepts makes one check.
std::vector<AutoCheck> group_auto_checks(const std::string& op, const std::vector<TimedRow>& rows,
                                         const std::string& auto_impl,
                                         const std::function<bool(const std::string& impl)>& is_forced);

struct AutoCheckSummary {
  size_t pairs = 0;
  size_t within = 0;  // pairs with ratio >= kAutoCheckWithin
  double share_within = 0;
  double geomean = 0;                // of the ratios
  const AutoCheck* worst = nullptr;  // the lowest ratio; null when there are no pairs
};

// Worst first: ascending ratio, ties in (op, matrix, setting) order.
void sort_worst_first(std::vector<AutoCheck>& checks);
AutoCheckSummary summarize_auto_checks(const std::vector<AutoCheck>& checks);
// The table (in the order given: sort first) and the summary line, as printed.
std::string auto_check_report(const std::vector<AutoCheck>& checks);
// check-auto's second look (time_interleaved): which rows of one (matrix, setting) are timed again
// in turn: auto's first, then every forced row within `margin` of the fastest forced one (us[i]
// <= 0: did not run). Empty when auto or every forced row is missing. The second look covers
// the rows near the top, so a forced row that was lucky in the first pass cannot stay the best
// on that luck alone, and neither can auto.
inline constexpr double kRecheckMargin = 1.10;
std::vector<size_t> recheck_candidates(size_t auto_index, const std::vector<double>& us,
                                       const std::vector<bool>& forced, double margin = kRecheckMargin);

// {"pairs": [...], "summary": {...}}, pairs in the order given.
nlohmann::json auto_check_json(const std::vector<AutoCheck>& checks);

}  // namespace dbsparse::tools

#pragma once
// dbtune's per-(matrix, op) work (tune_op.cpp).
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dbsparse/context.hpp"
#include "dbsparse/tuning_db.hpp"

namespace dbsparse::tools {

struct TuneRow {
  std::string matrix, strategy;
  nlohmann::json best;
  double default_us = 0, best_us = 0;
  double paper_us = INFINITY;  // the paper's defaults (paper_params), where the op has them
  int measured = 0, recalled = 0, failed = 0;
  std::string why;         // when nothing ran: the last trial's status and detail (e.g. a skipped matrix)
  bool generated = false;  // the targets are stated over the generated suite
};

// Searches op's space for matrix m (its tuning-DB key fp: tools::db_key) within budget_s, storing every trial in db;
// confirms the best against the defaults and stores it with its speed-up. An op with buckets
// (OpDescriptor::buckets, e.g. spmm's N classes) is tuned and stored per bucket, the budget split
// between them: one row each.
std::vector<TuneRow> tune_op(Context& ctx, TuningDb& db, const std::string& op, const NamedMatrix& m,
                             const std::string& fp, double budget_s, const std::function<bool()>& stop,
                             const std::function<void(const std::string&)>& status);

// Each matrix's best config, its speed-up over the defaults, and the geometric means.
void print_table(const std::string& op, const std::vector<TuneRow>& rows);

struct OpDescriptor;

// Leave-one-out: each tuned matrix's config predicted from the others, timed against its best, over
// the matrices specs(op) names for each op.
void evaluate(Context& ctx, TuningDb& db, const std::function<std::vector<std::string>(const OpDescriptor&)>& specs,
              const std::vector<std::string>& ops, const std::function<bool()>& stop);

}  // namespace dbsparse::tools

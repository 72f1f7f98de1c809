// dbtune's per-(matrix, op) work: the search with its store in the tuning DB, the head-to-head
// confirmation, the result tables and the leave-one-out evaluation of prediction.
#include "tools/dbtune/tune_op.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "dbsparse/io.hpp"
#include "tools/bench/stats.hpp"
#include "tools/ops/registry.hpp"
#include "tuner/search.hpp"

namespace dbsparse::tools {

// The keys where `c` differs from the defaults, as compact JSON.
static std::string diff(const OpDescriptor& op, const nlohmann::json& c) {
  const auto& d = op.config.defaults;
  nlohmann::json out = nlohmann::json::object();
  for (auto it = c.begin(); it != c.end(); ++it)
    if (!d.contains(it.key()) || d[it.key()] != it.value()) out[it.key()] = it.value();
  return out.empty() ? "(defaults)" : out.dump();
}

void print_table(const std::string& op_name, const std::vector<TuneRow>& rows) {
  const auto& desc = find_op(op_name);
  const std::string& op = desc.name;
  const bool paper = !desc.paper.empty();
  const std::string& what = desc.objective_doc;
  fmt::print("\n{} ({}): best config per matrix\n{:<36} {:>10} {:>10} {:>8}{} {:>6}  {}\n", op, what, "matrix",
             "default us", "best us", "speedup", paper ? fmt::format(" {:>9} {:>8}", "paper us", "vs paper") : "",
             "trials", "best config (vs defaults)");
  std::vector<double> all, generated, over_paper, generated_over_paper;
  for (const auto& r : rows) {
    if (!(r.best_us > 0) || !(r.default_us > 0) || !std::isfinite(r.default_us)) {
      fmt::print("{:<36} no valid measurement ({} trial(s) did not run{})\n", r.matrix.substr(0, 36), r.failed,
                 r.why.empty() ? "" : ": " + r.why);
      continue;
    }
    const double s = r.default_us / r.best_us, sp = r.paper_us / r.best_us;
    all.push_back(s);
    if (r.generated) generated.push_back(s);
    std::string paper_cols;
    if (paper && std::isfinite(r.paper_us) && r.paper_us > 0) {
      paper_cols = fmt::format(" {:>9.1f} {:>7.2f}x", r.paper_us, sp);
      over_paper.push_back(sp);
      if (r.generated) generated_over_paper.push_back(sp);
    } else if (paper) {
      paper_cols = fmt::format(" {:>9} {:>8}", "-", "-");
    }
    fmt::print("{:<36} {:>10.1f} {:>10.1f} {:>7.2f}x{} {:>6}  {}\n", r.matrix.substr(0, 36), r.default_us, r.best_us, s,
               paper_cols, r.measured + r.recalled, diff(desc, r.best));
  }
  if (!all.empty())
    fmt::print("{}: geometric-mean speed-up over the defaults {:.3f}x over {} matrices\n", op, geomean(all),
               all.size());
  if (!generated.empty())
    fmt::print("{}: over the {} generated matrices {:.3f}x\n", op, generated.size(), geomean(generated));
  if (!over_paper.empty())
    fmt::print("{}: geometric-mean speed-up over the paper's defaults {} {:.3f}x over {} matrices{}\n", op,
               desc.paper.dump(), geomean(over_paper), over_paper.size(),
               generated_over_paper.empty() ? ""
                                            : fmt::format(", {:.3f}x over the {} generated",
                                                          geomean(generated_over_paper), generated_over_paper.size()));
}

// The configs measured in turn, twice each, every measurement stored as a trial tagged `tag`; the
// best time of each (infinity when it never ran). Used where a stored time would be a minimum over
// noisy runs and flatter one side.
static std::vector<double> head_to_head(const tuner::Objective& objective, TuningDb& db, const Trial& where,
                                        const std::vector<nlohmann::json>& configs, const char* tag,
                                        const std::function<bool()>& stop) {
  std::vector<double> best(configs.size(), INFINITY);
  for (int round = 0; round < 2 && !stop(); ++round)
    for (size_t i = 0; i < configs.size(); ++i) {
      auto t = objective(configs[i], 24);
      db.add_trial(Trial{where.device_fp, where.matrix_fp, where.op, where.bucket, configs[i], t.status, t.time_us,
                         t.detail + tag});
      if (t.status == TrialStatus::Ok) best[i] = std::min(best[i], t.time_us);
    }
  return best;
}

namespace {

// The buckets an op stores configs under: its own (spmm: one per N class), else the one bucket "".
std::vector<std::string> buckets_of(const OpDescriptor& d) {
  return d.buckets.empty() ? std::vector<std::string>{""} : d.buckets;
}

std::string row_name(const std::string& matrix, const std::string& bucket) {
  return bucket.empty() ? matrix : fmt::format("{} [{}]", matrix, bucket);
}

TuneRow tune_bucket(Context& ctx, TuningDb& db, const OpDescriptor& desc, const NamedMatrix& m, const std::string& fp,
                    const ObjectiveOptions& oo, double budget_s, const std::function<bool()>& stop,
                    const std::function<void(const std::string&)>& status) {
  const std::string dev = ctx.device().record().fingerprint;
  const std::string& op = desc.name;
  const std::string& bucket = oo.bucket;
  const auto& space = desc.space;
  auto objective = desc.objective(ctx, m, oo);
  std::map<std::string, tuner::Measurement> stored;  // the latest trial per config
  for (const auto& t : db.trials(dev, fp, op))
    if (t.bucket == bucket) stored[space.complete(t.params).dump()] = {t.status, t.time_us, t.detail};
  tuner::Recall recall = [&](const nlohmann::json& c) -> std::optional<tuner::Measurement> {
    auto it = stored.find(c.dump());
    if (it == stored.end()) return std::nullopt;
    return it->second;
  };
  int k = 0;
  tuner::Record record = [&](const nlohmann::json& c, const tuner::Measurement& r) {
    db.add_trial(Trial{dev, fp, op, bucket, c, r.status, r.time_us, r.detail});
    status(fmt::format("{}trial {}", bucket.empty() ? "" : bucket + " ", ++k));
  };
  tuner::SearchOptions opt;
  opt.budget_s = budget_s;
  opt.stop = stop;
  auto r = tuner::search(space, *objective, recall, record, opt);
  TuneRow row{.matrix = row_name(m.name, bucket),
              .strategy = r.strategy,
              .best = r.best,
              .default_us = r.default_us,
              .best_us = r.best_us,
              .measured = r.measured,
              .recalled = r.recalled,
              .failed = r.failed};
  if (!std::isfinite(r.best_us) || !(r.best_us > 0) || !std::isfinite(r.default_us)) {
    const auto trials = db.trials(dev, fp, op);
    for (auto it = trials.rbegin(); it != trials.rend(); ++it)
      if (it->bucket == bucket && it->status != TrialStatus::Ok) {
        row.why = fmt::format("{}, {}", to_string(it->status), it->detail);
        break;
      }
    return row;
  }
  // The search's best is the minimum over many noisy measurements: confirm it against the defaults
  // head to head (alternating, more samples) before it becomes the config, and report those times.
  const auto defaults = space.complete(nlohmann::json::object());
  std::vector<nlohmann::json> contenders{defaults};
  if (r.best != defaults) contenders.push_back(r.best);
  const auto& paper = desc.paper;
  if (!paper.empty()) contenders.push_back(space.complete(paper));
  const auto t = contenders.size() > 1
                     ? head_to_head(*objective, db, Trial{dev, fp, op, bucket}, contenders, " (confirm)", stop)
                     : std::vector<double>{INFINITY};
  const double def_us = t[0], best_us = r.best != defaults ? t[1] : INFINITY;
  if (!paper.empty()) row.paper_us = t.back();
  if (r.best != defaults && !std::isfinite(best_us) && stop()) return row;  // interrupted: keep what is stored
  if (r.best == defaults || !(best_us < def_us)) {
    row.best = defaults;
    row.default_us = row.best_us = std::isfinite(def_us) ? def_us : r.default_us;
  } else {
    row.default_us = def_us;
    row.best_us = best_us;
  }
  db.set_best(dev, fp, op, bucket, row.best, row.best_us, row.default_us / row.best_us);
  return row;
}

}  // namespace

std::vector<TuneRow> tune_op(Context& ctx, TuningDb& db, const std::string& op_name, const NamedMatrix& m,
                             const std::string& fp, double budget_s, const std::function<bool()>& stop,
                             const std::function<void(const std::string&)>& status) {
  const auto& desc = find_op(op_name);
  const auto buckets = buckets_of(desc);
  std::vector<TuneRow> rows;
  ObjectiveOptions oo;
  try {
    if (desc.objective_state) oo.state = desc.objective_state(ctx, m);
  } catch (const Error& e) {  // the matrix cannot be set up for this op: its rows say why, the run goes on
    for (const auto& b : buckets) rows.push_back(TuneRow{.matrix = row_name(m.name, b), .why = e.what()});
    return rows;
  }
  for (const auto& b : buckets) {
    if (stop()) break;
    oo.bucket = b;
    rows.push_back(tune_bucket(ctx, db, desc, m, fp, oo, budget_s / static_cast<double>(buckets.size()), stop, status));
  }
  return rows;
}

// Leave-one-out: each tuned matrix's config predicted from the others, measured now against its
// tuned config, back to back.
void evaluate(Context& ctx, TuningDb& db, const std::function<std::vector<std::string>(const OpDescriptor&)>& specs,
              const std::vector<std::string>& ops, const std::function<bool()>& stop) {
  const std::string dev = ctx.device().record().fingerprint;
  for (const auto& op : ops) {
    const auto& desc = find_op(op);
    const auto& space = desc.space;
    fmt::print("\n{}: leave-one-out prediction\n{:<36} {:<24} {:>10} {:>12} {:>8}\n", op, "matrix", "nearest",
               "best us", "predicted us", "ratio");
    std::vector<double> ratios;
    double worst = 1;
    for (const auto& spec : specs(desc)) {
      if (stop()) return;
      NamedMatrix m = load_matrix(spec);
      const std::string fp = db_key(desc, m);
      auto rec = db.find_matrix(fp);
      if (!rec) continue;
      ObjectiveOptions oo;
      for (const auto& bucket : buckets_of(desc)) {
        auto tuned = db.best(dev, fp, op, bucket);
        if (!tuned) continue;  // not tuned on this device
        auto p = db.predict(dev, desc.config, bucket, rec->features, fp);
        if (!p) continue;
        // Both configs measured now, head to head (alternating, best of two): the stored times of
        // the search are minima over noisy runs and would flatter the tuned config.
        const auto best_config = space.complete(*tuned), config = space.complete(p->params);
        if (desc.objective_state && !oo.state) oo.state = desc.objective_state(ctx, m);  // once, for every bucket
        oo.bucket = bucket;
        auto objective = desc.objective(ctx, m, oo);
        const auto t =
            head_to_head(*objective, db, Trial{dev, fp, op, bucket}, {best_config, config}, " (evaluate)", stop);
        const double best_us = t[0], pred_us = t[1];
        if (!std::isfinite(pred_us) || !std::isfinite(best_us)) continue;
        const double ratio = best_us / pred_us;  // 1: the prediction is as fast as the best
        ratios.push_back(ratio);
        worst = std::min(worst, ratio);
        const std::string from = p->too_far ? fmt::format("defaults ({:.1f} away)", p->distance) : p->neighbour;
        fmt::print("{:<36} {:<24} {:>10.1f} {:>12.1f} {:>7.1f}%\n", row_name(m.name, bucket).substr(0, 36),
                   from.substr(0, 24), best_us, pred_us, 100 * ratio);
      }
    }
    if (!ratios.empty())
      fmt::print("{}: predicted configs reach {:.1f}% of the best config's speed (geomean), worst {:.1f}%, over {}\n",
                 op, 100 * geomean(ratios), 100 * worst, ratios.size());
  }
}

}  // namespace dbsparse::tools

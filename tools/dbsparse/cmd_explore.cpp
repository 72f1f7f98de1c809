// `dbsparse explore A --op spmspv --param th3 --range 0.0001:0.5 --log --density 0.01`: times a
// sweep of one parameter with the others held at their tuned or default values, prints a table,
// writes an SVG plot (time against the parameter, default and tuned values marked) and stores
// every point as a trial (bucket "explore", or "explore d=<density>", so the tuner's own resume
// never mistakes them for its measurements).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dbsparse/dbsparse.hpp"
#include "support/atomic_file.hpp"
#include "tools/dbsparse/commands.hpp"
#include "tools/ops/registry.hpp"
#include "tools/cli_checks.hpp"

namespace dbsparse::cli {
namespace {

// A swept value and where it sits on the plot's x axis: the value itself for a number, its index
// for a choice (spmv's strategy), which has no order of its own.
struct Point {
  nlohmann::json value;
  double x;
  tuner::Measurement m;
};

std::string value_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : fmt::format("{:.5g}", v.get<double>());
}

std::string svg_plot(const std::string& title, const std::string& param, bool log_x, const std::vector<Point>& pts,
                     std::optional<double> default_x, std::optional<double> tuned_x) {
  const double W = 640, H = 400, L = 70, R = 20, T = 40, B = 50;
  double x0 = INFINITY, x1 = -INFINITY, y1 = 0;
  auto tx = [&](double v) { return log_x ? std::log10(v) : v; };
  for (const auto& p : pts) {
    x0 = std::min(x0, tx(p.x)), x1 = std::max(x1, tx(p.x));
    if (p.m.status == TrialStatus::Ok) y1 = std::max(y1, p.m.time_us);
  }
  if (!(x1 > x0)) x1 = x0 + 1;
  if (!(y1 > 0)) y1 = 1;
  y1 *= 1.1;
  auto X = [&](double v) { return L + (tx(v) - x0) / (x1 - x0) * (W - L - R); };
  auto Y = [&](double t) { return H - B - t / y1 * (H - T - B); };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"20\" font-size=\"14\">{3}</text>\n"
      "<line x1=\"{2}\" y1=\"{4}\" x2=\"{5}\" y2=\"{4}\" stroke=\"black\"/>\n"
      "<line x1=\"{2}\" y1=\"{6}\" x2=\"{2}\" y2=\"{4}\" stroke=\"black\"/>\n"
      "<text x=\"{7}\" y=\"{8}\" text-anchor=\"middle\">{9}{10}</text>\n"
      "<text x=\"15\" y=\"{11}\" transform=\"rotate(-90 15 {11})\" text-anchor=\"middle\">time (us)</text>\n",
      W, H, L, title, H - B, W - R, T, (L + W - R) / 2, H - 12, param, log_x ? " (log scale)" : "", (T + H - B) / 2);
  for (int i = 0; i <= 4; ++i) {
    const double t = y1 * i / 4;
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.1f}</text>\n", L - 6, Y(t) + 4, t);
  }
  for (const auto& p : pts)
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", X(p.x), H - B + 16,
                     p.value.is_string() ? p.value.get<std::string>() : fmt::format("{:.4g}", p.x));
  std::string line;
  for (const auto& p : pts)
    if (p.m.status == TrialStatus::Ok) line += fmt::format("{:.1f},{:.1f} ", X(p.x), Y(p.m.time_us));
  s += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\"/>\n", line);
  for (const auto& p : pts)
    if (p.m.status == TrialStatus::Ok)
      s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"#1f77b4\"/>\n", X(p.x), Y(p.m.time_us));
  auto mark = [&](std::optional<double> v, const char* color, const char* label) {
    if (!v || !(*v > 0 || !log_x)) return;
    s += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"{3}\" stroke-dasharray=\"5,4\"/>\n"
        "<text x=\"{4:.1f}\" y=\"{5}\" fill=\"{3}\">{6}</text>\n",
        X(*v), T, H - B, color, X(*v) + 4, T + 12, label);
  };
  mark(default_x, "#d62728", "default");
  mark(tuned_x, "#2ca02c", "tuned");
  return s + "</svg>\n";
}

}  // namespace

Runner add_explore(CLI::App& sub) {
  struct Args {
    std::string matrix, op = "spmspv", param, range, svg, db_path = TuningDb::default_path();
    std::vector<std::string> values;
    bool log = false;
    int points = 9, samples = 9;
    double density = 0;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("matrix", a->matrix, "Matrix Market file or generator string")->required();
  sub.add_option("--op", a->op, "The op (default spmspv)")->check(CLI::IsMember(tools::op_names()));
  sub.add_option("--param", a->param, "The parameter to sweep, e.g. th3 or strategy (see the op's search space)")
      ->required();
  sub.add_option("--range", a->range, "LO:HI, swept in --points steps (numeric parameters)");
  sub.add_option("--values", a->values, "Explicit values instead of --range, comma-separated (numbers or names)")
      ->delimiter(',');
  sub.add_flag("--log", a->log, "Space the --range points logarithmically");
  sub.add_option("--points", a->points, "Points in --range (default 9)")->check(CLI::Range(2, 200));
  sub.add_option("--density", a->density, "ops with a sparse x: its density (default: the tuner's densities, geomean)")
      ->check(finite_range(0.0, 1.0));
  sub.add_option("--samples", a->samples, "Timed samples per point")->check(CLI::Range(1, 1000));
  sub.add_option("--svg", a->svg, "Plot file (default explore-<op>-<param>.svg)");
  sub.add_option("--db", a->db_path, "Tuning DB the points are stored in");
  return [a]() {
    const auto& op = tools::find_op(a->op);
    const auto& space = op.space;
    if (!space.defaults.contains(a->param))
      throw UsageError(fmt::format("explore: '{}' is not a parameter of {} (parameters: {})", a->param, a->op,
                                   space.defaults.dump()));
    const nlohmann::json& default_value = space.defaults[a->param];
    const bool numeric = default_value.is_number();
    const bool integer = default_value.is_number_integer();
    // The values, all checked against the op's config before any GPU work: a typo is a usage error.
    std::vector<nlohmann::json> values;
    for (const auto& text : a->values) {
      if (!numeric) {
        values.emplace_back(text);
        continue;
      }
      try {
        size_t used = 0;
        const double v = std::stod(text, &used);
        if (used != text.size()) throw std::invalid_argument(text);
        values.push_back(integer ? nlohmann::json(std::llround(v)) : nlohmann::json(v));
      } catch (const std::exception&) {
        throw UsageError(fmt::format("explore: --values '{}' is not a number, and {} is numeric", text, a->param));
      }
    }
    if (values.empty() && !a->range.empty()) {
      if (!numeric)
        throw UsageError(fmt::format("explore: {} takes names, not a range: give --values (its default is {})",
                                     a->param, default_value.dump()));
      const auto colon = a->range.find(':');
      if (colon == std::string::npos) throw UsageError("explore: give --range LO:HI or --values a,b,c");
      double lo = 0, hi = 0;
      try {
        lo = std::stod(a->range.substr(0, colon)), hi = std::stod(a->range.substr(colon + 1));
      } catch (const std::exception&) {
        throw UsageError(fmt::format("explore: --range '{}' is not LO:HI with two numbers", a->range));
      }
      if (!(hi > lo) || (a->log && !(lo > 0)))
        throw UsageError(fmt::format("explore: --range needs LO < HI{}", a->log ? " and LO > 0 with --log" : ""));
      values = tuner::ParamSpec::range(a->param, lo, hi, a->points, a->log, integer, "").values;
    }
    if (values.empty()) {  // neither: the tuner's own candidates for the parameter
      const tuner::ParamSpec* spec = space.find(a->param);
      if (!spec) throw UsageError(fmt::format("explore: give --range LO:HI or --values for {}", a->param));
      values = spec->values;
    }
    if (!numeric && a->log) throw UsageError(fmt::format("explore: --log needs a numeric parameter, not {}", a->param));
    if (space.validate)  // throws naming the key
      for (const auto& v : values) space.validate(space.complete({{a->param, v}}));
    // Where each value sits on the plot: itself, or its place in the list for names.
    auto x_of = [&](const nlohmann::json& v) -> std::optional<double> {
      if (numeric) return v.get<double>();
      const auto it = std::find(values.begin(), values.end(), v);
      return it == values.end() ? std::nullopt : std::optional<double>(double(it - values.begin()));
    };

    NamedMatrix m = load_matrix(a->matrix);
    Context ctx;  // throws NoDeviceError with the reason when there is no GPU
    const std::string dev = ctx.device().record().fingerprint, fp = tools::db_key(op, m);
    auto db = TuningDb::open(a->db_path);
    db->upsert_device(ctx.device().record());
    db->upsert_matrix(tools::db_record(op, m));
    const Config base = db->lookup(dev, fp, op.config);
    std::optional<nlohmann::json> tuned;
    if (base.source == ConfigSource::Tuned) tuned = base.params[a->param];
    const std::vector<double> densities = a->density > 0 ? std::vector<double>{a->density} : std::vector<double>{};
    auto objective = op.objective(ctx, m, tools::ObjectiveOptions{densities});
    const std::string bucket = a->density > 0 ? fmt::format("explore d={}", a->density) : "explore";
    fmt::print("{} on {}: sweeping {} of {} ({} held at their {} values)\n{:>12} {:>12}  {}\n", m.name,
               ctx.device().name, a->param, a->op, base.params.size() - 1, to_string(base.source), a->param, "time us",
               "status");
    std::vector<Point> pts;
    for (const auto& v : values) {
      nlohmann::json c = base.params;
      c[a->param] = v;
      std::string why;
      tuner::Measurement r;
      if (!space.can_implement(c, &why))
        r = {TrialStatus::Skipped, 0, "breaks " + why};
      else
        r = (*objective)(c, a->samples);
      db->add_trial(Trial{dev, fp, a->op, bucket, c, r.status, r.time_us, r.detail});
      pts.push_back({v, *x_of(v), r});
      fmt::print("{:>12} {:>12}  {}{}{}\n", value_text(v),
                 r.status == TrialStatus::Ok ? fmt::format("{:.1f}", r.time_us) : "-", to_string(r.status),
                 v == default_value ? "  <- default" : "", tuned && v == *tuned ? "  <- tuned" : "");
    }
    const std::string path = a->svg.empty() ? fmt::format("explore-{}-{}.svg", a->op, a->param) : a->svg;
    support::write_file_atomic(path, svg_plot(fmt::format("{}: {} on {}", a->op, m.name, ctx.device().name), a->param,
                                              a->log, pts, x_of(default_value), tuned ? x_of(*tuned) : std::nullopt));
    fmt::print("plot: {}; {} points stored as trials (bucket '{}') in {}\n", path, pts.size(), bucket, db->path());
    return 0;
  };
}

}  // namespace dbsparse::cli

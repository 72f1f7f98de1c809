#include "tools/bench/spgemm_apps_check.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>

#include "dbsparse/reference.hpp"
#include "tools/bench/random.hpp"
#include "support/atomic_file.hpp"

namespace dbsparse::tools {
namespace {

template <class T>
CsrMatrix<T> absolute(const CsrMatrix<T>& m) {
  CsrMatrix<T> out = m;
  for (auto& v : out.values) v = std::fabs(v);
  return out;
}

}  // namespace

template <class T>
SpgemmCheck check_product(const CsrMatrix<T>& c, const CsrMatrix<T>& a, const CsrMatrix<T>& b, double tolerance) {
  // compare_spgemm's `ours` is the reference here: its rows are sorted and the scale shares its structure.
  return compare_spgemm(reference::spgemm(a, b), c.template cast<double>(), reference::spgemm(absolute(a), absolute(b)),
                        tolerance);
}

template <class T>
SpgemmCheck check_contraction(const CsrMatrix<T>& c, const CsrMatrix<T>& g, std::span<const int32_t> labels, int32_t k,
                              double tolerance) {
  return compare_spgemm(contract_cpu(g, labels, k), c.template cast<double>(), contract_cpu(absolute(g), labels, k),
                        tolerance);
}

LabelCheck check_labels(std::span<const int32_t> got, std::span<const int32_t> want) {
  LabelCheck r;
  if (got.size() != want.size()) {
    r.differ = -1;
    r.note = fmt::format("{} labels against {}", got.size(), want.size());
    return r;
  }
  size_t first = 0;
  for (size_t v = 0; v < got.size(); ++v)
    if (got[v] != want[v] && r.differ++ == 0) first = v;
  r.ok = r.differ == 0;
  r.note = r.ok ? std::string("ok (labels equal)")
                : fmt::format("{} vertices labelled otherwise, the first {} ({} against {})", r.differ, first,
                              got[first], want[first]);
  return r;
}

std::vector<int32_t> random_labels(int32_t n, int32_t k, uint64_t seed) {
  if (k < 1) throw UsageError(fmt::format("random labels: k must be >= 1, got {}", k));
  Lcg rng{seed};
  std::vector<int32_t> out(static_cast<size_t>(std::max(n, 0)));
  for (auto& l : out) l = static_cast<int32_t>(rng.below(static_cast<uint32_t>(k)));
  return out;
}

template SpgemmCheck check_product(const CsrMatrix<float>&, const CsrMatrix<float>&, const CsrMatrix<float>&, double);
template SpgemmCheck check_product(const CsrMatrix<double>&, const CsrMatrix<double>&, const CsrMatrix<double>&,
                                   double);
template SpgemmCheck check_contraction(const CsrMatrix<float>&, const CsrMatrix<float>&, std::span<const int32_t>,
                                       int32_t, double);
template SpgemmCheck check_contraction(const CsrMatrix<double>&, const CsrMatrix<double>&, std::span<const int32_t>,
                                       int32_t, double);

bool wants_check(nlohmann::json& rec, bool no_check, std::string_view operand, int64_t nnz, int64_t limit,
                 std::string_view reference) {
  if (no_check) {
    rec["check"] = "skipped (--no-check)";
    return false;
  }
  if (nnz > limit) {
    rec["check"] = fmt::format("skipped (nnz({}) > {}: {} would be slow; not checked)", operand, limit, reference);
    return false;
  }
  return true;
}

int record_check(nlohmann::json& rec, const SpgemmCheck& chk) {
  rec["check"] = chk.ok ? "ok" : "MISMATCH";
  rec["check_note"] = chk.note;
  rec["check_max_error"] = chk.max_error;
  return chk.ok ? 0 : 4;
}

void print_check(const nlohmann::json& rec, std::string_view against) {
  fmt::print("  check against {}: {}{}\n", against, rec["check"].get<std::string>(),
             rec.contains("check_note") ? " - " + rec["check_note"].get<std::string>() : std::string());
}

void write_record(const std::string& json_path, const nlohmann::json& rec) {
  if (json_path.empty()) return;
  support::write_file_atomic(json_path, rec.dump(2) + "\n");  // an unwritable path is an error, not exit 0
  fmt::print("wrote {}\n", json_path);
}

}  // namespace dbsparse::tools

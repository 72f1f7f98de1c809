#pragma once
// The applications' GPU results (spgemm_apps.hpp) against their CPU references, for `dbsparse
// square`, `dbsparse contract`, `dbsparse mcl` and the gpu tests; and seeded random labels.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dbsparse/spgemm_apps.hpp"
#include "tools/bench/bench_spgemm.hpp"

namespace dbsparse::tools {

// C = A·B from the GPU against reference::spgemm (a dense accumulator in double): the same
// structure exactly, each value within `tolerance` of sum |a||b| of its entry (spgemm_tolerance).
template <class T>
SpgemmCheck check_product(const CsrMatrix<T>& c, const CsrMatrix<T>& a, const CsrMatrix<T>& b, double tolerance);

// contract()'s C against contract_cpu: the same structure exactly, each value within `tolerance`
// of the sum of |G(i, j)| over the terms of its entry (contract_cpu on |G|).
template <class T>
SpgemmCheck check_contraction(const CsrMatrix<T>& c, const CsrMatrix<T>& g, std::span<const int32_t> labels, int32_t k,
                              double tolerance);

struct LabelCheck {
  bool ok = false;
  int64_t differ = 0;  // vertices labelled otherwise; -1 when the two have different lengths
  std::string note;    // "ok (labels equal)", or how many differ and the first
};
// Two clusterings' labels, vertex for vertex (mcl_labels numbers clusters by their smallest vertex,
// so equal clusterings have equal labels).
LabelCheck check_labels(std::span<const int32_t> got, std::span<const int32_t> want);

// n labels drawn uniformly from [0, k) (k >= 1) by the tools' seeded LCG: the same for a seed on
// every machine.
std::vector<int32_t> random_labels(int32_t n, int32_t k, uint64_t seed);

// Whether a subcommand runs its CPU check: false, with rec["check"] saying why ("skipped (...)"),
// under --no-check or when nnz(operand) passes limit (reference names what would be slow).
bool wants_check(nlohmann::json& rec, bool no_check, std::string_view operand, int64_t nnz, int64_t limit,
                 std::string_view reference);
// The subcommands' record of a check: "check" ("ok" or "MISMATCH"), "check_note" and
// "check_max_error" set in rec; the exit code (0, or 4 for a mismatch).
int record_check(nlohmann::json& rec, const SpgemmCheck& chk);
// Prints rec's check line ("  check against <against>: ..."), then writes rec to json_path when one
// is given.
void print_check(const nlohmann::json& rec, std::string_view against);
void write_record(const std::string& json_path, const nlohmann::json& rec);

}  // namespace dbsparse::tools

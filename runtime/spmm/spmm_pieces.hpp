#pragma once
// SpMM's long units, rows (CSR) or 16-row windows (BRP): which are cut into pieces for the
// second, atomic pass, and the f32 workspace a 16-bit plan sums them in (abi::SpmmAcc). Pure host
// code shared by runtime/spmm/spmm_spec.cpp and tests/cpu/ops/test_spmm_pieces.cpp.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace dbsparse {

// (unit, begin, end) for every unit whose run [ptr[u], ptr[u + 1]) is longer than max_run: the
// part past the first max_run, in pieces of max_run.
inline std::vector<int32_t> spmm_cut_pieces(const std::vector<int32_t>& ptr, int32_t max_run) {
  std::vector<int32_t> out;
  for (size_t u = 0; u + 1 < ptr.size(); ++u)
    for (int64_t b = int64_t{ptr[u]} + max_run; b < ptr[u + 1]; b += max_run) {
      out.push_back(static_cast<int32_t>(u));
      out.push_back(static_cast<int32_t>(b));
      out.push_back(static_cast<int32_t>(std::min<int64_t>(b + max_run, ptr[u + 1])));
    }
  return out;
}

// The split form (SpmmArgs::parts, SpmmConfig::csr_split): every unit longer than max_run cut
// whole, its first max_run included, into parts of max_run; parts are quadruples (unit, begin,
// end, slot) with slots 0, 1, ... in unit order, and first[s] .. first[s + 1] are slot s's parts
// (first has one entry past the last slot).
struct SpmmSplitParts {
  std::vector<int32_t> parts;
  std::vector<int32_t> first{0};
  int32_t slots() const { return static_cast<int32_t>(first.size()) - 1; }
  int32_t count() const { return static_cast<int32_t>(parts.size() / 4); }
};

inline SpmmSplitParts spmm_split_parts(const std::vector<int32_t>& ptr, int32_t max_run) {
  SpmmSplitParts out;
  for (size_t u = 0; u + 1 < ptr.size(); ++u) {
    if (int64_t{ptr[u + 1]} - ptr[u] <= max_run) continue;
    const int32_t slot = out.slots();
    for (int64_t b = ptr[u]; b < ptr[u + 1]; b += max_run)
      out.parts.insert(out.parts.end(), {static_cast<int32_t>(u), static_cast<int32_t>(b),
                                         static_cast<int32_t>(std::min<int64_t>(b + max_run, ptr[u + 1])), slot});
    out.first.push_back(out.count());
  }
  return out;
}

// The units spmm_cut_pieces cuts (those with at least one piece), ascending, and each unit's
// index among them (-1: not cut): abi::SpmmAcc's units and slot.
struct SpmmCutUnits {
  std::vector<int32_t> units;
  std::vector<int32_t> slot;  // one per unit (ptr.size() - 1)
};

inline SpmmCutUnits spmm_cut_units(const std::vector<int32_t>& ptr, int32_t max_run) {
  SpmmCutUnits out;
  const size_t n_units = ptr.empty() ? 0 : ptr.size() - 1;
  out.slot.assign(n_units, -1);
  for (size_t u = 0; u < n_units; ++u)
    if (int64_t{ptr[u + 1]} - ptr[u] > max_run) {
      out.slot[u] = static_cast<int32_t>(out.units.size());
      out.units.push_back(static_cast<int32_t>(u));
    }
  return out;
}

// The workspace's floats: the cut units' rows only (unit_rows: 1 a CSR row, 16 a BRP window), n
// each, not all of C's M x n. Only units longer than max_run are cut (a power-law matrix's heavy
// rows, not a typical row: csr_max_run defaults to at least twice the mean), so M x n floats would
// be twice a 16-bit C's bytes held mostly for nothing, and the finalize pass would touch every
// entry of C instead of the cut ones. The price is the slot array (4 bytes a row or window).
inline int64_t spmm_workspace_floats(const SpmmCutUnits& cut, int unit_rows, int n) {
  return static_cast<int64_t>(cut.units.size()) * unit_rows * n;
}

}  // namespace dbsparse

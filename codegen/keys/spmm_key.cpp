#include "codegen/keys/spmm_key.hpp"

#include <tuple>

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {
namespace {

[[noreturn]] void bad_key(std::string_view text, const std::string& why) {
  throw UsageError(fmt::format(
      "bad spmm kernel key '{}': {} (form: spmm.brp.f1.g4.w4, spmm.csr.v4.l8.w8; f16 / bf16: spmm.brp.f16.f1.g4.w4, "
      "spmm.csr.bf16.v4.l8.w8)",
      text, why));
}

const char* value_template(SpmmValue v) {
  switch (v) {
    case SpmmValue::F32:
      return "dbs::ValF32";
    case SpmmValue::F16:
      return "dbs::ValF16";
    case SpmmValue::BF16:
      return "dbs::ValBF16";
  }
  return "?";
}

bool power_of_two_to_8(int v) { return v == 1 || v == 2 || v == 4 || v == 8; }

void check(const SpmmKey& k, std::string_view text) {
  if (!power_of_two_to_8(k.warps)) bad_key(text, fmt::format("warps {}: allowed 1, 2, 4, 8", k.warps));
  if (k.path == SpmmKernelPath::Brp) {
    if (!power_of_two_to_8(k.f)) bad_key(text, fmt::format("f {}: allowed 1, 2, 4, 8", k.f));
    if (!power_of_two_to_8(k.g)) bad_key(text, fmt::format("g {}: allowed 1, 2, 4, 8", k.g));
  } else {
    if (k.vec != 1 && k.vec != 4) bad_key(text, fmt::format("vec {}: allowed 1, 4", k.vec));
    if (k.lanes < 1 || k.lanes > 32 || (k.lanes & (k.lanes - 1)) != 0)
      bad_key(text, fmt::format("lanes {}: allowed 1, 2, 4, 8, 16, 32", k.lanes));
    if (k.rows != 1 && k.rows != 2 && k.rows != 4) bad_key(text, fmt::format("rows {}: allowed 1, 2, 4", k.rows));
    if (k.lanes * k.rows > 32) bad_key(text, fmt::format("lanes {} x rows {}: a warp has 32 lanes", k.lanes, k.rows));
  }
  if (k.offsets64 && (k.path != SpmmKernelPath::Csr || k.value != SpmmValue::F32))
    bad_key(text, "64-bit row offsets (.o64) are for f32 csr keys only");
  if (k.reduce != SpmmReduceOp::Sum && (k.path != SpmmKernelPath::Csr || k.offsets64))
    bad_key(text, fmt::format("reduce {}: csr keys with 32-bit offsets only", to_string(k.reduce)));
  if (k.reduce == SpmmReduceOp::Mean) bad_key(text, "reduce mean runs the sum's kernels (no key of its own)");
}

}  // namespace

const char* to_string(SpmmValue v) {
  switch (v) {
    case SpmmValue::F32:
      return "f32";
    case SpmmValue::F16:
      return "f16";
    case SpmmValue::BF16:
      return "bf16";
  }
  return "?";
}

const char* to_string(SpmmReduceOp r) {
  switch (r) {
    case SpmmReduceOp::Sum:
      return "sum";
    case SpmmReduceOp::Mean:
      return "mean";
    case SpmmReduceOp::Max:
      return "max";
    case SpmmReduceOp::Min:
      return "min";
  }
  return "?";
}

namespace {

// f32 keys name no value type (spmm_key.hpp); Brp keys name f and g, Csr keys vec, lanes and past
// one the rows a warp.
const KeyText<SpmmKey>& spmm_text() {
  using K = SpmmKey;
  static const auto brp = is(&K::path, {SpmmKernelPath::Brp});
  static const auto csr = is_not(&K::path, {SpmmKernelPath::Brp});
  static const KeyText<K> t(
      {
          word("spmm"),
          choice("path", &K::path, {SpmmKernelPath::Brp, SpmmKernelPath::Csr},
                 [](SpmmKernelPath p) { return std::string(p == SpmmKernelPath::Brp ? "brp" : "csr"); }),
          choice("value type", &K::value, {SpmmValue::F32, SpmmValue::F16, SpmmValue::BF16}).optional(SpmmValue::F32),
          number("f", 'f', &K::f).when(brp),
          number("g", 'g', &K::g).when(brp),
          number("vec", 'v', &K::vec).when(csr),
          number("lanes", 'l', &K::lanes).when(csr),
          number("warps", 'w', &K::warps),
          number("rows", 'r', &K::rows).optional(1).when(csr),
          flag("o64", &K::offsets64, true).when(csr),
          choice("reduce", &K::reduce, {SpmmReduceOp::Sum, SpmmReduceOp::Mean, SpmmReduceOp::Max, SpmmReduceOp::Min})
              .optional(SpmmReduceOp::Sum)
              .when(csr),
      },
      bad_key, check);
  return t;
}

}  // namespace

std::string SpmmKey::to_string() const { return spmm_text().print(*this); }

SpmmKey SpmmKey::parse(std::string_view text) { return spmm_text().parse(text); }

KernelSource make_source(const SpmmKey& key) {
  KernelSource ks;
  ks.key = key.to_string();
  check(key, ks.key);
  ks.options = {"-std=c++17"};
  const char* v = value_template(key.value);
  if (key.path == SpmmKernelPath::Brp) {
    const bool f32 = key.value == SpmmValue::F32;
    ks.source = fmt::format("// dbsparse generated kernel: {}\n#include \"{}\"\n#include \"spmm_rows.cuh\"\n", ks.key,
                            f32 ? "spmm_tc.cuh" : "spmm_tc_half.cuh");
    // f32: brp_tc_windows<f, g, warps, ..>; f16 / bf16: brp_tc_windows16<V, f, g, warps, ..>.
    const std::string tc = f32 ? fmt::format("dbs::brp_tc_windows<{}, {}, {}", key.f, key.g, key.warps)
                               : fmt::format("dbs::brp_tc_windows16<{}, {}, {}, {}", v, key.f, key.g, key.warps);
    const std::string expand = f32 ? fmt::format("dbs::brp_expand_frags<{}, {}, {}>", key.f, key.g, key.warps)
                                   : fmt::format("dbs::brp_expand_frags16<{}, {}, {}, {}>", v, key.f, key.g, key.warps);
    ks.add_entry("windows", tc + ", false, false>");
    ks.add_entry("residual", fmt::format("dbs::brp_residual<{}, dbsparse::abi::kSpmmRowWarps, 1>", v));
    ks.add_entry("residual_vec4", fmt::format("dbs::brp_residual<{}, dbsparse::abi::kSpmmRowWarps, 4>", v));
    ks.add_entry("window_pieces", tc + ", true, false>");
    ks.add_entry("windows_frags", tc + ", false, true>");
    ks.add_entry("window_pieces_frags", tc + ", true, true>");
    ks.add_entry("expand_frags", expand);
    if (!f32) ks.add_entry("finalize", fmt::format("dbs::spmm_finalize16<{}>", v));
  } else {
    if (key.reduce != SpmmReduceOp::Sum) {  // max or min, one kernel: no pieces, parts or staging (check)
      ks.source = fmt::format("// dbsparse generated kernel: {}\n#include \"spmm_reduce.cuh\"\n", ks.key);
      ks.add_entry("reduce", fmt::format("dbs::csr_spmm_reduce<{}, {}, {}, {}, {}, {}>", v, key.warps, key.vec,
                                         key.lanes, key.rows, static_cast<int>(key.reduce)));
      return ks;
    }
    ks.source = fmt::format("// dbsparse generated kernel: {}\n#include \"spmm_rows.cuh\"\n", ks.key);
    if (key.offsets64) {  // one kernel: no pieces (nothing is cut), f32 only (check)
      ks.add_entry("rows",
                   fmt::format("dbs::csr_spmm_rows64<{}, {}, {}, {}, {}>", v, key.warps, key.vec, key.lanes, key.rows));
      return ks;
    }
    // f16 / bf16: csr_spmm_rows16, which also takes the cut rows' f32 workspace (abi::SpmmAcc).
    const char* rows = key.value == SpmmValue::F32 ? "csr_spmm_rows" : "csr_spmm_rows16";
    // R (rows a warp) is named only past 1: the rows-1 keys' texts and sources stay as they were.
    const std::string r = key.rows == 1 ? "" : fmt::format(", {}", key.rows);
    ks.add_entry("rows", fmt::format("dbs::{}<{}, {}, {}, {}, false{}>", rows, v, key.warps, key.vec, key.lanes, r));
    ks.add_entry("pieces", fmt::format("dbs::{}<{}, {}, {}, {}, true>", rows, v, key.warps, key.vec, key.lanes));
    ks.add_entry("relu", fmt::format("dbs::relu_inplace<{}, {}>", v, key.warps));
    if (key.value != SpmmValue::F32) ks.add_entry("finalize", fmt::format("dbs::spmm_finalize16<{}>", v));
    // f32 float4: the staged windows' kernel too (SpmmConfig::csr_stage_reuse).
    if (key.value == SpmmValue::F32 && key.vec == 4) {
      ks.source += "#include \"spmm_staged.cuh\"\n";
      ks.add_entry("staged", fmt::format("dbs::csr_spmm_staged<{}>", key.lanes));
    }
  }
  return ks;
}

std::vector<SpmmKey> spmm_search_space() {
  std::vector<SpmmKey> out;
  for (SpmmValue t : {SpmmValue::F32, SpmmValue::F16, SpmmValue::BF16}) {
    for (int f : {1, 2, 4, 8})
      for (int g : {1, 2, 4, 8})
        for (int w : {1, 2, 4, 8}) out.push_back(SpmmKey{SpmmKernelPath::Brp, f, g, w, 1, 32, t});
    for (int v : {1, 4})
      for (int l : {1, 2, 4, 8, 16, 32})
        for (int w : {2, 4, 8}) out.push_back(SpmmKey{SpmmKernelPath::Csr, 1, 4, w, v, l, t});  // SpmmConfig::csr_warps
    // Rows a warp (csr_rows_per_warp; the plan picks 2 or 4 for short rows at N <= 64) at the
    // default 4 warps: every lanes count that leaves room for them.
    for (int v : {1, 4})
      for (int l : {1, 2, 4, 8, 16})
        for (int r : {2, 4})
          if (l * r <= 32) {
            SpmmKey k{SpmmKernelPath::Csr, 1, 4, 4, v, l, t};
            k.rows = r;
            out.push_back(k);
          }
  }
  // 64-bit row offsets (f32): the float4 kernel at n = 32 (8 lanes, 4 rows a warp) and n = 128,
  // and the scalar one.
  for (auto [v, l, r] : {std::tuple{4, 8, 4}, std::tuple{4, 8, 1}, std::tuple{4, 32, 1}, std::tuple{1, 32, 1}}) {
    SpmmKey k{SpmmKernelPath::Csr, 1, 4, 4, v, l};
    k.rows = r;
    k.offsets64 = true;
    out.push_back(k);
  }
  return out;
}

std::vector<SpmmKey> spmm_reduce_keys() {
  std::vector<SpmmKey> out;
  for (SpmmValue t : {SpmmValue::F32, SpmmValue::F16, SpmmValue::BF16})
    for (SpmmReduceOp op : {SpmmReduceOp::Max, SpmmReduceOp::Min})
      for (int v : {1, 4})
        for (int l : {1, 2, 4, 8, 16, 32})
          for (int r : {1, 2, 4})
            if (l * r <= 32) {
              SpmmKey k{SpmmKernelPath::Csr, 1, 4, 4, v, l, t};
              k.rows = r;
              k.reduce = op;
              out.push_back(k);
            }
  return out;
}

}  // namespace dbsparse::codegen

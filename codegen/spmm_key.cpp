#include "codegen/spmm_key.hpp"

#include <charconv>

#include <fmt/format.h>

#include "codegen/key_text.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {
namespace {

[[noreturn]] void bad_key(std::string_view text, const std::string& why) {
  throw UsageError(fmt::format("bad spmm kernel key '{}': {} (form: spmm.brp.f1.g4.w4, spmm.csr.v4.l8.w8)", text, why));
}

bool power_of_two_to_8(int v) { return v == 1 || v == 2 || v == 4 || v == 8; }

int parse_number(std::string_view text, std::string_view part, char prefix, const char* what) {
  int v = 0;
  if (part.size() < 2 || part[0] != prefix) bad_key(text, fmt::format("{} part must be {}<number>", what, prefix));
  auto [p, ec] = std::from_chars(part.data() + 1, part.data() + part.size(), v);
  if (ec != std::errc() || p != part.data() + part.size()) bad_key(text, fmt::format("{} is not a number", what));
  return v;
}

void check(const SpmmKey& k, std::string_view text) {
  if (!power_of_two_to_8(k.warps)) bad_key(text, fmt::format("warps {}: allowed 1, 2, 4, 8", k.warps));
  if (k.path == SpmmKernelPath::Brp) {
    if (!power_of_two_to_8(k.f)) bad_key(text, fmt::format("f {}: allowed 1, 2, 4, 8", k.f));
    if (!power_of_two_to_8(k.g)) bad_key(text, fmt::format("g {}: allowed 1, 2, 4, 8", k.g));
  } else {
    if (k.vec != 1 && k.vec != 4) bad_key(text, fmt::format("vec {}: allowed 1, 4", k.vec));
    if (k.lanes < 1 || k.lanes > 32 || (k.lanes & (k.lanes - 1)) != 0)
      bad_key(text, fmt::format("lanes {}: allowed 1, 2, 4, 8, 16, 32", k.lanes));
  }
}

}  // namespace

std::string SpmmKey::to_string() const {
  if (path == SpmmKernelPath::Brp) return fmt::format("spmm.brp.f{}.g{}.w{}", f, g, warps);
  return fmt::format("spmm.csr.v{}.l{}.w{}", vec, lanes, warps);
}

SpmmKey SpmmKey::parse(std::string_view text) {
  const auto p = split_key(text, '.');
  if (p.size() < 2 || p[0] != "spmm") bad_key(text, "op must be 'spmm'");
  SpmmKey k;
  if (p[1] == "brp") {
    if (p.size() != 5) bad_key(text, "brp keys are spmm.brp.f<f>.g<g>.w<warps>");
    k.path = SpmmKernelPath::Brp;
    k.f = parse_number(text, p[2], 'f', "f");
    k.g = parse_number(text, p[3], 'g', "g");
    k.warps = parse_number(text, p[4], 'w', "warps");
  } else if (p[1] == "csr") {
    if (p.size() != 5) bad_key(text, "csr keys are spmm.csr.v<vec>.l<lanes>.w<warps>");
    k.path = SpmmKernelPath::Csr;
    k.vec = parse_number(text, p[2], 'v', "vec");
    k.lanes = parse_number(text, p[3], 'l', "lanes");
    k.warps = parse_number(text, p[4], 'w', "warps");
  } else {
    bad_key(text, fmt::format("unknown path '{}' (brp, csr)", p[1]));
  }
  check(k, text);
  return k;
}

KernelSource make_source(const SpmmKey& key) {
  KernelSource ks;
  ks.key = key.to_string();
  check(key, ks.key);
  ks.options = {"-std=c++17"};
  if (key.path == SpmmKernelPath::Brp) {
    ks.source = fmt::format("// dbsparse generated kernel: {}\n#include \"spmm_tc.cuh\"\n#include \"spmm_rows.cuh\"\n", ks.key);
    ks.name_expressions = {fmt::format("dbs::brp_tc_windows<{}, {}, {}, false, false>", key.f, key.g, key.warps),
                           "dbs::brp_residual<dbsparse::abi::kSpmmRowWarps, 1>",
                           "dbs::brp_residual<dbsparse::abi::kSpmmRowWarps, 4>",
                           fmt::format("dbs::brp_tc_windows<{}, {}, {}, true, false>", key.f, key.g, key.warps),
                           fmt::format("dbs::brp_tc_windows<{}, {}, {}, false, true>", key.f, key.g, key.warps),
                           fmt::format("dbs::brp_tc_windows<{}, {}, {}, true, true>", key.f, key.g, key.warps),
                           fmt::format("dbs::brp_expand_frags<{}, {}, {}>", key.f, key.g, key.warps)};
  } else {
    ks.source = fmt::format("// dbsparse generated kernel: {}\n#include \"spmm_rows.cuh\"\n", ks.key);
    ks.name_expressions = {fmt::format("dbs::csr_spmm_rows<{}, {}, {}, false>", key.warps, key.vec, key.lanes),
                           fmt::format("dbs::csr_spmm_rows<{}, {}, {}, true>", key.warps, key.vec, key.lanes),
                           fmt::format("dbs::relu_inplace<{}>", key.warps)};
  }
  return ks;
}

std::vector<SpmmKey> spmm_search_space() {
  std::vector<SpmmKey> out;
  for (int f : {1, 2, 4, 8})
    for (int g : {1, 2, 4, 8})
      for (int w : {1, 2, 4, 8}) out.push_back(SpmmKey{SpmmKernelPath::Brp, f, g, w, 1});
  for (int v : {1, 4})
    for (int l : {1, 2, 4, 8, 16, 32}) out.push_back(SpmmKey{SpmmKernelPath::Csr, 1, 4, 8, v, l});
  return out;
}

}  // namespace dbsparse::codegen

#include "codegen/keys/csr_view_key.hpp"

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {

std::string CsrViewKey::to_string() const { return offsets64 ? "csr_view.o64" : "csr_view.o32"; }

CsrViewKey CsrViewKey::parse(std::string_view text) {
  const auto p = split_key(text, '.');
  if (p.size() != 2 || p[0] != "csr_view" || (p[1] != "o32" && p[1] != "o64"))
    throw UsageError(fmt::format("bad csr_view key '{}': expected csr_view.o32 or csr_view.o64", text));
  return CsrViewKey{p[1] == "o64"};
}

KernelSource make_source(const CsrViewKey& key) {
  KernelSource ks;
  ks.key = key.to_string();
  ks.source = fmt::format("// dbsparse generated kernel: {}\n#include \"csr_view.cuh\"\n", ks.key);
  ks.options = {"-std=c++17"};
  const char* off = key.offsets64 ? "long long" : "int";
  ks.add_entry("check", fmt::format("dbs::csr_check<{}>", off));
  ks.add_entry("length_histogram", fmt::format("dbs::csr_length_histogram<{}>", off));
  ks.add_entry("degree_scatter", fmt::format("dbs::csr_degree_scatter<{}>", off));
  return ks;
}

std::vector<CsrViewKey> csr_view_space() { return {CsrViewKey{false}, CsrViewKey{true}}; }

}  // namespace dbsparse::codegen

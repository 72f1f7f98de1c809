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
  for (const char* fn : {"csr_check", "csr_length_histogram", "csr_degree_scatter"})
    ks.name_expressions.push_back(fmt::format("dbs::{}<{}>", fn, off));
  return ks;
}

std::vector<CsrViewKey> csr_view_space() { return {CsrViewKey{false}, CsrViewKey{true}}; }

}  // namespace dbsparse::codegen

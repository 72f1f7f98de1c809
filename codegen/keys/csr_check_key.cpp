#include "codegen/keys/csr_check_key.hpp"

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {

std::string CsrCheckKey::to_string() const { return offsets64 ? "csr_check.o64" : "csr_check.o32"; }

CsrCheckKey CsrCheckKey::parse(std::string_view text) {
  const auto p = split_key(text, '.');
  if (p.size() != 2 || p[0] != "csr_check" || (p[1] != "o32" && p[1] != "o64"))
    throw UsageError(fmt::format("bad csr_check key '{}': expected csr_check.o32 or csr_check.o64", text));
  return CsrCheckKey{p[1] == "o64"};
}

KernelSource make_source(const CsrCheckKey& key) {
  KernelSource ks;
  ks.key = key.to_string();
  ks.source = fmt::format("// dbsparse generated kernel: {}\n#include \"csr_check.cuh\"\n", ks.key);
  ks.options = {"-std=c++17"};
  ks.name_expressions = {key.offsets64 ? "dbs::csr_check<long long>" : "dbs::csr_check<int>"};
  return ks;
}

std::vector<CsrCheckKey> csr_check_space() { return {CsrCheckKey{false}, CsrCheckKey{true}}; }

}  // namespace dbsparse::codegen

#include "codegen/keys/csr_view_key.hpp"

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {

namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw UsageError(fmt::format("bad csr_view key '{}': {} (form: csr_view.o32 or csr_view.o64)", text, why));
}

const KeyText<CsrViewKey>& csr_view_text() {
  using K = CsrViewKey;
  static const KeyText<K> t(
      {
          word("csr_view"),
          choice("offset width", &K::offsets64, {false, true},
                 [](bool o64) { return std::string(o64 ? "o64" : "o32"); }),
      },
      bad);
  return t;
}

}  // namespace

std::string CsrViewKey::to_string() const { return csr_view_text().print(*this); }

CsrViewKey CsrViewKey::parse(std::string_view text) { return csr_view_text().parse(text); }

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

#include "codegen/keys/mcl_key.hpp"

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {
namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw UsageError(fmt::format("bad mcl kernel key '{}': {} (form: mcl.f64.b256)", text, why));
}

const KeyText<MclKey>& mcl_text() {
  using K = MclKey;
  static const KeyText<K> t(
      {
          word("mcl"),
          choice("value type", &K::value, {ValueType::F32, ValueType::F64}),
          number("block", 'b', &K::block).allow(block_threads()),
      },
      bad);
  return t;
}

}  // namespace

std::string MclKey::to_string() const { return mcl_text().print(*this); }

MclKey MclKey::parse(std::string_view text) { return mcl_text().parse(text); }

KernelSource make_source(const MclKey& key) {
  KernelSource ks;
  ks.key = key.to_string();
  ks.source =
      fmt::format("// dbsparse generated kernel: {}\n#include \"mcl.cuh\"\n#include \"mcl_ends.cuh\"\n", ks.key);
  ks.options = {"-std=c++17"};
  const char* v = cuda_type(key.value);
  for (const char* role :
       {"prune", "gather", "change", "start_count", "start_scatter", "rows_merge", "start_scale", "cc_hook"})
    ks.add_entry(role, fmt::format("dbs::mcl_{}<{}, {}>", role, v, key.block));
  for (const char* role : {"cc_init", "cc_compress", "cc_label"})
    ks.add_entry(role, fmt::format("dbs::mcl_{}<{}>", role, key.block));
  return ks;
}

std::vector<MclKey> mcl_search_space() {
  std::vector<MclKey> out;
  for (ValueType v : {ValueType::F32, ValueType::F64})
    for (int b : {128, 256, 512}) out.push_back(MclKey{v, b});
  return out;
}

}  // namespace dbsparse::codegen

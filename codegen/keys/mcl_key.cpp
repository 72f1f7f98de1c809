#include "codegen/keys/mcl_key.hpp"

#include <charconv>

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {
namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw UsageError(fmt::format("bad mcl kernel key '{}': {} (form: mcl.f64.b256)", text, why));
}

}  // namespace

std::string MclKey::to_string() const { return fmt::format("mcl.{}.b{}", codegen::to_string(value), block); }

MclKey MclKey::parse(std::string_view text) {
  const auto p = split_key(text, '.');
  if (p.size() != 3 || p[0] != "mcl") bad(text, "expected 3 dot-separated parts starting with 'mcl'");
  MclKey k;
  if (p[1] == "f32")
    k.value = ValueType::F32;
  else if (p[1] == "f64")
    k.value = ValueType::F64;
  else
    bad(text, fmt::format("unknown value type '{}'", p[1]));
  int b = -1;
  if (p[2].size() < 2 || p[2][0] != 'b') bad(text, fmt::format("block part must be b<threads>, got '{}'", p[2]));
  const auto [ptr, ec] = std::from_chars(p[2].data() + 1, p[2].data() + p[2].size(), b);
  if (ec != std::errc() || ptr != p[2].data() + p[2].size()) bad(text, fmt::format("bad block '{}'", p[2]));
  if (b < 32 || b > 1024 || b % 32 != 0) bad(text, fmt::format("block {} is not a multiple of 32 in [32, 1024]", b));
  k.block = b;
  return k;
}

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

#include "codegen/keys/brp_convert_key.hpp"

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {
namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw UsageError(fmt::format("bad brpconv kernel key '{}': {} (form: brpconv.f32.f1.g4)", text, why));
}

const KeyText<BrpConvertKey>& brp_convert_text() {
  using K = BrpConvertKey;
  static const KeyText<K> t(
      {
          word("brpconv"),
          choice("value type", &K::value, {ValueType::F32, ValueType::F64}),
          number("f", 'f', &K::f).allow(one_of({1, 2, 4, 8})),
          number("g", 'g', &K::g).allow(one_of({1, 2, 4, 8})),
      },
      bad);
  return t;
}

}  // namespace

std::string BrpConvertKey::to_string() const { return brp_convert_text().print(*this); }

BrpConvertKey BrpConvertKey::parse(std::string_view text) { return brp_convert_text().parse(text); }

KernelSource make_source(const BrpConvertKey& key) {
  KernelSource ks;
  ks.key = key.to_string();
  BrpConvertKey::parse(ks.key);  // the same checks as a parsed key
  ks.source = fmt::format("// dbsparse generated kernel: {}\n#include \"brp_convert.cuh\"\n#include \"brp_scan.cuh\"\n",
                          ks.key);
  ks.options = {"-std=c++17"};
  const char* t = cuda_type(key.value);
  // Roles: the kernels' names without the brp_conv_ / brp_ prefix.
  for (const char* fn : {"slots", "groups", "classify"})
    ks.add_entry(fn, fmt::format("dbs::brp_conv_{}<{}, {}>", fn, key.f, key.g));
  ks.add_entry("fill", fmt::format("dbs::brp_conv_fill<{}, {}, {}>", t, key.f, key.g));
  for (const char* fn : {"row_heads", "fill_rows"})
    ks.add_entry(fn, fmt::format("dbs::brp_conv_{}<dbsparse::abi::kBrpConvertBlock>", fn));
  for (const char* fn : {"scan_reduce", "scan_apply"})
    ks.add_entry(fn, fmt::format("dbs::brp_{}<dbsparse::abi::kBrpConvertBlock>", fn));
  return ks;
}

std::vector<BrpConvertKey> brp_convert_keys(const std::vector<ValueType>& values) {
  std::vector<BrpConvertKey> out;
  for (ValueType v : values)
    for (int f : {1, 2, 4, 8})
      for (int g : {1, 2, 4, 8}) out.push_back(BrpConvertKey{v, f, g});
  return out;
}

}  // namespace dbsparse::codegen

#include "codegen/keys/brp_convert_key.hpp"

#include <charconv>

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {
namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw UsageError(fmt::format("bad brpconv kernel key '{}': {} (form: brpconv.f32.f1.g4)", text, why));
}

int parse_fg(std::string_view text, std::string_view part, char prefix) {
  int v = 0;
  if (part.size() < 2 || part[0] != prefix) bad(text, fmt::format("expected {}<1|2|4|8>, got '{}'", prefix, part));
  const auto [p, ec] = std::from_chars(part.data() + 1, part.data() + part.size(), v);
  if (ec != std::errc() || p != part.data() + part.size()) bad(text, fmt::format("'{}' is not a number", part));
  if (v != 1 && v != 2 && v != 4 && v != 8) bad(text, fmt::format("{} {}: allowed 1, 2, 4, 8", prefix, v));
  return v;
}

}  // namespace

std::string BrpConvertKey::to_string() const {
  return fmt::format("brpconv.{}.f{}.g{}", codegen::to_string(value), f, g);
}

BrpConvertKey BrpConvertKey::parse(std::string_view text) {
  const auto p = split_key(text, '.');
  if (p.size() != 4 || p[0] != "brpconv") bad(text, "expected 4 dot-separated parts starting with 'brpconv'");
  BrpConvertKey k;
  if (p[1] == "f32")
    k.value = ValueType::F32;
  else if (p[1] == "f64")
    k.value = ValueType::F64;
  else
    bad(text, fmt::format("unknown value type '{}'", p[1]));
  k.f = parse_fg(text, p[2], 'f');
  k.g = parse_fg(text, p[3], 'g');
  return k;
}

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

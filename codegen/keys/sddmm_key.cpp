#include "codegen/keys/sddmm_key.hpp"

#include <set>

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/abi/sddmm.h"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {
namespace {

[[noreturn]] void bad_key(std::string_view text, const std::string& why) {
  throw UsageError(fmt::format(
      "bad sddmm kernel key '{}': {} (form: sddmm.f32.v4.l8.c1.w4, sddmm.bf16.v1.l32.c16.w4.scale)", text, why));
}

const char* value_template(SddmmValue v) {
  switch (v) {
    case SddmmValue::F32:
      return "dbs::ValF32";
    case SddmmValue::F16:
      return "dbs::ValF16";
    case SddmmValue::BF16:
      return "dbs::ValBF16";
  }
  return "?";
}

bool pow2_upto(int v, int hi) { return v >= 1 && v <= hi && (v & (v - 1)) == 0; }

void check(const SddmmKey& k, std::string_view text) {
  if (k.vec != 1 && k.vec != 4) bad_key(text, fmt::format("vec {}: allowed 1, 4", k.vec));
  if (!pow2_upto(k.lanes, 32)) bad_key(text, fmt::format("lanes {}: allowed 1, 2, 4, 8, 16, 32", k.lanes));
  if (!pow2_upto(k.chunks, 16)) bad_key(text, fmt::format("chunks {}: allowed 1, 2, 4, 8, 16", k.chunks));
  if (!pow2_upto(k.warps, 8)) bad_key(text, fmt::format("warps {}: allowed 1, 2, 4, 8", k.warps));
  if (k.lanes * k.vec * k.chunks > abi::kSddmmMaxK)
    bad_key(text, fmt::format("lanes {} x vec {} x chunks {} covers more than k = {}", k.lanes, k.vec, k.chunks,
                              abi::kSddmmMaxK));
}

const KeyText<SddmmKey>& sddmm_text() {
  using K = SddmmKey;
  static const KeyText<K> t(
      {
          word("sddmm"),
          choice("value type", &K::value, {SddmmValue::F32, SddmmValue::F16, SddmmValue::BF16}),
          number("vec", 'v', &K::vec),
          number("lanes", 'l', &K::lanes),
          number("chunks", 'c', &K::chunks),
          number("warps", 'w', &K::warps),
          flag("scale", &K::scale, true),
      },
      bad_key, check);
  return t;
}

}  // namespace

const char* to_string(SddmmValue v) {
  switch (v) {
    case SddmmValue::F32:
      return "f32";
    case SddmmValue::F16:
      return "f16";
    case SddmmValue::BF16:
      return "bf16";
  }
  return "?";
}

std::string SddmmKey::to_string() const { return sddmm_text().print(*this); }

SddmmKey SddmmKey::parse(std::string_view text) { return sddmm_text().parse(text); }

KernelSource make_source(const SddmmKey& key) {
  KernelSource ks;
  ks.key = key.to_string();
  check(key, ks.key);
  ks.options = {"-std=c++17"};
  ks.source = fmt::format("// dbsparse generated kernel: {}\n#include \"sddmm_csr.cuh\"\n", ks.key);
  ks.add_entry("sddmm", fmt::format("dbs::sddmm_csr<{}, {}, {}, {}, {}, {}>", value_template(key.value), key.warps,
                                    key.vec, key.lanes, key.chunks, key.scale ? "true" : "false"));
  return ks;
}

SddmmKey sddmm_key_for(int k, int vec, SddmmValue value, bool scale, int warps) {
  SddmmKey key;
  key.value = value;
  key.vec = vec;
  key.scale = scale;
  key.warps = warps;
  key.lanes = 1;
  while (key.lanes < 32 && key.lanes * vec < k) key.lanes *= 2;
  key.chunks = 1;
  while (key.lanes * vec * key.chunks < k) key.chunks *= 2;
  return key;
}

std::vector<SddmmKey> sddmm_keys(int warps) {
  std::set<SddmmKey> keys;
  for (SddmmValue v : {SddmmValue::F32, SddmmValue::F16, SddmmValue::BF16})
    for (bool scale : {false, true})
      for (int k = 1; k <= abi::kSddmmMaxK; ++k) {
        keys.insert(sddmm_key_for(k, 1, v, scale, warps));
        if (k % 4 == 0) keys.insert(sddmm_key_for(k, 4, v, scale, warps));
      }
  return {keys.begin(), keys.end()};
}

}  // namespace dbsparse::codegen

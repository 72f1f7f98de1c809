#include "codegen/keys/spmv_key.hpp"

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"

namespace dbsparse::codegen {
namespace {

[[noreturn]] void bad_key(std::string_view text, const std::string& why) {
  throw UsageError(
      fmt::format("bad spmv kernel key '{}': {} (form: spmv.scalar.f32.b256, spmv.vector.f32.b256.l8, "
                  "spmv.classified.f32.b256.l2.l4.l8.l32[.w64], spmv.classify.b256, spmv.gather.f32.b256)",
                  text, why));
}

// The row kernels that take 64-bit row offsets (SpmvKey::offsets64).
bool takes_offsets64(SpmvStrategy s) {
  return s == SpmvStrategy::Scalar || s == SpmvStrategy::Vector || s == SpmvStrategy::Block;
}

}  // namespace

const char* to_string(SpmvStrategy s) {
  switch (s) {
    case SpmvStrategy::Scalar:
      return "scalar";
    case SpmvStrategy::Vector:
      return "vector";
    case SpmvStrategy::Block:
      return "block";
    case SpmvStrategy::LongRow:
      return "longrow";
    case SpmvStrategy::Classified:
      return "classified";
    case SpmvStrategy::Classify:
      return "classify";
    case SpmvStrategy::Gather:
      return "gather";
  }
  return "?";
}

namespace {

// What no single part sees: the offset width and the window each belong to some strategies only.
void check(const SpmvKey& k, std::string_view text) {
  if (k.offsets64 && !takes_offsets64(k.strategy))
    bad_key(text, "only scalar, vector and block keys take .o64 (64-bit row offsets)");
  if (k.window != 0 && k.strategy != SpmvStrategy::Classified) bad_key(text, "only classified keys take .w<window>");
}

// Classify has no value type, window or offset width; Vector one lanes part, Classified four.
const KeyText<SpmvKey>& spmv_text() {
  using K = SpmvKey;
  using S = SpmvStrategy;
  static const auto not_classify = is_not(&K::strategy, {S::Classify});
  static const auto classified = is(&K::strategy, {S::Classified});
  static const KeyText<K> t(
      {
          word("spmv"),
          choice("strategy", &K::strategy,
                 {S::Scalar, S::Vector, S::Block, S::LongRow, S::Classified, S::Classify, S::Gather}),
          choice("value type", &K::value, {ValueType::F32, ValueType::F64}).when(not_classify),
          number("block size", 'b', &K::block_size).allow(block_threads()),
          number("lanes", 'l', &K::lanes)
              .allow(power_of_two_in(2, 32))
              .when(is(&K::strategy, {S::Vector, S::Classified})),
          number("lanes", 'l', &K::lanes2).allow(power_of_two_in(2, 32)).when(classified),
          number("lanes", 'l', &K::lanes3).allow(power_of_two_in(2, 32)).when(classified),
          number("lanes", 'l', &K::lanes4).allow(power_of_two_in(2, 32)).when(classified),
          number("window", 'w', &K::window).allow(in_range(1, kMaxSpmvWindow)).optional(0).when(not_classify),
          flag("o64", &K::offsets64, true).when(not_classify),
      },
      bad_key, check);
  return t;
}

}  // namespace

std::string SpmvKey::to_string() const { return spmv_text().print(*this); }

SpmvKey SpmvKey::parse(std::string_view s) { return spmv_text().parse(s); }

SpmvKey spmv_classify_key(int block_size) {
  SpmvKey k;
  k.strategy = SpmvStrategy::Classify;
  k.block_size = block_size;
  return k;
}

KernelSource make_source(const SpmvKey& key) {
  if (key.strategy == SpmvStrategy::Classify && key.value != ValueType::F32)
    throw UsageError(fmt::format("spmv classify key with value type {}: it has none (use spmv_classify_key())",
                                 codegen::to_string(key.value)));
  if (key.offsets64 && !takes_offsets64(key.strategy))
    throw UsageError(fmt::format("spmv key {}: 64-bit row offsets are for the scalar, vector and block kernels only",
                                 key.to_string()));
  if (key.window != 0 && (key.strategy != SpmvStrategy::Classified || key.window < 1 || key.window > kMaxSpmvWindow))
    throw UsageError(
        fmt::format("spmv key {}: a window is for classified keys only, in [1, {}]", key.to_string(), kMaxSpmvWindow));
  KernelSource ks;
  ks.key = key.to_string();
  const char* t = cuda_type(key.value);
  const int b = key.block_size;
  const char* o = key.offsets64 ? ", long long" : "";
  const char* header = "spmv_csr_scalar.cuh";
  switch (key.strategy) {
    case SpmvStrategy::Scalar:
      ks.add_entry("rows", fmt::format("dbs::spmv_csr_scalar<{}, {}{}>", t, b, o));
      break;
    case SpmvStrategy::Classify:
      header = "spmv_classify.cuh";
      ks.add_entry("classify", fmt::format("dbs::spmv_classify<{}>", b));
      break;
    case SpmvStrategy::Vector:
      header = "spmv_csr_vector.cuh";
      ks.add_entry("rows", fmt::format("dbs::spmv_csr_vector<{}, {}, {}{}>", t, b, key.lanes, o));
      break;
    case SpmvStrategy::Block:
      header = "spmv_csr_block.cuh";
      ks.add_entry("rows", fmt::format("dbs::spmv_csr_block<{}, {}{}>", t, b, o));
      break;
    case SpmvStrategy::Classified:
      header = "spmv_csr_classified.cuh";
      ks.add_entry("classified", fmt::format("dbs::spmv_csr_classified<{}, {}, {}, {}, {}, {}{}>", t, b, key.lanes,
                                             key.lanes2, key.lanes3, key.lanes4,
                                             key.window > 0 ? fmt::format(", {}", key.window) : std::string()));
      break;
    case SpmvStrategy::Gather:
      header = "spmv_gather.cuh";
      ks.add_entry("gather", fmt::format("dbs::spmv_gather<{}, {}>", t, b));
      break;
    case SpmvStrategy::LongRow:
      header = "spmv_csr_longrow.cuh";
      ks.add_entry("partial", fmt::format("dbs::spmv_longrow_partial<{}, {}>", t, b));
      ks.add_entry("finalize", fmt::format("dbs::spmv_longrow_finalize<{}>", t));
      break;
  }
  // The SpMV templates take everything from their template arguments (the name expressions), so
  // the source only names the variant: DBS_KEY identifies a dumped source.
  ks.source = fmt::format(
      "// dbsparse generated kernel: {key}\n"
      "#define DBS_KEY \"{key}\"\n"
      "#include \"{header}\"\n",
      fmt::arg("key", ks.key), fmt::arg("header", header));
  ks.options = {"-std=c++17"};
  return ks;
}

std::vector<SpmvKey> spmv_search_space() {
  std::vector<SpmvKey> out;
  for (auto v : {ValueType::F32, ValueType::F64}) {
    for (int b : {128, 256, 512}) out.push_back(SpmvKey{v, SpmvStrategy::Scalar, b});
    for (int l : {2, 4, 8, 16, 32}) out.push_back(SpmvKey{v, SpmvStrategy::Vector, 256, l});
    for (int b : {128, 256, 512}) out.push_back(SpmvKey{v, SpmvStrategy::Block, b});
    out.push_back(SpmvKey{v, SpmvStrategy::LongRow, 256});
    out.push_back(SpmvKey{v, SpmvStrategy::Classified, 256, 2, 4, 8, 32});
    SpmvKey windowed{v, SpmvStrategy::Classified, 256, 2, 4, 8, 32};
    windowed.window = v == ValueType::F32 ? 64 : 32;
    out.push_back(windowed);
    out.push_back(SpmvKey{v, SpmvStrategy::Gather, 256});
    for (SpmvKey k : {SpmvKey{v, SpmvStrategy::Scalar, 256}, SpmvKey{v, SpmvStrategy::Vector, 256, 8},
                      SpmvKey{v, SpmvStrategy::Vector, 256, 32}, SpmvKey{v, SpmvStrategy::Block, 256}}) {
      k.offsets64 = true;
      out.push_back(k);
    }
  }
  out.push_back(spmv_classify_key());
  return out;
}

}  // namespace dbsparse::codegen

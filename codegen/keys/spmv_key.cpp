#include "codegen/keys/spmv_key.hpp"

#include <charconv>

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

std::string SpmvKey::to_string() const {
  if (strategy == SpmvStrategy::Classify) return fmt::format("spmv.classify.b{}", block_size);
  std::string s = fmt::format("spmv.{}.{}.b{}", codegen::to_string(strategy), codegen::to_string(value), block_size);
  if (strategy == SpmvStrategy::Vector) s += fmt::format(".l{}", lanes);
  if (strategy == SpmvStrategy::Classified) s += fmt::format(".l{}.l{}.l{}.l{}", lanes, lanes2, lanes3, lanes4);
  if (window > 0) s += fmt::format(".w{}", window);
  if (offsets64) s += ".o64";
  return s;
}

namespace {
int parse_number(std::string_view text, std::string_view part, char prefix, const char* what) {
  int v = 0;
  if (part.size() < 2 || part[0] != prefix) bad_key(text, fmt::format("{} part must be {}<number>", what, prefix));
  auto [p, ec] = std::from_chars(part.data() + 1, part.data() + part.size(), v);
  if (ec != std::errc() || p != part.data() + part.size()) bad_key(text, fmt::format("{} is not a number", what));
  return v;
}
}  // namespace

SpmvKey SpmvKey::parse(std::string_view text) {
  auto parts = split_key(text, '.');
  if (parts.size() < 3) bad_key(text, "expected at least 3 dot-separated parts");
  if (parts[0] != "spmv") bad_key(text, "op must be 'spmv'");
  SpmvKey k;
  if (parts[1] == "classify") {
    if (parts.size() != 3) bad_key(text, "classify keys are spmv.classify.b<block>");
    k = spmv_classify_key(parse_number(text, parts[2], 'b', "block size"));
    if (k.block_size < 32 || k.block_size > 1024 || k.block_size % 32 != 0)
      bad_key(text, "block size must be a multiple of 32 in [32, 1024]");
    return k;
  }
  if (parts.size() < 4) bad_key(text, "expected at least 4 dot-separated parts");
  if (parts.back() == "o64") {
    k.offsets64 = true;
    parts.pop_back();
  }
  if (parts[1] == "classified" && parts.size() == 9 && !parts.back().empty() && parts.back()[0] == 'w') {
    k.window = parse_number(text, parts.back(), 'w', "window");
    if (k.window < 1 || k.window > kMaxSpmvWindow)
      bad_key(text, fmt::format("window must be in [1, {}]", kMaxSpmvWindow));
    parts.pop_back();
  }
  if (parts[1] == "scalar")
    k.strategy = SpmvStrategy::Scalar;
  else if (parts[1] == "vector")
    k.strategy = SpmvStrategy::Vector;
  else if (parts[1] == "block")
    k.strategy = SpmvStrategy::Block;
  else if (parts[1] == "longrow")
    k.strategy = SpmvStrategy::LongRow;
  else if (parts[1] == "classified")
    k.strategy = SpmvStrategy::Classified;
  else if (parts[1] == "gather")
    k.strategy = SpmvStrategy::Gather;
  else
    bad_key(text, fmt::format("unknown strategy '{}'", parts[1]));
  const size_t lane_parts = k.strategy == SpmvStrategy::Vector ? 1 : k.strategy == SpmvStrategy::Classified ? 4 : 0;
  if (parts.size() != 4 + lane_parts)
    bad_key(text, lane_parts == 1   ? "vector keys end in .l<lanes>"
                  : lane_parts == 4 ? "classified keys end in four .l<lanes> parts"
                                    : "only vector and classified keys have lanes parts");
  if (parts[2] == "f32")
    k.value = ValueType::F32;
  else if (parts[2] == "f64")
    k.value = ValueType::F64;
  else
    bad_key(text, fmt::format("unknown value type '{}'", parts[2]));
  k.block_size = parse_number(text, parts[3], 'b', "block size");
  if (k.block_size < 32 || k.block_size > 1024 || k.block_size % 32 != 0)
    bad_key(text, "block size must be a multiple of 32 in [32, 1024]");
  if (k.offsets64 && !takes_offsets64(k.strategy))
    bad_key(text, "only scalar, vector and block keys take .o64 (64-bit row offsets)");
  int* lanes[] = {&k.lanes, &k.lanes2, &k.lanes3, &k.lanes4};
  for (size_t i = 0; i < lane_parts; ++i) {
    *lanes[i] = parse_number(text, parts[4 + i], 'l', "lanes");
    if (*lanes[i] < 2 || *lanes[i] > 32 || (*lanes[i] & (*lanes[i] - 1)) != 0)
      bad_key(text, "lanes must be 2, 4, 8, 16 or 32");
  }
  return k;
}

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

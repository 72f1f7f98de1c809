#include "dbsparse/safetensors.hpp"
#include "support/file_kind.hpp"
#include "dbsparse/json_limits.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <optional>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dbsparse/error.hpp"
#include "dbsparse/half.hpp"
#include "support/atomic_file.hpp"

namespace dbsparse {
namespace {

using nlohmann::json;
// The format is little-endian; lengths and tensor data are copied as they lie in memory.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");
constexpr std::array<std::string_view, 7> kKinds = {"q", "k", "v", "o", "gate", "up", "down"};

std::optional<DType> parse_dtype(const std::string& s) {
  if (s == "F16") return DType::F16;
  if (s == "BF16") return DType::BF16;
  if (s == "F32") return DType::F32;
  if (s == "I32") return DType::I32;
  if (s == "U32") return DType::U32;
  return std::nullopt;
}

std::optional<int64_t> non_negative(const json& v) {
  if (!v.is_number_unsigned()) return std::nullopt;  // negatives parse as signed, fractions as float
  const auto u = v.get<uint64_t>();
  if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return static_cast<int64_t>(u);
}

// Where the key of a tensor starts in the file, so a message can point at it. nlohmann does not
// keep positions; searching for the quoted key followed by ':' finds it unless the writer escaped
// the name differently, in which case the header's start is the best we can say.
int64_t key_offset(const std::string& header, const std::string& name) {
  const std::string quoted = json(name).dump();
  for (size_t at = header.find(quoted); at != std::string::npos; at = header.find(quoted, at + 1)) {
    size_t after = at + quoted.size();
    while (after < header.size() && std::isspace(static_cast<unsigned char>(header[after]))) ++after;
    if (after < header.size() && header[after] == ':') return 8 + static_cast<int64_t>(at);
  }
  return 8;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t next = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = row[j];
      row[j] = next;
    }
  }
  return row[b.size()];
}

// "model.layers.N.self_attn.q_proj.weight" -> (N, index of "q" in kKinds). The attention kinds
// only under self_attn and the MLP ones only under mlp: anything else is not a layer we know.
std::optional<std::pair<int, size_t>> parse_linear_name(const std::string& name) {
  static const std::regex re(R"(model\.layers\.(\d{1,9})\.(?:self_attn\.(q|k|v|o)|mlp\.(gate|up|down))_proj\.weight)");
  std::smatch m;
  if (!std::regex_match(name, m, re)) return std::nullopt;
  const std::string kind = m[2].matched ? m[2].str() : m[3].str();
  const auto k = static_cast<size_t>(std::find(kKinds.begin(), kKinds.end(), kind) - kKinds.begin());
  return std::pair{std::stoi(m[1].str()), k};
}

}  // namespace

std::string_view to_string(DType t) {
  switch (t) {
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::F32:
      return "F32";
    case DType::I32:
      return "I32";
    case DType::U32:
      return "U32";
  }
  return "?";
}

int64_t dtype_bytes(DType t) { return t == DType::F16 || t == DType::BF16 ? 2 : 4; }

int64_t TensorInfo::elements() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

namespace {

// Where a header lies in its file, for the messages that point into it.
struct HeaderSpan {
  const std::string& path;
  const std::string& header;
  int64_t data_start = 0;  // 8 + the header's length
  int64_t size = 0;        // the file's
};

// The file's header (the bytes after its 8-byte length) and the file's size.
std::string read_header(const std::string& path, int64_t& size) {
  if (auto kind = not_a_regular_file(path))
    throw InputError(path, 0, fmt::format("a regular safetensors file, found {}", *kind));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, fmt::format("a readable safetensors file ({})", std::strerror(errno)));
  in.seekg(0, std::ios::end);
  size = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  if (size < 8)
    throw InputError(path, 0,
                     fmt::format("an 8-byte header length at byte 0, but the file has only {} "
                                 "bytes (truncated)",
                                 size));
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  if (n > static_cast<uint64_t>(size - 8))
    throw InputError(path, 0,
                     fmt::format("a header length (byte 0) of at most {}, the bytes left after "
                                 "byte 8; found {}: the header runs past the end of the file",
                                 size - 8, n));
  std::string header(n, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(n)))
    throw InputError(path, 0, fmt::format("{} header bytes at byte 8 (read failed)", n));
  return header;
}

// The header as a JSON object. A tensor named twice would be kept once, silently, by json: the
// top-level keys are checked as the parser meets them.
json parse_header(const HeaderSpan& h) {
  std::set<std::string> names;
  const json::parser_callback_t unique_names = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1 && !names.insert(parsed.get<std::string>()).second)
      throw InputError(
          h.path, 0,
          fmt::format("tensor names that appear once in the header; '{}' appears twice", parsed.get<std::string>()));
    return true;
  };
  if (auto why = json_too_deep(h.header))
    throw InputError(h.path, 0, fmt::format("a header at bytes 8..{} with {}", h.data_start, *why));
  json j;
  try {
    j = json::parse(h.header, unique_names);
  } catch (const json::parse_error& e) {
    throw InputError(h.path, 0,
                     fmt::format("a JSON header at bytes 8..{}; it does not parse at byte {}: {}", h.data_start,
                                 8 + std::max<size_t>(e.byte, 1) - 1, e.what()));
  } catch (const json::exception& e) {
    // Not a parse_error (a number past double's range is out_of_range 406): an InputError too,
    // never an exception the caller does not expect.
    throw InputError(h.path, 0,
                     fmt::format("a JSON header at bytes 8..{} with numbers in range: {}", h.data_start, e.what()));
  }
  if (!j.is_object())
    throw InputError(h.path, 0, fmt::format("a JSON object as the header at bytes 8..{}", h.data_start));
  return j;
}

// An InputError about tensor `name`, pointing at its key in the header.
InputError bad_tensor(const HeaderSpan& h, const std::string& name, const std::string& what) {
  return InputError(h.path, 0,
                    fmt::format("{} for tensor '{}' (header byte {})", what, name, key_offset(h.header, name)));
}

// The __metadata__ entry: an object of strings.
std::map<std::string, std::string> parse_metadata(const HeaderSpan& h, const json& v) {
  if (!v.is_object()) throw bad_tensor(h, "__metadata__", "an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& [k, s] : v.items()) {
    if (!s.is_string()) throw bad_tensor(h, "__metadata__", fmt::format("a string value for metadata key '{}'", k));
    out[k] = s.get<std::string>();
  }
  return out;
}

// The shape: non-negative dimensions whose product fits in 64 bits; elements gets the product.
std::vector<int64_t> parse_shape(const HeaderSpan& h, const std::string& name, const json& shape, int64_t& elements) {
  if (!shape.is_array()) throw bad_tensor(h, name, "shape as an array of non-negative integers");
  std::vector<int64_t> out;
  elements = 1;
  for (const json& d : shape) {
    const auto dim = non_negative(d);
    if (!dim)
      throw bad_tensor(h, name, fmt::format("shape as an array of non-negative integers (found {})", json_brief(d)));
    if (__builtin_mul_overflow(elements, *dim, &elements))
      throw bad_tensor(h, name, "a shape whose size fits in 64 bits");
    out.push_back(*dim);
  }
  return out;
}

// One tensor's entry: dtype, shape and data_offsets, the offsets inside the data buffer and
// spanning exactly the shape's bytes.
TensorInfo parse_tensor(const HeaderSpan& h, const std::string& name, const json& v) {
  if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
    throw bad_tensor(h, name, "an object with dtype, shape and data_offsets");
  const json& dt = v["dtype"];
  const auto dtype = dt.is_string() ? parse_dtype(dt.get<std::string>()) : std::nullopt;
  if (!dtype)
    throw bad_tensor(h, name, fmt::format("dtype F16, BF16, F32, I32 or U32 (found dtype {})", json_brief(dt)));
  TensorInfo t{name, *dtype, {}, 0, 0};
  int64_t elements = 1;
  t.shape = parse_shape(h, name, v["shape"], elements);
  const json& off = v["data_offsets"];
  std::optional<int64_t> begin, end;
  if (off.is_array() && off.size() == 2) begin = non_negative(off[0]), end = non_negative(off[1]);
  if (!begin || !end || *begin > *end)
    throw bad_tensor(h, name,
                     fmt::format("data_offsets [begin, end] with 0 <= begin <= end (found {})", json_brief(off)));
  const int64_t buffer = h.size - h.data_start;
  if (*end > buffer)
    throw bad_tensor(h, name,
                     fmt::format("data_offsets within the {}-byte data buffer; [{}, {}] ends at file byte {} of {} "
                                 "(truncated?)",
                                 buffer, *begin, *end, h.data_start + *end, h.size));
  int64_t want = 0;
  if (__builtin_mul_overflow(elements, dtype_bytes(*dtype), &want) || want != *end - *begin)
    throw bad_tensor(h, name,
                     fmt::format("data_offsets spanning {} elements x {} bytes = {} bytes for shape {}; found {} "
                                 "(file bytes {}..{})",
                                 elements, dtype_bytes(*dtype), elements * dtype_bytes(*dtype), json(t.shape).dump(),
                                 *end - *begin, h.data_start + *begin, h.data_start + *end));
  t.offset = *begin;
  t.bytes = *end - *begin;
  return t;
}

// Tensors must not share data bytes; empty tensors occupy nothing and cannot overlap.
void check_no_overlap(const HeaderSpan& h, const std::vector<TensorInfo>& tensors) {
  std::vector<const TensorInfo*> by_offset;
  for (const auto& t : tensors)
    if (t.bytes > 0) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo &a = *by_offset[i - 1], &b = *by_offset[i];
    if (b.offset < a.offset + a.bytes)
      throw InputError(h.path, 0,
                       fmt::format("tensors that do not overlap; '{}' (file bytes {}..{}) and '{}' "
                                   "(file bytes {}..{}) do",
                                   a.name, h.data_start + a.offset, h.data_start + a.offset + a.bytes, b.name,
                                   h.data_start + b.offset, h.data_start + b.offset + b.bytes));
  }
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  int64_t size = 0;
  const std::string header = read_header(path, size);
  SafetensorsFile f;
  f.path_ = path;
  f.data_start_ = 8 + static_cast<int64_t>(header.size());
  const HeaderSpan h{path, header, f.data_start_, size};
  const json j = parse_header(h);
  for (const auto& item : j.items()) {
    if (item.key() == "__metadata__")
      f.metadata_ = parse_metadata(h, item.value());
    else
      f.tensors_.push_back(parse_tensor(h, item.key(), item.value()));
  }
  check_no_overlap(h, f.tensors_);
  std::sort(f.tensors_.begin(), f.tensors_.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return f;
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const TensorInfo& t, const std::string& n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

bool SafetensorsFile::contains(const std::string& name) const { return find(name) != nullptr; }

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  if (const TensorInfo* t = find(name)) return *t;
  std::vector<std::pair<size_t, std::string>> near;
  for (const auto& t : tensors_) near.emplace_back(edit_distance(name, t.name), t.name);
  std::sort(near.begin(), near.end());
  std::string close;
  for (size_t i = 0; i < near.size() && i < 3; ++i) close += (i ? ", " : "") + near[i].second;
  throw InputError(path_, 0,
                   fmt::format("a tensor named '{}' ({} tensors; closest: {})", name, tensors_.size(),
                               close.empty() ? "none" : close));
}

std::string SafetensorsFile::read_bytes(const TensorInfo& t) const {
  std::string bytes(static_cast<size_t>(t.bytes), '\0');
  std::ifstream in(path_, std::ios::binary);
  in.seekg(data_start_ + t.offset);
  if (!in || !in.read(bytes.data(), static_cast<std::streamsize>(t.bytes)))
    throw InputError(path_, 0,
                     fmt::format("{} bytes of tensor '{}' at file byte {} (the file is gone or "
                                 "shorter than when it was opened)",
                                 t.bytes, t.name, data_start_ + t.offset));
  return bytes;
}

std::vector<float> SafetensorsFile::read_f32(const std::string& name) const {
  const TensorInfo& t = info(name);
  if (t.dtype == DType::I32 || t.dtype == DType::U32)
    throw InputError(
        path_, 0,
        fmt::format("tensor '{}' of floating-point values (F32, F16 or BF16), found {}", name, to_string(t.dtype)));
  const std::string raw = read_bytes(t);
  std::vector<float> out(static_cast<size_t>(t.elements()));
  if (t.dtype == DType::F32) {
    std::copy(raw.begin(), raw.end(), reinterpret_cast<char*>(out.data()));
  } else {
    std::vector<uint16_t> bits(out.size());
    std::copy(raw.begin(), raw.end(), reinterpret_cast<char*>(bits.data()));
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = t.dtype == DType::F16 ? half_to_float(bits[i]) : bf16_to_float(bits[i]);
  }
  return out;
}

std::vector<uint16_t> SafetensorsFile::read_raw16(const std::string& name) const {
  const TensorInfo& t = info(name);
  if (dtype_bytes(t.dtype) != 2)
    throw InputError(path_, 0,
                     fmt::format("tensor '{}' of 16-bit values (F16 or BF16), found {}", name, to_string(t.dtype)));
  const std::string raw = read_bytes(t);
  std::vector<uint16_t> out(static_cast<size_t>(t.elements()));
  std::copy(raw.begin(), raw.end(), reinterpret_cast<char*>(out.data()));
  return out;
}

std::vector<uint32_t> SafetensorsFile::read_raw32(const std::string& name) const {
  const TensorInfo& t = info(name);
  if (dtype_bytes(t.dtype) != 4)
    throw InputError(path_, 0,
                     fmt::format("tensor '{}' of 32-bit values (F32, I32 or U32), found {}", name, to_string(t.dtype)));
  const std::string raw = read_bytes(t);
  std::vector<uint32_t> out(static_cast<size_t>(t.elements()));
  std::copy(raw.begin(), raw.end(), reinterpret_cast<char*>(out.data()));
  return out;
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<const TensorToWrite*> order;
  for (const auto& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->name < b->name; });
  json header = json::object();
  int64_t offset = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const TensorToWrite& t = *order[i];
    if (t.name.empty() || t.name == "__metadata__" || (i > 0 && order[i - 1]->name == t.name))
      throw UsageError(
          fmt::format("write_safetensors {}: tensor name '{}' is empty, reserved or repeated", path, t.name));
    int64_t elements = 1;
    for (int64_t d : t.shape) elements *= d;
    const bool raw = !t.raw.empty() || t.dtype == DType::I32 || t.dtype == DType::U32;
    const int64_t bytes = elements * dtype_bytes(t.dtype);
    if (std::any_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d < 0; }) ||
        (raw ? !t.data.empty() || static_cast<int64_t>(t.raw.size()) != bytes
             : elements != static_cast<int64_t>(t.data.size())))
      throw UsageError(fmt::format("write_safetensors {}: tensor '{}' has shape {} but {} values ({} raw bytes)", path,
                                   t.name, json(t.shape).dump(), t.data.size(), t.raw.size()));
    header[t.name] = {{"dtype", to_string(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text;
  try {
    text = header.dump();
  } catch (const json::type_error& e) {
    throw UsageError(fmt::format("write_safetensors {}: names must be valid UTF-8 ({})", path, e.what()));
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t length = text.size();

  support::AtomicFile out(path);
  out.write({reinterpret_cast<const char*>(&length), 8});
  out.write(text);
  for (const TensorToWrite* t : order) {
    if (!t->raw.empty() || t->dtype == DType::I32 || t->dtype == DType::U32) {
      out.write(t->raw);
      continue;
    }
    if (t->dtype == DType::F32) {
      out.write({reinterpret_cast<const char*>(t->data.data()), t->data.size() * 4});
      continue;
    }
    const auto bits = t->dtype == DType::F16 ? floats_to_half(t->data) : floats_to_bf16(t->data);
    out.write({reinterpret_cast<const char*>(bits.data()), bits.size() * 2});
  }
  out.commit();
}

std::vector<LinearLayerRef> find_linear_layers(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec, ignored;
  std::vector<std::string> files;
  if (fs::is_regular_file(path, ignored)) {
    files.push_back(path);  // one file: its siblings are not read (a damaged one must not fail it)
  } else {
    // is_regular_file follows symlinks: a Hugging Face cache snapshot links its shards to blobs.
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".safetensors" && it->is_regular_file(ignored))
        files.push_back(it->path().string());
  }
  if (files.empty())
    throw InputError(path, 0,
                     ec ? fmt::format("a checkpoint directory or .safetensors file ({})", ec.message())
                        : std::string("at least one *.safetensors file in the directory"));
  std::sort(files.begin(), files.end());
  std::vector<std::pair<size_t, LinearLayerRef>> found;  // (kind index, ref)
  for (const auto& file : files) {
    const auto st = SafetensorsFile::open(file);
    for (const auto& t : st.tensors()) {
      const auto parsed = parse_linear_name(t.name);
      if (!parsed) continue;
      if (t.shape.size() != 2)
        throw InputError(
            file, 0,
            fmt::format("a 2-D (out, in) shape for linear weight '{}', found {}", t.name, json(t.shape).dump()));
      found.push_back({parsed->second, LinearLayerRef{parsed->first, std::string(kKinds[parsed->second]), file, t}});
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::pair{a.second.layer, a.first} < std::pair{b.second.layer, b.first};
  });
  std::vector<LinearLayerRef> out;
  for (size_t i = 0; i < found.size(); ++i) {
    if (i > 0 && found[i - 1].second.layer == found[i].second.layer && found[i - 1].first == found[i].first)
      throw InputError(found[i].second.file, 0,
                       fmt::format("each weight in one shard only; '{}' is also in {}", found[i].second.info.name,
                                   found[i - 1].second.file));
    out.push_back(std::move(found[i].second));
  }
  return out;
}

}  // namespace dbsparse

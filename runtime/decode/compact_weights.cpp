// Compact pruned weights in a safetensors file (include/dbsparse/compact_weights.hpp).
#include "dbsparse/compact_weights.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/safetensors.hpp"

namespace dbsparse {
namespace {

int32_t strips_of(int32_t rows) { return (rows + kBitmapStripRows - 1) / kBitmapStripRows; }

// word_off from the masks: each word's first value within its segment.
void fill_word_offsets(ColumnBitmapMatrix<uint16_t>& m) {
  m.word_off.assign(m.masks.size(), 0);
  for (size_t seg = 0; seg + 1 < m.seg_ptr.size(); ++seg) {
    int32_t at = 0;
    for (size_t w = 0; w < 32; ++w) {
      m.word_off[seg * 32 + w] = static_cast<uint16_t>(at);
      at += std::popcount(m.masks[seg * 32 + w]);
    }
  }
}

template <class T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// "ROWSxCOLS" -> (rows, cols); false when it is not two non-negative int32s.
bool parse_shape(const std::string& s, int32_t& rows, int32_t& cols) {
  const auto x = s.find('x');
  if (x == std::string::npos) return false;
  const char* b = s.data();
  auto r1 = std::from_chars(b, b + x, rows);
  auto r2 = std::from_chars(b + x + 1, b + s.size(), cols);
  return r1.ec == std::errc() && r1.ptr == b + x && r2.ec == std::errc() && r2.ptr == b + s.size() && rows >= 0 &&
         cols >= 0;
}

}  // namespace

int64_t CompactLayer::file_bytes() const {
  return static_cast<int64_t>(w.masks.size() * 4 + w.seg_ptr.size() * 4 + w.values.size() * 2);
}

CompactLayer make_compact_layer(std::string name, const CsrMatrix<float>& pruned, DecodeDtype dtype) {
  if (dtype != DecodeDtype::F16 && dtype != DecodeDtype::BF16)
    throw UsageError(
        fmt::format("make_compact_layer {}: values are stored as f16 or bf16, not {}", name, to_string(dtype)));
  if (dtype == DecodeDtype::F16) {
    // f16 tops out at 65504: a larger kept weight would become +-inf, silently.
    const auto big =
        std::find_if(pruned.values.begin(), pruned.values.end(), [](float v) { return !(std::fabs(v) <= 65504.0f); });
    if (big != pruned.values.end())
      throw UsageError(
          fmt::format("make_compact_layer {}: weight {} does not fit in f16 (|w| <= 65504); store bf16 "
                      "values (--dtype bf16) instead",
                      name, *big));
  }
  ColumnBitmapMatrix<float> f = csr_to_column_bitmap(pruned);
  CompactLayer l;
  l.name = std::move(name);
  l.dtype = dtype;
  l.w.rows = f.rows;
  l.w.cols = f.cols;
  l.w.strips = f.strips;
  l.w.masks = std::move(f.masks);
  l.w.seg_ptr = std::move(f.seg_ptr);
  l.w.word_off = std::move(f.word_off);
  l.w.values = dtype == DecodeDtype::F16 ? floats_to_half(f.values) : floats_to_bf16(f.values);
  return l;
}

void write_compact_weights(const std::string& path, const std::vector<CompactLayer>& layers,
                           std::map<std::string, std::string> metadata) {
  std::vector<TensorToWrite> tensors;
  metadata["format"] = kCompactWeightsFormat;
  for (const auto& l : layers) {
    const std::string key = l.name + ".shape";
    if (metadata.count(key))
      throw UsageError(fmt::format("write_compact_weights {}: layer '{}' given twice", path, l.name));
    metadata[key] = fmt::format("{}x{}", l.w.rows, l.w.cols);
    tensors.push_back(
        {l.name + ".masks", DType::U32, {static_cast<int64_t>(l.w.masks.size())}, {}, bytes_of(l.w.masks)});
    tensors.push_back(
        {l.name + ".seg_ptr", DType::I32, {static_cast<int64_t>(l.w.seg_ptr.size())}, {}, bytes_of(l.w.seg_ptr)});
    tensors.push_back({l.name + ".values",
                       l.dtype == DecodeDtype::BF16 ? DType::BF16 : DType::F16,
                       {static_cast<int64_t>(l.w.values.size())},
                       {},
                       bytes_of(l.w.values)});
  }
  write_safetensors(path, tensors, metadata);
}

std::vector<CompactLayer> read_compact_weights(const std::string& path) {
  const SafetensorsFile f = SafetensorsFile::open(path);
  const auto& meta = f.metadata();
  const auto fmt_it = meta.find("format");
  if (fmt_it == meta.end() || fmt_it->second != kCompactWeightsFormat)
    throw InputError(path, 0,
                     fmt::format("metadata \"format\": \"{}\" (found {}): a file written by `dbsparse prune`",
                                 kCompactWeightsFormat, fmt_it == meta.end() ? "none" : "\"" + fmt_it->second + "\""));
  std::vector<CompactLayer> out;
  for (const auto& [key, value] : meta) {
    if (key.size() < 7 || key.compare(key.size() - 6, 6, ".shape") != 0) continue;
    CompactLayer l;
    l.name = key.substr(0, key.size() - 6);
    const auto bad = [&](const std::string& what) {
      return InputError(path, 0, fmt::format("layer {}: {}", l.name, what));
    };
    if (!parse_shape(value, l.w.rows, l.w.cols))
      throw bad(fmt::format("metadata {} as ROWSxCOLS (found \"{}\")", key, value));
    l.w.strips = strips_of(l.w.rows);
    const int64_t segs = int64_t{l.w.cols} * l.w.strips;
    const auto expect = [&](const std::string& tensor, std::initializer_list<DType> dtypes, int64_t elements) {
      const TensorInfo& t = f.info(tensor);  // InputError naming the missing tensor
      if (std::find(dtypes.begin(), dtypes.end(), t.dtype) == dtypes.end())
        throw bad(
            fmt::format("tensor {} of dtype {} (found {})", tensor, to_string(*dtypes.begin()), to_string(t.dtype)));
      if (elements >= 0 && t.elements() != elements)
        throw bad(
            fmt::format("tensor {} of {} elements for a {} layer (found {})", tensor, elements, value, t.elements()));
      return t;
    };
    expect(l.name + ".masks", {DType::U32}, segs * 32);
    expect(l.name + ".seg_ptr", {DType::I32}, segs + 1);
    const TensorInfo vt = expect(l.name + ".values", {DType::F16, DType::BF16}, -1);
    l.dtype = vt.dtype == DType::BF16 ? DecodeDtype::BF16 : DecodeDtype::F16;
    l.w.masks = f.read_raw32(l.name + ".masks");
    const auto sp = f.read_raw32(l.name + ".seg_ptr");
    l.w.seg_ptr.assign(sp.begin(), sp.end());
    l.w.values = f.read_raw16(l.name + ".values");
    try {
      check_compact_layer(l);
    } catch (const UsageError& e) {
      throw InputError(path, 0, e.what());
    }
    out.push_back(std::move(l));
  }
  if (out.empty()) throw InputError(path, 0, "at least one layer (metadata NAME.shape)");
  return out;
}

void check_compact_layer(CompactLayer& l) {
  const auto bad = [&](const std::string& what) { return UsageError(fmt::format("layer {}: {}", l.name, what)); };
  if (l.w.rows < 0 || l.w.cols < 0) throw bad(fmt::format("shape {}x{}", l.w.rows, l.w.cols));
  l.w.strips = strips_of(l.w.rows);
  const int64_t segs = int64_t{l.w.cols} * l.w.strips;
  if (static_cast<int64_t>(l.w.masks.size()) != segs * 32)
    throw bad(fmt::format("{}.masks of {} words for a {}x{} layer (found {})", l.name, segs * 32, l.w.rows, l.w.cols,
                          l.w.masks.size()));
  if (static_cast<int64_t>(l.w.seg_ptr.size()) != segs + 1)
    throw bad(fmt::format("{}.seg_ptr of {} entries (found {})", l.name, segs + 1, l.w.seg_ptr.size()));
  // The offsets must be the running count of the mask bits, and no bit may name a row past the last.
  if (l.w.seg_ptr[0] != 0) throw bad(fmt::format("{}.seg_ptr[0] = 0 (found {})", l.name, l.w.seg_ptr[0]));
  const int32_t tail_rows = l.w.rows - (l.w.strips - 1) * kBitmapStripRows;
  for (int64_t seg = 0; seg < segs; ++seg) {
    int64_t bits = 0;
    const bool last_strip = seg % l.w.strips == l.w.strips - 1;
    for (int w = 0; w < 32; ++w) {
      uint32_t m = l.w.masks[static_cast<size_t>(seg * 32 + w)];
      bits += std::popcount(m);
      if (last_strip) {
        const int32_t first_row = 32 * w;  // within the strip
        const uint32_t allowed = first_row >= tail_rows        ? 0u
                                 : tail_rows - first_row >= 32 ? ~0u
                                                               : (1u << (tail_rows - first_row)) - 1u;
        if (m & ~allowed)
          throw bad(fmt::format("{}.masks: segment {} word {} sets a bit past row {}", l.name, seg, w, l.w.rows - 1));
      }
    }
    const int64_t len = int64_t{l.w.seg_ptr[static_cast<size_t>(seg + 1)]} - l.w.seg_ptr[static_cast<size_t>(seg)];
    if (len != bits)
      throw bad(fmt::format("{}.seg_ptr[{}] - seg_ptr[{}] = {}, the bits set in segment {} (found {})", l.name, seg + 1,
                            seg, bits, seg, len));
  }
  if (static_cast<size_t>(l.w.seg_ptr.back()) != l.w.values.size())
    throw bad(fmt::format("{}.values of {} elements, the bits set (found {})", l.name, l.w.seg_ptr.back(),
                          l.w.values.size()));
  fill_word_offsets(l.w);
}

CsrMatrix<float> compact_to_csr(const CompactLayer& layer) {
  ColumnBitmapMatrix<float> f;
  f.rows = layer.w.rows;
  f.cols = layer.w.cols;
  f.strips = layer.w.strips;
  f.masks = layer.w.masks;
  f.seg_ptr = layer.w.seg_ptr;
  f.word_off = layer.w.word_off;
  f.values = layer.dtype == DecodeDtype::F16 ? half_to_floats(layer.w.values) : bf16_to_floats(layer.w.values);
  return column_bitmap_to_csr(f);
}

}  // namespace dbsparse

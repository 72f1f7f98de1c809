#pragma once
// The safetensors format (huggingface/safetensors), which LLM checkpoints are shipped in:
// 8 bytes little-endian header length N, N bytes of JSON describing each tensor (dtype, shape,
// data_offsets [begin, end) relative to the data buffer) and an optional "__metadata__" object of
// strings, then the data buffer. The float types that sparse decoding consumes are supported, and
// I32 / U32 for the index arrays of compact weights (compact_weights.hpp).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dbsparse {

enum class DType { F16, BF16, F32, I32, U32 };

std::string_view to_string(DType t);  // "F16", "BF16", "F32", "I32", "U32" as the header spells them
int64_t dtype_bytes(DType t);

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t offset = 0, bytes = 0;  // within the data buffer
  int64_t elements() const;       // product of the shape (1 for a scalar)
};

// The header is read and checked once by open(); tensor data is read on request, so opening a
// multi-gigabyte shard to list its tensors costs one small read.
// Every problem with the file is an InputError naming the path and the byte offset concerned.
class SafetensorsFile {
 public:
  // Rejects: a file too short for the length field, a header running past the end, JSON that does
  // not parse or has the wrong shape, a dtype other than F16/BF16/F32/I32/U32 (naming tensor and dtype),
  // data_offsets past the buffer or not matching shape * dtype size, and tensors that overlap.
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // sorted by name
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(const std::string& name) const;
  // InputError naming the file and the missing tensor, with up to three close names.
  const TensorInfo& info(const std::string& name) const;

  std::vector<float> read_f32(const std::string& name) const;  // F16/BF16/F32, converted; UsageError for I32/U32
  // F16/BF16 bits as stored; UsageError for an F32 tensor (its bits do not fit).
  std::vector<uint16_t> read_raw16(const std::string& name) const;
  // I32/U32/F32 bits as stored; UsageError for a 16-bit tensor.
  std::vector<uint32_t> read_raw32(const std::string& name) const;

 private:
  const TensorInfo* find(const std::string& name) const;  // null when absent
  std::string read_bytes(const TensorInfo& t) const;

  std::string path_;
  int64_t data_start_ = 0;  // 8 + N
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

struct TensorToWrite {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<float> data;  // converted to dtype (round to nearest even) when written
  // Or the stored bytes as they are (shape's elements x the dtype's size), with data empty: how
  // I32 and U32 tensors are given, and 16-bit values already rounded.
  std::string raw;
};

// Writes atomically: readers see the old file or the whole new one (support/atomic_file.hpp).
// Tensors are stored in name order; the header is padded with spaces to a multiple of 8 bytes, as
// the reference writer does, so the data buffer stays aligned. UsageError for an empty, duplicate
// or reserved ("__metadata__") name and for data whose size does not match the shape.
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// A linear layer of a Llama/Qwen-style checkpoint: "model.layers.N.self_attn.{q,k,v,o}_proj.weight"
// and "model.layers.N.mlp.{gate,up,down}_proj.weight"; kind is "q".."down".
struct LinearLayerRef {
  int layer = 0;
  std::string kind;
  std::string file;
  TensorInfo info;
};

// The linear weights of one .safetensors file, or of every *.safetensors file in a directory (not
// its subdirectories; a sharded model has several), sorted by layer, then q, k, v, o, gate, up,
// down. InputError when a directory has no such file, when a linear weight is not 2-D, or when two
// shards hold the same weight.
std::vector<LinearLayerRef> find_linear_layers(const std::string& path);

}  // namespace dbsparse

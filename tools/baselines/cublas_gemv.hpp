#pragma once
// Dense batch-1 linear layers through cuBLAS (cublasGemmEx, fp32 accumulation): the baseline of
// `dbsparse decode-bench`, what an inference engine runs for an unpruned layer.
#include <cstdint>
#include <memory>
#include <string>

namespace dbsparse::tools {

enum class DenseType { F16, BF16, F32 };
const char* to_string(DenseType t);
DenseType dense_type_from_string(const std::string& s);  // "f16", "bf16", "f32"; UsageError otherwise
int dense_type_bytes(DenseType t);

class CublasGemv {
 public:
  explicit CublasGemv(void* stream);  // a handle bound to the stream
  ~CublasGemv();
  CublasGemv(const CublasGemv&) = delete;
  CublasGemv& operator=(const CublasGemv&) = delete;
  // y (rows) = W (rows x cols, row-major, as PyTorch's Linear.weight) · x (cols); device pointers of type t.
  // batch > 1: that many rows of x (cols apart) into as many rows of y (rows apart), one GEMM.
  void run(DenseType t, int32_t rows, int32_t cols, uint64_t w, uint64_t x, uint64_t y, int batch = 1);

 private:
  void* handle_ = nullptr;
};

}  // namespace dbsparse::tools

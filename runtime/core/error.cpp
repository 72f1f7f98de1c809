#include "dbsparse/error.hpp"

#include <fmt/format.h>

namespace dbsparse {

InputError::InputError(std::string file, long line, std::string expected)
    : Error(line > 0 ? fmt::format("{}:{}: expected {}", file, line, expected)
                     : fmt::format("{}: expected {}", file, expected)),
      file_(std::move(file)),
      line_(line),
      expected_(std::move(expected)) {}

CompileError::CompileError(std::string key, std::string options, std::string log, std::string source_path)
    : Error(fmt::format("NVRTC failed to compile kernel '{}' (options: {}); source written to {}\n{}", key, options,
                        source_path, log)),
      key_(std::move(key)),
      options_(std::move(options)),
      log_(std::move(log)),
      source_path_(std::move(source_path)) {}

CudaError::CudaError(std::string call, int result, std::string result_name)
    : Error(fmt::format("CUDA driver call {} failed: {} ({})", call, result_name, result)),
      call_(std::move(call)),
      result_(result) {}

namespace {
std::string oom_message(const std::string& what, long long needed, long long free, long long total) {
  const std::string need =
      needed > 0 ? fmt::format("needs {} bytes ({:.2f} GB)", needed, needed / 1e9) : std::string("was refused memory");
  return fmt::format("device out of memory: {} {}; {} bytes ({:.2f} GB) of the device's {:.2f} GB are free", what, need,
                     free, free / 1e9, total / 1e9);
}
}  // namespace

// CUDA_ERROR_OUT_OF_MEMORY is 2 (cuda.h; this file is built without it).
DeviceOutOfMemory::DeviceOutOfMemory(std::string what, long long needed_bytes, long long free_bytes,
                                     long long total_bytes)
    : CudaError(Message{oom_message(what, needed_bytes, free_bytes, total_bytes)}, what, 2),
      what_(std::move(what)),
      needed_(needed_bytes),
      free_(free_bytes),
      total_(total_bytes) {}

CudaError::CudaError(Message message, std::string call, int result)
    : Error(message.text), call_(std::move(call)), result_(result) {}

HostMemoryError::HostMemoryError(std::string what, double needed_bytes, double host_bytes)
    : Error(fmt::format("{} needs {:.1f} GB of host memory; this host has {:.1f} GB", what, needed_bytes / 1e9,
                        host_bytes / 1e9)),
      what_(std::move(what)),
      needed_(needed_bytes),
      host_(host_bytes) {}

}  // namespace dbsparse

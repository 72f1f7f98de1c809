#pragma once
// One exception root. Each kind carries the context a user needs to act on it (docs/DESIGN.md §8).
#include <stdexcept>
#include <string>

namespace dbsparse {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Bad input: names the file, the line (0 when the problem is not tied to one) and what was expected.
class InputError : public Error {
 public:
  InputError(std::string file, long line, std::string expected);
  const std::string& file() const { return file_; }
  long line() const { return line_; }
  const std::string& expected() const { return expected_; }

 private:
  std::string file_;
  long line_;
  std::string expected_;
};

// NVRTC refused a generated kernel. The failing source is dumped to source_path() for a human.
class CompileError : public Error {
 public:
  CompileError(std::string key, std::string options, std::string log, std::string source_path);
  const std::string& key() const { return key_; }
  const std::string& options() const { return options_; }
  const std::string& log() const { return log_; }
  const std::string& source_path() const { return source_path_; }

 private:
  std::string key_, options_, log_, source_path_;
};

// A driver API call failed: names the call and the CUresult (number and name).
class CudaError : public Error {
 public:
  CudaError(std::string call, int result, std::string result_name);
  const std::string& call() const { return call_; }
  int result() const { return result_; }

 protected:
  struct Message {
    std::string text;  // the whole what(), for a kind that words its own
  };
  CudaError(Message message, std::string call, int result);

 private:
  std::string call_;
  int result_;
};

// The device has too little free memory for an allocation, or a plan's estimate of its peak:
// names what needed it, the bytes needed (0 where the driver refused a call that names no size)
// and the bytes free and in all at that moment. A CudaError with CUDA_ERROR_OUT_OF_MEMORY, so
// code that catches that still does; nothing is left allocated by the plan that threw, and the
// context stays usable.
class DeviceOutOfMemory : public CudaError {
 public:
  DeviceOutOfMemory(std::string what, long long needed_bytes, long long free_bytes, long long total_bytes);
  const std::string& what_needs() const { return what_; }
  long long needed_bytes() const { return needed_; }
  long long free_bytes() const { return free_; }
  long long total_bytes() const { return total_; }

 private:
  std::string what_;
  long long needed_, free_, total_;
};

// A GPU was needed but there is no driver or no device. Everything CPU-side still works.
class NoDeviceError : public Error {
 public:
  explicit NoDeviceError(const std::string& why) : Error("no CUDA device: " + why) {}
};

// The tuning database could not be used (not for lookups, which fall back to defaults).
class DbError : public Error {
 public:
  explicit DbError(const std::string& what) : Error("tuning db: " + what) {}
};

// The host cannot hold what an input asks for (checked before allocating, against the host's
// physical memory or DBSPARSE_HOST_MEMORY): names what, the bytes needed and the bytes there are.
// Readers catch it and name the file and line (InputError).
class HostMemoryError : public Error {
 public:
  HostMemoryError(std::string what, double needed_bytes, double host_bytes);
  const std::string& what_needs() const { return what_; }
  double needed_bytes() const { return needed_; }
  double host_bytes() const { return host_; }

 private:
  std::string what_;
  double needed_, host_;
};

// Misuse of the API: wrong sizes, a plan run with buffers of the wrong length, and so on.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what) {}
};

}  // namespace dbsparse

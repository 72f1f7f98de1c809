#pragma once
// Replacing a file so that readers (other processes, or this one after a crash) see either the old
// content or the whole new content, never a torn file (docs/DESIGN.md §4). Every writer of a file that
// another process may read at the same time goes through here.
#include <filesystem>
#include <string_view>

namespace dbsparse::support {

// A temp file beside the target, renamed over it by commit(). Without commit() (an exception in the
// caller, say) the destructor removes the temp file and the target is untouched.
// A target that exists and is not a regular file (/dev/stdout, /dev/null, a FIFO) is written
// through, never replaced: a rename would put a file where the device node was (as root, over
// /dev/null itself). A directory is an error.
// Every failure throws InputError naming the target and the errno text.
class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path target);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view bytes);
  // fsync, rename over the target, fsync the directory: after it returns the new content survives
  // a power loss, not only a process crash.
  void commit();

  const std::filesystem::path& target() const { return target_; }
  const std::filesystem::path& temp_path() const { return temp_; }

 private:
  [[noreturn]] void fail(const char* step, int err);

  std::filesystem::path target_, temp_;
  int fd_ = -1;
  bool committed_ = false;
  bool direct_ = false;  // writing through to a device or FIFO, no temp file
};

// The whole content at once.
void write_file_atomic(const std::filesystem::path& target, std::string_view bytes);

}  // namespace dbsparse::support

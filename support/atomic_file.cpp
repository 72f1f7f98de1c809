#include "support/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "dbsparse/error.hpp"

namespace dbsparse::support {
namespace fs = std::filesystem;
namespace {

fs::path directory_of(const fs::path& target) {
  return target.has_parent_path() ? target.parent_path() : fs::path(".");
}

}  // namespace

AtomicFile::AtomicFile(fs::path target) : target_(std::move(target)) {
  // Same directory, so the rename stays on one filesystem and is atomic. pid + counter keep
  // concurrent writers (processes and threads) apart; O_EXCL makes a clash retry, never share.
  // open() rather than mkstemp() so the file gets the usual umask permissions, not 0600.
  static std::atomic<unsigned long> counter{0};
  struct stat st {};
  if (::stat(target_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) fail("write it: it is a directory", EISDIR);
    // O_NONBLOCK: a FIFO with no reader is ENXIO at once instead of a wait for ever (a FIFO
    // planted in the kernel cache hung precompile); then blocking writes as for any file.
    fd_ = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) fail("open it for writing", errno);
    const int fl = ::fcntl(fd_, F_GETFL);
    if (fl < 0 || ::fcntl(fd_, F_SETFL, fl & ~O_NONBLOCK) < 0) fail("open it for writing", errno);
    direct_ = true;
    return;
  }
  const fs::path dir = directory_of(target_);
  const std::string name = target_.filename().string();
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp_ = dir / fmt::format(".{}.tmp-{}-{}", name, ::getpid(), counter++);
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0 || errno != EEXIST) break;
  }
  if (fd_ < 0) {
    const int err = errno;
    temp_.clear();  // nothing of ours to remove
    fail("create a temp file", err);
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::fail(const char* step, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
  throw InputError(target_.string(), 0,
                   fmt::format("a writable location (could not {}: {})", step, std::strerror(err)));
}

void AtomicFile::write(std::string_view bytes) {
  if (fd_ < 0) throw UsageError("AtomicFile::write after commit or failure: " + target_.string());
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", errno);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw UsageError("AtomicFile::commit twice or after a failure: " + target_.string());
  if (direct_) {  // a device or FIFO: nothing to fsync or rename; close() reports a deferred error
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("close", errno);
    committed_ = true;
    return;
  }
  if (::fsync(fd_) != 0) fail("fsync", errno);
  const int fd = fd_;
  fd_ = -1;
  // close() can report a deferred write error (NFS): a failure here means the content is not safe.
  if (::close(fd) != 0) fail("close", errno);
  if (::rename(temp_.c_str(), target_.c_str()) != 0) fail("rename the temp file over it", errno);
  committed_ = true;
  temp_.clear();
  // The rename is durable only once the directory entry is: fsync the directory. The new content
  // is already in place, so a failure here is reported but leaves it. EINVAL is a filesystem that
  // cannot sync directories at all; there is nothing more to do there, so it is not a failure.
  const fs::path dir = directory_of(target_);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) fail("open its directory to fsync it", errno);
  const bool synced = ::fsync(dfd) == 0 || errno == EINVAL;
  const int err = errno;
  ::close(dfd);
  if (!synced) fail("fsync its directory", err);
}

void write_file_atomic(const fs::path& target, std::string_view bytes) {
  AtomicFile f(target);
  f.write(bytes);
  f.commit();
}

}  // namespace dbsparse::support

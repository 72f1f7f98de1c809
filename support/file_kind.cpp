#include "support/file_kind.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace dbsparse {

std::optional<std::string> not_a_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;  // the reader reports a missing file its own way
    if (errno == ELOOP) return std::string("a symlink loop");
    return "unreadable (" + std::string(std::strerror(errno)) + ")";
  }
  if (S_ISREG(st.st_mode)) return std::nullopt;
  if (S_ISDIR(st.st_mode)) return std::string("a directory");
  if (S_ISFIFO(st.st_mode)) return std::string("a FIFO");
  if (S_ISCHR(st.st_mode)) return std::string("a character device");
  if (S_ISBLK(st.st_mode)) return std::string("a block device");
  if (S_ISSOCK(st.st_mode)) return std::string("a socket");
  return std::string("not a regular file");
}

}  // namespace dbsparse

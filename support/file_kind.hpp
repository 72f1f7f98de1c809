#pragma once
// What a path is, before a reader opens it: opening a FIFO for reading blocks until a writer
// comes, and a directory or device opens but reads as garbage or errors that name neither.
#include <optional>
#include <string>

namespace dbsparse {

// Null when `path` is a regular file (symlinks followed) or does not exist; else what it is: "a
// directory", "a FIFO", "a character device", "a block device", "a socket", "a symlink loop" or
// "unreadable (<reason>)", for a message such as "expected a regular file, found a FIFO".
std::optional<std::string> not_a_regular_file(const std::string& path);

}  // namespace dbsparse

#pragma once
// Reading and writing user files. Every failure is an exception whose text
// names the file, so the CLI can print it and exit 2.
#include <stdexcept>
#include <string>

namespace npufuse {

class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads a whole regular file. Throws FileError for a missing file, a
// directory, or an unreadable file; `limit` bytes at most (0 = no limit).
std::string read_file(const std::string& path, size_t limit = 0);

// Writes `data` to `path` atomically: a temporary file in the same directory,
// flushed, then renamed over the target.
void write_file_atomic(const std::string& path, const std::string& data);

}  // namespace npufuse

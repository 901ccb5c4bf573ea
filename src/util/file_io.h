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

// How far a write is pushed before it counts as done. ToDisk (fsync) is
// for files a user cannot make again, such as their own source. Regenerable
// outputs written by the thousand (a tree scan's plans and cache entries)
// skip it: the rename still means a reader never sees a half-written file,
// and a flush per file would cost more than the analysis.
enum class Flush { ToDisk, RenameOnly };

// Writes `data` to `path` atomically: a temporary file in the same directory,
// flushed as `flush` says, then renamed over the target.
void write_file_atomic(const std::string& path, const std::string& data, Flush flush = Flush::ToDisk);

// Creates folder `dir`, and the folders above it, where missing: an output
// folder a user names (`--out DIR`). Throws FileError naming the folder when
// that fails (a file in the way, no permission).
void make_directories(const std::string& dir);

// The folder an output file goes in (`-o out/plan.json`), made where missing
// as make_directories does; nothing for a file in the current folder.
void make_parent_directories(const std::string& file);

}  // namespace npufuse

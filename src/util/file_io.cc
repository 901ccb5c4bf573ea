#include "util/file_io.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace npufuse {

std::string read_file(const std::string& path, size_t limit) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw FileError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) throw FileError(fmt::format("{}: is a directory, not a file", path));
  if (!S_ISREG(st.st_mode)) throw FileError(fmt::format("{}: not a regular file", path));
  if (limit != 0 && static_cast<size_t>(st.st_size) > limit)
    throw FileError(fmt::format("{}: file is too large ({} bytes, limit {})", path, st.st_size, limit));
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw FileError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::string data;
  data.resize(static_cast<size_t>(st.st_size));
  size_t got = data.empty() ? 0 : std::fread(data.data(), 1, data.size(), f);
  bool bad = std::ferror(f);
  std::fclose(f);
  if (bad) throw FileError(fmt::format("{}: read error", path));
  data.resize(got);
  return data;
}

namespace {

mode_t file_mode_for(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return st.st_mode & 07777;
  // umask can only be read by setting it, which is process-wide: it is read
  // once (thread-safe static), so the short window with umask 0 happens at
  // most once per process; mkstemp's explicit 0600 is not affected by it.
  static const mode_t mask = [] {
    mode_t m = ::umask(0);
    ::umask(m);
    return m;
  }();
  return static_cast<mode_t>(0666 & ~mask);
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& data, Flush flush) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / (".npufuse-tmp-" + target.filename().string() + ".XXXXXX")).string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw FileError(fmt::format("{}: cannot create temporary file: {}", path, std::strerror(errno)));
  // mkstemp creates the file 0600. The result keeps the mode of the file it
  // replaces (a user's model source), or gets the mode a plain create would
  // give under the process's umask.
  ::fchmod(fd, file_mode_for(path));
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmpl.c_str());
      throw FileError(fmt::format("{}: write failed: {}", path, std::strerror(err)));
    }
    off += static_cast<size_t>(n);
  }
  if ((flush == Flush::ToDisk && ::fsync(fd) != 0) || ::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    throw FileError(fmt::format("{}: cannot flush: {}", path, std::strerror(errno)));
  }
  if (std::rename(tmpl.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmpl.c_str());
    throw FileError(fmt::format("{}: cannot replace: {}", path, std::strerror(err)));
  }
}

void make_directories(const std::string& dir) {
  namespace fs = std::filesystem;
  if (dir.empty()) return;
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return;
  fs::create_directories(dir, ec);
  if (ec) throw FileError(fmt::format("{}: cannot create directory: {}", dir, ec.message()));
  if (!fs::is_directory(dir, ec)) throw FileError(fmt::format("{}: cannot create directory: a file is in the way", dir));
}

void make_parent_directories(const std::string& file) {
  std::filesystem::path parent = std::filesystem::path(file).parent_path();
  if (!parent.empty()) make_directories(parent.string());
}

}  // namespace npufuse

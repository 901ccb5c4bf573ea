// Patched files and reports written atomically keep the mode a user expects:
// the replaced file's mode, or the umask's default for a new file (the
// temporary file behind the atomic write is created 0600).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "util/file_io.h"

namespace {

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0);
  return st.st_mode & 07777;
}

std::string temp_dir() {
  std::string t = (std::filesystem::temp_directory_path() / "npufuse_mode_XXXXXX").string();
  EXPECT_NE(::mkdtemp(t.data()), nullptr);
  return t;
}

TEST(AtomicWrite, ReplacedFileKeepsItsMode) {
  std::string dir = temp_dir();
  std::string path = dir + "/model.py";
  npufuse::write_file_atomic(path, "x = 1\n");
  ::chmod(path.c_str(), 0754);
  npufuse::write_file_atomic(path, "x = 2\n");
  EXPECT_EQ(mode_of(path), 0754u);
  EXPECT_EQ(npufuse::read_file(path), "x = 2\n");
  std::filesystem::remove_all(dir);
}

TEST(AtomicWrite, NewFileGetsTheUmaskDefault) {
  std::string dir = temp_dir();
  mode_t mask = ::umask(022);
  std::string path = dir + "/plan.md";
  npufuse::write_file_atomic(path, "# plan\n");
  ::umask(mask);
  // The umask is read once per process; 022 is the usual one, and whatever
  // it is, group/other read is not withheld by the temporary file's 0600.
  EXPECT_NE(mode_of(path), 0600u);
  std::filesystem::remove_all(dir);
}

}  // namespace

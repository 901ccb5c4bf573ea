// `npufuse parse FILE...` parses the files on several threads; what it prints
// must come out in the order the files were given, stdout and stderr alike,
// and be the same whatever the number of threads.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct CliRun {
  int status = -1;
  std::string out;
};

// Runs npufuse with `redirect` appended ("2>&1", "2>/dev/null", ...).
CliRun npufuse(const std::string& args, const std::string& redirect) {
  std::string command = std::string("'") + NPUFUSE_BINARY + "' " + args + " " + redirect;
  CliRun r;
  std::FILE* pipe = ::popen(command.c_str(), "r");
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Files of very different sizes, every fifth one broken, so that with
// several threads later files finish before earlier ones.
class ParseFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("npufuse_parse_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    for (int i = 0; i < 60; ++i) {
      fs::path p = dir_ / ("f" + std::to_string(100 + i) + ".py");
      std::ofstream out(p);
      int repeat = (i % 7 == 0) ? 4000 : 1 + i % 3;  // a few large files among small ones
      for (int k = 0; k < repeat; ++k) out << "def f" << k << "(x):\n    return [x * " << k << " for _ in range(3)]\n";
      if (i % 5 == 3) out << "def broken(:\n";
      paths_.push_back(p.string());
      args_ += " '" + p.string() + "'";
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::vector<std::string> paths_;
  std::string args_;
};

TEST_F(ParseFiles, SummaryLinesAndErrorsComeInInputOrder) {
  CliRun r = npufuse("parse --jobs 4" + args_, "2>&1");
  EXPECT_EQ(r.status, 1);  // some of several files failed
  std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), paths_.size()) << r.out;
  for (size_t i = 0; i < paths_.size(); ++i) {
    bool broken = i % 5 == 3;
    // A summary line "FILE: N statements, ..." or an error "FILE:LINE:COL: message",
    // interleaved on one stream exactly in the order of the files.
    EXPECT_EQ(lines[i].rfind(paths_[i] + ":", 0), 0u) << "line " << i << ": " << lines[i];
    EXPECT_EQ(lines[i].find(" statements, ") != std::string::npos, !broken) << lines[i];
  }
}

TEST_F(ParseFiles, OutputDoesNotDependOnTheNumberOfThreads) {
  for (const char* mode : {"", "--dump-ast", "--dump-ast --null-separated"}) {
    CliRun one = npufuse(std::string("parse ") + mode + " --jobs 1" + args_, "2>&1");
    CliRun many = npufuse(std::string("parse ") + mode + " --jobs 8" + args_, "2>&1");
    CliRun all = npufuse(std::string("parse ") + mode + args_, "2>&1");
    EXPECT_EQ(one.status, many.status) << mode;
    EXPECT_EQ(one.out, many.out) << mode;
    EXPECT_EQ(one.out, all.out) << mode;
  }
  // With --null-separated every file has its record, errors included.
  CliRun records = npufuse("parse --dump-ast --null-separated" + args_, "2>/dev/null");
  size_t count = 0, errors = 0;
  for (size_t at = 0, end; (end = records.out.find('\0', at)) != std::string::npos; at = end + 1, ++count)
    if (records.out.compare(at, 7, "!error ") == 0) ++errors;
  EXPECT_EQ(count, paths_.size());
  EXPECT_EQ(errors, 12u);
}

TEST_F(ParseFiles, OneBrokenFileIsAUsageErrorNamingItsPlace) {
  CliRun r = npufuse("parse '" + paths_[3] + "'", "2>&1");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find(paths_[3] + ":"), std::string::npos) << r.out;
  CliRun quiet = npufuse("parse --quiet" + args_, "2>/dev/null");
  EXPECT_EQ(quiet.status, 1);
  EXPECT_EQ(quiet.out, "");
}

}  // namespace

#pragma once
// Golden-output tests of the CLI: run `npufuse <subcommand> <args>` in the
// source directory and record the command, its stdout, its stderr and its
// exit status as one text; compare that with a golden file, or rewrite the
// file when NPUFUSE_UPDATE_GOLDENS=1. The test binary defines
// NPUFUSE_SOURCE_DIR and NPUFUSE_BINARY.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace npufuse::testing {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `env` is prepended to the command ("NAME=value ", or empty); `case_name`
// keeps the stderr file of parallel cases apart.
inline std::string run_cli_case(const std::string& subcommand, const std::string& args, const std::string& env,
                                const std::string& case_name) {
  std::string err = (std::filesystem::temp_directory_path() / ("npufuse_" + subcommand + "_golden_" + case_name + ".err"))
                        .string();
  std::string command = std::string("cd '") + NPUFUSE_SOURCE_DIR + "' && " + env + "'" + NPUFUSE_BINARY + "' " +
                        subcommand + " " + args + " 2>'" + err + "'";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  int status = ::pclose(pipe);
  std::string stderr_text = slurp(err);
  std::filesystem::remove(err);
  return "$ npufuse " + subcommand + " " + args + "\n--- stdout\n" + out + "--- stderr\n" + stderr_text + "--- exit " +
         std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + "\n";
}

// Compares `actual` with the golden file at `path`, or rewrites it (and
// skips the test) when NPUFUSE_UPDATE_GOLDENS=1.
inline void expect_golden(const std::string& path, const std::string& actual) {
  const char* update = std::getenv("NPUFUSE_UPDATE_GOLDENS");
  if (update && std::string(update) == "1") {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << actual;
    GTEST_SKIP() << "rewrote " << path;
  }
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing; run with NPUFUSE_UPDATE_GOLDENS=1";
  EXPECT_EQ(slurp(path), actual) << "golden " << path << " differs; if the change is intended, rerun with "
                                 << "NPUFUSE_UPDATE_GOLDENS=1 and review the diff";
}

}  // namespace npufuse::testing

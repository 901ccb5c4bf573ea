#pragma once
// Runs the Python side: a program with arguments, no shell, stdout and
// stderr captured, killed when it outlives its time limit.
#include <string>
#include <vector>

namespace npufuse::verify {

struct ProcessResult {
  int exit_code = -1;      // -1 when it did not exit normally
  int signal = 0;          // the signal that ended it (9: SIGKILL, also the kernel's out-of-memory killer), else 0
  bool timed_out = false;
  std::string out, err;
  std::string start_error;  // the program could not be started
};

// The interpreter the harnesses run with: $NPUFUSE_PYTHON, else /usr/bin/python3.
std::string python_interpreter();

// argv[0] is the program path (execv, no PATH search).
ProcessResult run_process(const std::vector<std::string>& argv, int timeout_seconds, const std::string& cwd = "");

}  // namespace npufuse::verify

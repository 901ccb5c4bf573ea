// The generated harness file, the process runner and the result reader,
// with the real Python (/usr/bin/python3) where it matters.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "verify/harness_writer.h"
#include "verify/python_runner.h"
#include "verify/result_reader.h"

namespace npufuse::verify {
namespace {

namespace fs = std::filesystem;

TEST(HarnessWriter, WritesTheSpecWithTheTolerancesAndImportsTheVerifier) {
  HarnessSpec s;
  s.candidate = "norm.rms_norm@m.py:3";
  s.rule = "norm.rms_norm";
  s.dtype = "bfloat16";
  std::string text = harness_text(s, "/opt/npufuse/python");
  EXPECT_NE(text.find("sys.path.insert(0, \"/opt/npufuse/python\")"), std::string::npos);
  EXPECT_NE(text.find("from npufuse_verify import harness"), std::string::npos);
  EXPECT_NE(text.find("\"bfloat16\": {"), std::string::npos) << text;
  EXPECT_NE(text.find("\"rtol\": 0.02"), std::string::npos) << text;
}

TEST(HarnessWriter, GeneratedFileIsValidPython) {
  HarnessSpec s;
  s.candidate = "rope.rope_half@a 'quoted' path.py:9";
  s.rule = "rope.rope_half";
  fs::path file = fs::temp_directory_path() / "npufuse_harness_syntax_test.py";
  std::ofstream(file) << harness_text(s, "/nowhere");
  ProcessResult r = run_process({"/usr/bin/python3", "-m", "py_compile", file.string()}, 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  fs::remove(file);
}

TEST(PythonRunner, CapturesOutputAndExitCode) {
  ProcessResult r = run_process({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, 10);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.timed_out);
}

TEST(PythonRunner, KillsARunPastItsLimit) {
  ProcessResult r = run_process({"/bin/sleep", "20"}, 1);
  EXPECT_TRUE(r.timed_out);
  CheckResult c = read_result(r, "sleep");
  EXPECT_FALSE(c.passed);
  EXPECT_NE(c.error.find("timed out"), std::string::npos);
}

TEST(PythonRunner, MissingProgramIsAStartError) {
  ProcessResult r = run_process({"/no/such/python3"}, 5);
  EXPECT_FALSE(r.start_error.empty());
  EXPECT_NE(read_result(r, "x").error.find("could not start"), std::string::npos);
}

TEST(ResultReader, ReadsTheLastJsonLine) {
  ProcessResult p;
  p.exit_code = 0;
  p.out = "warming up\n{\"passed\": true, \"max_abs\": 0.5, \"cut\": \"function f\", \"error\": null}\n\n";
  CheckResult r = read_result(p, "h.py");
  EXPECT_TRUE(r.passed);
  EXPECT_DOUBLE_EQ(*r.number("max_abs"), 0.5);
  EXPECT_EQ(r.text("cut"), "function f");
  EXPECT_FALSE(r.number("cosine").has_value());
}

TEST(ResultReader, AnErrorInTheResultFailsIt) {
  ProcessResult p;
  p.exit_code = 0;
  p.out = "{\"passed\": true, \"error\": \"ConstraintError: head_dim 96\"}\n";
  CheckResult r = read_result(p, "h.py");
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.error, "ConstraintError: head_dim 96");
}

TEST(ResultReader, ACrashKeepsItsStderrAsEvidence) {
  ProcessResult p;
  p.exit_code = 1;
  p.out = "";
  p.err = "Traceback ...\nImportError: no torch\n";
  CheckResult r = read_result(p, "h.py");
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.error.find("ImportError: no torch"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace npufuse::verify

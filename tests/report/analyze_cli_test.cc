// `npufuse analyze` as a user runs it: exit codes, errors naming
// file:line:col, -o writing the file, each output format parsing back.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "report/plan_json.h"

namespace {

namespace fs = std::filesystem;

struct CliRun {
  int status = -1;
  std::string out, err;
};

CliRun analyze(const std::string& args) {
  fs::path err = fs::temp_directory_path() / ("npufuse_analyze_cli_" + std::to_string(::getpid()) + ".err");
  std::string command = std::string("cd '") + NPUFUSE_SOURCE_DIR + "' && '" + NPUFUSE_BINARY + "' analyze " + args +
                        " 2>'" + err.string() + "'";
  CliRun r;
  std::FILE* pipe = ::popen(command.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream in(err);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  fs::remove(err);
  return r;
}

const char* kLlama = "tests/models/llama_like/model.py --config tests/models/llama_like/config.json";

TEST(AnalyzeCli, FindingCandidatesIsNotAnError) {
  CliRun r = analyze(std::string(kLlama) + " --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  npufuse::plan::Plan plan = npufuse::report::plan_from_json(nlohmann::json::parse(r.out));
  EXPECT_FALSE(plan.candidates.empty());
  EXPECT_EQ(plan.files.size(), plan.file_hashes.size());
}

TEST(AnalyzeCli, SyntaxErrorNamesFileLineAndColumn) {
  fs::path bad = fs::temp_directory_path() / ("npufuse_bad_model_" + std::to_string(::getpid()) + ".py");
  std::ofstream(bad) << "import torch\n\ndef forward(x):\n    return x +\n";
  CliRun r = analyze(bad.string());
  fs::remove(bad);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(bad.string() + ":4:"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(AnalyzeCli, MissingFileIsAUsageError) {
  CliRun r = analyze("tests/models/no_such_model/model.py");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no_such_model"), std::string::npos) << r.err;
}

TEST(AnalyzeCli, BadFlagValuesAreRefused) {
  EXPECT_NE(analyze(std::string(kLlama) + " --format pdf").status, 0);
  EXPECT_NE(analyze(std::string(kLlama) + " --quant int3").status, 0);
  EXPECT_NE(analyze(std::string(kLlama) + " --stage training").status, 0);
}

TEST(AnalyzeCli, OutputFileHoldsWhatStdoutWouldHave) {
  fs::path out = fs::temp_directory_path() / ("npufuse_plan_" + std::to_string(::getpid()) + ".md");
  CliRun to_file = analyze(std::string(kLlama) + " -o " + out.string());
  CliRun to_stdout = analyze(kLlama);
  ASSERT_EQ(to_file.status, 0) << to_file.err;
  EXPECT_TRUE(to_file.out.empty());
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  fs::remove(out);
  EXPECT_EQ(ss.str(), to_stdout.out);
}

TEST(AnalyzeCli, SarifIsOneResultPerCandidate) {
  CliRun json = analyze(std::string(kLlama) + " --format json");
  CliRun sarif = analyze(std::string(kLlama) + " --format sarif");
  ASSERT_EQ(sarif.status, 0) << sarif.err;
  auto plan = nlohmann::json::parse(json.out);
  auto log = nlohmann::json::parse(sarif.out);
  EXPECT_EQ(log["version"], "2.1.0");
  EXPECT_EQ(log["runs"][0]["results"].size(), plan["candidates"].size());
}

TEST(AnalyzeCli, ChineseMarkdownAndTimings) {
  CliRun r = analyze(std::string(kLlama) + " --lang zh --timings");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("第三步"), std::string::npos);
  EXPECT_NE(r.err.find("total"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("catalog-read"), std::string::npos) << r.err;
}

}  // namespace

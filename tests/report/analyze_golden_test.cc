// Golden plans: `npufuse analyze` of each dense test model with its
// config.json, as JSON and as English Markdown, compared byte for byte with
// tests/data/analyze/golden/<model>.{json,md}. NPUFUSE_UPDATE_GOLDENS=1
// rewrites them instead; read the diff before committing it.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>

namespace {

struct GoldenCase {
  const char* model;
  const char* format;  // json | md
};

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.model << "." << c.format; }

const GoldenCase kCases[] = {
    {"llama_like", "json"},  {"llama_like", "md"},  {"qwen3_like", "json"},   {"qwen3_like", "md"},
    {"gemma_style", "json"}, {"gemma_style", "md"}, {"gptj_style", "json"},   {"gptj_style", "md"},
    {"vllm_style", "json"},  {"vllm_style", "md"},  {"gpt_oss_like", "json"}, {"gpt_oss_like", "md"},
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs analyze from the source directory so that the plan's paths are the
// repository-relative ones; returns stdout, and the exit status in `status`.
std::string run_analyze(const GoldenCase& c, int* status) {
  std::string model = std::string("tests/models/") + c.model;
  std::string command = std::string("cd '") + NPUFUSE_SOURCE_DIR + "' && '" + NPUFUSE_BINARY + "' analyze " + model +
                        "/model.py --config " + model + "/config.json --format " + c.format;
  std::FILE* pipe = ::popen(command.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  int raw = ::pclose(pipe);
  *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return out;
}

class AnalyzeGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(AnalyzeGoldenTest, MatchesGolden) {
  const GoldenCase& c = GetParam();
  int status = 0;
  std::string actual = run_analyze(c, &status);
  ASSERT_EQ(status, 0) << "npufuse analyze failed on " << c.model;
  std::string path = std::string(NPUFUSE_SOURCE_DIR) + "/tests/data/analyze/golden/" + c.model + "." + c.format;
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

INSTANTIATE_TEST_SUITE_P(Models, AnalyzeGoldenTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) {
                           return std::string(info.param.model) + "_" + info.param.format;
                         });

}  // namespace

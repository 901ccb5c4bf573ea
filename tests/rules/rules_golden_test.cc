// Golden outputs of `npufuse rules` against the fixture rules directory
// (tests/data/rules/), in both languages. Each golden file holds the command,
// its stdout, its stderr and its exit status.
// NPUFUSE_UPDATE_GOLDENS=1 rewrites the golden files instead of comparing.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

namespace {

struct GoldenCase {
  const char* name;
  const char* args;  // after `npufuse rules`
};

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

#define FIXTURE "--rules tests/data/rules/fixture_rules "

const GoldenCase kCases[] = {
    {"list_en", FIXTURE "list"},
    {"list_zh", FIXTURE "--lang zh list"},
    {"list_family", FIXTURE "list --family rope"},
    {"list_module_json", FIXTURE "--json list --module norm"},
    {"list_no_match", FIXTURE "list --module moe_gate"},
    {"show_en", FIXTURE "show norm.scaled_rms"},
    {"show_zh", FIXTURE "--lang zh show rope.split_halves"},
    {"show_prerequisites_en", FIXTURE "show rope.split_halves"},
    {"show_json", FIXTURE "show rope.split_halves --json"},
    {"show_unknown_close", FIXTURE "show scaled_rms"},
    {"show_unknown_zh", FIXTURE "--lang zh show norm.scaled_rm"},
    {"bad_rules", "--rules tests/data/rules/bad_rules list"},
    {"missing_dir", "--rules tests/data/rules/absent list"},
    {"usage_missing_id", FIXTURE "show"},
    {"usage_bad_lang", FIXTURE "--lang fr list"},
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string run_case(const GoldenCase& c) {
  std::string err =
      (std::filesystem::temp_directory_path() / ("npufuse_rules_golden_" + std::string(c.name) + ".err")).string();
  std::string command = std::string("cd '") + NPUFUSE_SOURCE_DIR + "' && '" + NPUFUSE_BINARY + "' rules " + c.args +
                        " 2>'" + err + "'";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  int status = ::pclose(pipe);
  std::string stderr_text = slurp(err);
  std::filesystem::remove(err);
  return "$ npufuse rules " + std::string(c.args) + "\n--- stdout\n" + out + "--- stderr\n" + stderr_text +
         "--- exit " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + "\n";
}

class RulesGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(RulesGoldenTest, MatchesGolden) {
  const GoldenCase& c = GetParam();
  std::string path = std::string(NPUFUSE_SOURCE_DIR) + "/tests/data/rules/golden/" + c.name + ".txt";
  std::string actual = run_case(c);
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

INSTANTIATE_TEST_SUITE_P(Rules, RulesGoldenTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) { return std::string(info.param.name); });

}  // namespace

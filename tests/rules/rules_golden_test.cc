// Golden outputs of `npufuse rules` against the fixture rules directory
// (tests/data/rules/), in both languages. Each golden file holds the command,
// its stdout, its stderr and its exit status.
// NPUFUSE_UPDATE_GOLDENS=1 rewrites the golden files instead of comparing.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "../support/cli_golden.h"

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

class RulesGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(RulesGoldenTest, MatchesGolden) {
  const GoldenCase& c = GetParam();
  std::string path = std::string(NPUFUSE_SOURCE_DIR) + "/tests/data/rules/golden/" + c.name + ".txt";
  npufuse::testing::expect_golden(path, npufuse::testing::run_cli_case("rules", c.args, "", c.name));
}

INSTANTIATE_TEST_SUITE_P(Rules, RulesGoldenTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) { return std::string(info.param.name); });

}  // namespace

// Golden plans: `npufuse analyze --format json` of each dense test model with
// its config.json, run from the source directory so that every path in the
// plan is repository-relative, compared with tests/plan/golden/<model>.json.
// The analysed files' sha256 and the tool version are left out: they change
// with any edit of the model file or a release, not with the plan.
// NPUFUSE_UPDATE_GOLDENS=1 rewrites the goldens (read the diff before
// committing it): `NPUFUSE_UPDATE_GOLDENS=1 ctest --test-dir BUILD -R GoldenPlan`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "../support/cli_golden.h"

namespace {

const char* const kDenseModels[] = {"llama_like", "qwen3_like", "gemma_style", "gptj_style", "vllm_style"};

// The plan with what varies between identical analyses removed.
std::string stable_plan(const std::string& json_text) {
  nlohmann::ordered_json plan = nlohmann::ordered_json::parse(json_text);
  plan.erase("tool_version");
  for (auto& file : plan["files"]) file.erase("sha256");
  return plan.dump(2) + "\n";
}

class GoldenPlanTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenPlanTest, MatchesGolden) {
  const std::string model = GetParam();
  const std::string dir = "tests/models/" + model;
  std::string args = dir + "/model.py --config " + dir + "/config.json --format json";
  std::string run = npufuse::testing::run_cli_case("analyze", args, "", "plan_" + model);
  // run_cli_case records "$ cmd\n--- stdout\n<out>--- stderr\n<err>--- exit N\n".
  size_t out_begin = run.find("--- stdout\n") + 11;
  size_t out_end = run.find("--- stderr\n", out_begin);
  ASSERT_NE(run.find("--- exit 0\n"), std::string::npos) << run;
  std::string actual = stable_plan(run.substr(out_begin, out_end - out_begin));
  npufuse::testing::expect_golden(std::string(NPUFUSE_SOURCE_DIR) + "/tests/plan/golden/" + model + ".json", actual);
}

INSTANTIATE_TEST_SUITE_P(DenseModels, GoldenPlanTest, ::testing::ValuesIn(kDenseModels),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace

#include "verify/cost_model.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace npufuse::verify {
namespace {

namespace fs = std::filesystem;

const char* kSmall = R"toml(
[device]
launch_us = 8.0
hbm_gb_per_s = 1600.0

[rules."norm.rms_norm"]
unfused_launches = 8
fused_launches = 1
unfused_bytes = "H * (24 + 4 * bytes)"
fused_bytes = "2 * H * bytes"
)toml";

TEST(CostModel, EstimateFollowsTheDocumentedFormula) {
  CostModel m = CostModel::parse(kSmall, "small.toml");
  Estimate e = m.estimate("norm.rms_norm", {{"H", 4096}}, /*batch=*/1, /*seq=*/16, /*dtype_bytes=*/2);
  ASSERT_TRUE(e.unavailable.empty()) << e.unavailable;
  ASSERT_EQ(e.stages.size(), 2u);
  const StageEstimate& prefill = e.stages[0];
  EXPECT_EQ(prefill.stage, "prefill");
  EXPECT_EQ(prefill.tokens_per_launch, 16);
  EXPECT_DOUBLE_EQ(prefill.unfused_bytes, 4096.0 * 32);
  EXPECT_DOUBLE_EQ(prefill.fused_bytes, 2.0 * 4096 * 2);
  // 8 launches * 8 us / 16 tokens + 131072 B / 1.6e6 B/us
  EXPECT_NEAR(prefill.unfused_us_per_token, 4.0 + 0.08192, 1e-9);
  EXPECT_NEAR(prefill.fused_us_per_token, 0.5 + 0.01024, 1e-9);
  const StageEstimate& decode = e.stages[1];
  EXPECT_EQ(decode.tokens_per_launch, 1);
  EXPECT_NEAR(decode.unfused_us_per_token, 64.0 + 0.08192, 1e-9);
  EXPECT_NEAR(decode.fused_us_per_token, 8.0 + 0.01024, 1e-9);
  EXPECT_GT(decode.saving_percent, prefill.saving_percent - 1e-9);
  EXPECT_EQ(e.to_json()["kind"], "estimate");
}

TEST(CostModel, ARuleForOneStageIsEstimatedForThatStageOnly) {
  CostModel m = CostModel::parse(kSmall, "small.toml");
  Estimate prefill = m.estimate("norm.rms_norm", {{"H", 4096}}, 1, 16, 2, {"prefill"});
  ASSERT_EQ(prefill.stages.size(), 1u);
  EXPECT_EQ(prefill.stages[0].stage, "prefill");
  Estimate decode = m.estimate("norm.rms_norm", {{"H", 4096}}, 1, 16, 2, {"decode"});
  ASSERT_EQ(decode.stages.size(), 1u);
  EXPECT_EQ(decode.stages[0].stage, "decode");
  EXPECT_EQ(m.estimate("norm.rms_norm", {{"H", 4096}}, 1, 16, 2, {"prefill", "decode"}).stages.size(), 2u);
}

TEST(CostModel, MissingSizeOrRuleIsSaidNotGuessed) {
  CostModel m = CostModel::parse(kSmall, "small.toml");
  Estimate no_h = m.estimate("norm.rms_norm", {}, 1, 16, 2);
  EXPECT_NE(no_h.unavailable.find("H"), std::string::npos) << no_h.unavailable;
  Estimate no_rule = m.estimate("rope.rope_half", {{"H", 64}}, 1, 16, 2);
  EXPECT_NE(no_rule.unavailable.find("no entry for rope.rope_half"), std::string::npos);
}

TEST(CostModel, BadFileNamesFileLineAndColumn) {
  try {
    CostModel::parse("[device]\nlaunch_us = 8.0\nhbm_gb_per_s = 1.0\n[rules.\"x\"]\nunfused_launches = \"H +\"\n", "bad.toml");
    FAIL() << "a broken expression was accepted";
  } catch (const CostModelError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.toml:5:"), std::string::npos) << e.what();
  }
  EXPECT_THROW(CostModel::parse("[device]\nlaunch_us = 0\n", "zero.toml"), CostModelError);
}

TEST(CostModel, EmbeddedTableCoversEveryRule) {
  const CostModel& m = CostModel::embedded();
  EXPECT_GT(m.launch_us(), 0);
  int rules = 0;
  for (const auto& family : fs::directory_iterator(fs::path(NPUFUSE_SOURCE_DIR) / "rules")) {
    if (!family.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(family.path())) {
      std::string stem = f.path().stem().string();
      if (f.path().extension() != ".py" || stem.front() == '_') continue;
      std::string id = family.path().filename().string() + "." + stem;
      ++rules;
      EXPECT_NE(m.find(id), nullptr) << "verify/cost_model.toml has no entry for " << id;
    }
  }
  EXPECT_GT(rules, 30);
}

TEST(CostModel, EveryEmbeddedEntryEvaluatesAtLlamaSizesAndFusedIsCheaper) {
  const CostModel& m = CostModel::embedded();
  std::map<std::string, int64_t> sizes = {{"H", 4096}, {"I", 14336}, {"D", 128}, {"N", 32}, {"KVN", 8},
                                          {"E", 64},   {"K", 8},     {"C", 512}, {"G", 8}, {"R", 64}, {"Q", 1536}};
  for (const auto& [id, cost] : m.rules()) {
    Estimate e = m.estimate(id, sizes, 1, 128, 2);
    ASSERT_TRUE(e.unavailable.empty()) << id << ": " << e.unavailable;
    for (const StageEstimate& s : e.stages)
      EXPECT_LE(s.fused_us_per_token, s.unfused_us_per_token) << id << " " << s.stage;
  }
}

}  // namespace
}  // namespace npufuse::verify

// The SARIF log: structure a viewer needs, one result per candidate, the
// rule id and level by status, regions from the candidate's lines.
#include <gtest/gtest.h>

#include "report/plan_sarif.h"
#include "sample_plan.h"

namespace npufuse::report {
namespace {

using nlohmann::json;

TEST(PlanSarif, HasTheSarif210Envelope) {
  json s = plan_to_sarif(testing::sample_plan(), nullptr, Lang::En);
  EXPECT_EQ(s["version"], "2.1.0");
  EXPECT_TRUE(s["$schema"].get<std::string>().find("sarif-2.1.0") != std::string::npos);
  ASSERT_EQ(s["runs"].size(), 1u);
  EXPECT_EQ(s["runs"][0]["tool"]["driver"]["name"], "npufuse");
  EXPECT_EQ(s["runs"][0]["tool"]["driver"]["version"], "0.1.0");
}

TEST(PlanSarif, OneResultPerCandidateWithRuleAndLevel) {
  plan::Plan p = testing::sample_plan();
  json results = plan_to_sarif(p, nullptr, Lang::En)["runs"][0]["results"];
  ASSERT_EQ(results.size(), p.candidates.size());
  EXPECT_EQ(results[0]["ruleId"], "norm.rms_norm");
  EXPECT_EQ(results[0]["level"], "warning");
  EXPECT_EQ(results[1]["level"], "warning");
  EXPECT_EQ(results[2]["level"], "note");
  EXPECT_EQ(results[3]["ruleId"], kNoFusedOpRuleId);
  EXPECT_EQ(results[3]["level"], "note");
  const json& region = results[0]["locations"][0]["physicalLocation"]["region"];
  EXPECT_EQ(region["startLine"], 12);
  EXPECT_EQ(region["endLine"], 18);
  EXPECT_EQ(results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "models/m/model.py");
  EXPECT_EQ(results[0]["relatedLocations"].size(), 1u);
  EXPECT_EQ(results[1]["properties"]["status"], "candidate_with_prerequisites");
  EXPECT_NE(results[1]["message"]["text"].get<std::string>().find("rope_cos_sin_precompute"), std::string::npos);
}

TEST(PlanSarif, AlternativesRideOnTheirChainsResult) {
  json results = plan_to_sarif(testing::sample_plan(), nullptr, Lang::En)["runs"][0]["results"];
  const json& alternatives = results[1]["properties"]["alternatives"];
  ASSERT_EQ(alternatives.size(), 1u);
  EXPECT_EQ(alternatives[0]["rule"], "rope.rotate_half_mul");
  EXPECT_EQ(alternatives[0]["status"], "not_applicable");
  EXPECT_NE(results[1]["message"]["text"].get<std::string>().find("alternatives: rope.rotate_half_mul (not_applicable)"),
            std::string::npos);
  EXPECT_FALSE(results[0]["properties"].contains("alternatives"));
}

TEST(PlanSarif, DriverRulesAreTheRulesUsedOnceEach) {
  plan::Plan p = testing::sample_plan();
  p.candidates.push_back(p.candidates[0]);  // the same rule matched twice
  json run = plan_to_sarif(p, nullptr, Lang::En)["runs"][0];
  json rules = run["tool"]["driver"]["rules"];
  ASSERT_EQ(rules.size(), 4u);  // norm, rope, ffn.swiglu, no_fused_op
  for (const auto& result : run["results"]) {
    int index = result["ruleIndex"];
    EXPECT_EQ(rules[index]["id"], result["ruleId"]);
  }
}

TEST(PlanSarif, RuleDocumentationComesFromTheLookup) {
  rules::Rule rule;
  rule.id = "norm.rms_norm";
  rule.title = "RMSNorm";
  rule.summary_en = "RMSNorm computed step by step";
  rule.doc_en = {{"What it does", "Finds RMSNorm."}};
  rule.apis = {"npu_rms_norm"};
  RuleLookup lookup = [&](const std::string& id) { return id == rule.id ? &rule : nullptr; };
  json rules = plan_to_sarif(testing::sample_plan(), lookup, Lang::En)["runs"][0]["tool"]["driver"]["rules"];
  EXPECT_EQ(rules[0]["shortDescription"]["text"], "RMSNorm computed step by step");
  EXPECT_NE(rules[0]["help"]["markdown"].get<std::string>().find("## What it does"), std::string::npos);
  EXPECT_EQ(rules[1]["shortDescription"]["text"], "RoPE, half mode");  // not known to the lookup: the title
}

TEST(PlanSarif, ArtifactsCarryTheFileHashes) {
  json artifacts = plan_to_sarif(testing::sample_plan(), nullptr, Lang::En)["runs"][0]["artifacts"];
  ASSERT_EQ(artifacts.size(), 2u);
  EXPECT_EQ(artifacts[0]["hashes"]["sha-256"], std::string(64, 'a'));
  EXPECT_FALSE(artifacts[1].contains("hashes"));
}

}  // namespace
}  // namespace npufuse::report

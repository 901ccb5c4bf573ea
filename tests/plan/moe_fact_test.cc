// The MoE gating rules apply only where the model routes to experts: a
// softmax + top-k in a span-scoring head is not a router (fact `moe`).
#include <gtest/gtest.h>

#include <algorithm>

#include "plan/analyze.h"

namespace npufuse::plan {
namespace {

std::string data(const std::string& name) {
  return std::string(NPUFUSE_SOURCE_DIR) + "/tests/plan/data/moe_fact/" + name;
}

bool offers_gate(const Plan& plan) {
  return std::any_of(plan.candidates.begin(), plan.candidates.end(),
                     [](const Candidate& c) { return c.module == "moe_gate"; });
}

TEST(MoeFact, SoftmaxTopKOutsideAnMoEIsNotAGate) {
  AnalyzeOptions o;
  o.paths = {data("span_head.py")};
  Plan plan = analyze(o);
  ASSERT_NE(plan.facts.find("moe"), nullptr);
  EXPECT_FALSE(plan.facts.find("moe")->value.as_bool());
  EXPECT_FALSE(offers_gate(plan));
  bool told = std::any_of(plan.notes.begin(), plan.notes.end(), [](const std::string& n) {
    return n.find("moe.gating_softmax_topk matched") != std::string::npos && n.find("moe = False") != std::string::npos;
  });
  EXPECT_TRUE(told) << "the note says why the match is not offered";
}

TEST(MoeFact, TheSameOpsInARoutedBlockAreAGate) {
  AnalyzeOptions o;
  o.paths = {data("routed.py")};
  Plan plan = analyze(o);
  ASSERT_NE(plan.facts.find("moe"), nullptr);
  EXPECT_TRUE(offers_gate(plan));
}

TEST(MoeFact, AnExpertCountInTheConfigIsEnough) {
  AnalyzeOptions o;
  o.paths = {data("span_head.py")};
  o.config = data("experts_config.json");
  Plan plan = analyze(o);
  ASSERT_NE(plan.facts.find("moe"), nullptr);
  EXPECT_TRUE(plan.facts.find("moe")->value.as_bool());
  EXPECT_TRUE(offers_gate(plan));
}

}  // namespace
}  // namespace npufuse::plan

namespace npufuse::plan {
namespace {

// A loop over `ids.unique()` visits only the experts some token chose: the
// expert chain matches, and the plan asks for the expert count the
// replacement needs (prerequisite expert_count).
TEST(MoeExperts, ALoopOverThePresentIdsMatchesAndAsksForTheExpertCount) {
  AnalyzeOptions o;
  o.paths = {std::string(NPUFUSE_SOURCE_DIR) + "/rules/moe/fixtures/experts_grouped_matmul_match_unique_ids.py"};
  Plan plan = analyze(o);
  auto experts = std::find_if(plan.candidates.begin(), plan.candidates.end(),
                              [](const Candidate& c) { return c.rule == "moe.experts_grouped_matmul"; });
  ASSERT_NE(experts, plan.candidates.end());
  auto count = std::find_if(experts->prerequisites.begin(), experts->prerequisites.end(),
                            [](const PrerequisiteItem& p) { return p.id == "expert_count"; });
  ASSERT_NE(count, experts->prerequisites.end());
  EXPECT_FALSE(count->mechanical);
  EXPECT_NE(count->en.find("ids.unique()"), std::string::npos) << count->en;
  EXPECT_EQ(count->where.start_line, 27);
}

}  // namespace
}  // namespace npufuse::plan

// Linear-attention and state-space mixers in the attention's place: their
// conv1d and recurrence are accounted with the operators that exist for them
// and those operators' limits, or dismissed where no documented operator
// computes them. Nothing of them is offered as softmax attention.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "plan/analyze.h"

namespace npufuse::plan {
namespace {

Plan analyse(const std::string& file) {
  const std::string dir = std::string(NPUFUSE_SOURCE_DIR) + "/tests/plan/data/linear_mixer/";
  AnalyzeOptions o;
  o.paths = {dir + file};
  o.config = dir + "config.json";
  return analyze(o);
}

const Candidate* step(const Plan& plan, const std::string& prefix) {
  for (const Candidate& c : plan.candidates)
    if (c.id.rfind(prefix, 0) == 0) return &c;
  return nullptr;
}

TEST(LinearMixer, AGatedDeltaRuleNamesItsOperatorsAndTheirLimits) {
  Plan plan = analyse("delta_mixer.py");
  for (const Candidate& c : plan.candidates) EXPECT_EQ(c.rule.rfind("attention.fia", 0), std::string::npos) << c.id;
  const Candidate* recurrence = step(plan, "linear_attention.recurrence@");
  ASSERT_NE(recurrence, nullptr);
  EXPECT_EQ(recurrence->status, Status::NoFusedOp);
  EXPECT_EQ(recurrence->module, "attention");
  EXPECT_NE(recurrence->requirement.why_nothing_fits.find("npu_chunk_gated_delta_rule"), std::string::npos);
  EXPECT_NE(recurrence->requirement.why_nothing_fits.find("L2-normalised"), std::string::npos);
  const Candidate* conv = step(plan, "linear_attention.conv1d@");
  ASSERT_NE(conv, nullptr);
  EXPECT_NE(conv->requirement.why_nothing_fits.find("kernel width 3"), std::string::npos);
}

TEST(LinearMixer, ASelectiveScanIsDismissedForWantOfAnOperator) {
  Plan plan = analyse("ssm_mixer.py");
  EXPECT_EQ(step(plan, "linear_attention.recurrence@"), nullptr);
  EXPECT_TRUE(std::any_of(plan.notes.begin(), plan.notes.end(), [](const std::string& n) {
    return n.find("linear_attention.recurrence") != std::string::npos &&
           n.find("no documented torch_npu operator computes a selective state-space scan") != std::string::npos;
  }));
}

}  // namespace
}  // namespace npufuse::plan

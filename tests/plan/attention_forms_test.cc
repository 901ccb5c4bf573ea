// Attention cores in forms outside the development set: heads split and
// merged with permute (GPT-J, CodeGen, MPT), and an ALiBi bias added to the
// scores, which neither the compressed causal mask nor a decode call without
// a bias carries (fact `alibi`).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "plan/analyze.h"

namespace npufuse::plan {
namespace {

std::string data(const std::string& name) {
  return std::string(NPUFUSE_SOURCE_DIR) + "/tests/plan/data/attention_forms/" + name;
}

const Candidate* find_rule(const Plan& plan, const std::string& rule) {
  for (const Candidate& c : plan.candidates)
    if (c.rule == rule) return &c;
  return nullptr;
}

const CheckResult* find_check(const Candidate& c, const std::string& id) {
  for (const CheckResult& r : c.checks)
    if (r.constraint_id == id) return &r;
  return nullptr;
}

// `x.permute(0, 2, 1, 3)` is the pattern's `transpose(1, 2)`, also as the
// last op of the chain, where a walk starts.
TEST(AttentionForms, PermutedHeadsAreTheTransposeOfTheFusedCore) {
  AnalyzeOptions o;
  o.paths = {data("permute_heads.py")};
  Plan plan = analyze(o);
  const Candidate* c = find_rule(plan, "attention.fia_prefill");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, Status::CandidateWithPrerequisites);
  // Nothing in the file or a config names ALiBi: known false, from the code.
  const check::Fact* alibi = plan.facts.find("alibi");
  ASSERT_NE(alibi, nullptr);
  EXPECT_FALSE(alibi->value.as_bool());
  // The constraint is about models with ALiBi: it does not apply here.
  const CheckResult* r = find_check(*c, "no_alibi_bias");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->answer, check::Answer::NotApplicable);
}

// The config turns ALiBi on: the bias would be taken for the mask (decode) or
// replaced by the compressed causal mask (prefill). Both are refused.
TEST(AttentionForms, AnAlibiBiasRefusesEveryFusedAttention) {
  AnalyzeOptions o;
  o.paths = {data("alibi_bias.py")};
  o.config = data("alibi_config.json");
  Plan plan = analyze(o);
  const check::Fact* alibi = plan.facts.find("alibi");
  ASSERT_NE(alibi, nullptr);
  EXPECT_TRUE(alibi->value.as_bool());
  int attention = 0;
  for (const Candidate& c : plan.candidates) {
    if (c.module != "attention" || c.status == Status::NoFusedOp) continue;
    ++attention;
    EXPECT_EQ(c.status, Status::NotApplicable) << c.id;
    const CheckResult* r = find_check(c, "no_alibi_bias");
    ASSERT_NE(r, nullptr) << c.id;
    EXPECT_EQ(r->answer, check::Answer::Violated) << c.id;
  }
  EXPECT_GE(attention, 2);
}

// The same code without a config: the file names ALiBi, so whether it is on
// stays unknown, and the plan asks for it.
TEST(AttentionForms, AlibiNamedInTheCodeWithoutAConfigIsUnknown) {
  AnalyzeOptions o;
  o.paths = {data("alibi_bias.py")};
  Plan plan = analyze(o);
  EXPECT_EQ(plan.facts.find("alibi"), nullptr);
  const Candidate* c = find_rule(plan, "attention.fia_decode_additive_mask");
  ASSERT_NE(c, nullptr);
  const CheckResult* r = find_check(*c, "no_alibi_bias");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->answer, check::Answer::Unknown);
  EXPECT_NE(std::find(plan.unknown_facts.begin(), plan.unknown_facts.end(), "alibi"), plan.unknown_facts.end());
}

}  // namespace
}  // namespace npufuse::plan

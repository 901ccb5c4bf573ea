// One chain, one entry: rules matching the same lines become alternatives of
// the preferred candidate, each keeping its own status.
#include <gtest/gtest.h>

#include "plan/alternatives.h"

namespace npufuse::plan {
namespace {

Candidate chain(const std::string& rule, const std::string& module, Status status, Location where) {
  Candidate c;
  c.id = rule + "@" + where.file + ":" + std::to_string(where.start_line);
  c.rule = rule;
  c.module = module;
  c.status = status;
  c.location = where;
  c.parts = {where};
  return c;
}

TEST(Alternatives, SameLinesOfOneModuleFoldIntoThePreferredRule) {
  Location rope_lines{"m.py", 20, 24};
  std::vector<Candidate> list = {
      chain("rope.rope_half_rotary_mul", "rope", Status::Candidate, rope_lines),
      chain("norm.rms_norm", "norm", Status::Candidate, {"m.py", 5, 8}),
      chain("rope.rope_half", "rope", Status::Candidate, rope_lines),
  };
  group_alternatives(list);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].rule, "rope.rope_half");  // equal status: the rule id decides, the same every run
  ASSERT_EQ(list[0].alternatives.size(), 1u);
  EXPECT_EQ(list[0].alternatives[0].rule, "rope.rope_half_rotary_mul");
  EXPECT_EQ(list[1].rule, "norm.rms_norm");
  EXPECT_TRUE(list[1].alternatives.empty());
}

TEST(Alternatives, AnApplicableRuleIsPreferredToARefusedOne) {
  Location core{"m.py", 40, 52};
  Candidate refused = chain("attention.fia_a", "attention", Status::NotApplicable, core);
  refused.blocking = {"head_dim 96 is not 128"};
  Candidate with_prerequisites = chain("attention.fia_b", "attention", Status::CandidateWithPrerequisites, core);
  with_prerequisites.prerequisites.push_back({"static_cache", "a static cache", "", false, core});
  std::vector<Candidate> list = {refused, with_prerequisites};
  group_alternatives(list);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].rule, "attention.fia_b");
  ASSERT_EQ(list[0].alternatives.size(), 1u);
  EXPECT_EQ(list[0].alternatives[0].status, Status::NotApplicable);
  EXPECT_EQ(list[0].alternatives[0].blocking, refused.blocking);
}

TEST(Alternatives, OverlappingButDifferentChainsStayApart) {
  // add+RMSNorm contains the norm's lines but is a longer chain: not a choice between the two.
  Candidate norm = chain("norm.rms_norm", "norm", Status::Candidate, {"m.py", 5, 8});
  Candidate add_norm = chain("norm.add_rms_norm", "norm", Status::Candidate, {"m.py", 30, 31});
  add_norm.parts = {{"m.py", 5, 8}, {"m.py", 30, 31}};
  Candidate other_module = chain("quant.dynamic_quant", "quant", Status::Candidate, {"m.py", 5, 8});
  std::vector<Candidate> list = {norm, add_norm, other_module};
  group_alternatives(list);
  EXPECT_EQ(list.size(), 3u);
}

TEST(Alternatives, NewOperatorRequirementsAreNeverAlternatives) {
  Location lines{"m.py", 60, 61};
  Candidate gap = chain("", "ffn", Status::NoFusedOp, lines);
  gap.id = "ffn.activation@m.py:60";
  std::vector<Candidate> list = {chain("ffn.swiglu", "ffn", Status::NotApplicable, lines), gap};
  group_alternatives(list);
  EXPECT_EQ(list.size(), 2u);
}

}  // namespace
}  // namespace npufuse::plan

namespace npufuse::plan {
namespace {

TEST(Alternatives, OneRuleSeenTwiceOnOneChainKeepsTheWiderMatch) {
  // An eager core matched in its helper alone (105-113) and inlined into the
  // attention forward, where repeat_kv is covered too (103-113): one entry.
  Candidate helper = chain("attention.fia_prefill", "attention", Status::Candidate, {"m.py", 105, 113});
  Candidate inlined = chain("attention.fia_prefill", "attention", Status::Candidate, {"m.py", 103, 113});
  Candidate windowed = chain("attention.fia_sliding_window", "attention", Status::NotApplicable, {"m.py", 105, 113});
  std::vector<Candidate> list = {helper, windowed, inlined, windowed};
  group_alternatives(list);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].location.start_line, 103);
  ASSERT_EQ(list[0].alternatives.size(), 1u);
  EXPECT_EQ(list[0].alternatives[0].rule, "attention.fia_sliding_window");
}

}  // namespace
}  // namespace npufuse::plan

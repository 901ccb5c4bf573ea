// RULE["when"]: a quantised chain is offered only when the facts say the
// model is quantised; otherwise the reason names the fact and its source.
#include <gtest/gtest.h>

#include "plan/candidate_builder.h"
#include "plan/rule_gate.h"
#include "plan_test_support.h"

namespace npufuse::plan {
namespace {

using testing::embedded_catalog;
using testing::make_match;
using testing::make_pattern;
using testing::make_rule;
using testing::Source;

rules::Rule quant_rule() {
  rules::Rule r = make_rule("quant.dynamic_quant", "quant", {"npu_dynamic_quant"}, {});
  r.when = "quant in ['w8a8', 'w8a8c8']";
  r.path = "rules/quant/dynamic_quant.py";
  return r;
}

TEST(RuleGate, RuleWithoutConditionIsAlwaysOffered) {
  check::FactSet facts;
  EXPECT_FALSE(rule_withheld(make_rule("norm.rms_norm", "norm", {"npu_rms_norm"}, {}), facts));
}

TEST(RuleGate, QuantisedModelGetsTheRule) {
  check::FactSet facts;
  facts.set("quant", "w8a8", "--quant");
  EXPECT_FALSE(rule_withheld(quant_rule(), facts));
}

TEST(RuleGate, Bf16ModelIsToldWhyWithTheFactsSource) {
  check::FactSet facts;
  facts.set("quant", "bf16", "config.json has no quantization_config");
  std::optional<std::string> why = rule_withheld(quant_rule(), facts);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("quant = 'bf16' (config.json has no quantization_config)"), std::string::npos) << *why;
}

TEST(RuleGate, UnknownQuantisationAsksForIt) {
  check::FactSet facts;
  std::optional<std::string> why = rule_withheld(quant_rule(), facts);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("quant is not known (give it, e.g. --quant w8a8, to see it)"), std::string::npos) << *why;
}

// Each missing fact is asked for by its own flag, or the deployment file.
TEST(RuleGate, UnknownFactIsAskedForByItsOwnFlag) {
  rules::Rule r = make_rule("moe.experts_distribute", "moe_experts", {"npu_moe_distribute_dispatch"}, {});
  r.when = "ep > 1";
  check::FactSet facts;
  std::optional<std::string> why = rule_withheld(r, facts);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("ep is not known (give it, e.g. --ep 8, to see it)"), std::string::npos) << *why;
  r.when = "block_size > 0";
  why = rule_withheld(r, facts);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("`block_size = ...` in a --deploy file"), std::string::npos) << *why;
}

TEST(RuleGate, BadConditionNamesTheRuleFile) {
  rules::Rule r = quant_rule();
  r.when = "quant in [";
  check::FactSet facts;
  try {
    rule_withheld(r, facts);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rules/quant/dynamic_quant.py"), std::string::npos) << e.what();
  }
}

TEST(RuleGate, WithheldMatchIsANoteNotACandidate) {
  Source src("import torch\ndef q(x):\n    s = x.abs().amax(-1) / 127\n    return (x / s).round(), s\n");
  rules::Rule rule = quant_rule();
  auto pattern = make_pattern(rule);
  CandidateContext ctx;
  ctx.catalog = &embedded_catalog();
  check::FactSet bf16;
  bf16.set("quant", "bf16", "--quant");
  ctx.facts = &bf16;
  CandidateSet set = build_candidates({make_match(*pattern, src.dataflow("q"), 3, 4, "q")}, ctx);
  EXPECT_TRUE(set.candidates.empty());
  ASSERT_EQ(set.notes.size(), 1u);
  EXPECT_NE(set.notes[0].find("quant.dynamic_quant matched at model.py:3 but is not offered"), std::string::npos)
      << set.notes[0];

  check::FactSet w8a8;
  w8a8.set("quant", "w8a8", "--quant");
  ctx.facts = &w8a8;
  set = build_candidates({make_match(*pattern, src.dataflow("q"), 3, 4, "q")}, ctx);
  EXPECT_EQ(set.candidates.size(), 1u);
}

}  // namespace
}  // namespace npufuse::plan

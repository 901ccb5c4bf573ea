// Sub-chain steps no candidate covers: new-operator requirements, except
// plain projections (and never an MLA projection a prolog would take in).
#include <gtest/gtest.h>

#include "plan/candidate_builder.h"
#include "plan/uncovered_steps.h"
#include "plan_test_support.h"

namespace npufuse::plan {
namespace {

model::SubChainStep step(const std::string& kind, int first, int last, const std::string& detail = "") {
  model::SubChainStep s;
  s.kind = kind;
  s.spans = {model::SourceSpan{"model.py", first, last}};
  s.detail = detail;
  return s;
}

std::vector<model::BlockChains> blocks_with(const std::string& module, std::vector<model::SubChainStep> steps) {
  model::ModuleChain chain;
  chain.module = module;
  chain.class_name = "Attn";
  chain.instance = "model.layers[*].self_attn";
  chain.steps = std::move(steps);
  chain.layout = model::CoreLayout{"BNSD", "view + transpose(1, 2) at model.py:20"};
  model::BlockChains block;
  block.block_class = "Layer";
  block.modules = {chain};
  return {block};
}

Candidate covering(int first, int last) {
  Candidate c;
  c.id = "attention.fia_prefill@model.py:40";
  c.location = Location{"model.py", first, last};
  c.parts = {c.location};
  return c;
}

TEST(UncoveredSteps, UncoveredRopeBecomesANewOperatorRequirement) {
  auto blocks = blocks_with("attention", {step("qkv_projection", 10, 12), step("rope", 20, 24, "rotate_half"),
                                          step("attention_core", 40, 44)});
  check::FactSet facts;
  facts.set("dtype", "bfloat16", "config.json: torch_dtype");
  UncoveredSteps u = find_uncovered_steps(blocks, {covering(40, 44)}, {}, {}, facts, "both");
  ASSERT_EQ(u.no_fused_op.size(), 1u);
  const Candidate& c = u.no_fused_op[0];
  EXPECT_EQ(c.id, "attention.rope@model.py:20");
  EXPECT_EQ(c.module, "rope");
  EXPECT_EQ(c.status, Status::NoFusedOp);
  EXPECT_EQ(c.requirement.subgraph, "rotate_half");
  EXPECT_NE(c.requirement.dtype.find("bfloat16"), std::string::npos);
  EXPECT_EQ(c.requirement.layout.rfind("BNSD", 0), 0u);
  EXPECT_FALSE(c.requirement.why_nothing_fits.empty());
  EXPECT_EQ(c.stages, (std::vector<std::string>{"prefill", "decode"}));
  ASSERT_EQ(u.dismissed.size(), 1u);
  EXPECT_NE(u.dismissed[0].find("qkv_projection"), std::string::npos);
  EXPECT_NE(u.dismissed[0].find("plain projection"), std::string::npos);
}

TEST(UncoveredSteps, MlaProjectionIsNeverDismissedAsPlain) {
  auto blocks = blocks_with("mla", {step("q_down", 10, 11)});
  UncoveredSteps u = find_uncovered_steps(blocks, {}, {}, {}, check::FactSet(), "both");
  EXPECT_TRUE(u.dismissed.empty());
  ASSERT_EQ(u.no_fused_op.size(), 1u);
  EXPECT_NE(u.no_fused_op[0].requirement.why_nothing_fits.find("prolog"), std::string::npos);
}

TEST(UncoveredSteps, ACoveredStepAddsNothingAndRepeatsAreOne) {
  auto blocks = blocks_with("attention", {step("rope", 20, 24)});
  blocks.push_back(blocks[0]);  // a second block class sharing the attention
  UncoveredSteps covered = find_uncovered_steps(blocks, {covering(22, 22)}, {}, {}, check::FactSet(), "both");
  EXPECT_TRUE(covered.no_fused_op.empty());
  UncoveredSteps open = find_uncovered_steps(blocks, {}, {}, {}, check::FactSet(), "both");
  EXPECT_EQ(open.no_fused_op.size(), 1u);
}

TEST(UncoveredSteps, DecodeOnlyStepIsLeftOutOfAPrefillPlan) {
  model::SubChainStep write = step("cache_write", 30, 31);
  write.stages = "decode";
  auto blocks = blocks_with("attention", {write});
  EXPECT_TRUE(find_uncovered_steps(blocks, {}, {}, {}, check::FactSet(), "prefill").no_fused_op.empty());
  auto both = find_uncovered_steps(blocks, {}, {}, {}, check::FactSet(), "both");
  ASSERT_EQ(both.no_fused_op.size(), 1u);
  EXPECT_EQ(both.no_fused_op[0].stages, (std::vector<std::string>{"decode"}));
  EXPECT_EQ(both.no_fused_op[0].module, "kv_cache");
}

TEST(NearMisses, ReasonGoesToTheCandidateOfTheRuleThatMatchedThere) {
  rules::Rule rms = testing::make_rule("norm.rms_norm", "norm", {"npu_rms_norm"}, {});
  auto pattern = testing::make_pattern(rms);
  NearMissSite n;
  n.trace.pattern = pattern.get();
  n.trace.reason = "expected weight * y, found (1 + weight) * y at model.py:5";
  n.trace.matched_steps = 5;
  n.trace.pattern_steps = 6;
  n.trace.spans = {model::SourceSpan{"model.py", 3, 5}};
  Candidate gemma;
  gemma.id = "norm.gemma_rms_norm@model.py:3";
  gemma.rule = "norm.gemma_rms_norm";
  gemma.parts = {Location{"model.py", 3, 5}};
  gemma.status = Status::NotApplicable;
  std::vector<Candidate> candidates = {gemma};
  std::vector<std::string> notes;
  attach_near_misses({n, n}, candidates, notes);
  ASSERT_EQ(candidates[0].near_miss_reasons.size(), 1u);
  EXPECT_NE(candidates[0].near_miss_reasons[0].find("(1 + weight)"), std::string::npos);
  EXPECT_TRUE(notes.empty());

  // An applicable candidate there: the sibling rule's failure is not told.
  Candidate plain = gemma;
  plain.status = Status::Candidate;
  plain.rule = "norm.qk_norm";
  std::vector<Candidate> applicable = {plain};
  attach_near_misses({n}, applicable, notes);
  EXPECT_TRUE(applicable[0].near_miss_reasons.empty());
  EXPECT_TRUE(notes.empty());

  // Nothing matched there: the reason becomes a note.
  std::vector<Candidate> none;
  attach_near_misses({n}, none, notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("norm.rms_norm did not match at model.py:3"), std::string::npos);
}

}  // namespace
}  // namespace npufuse::plan

// One candidate per (rule, computed source) however many classes inline the chain;
// stages from the rule, the branch the ops sit in, and --stage.
#include <gtest/gtest.h>

#include <algorithm>

#include "plan/candidate_builder.h"
#include "plan/stage_split.h"
#include "plan_test_support.h"

namespace npufuse::plan {
namespace {

using testing::embedded_catalog;
using testing::make_match;
using testing::make_pattern;
using testing::make_rule;
using testing::Source;

const char* kModel =
    "import torch\n"
    "def norm(x, w):\n"
    "    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)\n"
    "    return w * y\n"
    "def attend(q, k, v, q_len):\n"
    "    if q_len > 1:\n"
    "        o = torch.softmax(q @ k, dim=-1) @ v\n"
    "    else:\n"
    "        o = torch.softmax(q @ k * 2, dim=-1) @ v\n"
    "    return o\n";

// The context keeps a pointer to `facts`: pass a named FactSet.
CandidateContext plain_context(const check::FactSet& facts) {
  CandidateContext ctx;
  ctx.catalog = &embedded_catalog();
  ctx.facts = &facts;
  return ctx;
}

TEST(Dedupe, SameRuleAndSpanSeenThroughTwoClassesIsOneCandidate) {
  Source src(kModel);
  rules::Rule rule = make_rule("norm.rms_norm", "norm", {"npu_rms_norm"}, {});
  auto pattern = make_pattern(rule);
  const model::FunctionDataflow& g = src.dataflow("norm");
  MatchSite own = make_match(*pattern, g, 3, 4, "RMSNorm.forward", "RMSNorm");
  MatchSite inlined = make_match(*pattern, g, 3, 4, "DecoderLayer.forward", "DecoderLayer");
  inlined.match.bindings.push_back(match::Binding{"weight", 0, "self.input_layernorm.weight"});
  check::FactSet facts;
  CandidateSet set = build_candidates({own, inlined}, plain_context(facts));
  ASSERT_EQ(set.candidates.size(), 1u);
  EXPECT_EQ(set.candidates[0].instance, "DecoderLayer.input_layernorm");
  bool told = false;
  for (const std::string& e : set.candidates[0].evidence) told = told || e.find("DecoderLayer.forward") != std::string::npos;
  EXPECT_TRUE(told);
}

TEST(Dedupe, DifferentSpansStayApartWithDistinctIds) {
  Source src(kModel);
  rules::Rule rule = make_rule("norm.rms_norm", "norm", {"npu_rms_norm"}, {});
  auto pattern = make_pattern(rule);
  const model::FunctionDataflow& g = src.dataflow("norm");
  check::FactSet no_facts;
  CandidateSet set = build_candidates({make_match(*pattern, g, 3, 4, "norm"), make_match(*pattern, g, 3, 3, "norm")},
                                      plain_context(no_facts));
  ASSERT_EQ(set.candidates.size(), 2u);
  EXPECT_NE(set.candidates[0].id, set.candidates[1].id);
}

// A helper matched on its own and again inlined into a caller that passes
// its arguments through the merges of an if-block (GPT-J's `_attn` under
// `if layer_past is not None`): the caller's match holds those merges too.
// They compute nothing, so the two matches are one chain and one entry.
TEST(Dedupe, HelperSeenAloneAndThroughItsCallersMergesIsOneCandidate) {
  Source src(kModel);
  rules::Rule rule = make_rule("attention.fia_prefill", "attention", {"npu_fused_infer_attention_score"}, {});
  auto pattern = make_pattern(rule);
  const model::FunctionDataflow& g = src.dataflow("attend");
  MatchSite alone = make_match(*pattern, g, 7, 7, "attend");
  MatchSite through_merge = make_match(*pattern, g, 7, 7, "Layer.forward", "Layer");
  auto phi = std::find_if(g.ops.begin(), g.ops.end(), [](const model::DataflowOp& op) { return op.name == "phi"; });
  ASSERT_NE(phi, g.ops.end()) << g.dump();
  through_merge.match.ops.push_back(phi->id);
  std::sort(through_merge.match.ops.begin(), through_merge.match.ops.end());
  through_merge.match.spans = {model::SourceSpan{"model.py", phi->line, 7}};
  check::FactSet no_facts;
  CandidateSet set = build_candidates({alone, through_merge}, plain_context(no_facts));
  ASSERT_EQ(set.candidates.size(), 1u);
  EXPECT_EQ(set.candidates[0].location.start_line, 7);
  bool told = false;
  for (const std::string& e : set.candidates[0].evidence) told = told || e == "also seen inlined in Layer.forward";
  EXPECT_TRUE(told);

  // A caller's match that computes one more step is another chain.
  MatchSite wider = make_match(*pattern, g, 7, 9, "Layer.forward", "Layer");
  set = build_candidates({alone, wider}, plain_context(no_facts));
  EXPECT_EQ(set.candidates.size(), 2u);
}

TEST(StageSplit, RequestedStageNarrowsAndEmptyIntersectionIsANote) {
  EXPECT_EQ(split_stages({"prefill", "decode"}, "", "decode"), (std::vector<std::string>{"decode"}));
  EXPECT_EQ(split_stages({"prefill", "decode"}, "prefill", "both"), (std::vector<std::string>{"prefill"}));
  EXPECT_TRUE(split_stages({"prefill"}, "", "decode").empty());

  Source src(kModel);
  rules::Rule rule = make_rule("attention.fia_prefill", "attention", {"npu_fused_infer_attention_score"}, {}, "safe",
                               {"prefill"});
  auto pattern = make_pattern(rule);
  check::FactSet no_facts;
  CandidateContext ctx = plain_context(no_facts);
  ctx.requested_stage = "decode";
  CandidateSet set = build_candidates({make_match(*pattern, src.dataflow("attend"), 7, 7, "attend")}, ctx);
  EXPECT_TRUE(set.candidates.empty());
  ASSERT_EQ(set.notes.size(), 1u);
  EXPECT_NE(set.notes[0].find("decode"), std::string::npos) << set.notes[0];
}

std::vector<model::BranchCondition> prefill_branch() {
  model::BranchCondition b;
  b.condition = "q_len > 1";
  b.true_stage = "prefill";
  b.kinds = {model::BranchKind::PrefillDecode};
  b.where = model::SourceSpan{"model.py", 6, 9};
  return {b};
}

TEST(StageSplit, OpsInsideAPrefillArmRunOnlyInPrefill) {
  Source src(kModel);
  const model::FunctionDataflow& g = src.dataflow("attend");
  std::vector<int> then_ops, else_ops;
  for (const model::DataflowOp& op : g.ops) {
    if (op.name != "softmax") continue;
    (op.line == 7 ? then_ops : else_ops).push_back(op.id);
  }
  ASSERT_EQ(then_ops.size(), 1u) << g.dump();
  ASSERT_EQ(else_ops.size(), 1u);
  std::string why;
  EXPECT_EQ(branch_stage(g, then_ops, prefill_branch(), &why), "prefill");
  EXPECT_NE(why.find("q_len > 1"), std::string::npos);
  EXPECT_EQ(branch_stage(g, else_ops, prefill_branch(), &why), "decode");
  // Ops from both arms: the match spans the stages, no narrowing.
  std::vector<int> both = then_ops;
  both.insert(both.end(), else_ops.begin(), else_ops.end());
  EXPECT_EQ(branch_stage(g, both, prefill_branch(), &why), "");
}

// A branch whose test is itself a conjunction (`if cached and seq_len == 1:`)
// spans several clauses of the op's condition; nested conditions follow it.
TEST(StageSplit, AConjunctionBranchNarrowsTheOpsInsideIt) {
  Source src(
      "import torch\n"
      "def mix(q, s, cached, seq_len, flag):\n"
      "    if cached and seq_len == 1:\n"
      "        if flag:\n"
      "            q = q * 2\n"
      "        o = torch.softmax(q @ s, dim=-1)\n"
      "    else:\n"
      "        o = torch.softmax(q @ s * 3, dim=-1)\n"
      "    return o\n");
  const model::FunctionDataflow& g = src.dataflow("mix");
  model::BranchCondition b;
  b.condition = "cached and seq_len == 1";
  b.true_stage = "decode";
  b.kinds = {model::BranchKind::PrefillDecode};
  b.where = model::SourceSpan{"model.py", 3, 8};
  std::vector<int> nested, inside, other;
  for (const model::DataflowOp& op : g.ops) {
    if (op.name == "mul" && op.line == 5) nested.push_back(op.id);
    if (op.name == "softmax") (op.line == 6 ? inside : other).push_back(op.id);
  }
  ASSERT_EQ(nested.size(), 1u) << g.dump();
  ASSERT_EQ(inside.size(), 1u);
  ASSERT_EQ(other.size(), 1u);
  std::string why;
  EXPECT_EQ(branch_stage(g, nested, {b}, &why), "decode");
  EXPECT_NE(why.find("cached and seq_len == 1"), std::string::npos) << why;
  EXPECT_EQ(branch_stage(g, inside, {b}, &why), "decode");
  EXPECT_EQ(branch_stage(g, other, {b}, &why), "prefill");
}

TEST(StageSplit, CandidateInTheDecodeArmKeepsOnlyDecode) {
  Source src(kModel);
  rules::Rule rule = make_rule("attention.fia", "attention", {"npu_fused_infer_attention_score"}, {});
  auto pattern = make_pattern(rule);
  std::vector<model::BranchCondition> branches = prefill_branch();
  check::FactSet no_facts;
  CandidateContext ctx = plain_context(no_facts);
  ctx.branches = &branches;
  CandidateSet set = build_candidates({make_match(*pattern, src.dataflow("attend"), 9, 9, "attend")}, ctx);
  ASSERT_EQ(set.candidates.size(), 1u);
  EXPECT_EQ(set.candidates[0].stages, (std::vector<std::string>{"decode"}));
}

TEST(StageSplit, DecodeFactsSetTheQueryLengthToOne) {
  Source src(kModel);
  rules::Rule rule = make_rule("attention.fia_decode", "attention", {"npu_fused_infer_attention_score"},
                               {"npu_fused_infer_attention_score:decode_heads_le_256"}, "safe", {"prefill", "decode"});
  auto pattern = make_pattern(rule);
  check::FactSet facts;
  facts.set("num_heads", int64_t{512}, "test");
  facts.set("chip", "A2", "test");
  CandidateSet set = build_candidates({make_match(*pattern, src.dataflow("attend"), 7, 7, "attend")}, plain_context(facts));
  ASSERT_EQ(set.candidates.size(), 1u);
  // Decode knows its query length (1): the limit is violated there. Prefill
  // has no query length given, so whether the decode limit applies stays
  // open and the plan asks for q_seq_len: one result per stage.
  std::vector<std::pair<std::string, check::Answer>> seen;
  std::vector<std::string> prefill_missing;
  for (const CheckResult& r : set.candidates[0].checks) {
    if (r.constraint_id != "decode_heads_le_256") continue;
    seen.emplace_back(r.stage, r.answer);
    if (r.stage == "prefill") prefill_missing = r.missing;
  }
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], std::make_pair(std::string("prefill"), check::Answer::Unknown));
  EXPECT_EQ(seen[1], std::make_pair(std::string("decode"), check::Answer::Violated));
  EXPECT_EQ(prefill_missing, (std::vector<std::string>{"q_seq_len"}));
  EXPECT_EQ(set.candidates[0].status, Status::NotApplicable);
}

}  // namespace
}  // namespace npufuse::plan

// Candidate statuses from hand-made matches: safe, with prerequisites,
// display only, a violated constraint, unknown facts asked for.
#include <gtest/gtest.h>

#include "model/branches.h"
#include "plan/candidate_builder.h"
#include "plan_test_support.h"

namespace npufuse::plan {
namespace {

using testing::embedded_catalog;
using testing::make_match;
using testing::make_pattern;
using testing::make_rule;
using testing::Source;

const char* kNormModel =
    "import torch\n"
    "def rms(x, w, eps):\n"
    "    v = x.pow(2).mean(-1, keepdim=True)\n"
    "    y = x * torch.rsqrt(v + eps)\n"
    "    return w * y\n";

const char* kAttentionModel =
    "import torch\n"
    "def core(q, k, v, mask, scale):\n"
    "    s = torch.matmul(q, k.transpose(2, 3)) * scale + mask\n"
    "    p = torch.softmax(s, dim=-1)\n"
    "    return torch.matmul(p, v)\n";

CandidateContext context_with(const check::FactSet& facts) {
  CandidateContext ctx;
  ctx.catalog = &embedded_catalog();
  ctx.facts = &facts;
  return ctx;
}

const CheckResult* find_check(const Candidate& c, const std::string& id) {
  for (const CheckResult& r : c.checks)
    if (r.constraint_id == id) return &r;
  return nullptr;
}

TEST(CandidateStatus, SafeRuleWithHoldingChecksIsACandidate) {
  Source src(kNormModel);
  rules::Rule rule = make_rule("norm.rms_norm", "norm", {"npu_rms_norm"}, {"npu_rms_norm:*"});
  auto pattern = make_pattern(rule);
  std::vector<MatchSite> sites = {make_match(*pattern, src.dataflow("rms"), 3, 5, "rms")};
  check::FactSet facts;
  facts.set("chip", "A2", "--chip");
  facts.set("dtype", "bfloat16", "config");
  facts.set("dtype_bytes", int64_t{2}, "derived");
  facts.set("last_dim", int64_t{4096}, "config");
  CandidateSet set = build_candidates(sites, context_with(facts));
  ASSERT_EQ(set.candidates.size(), 1u);
  const Candidate& c = set.candidates[0];
  EXPECT_EQ(c.status, Status::Candidate) << (c.blocking.empty() ? "" : c.blocking[0]);
  EXPECT_EQ(c.id, "norm.rms_norm@model.py:3");
  EXPECT_EQ(c.location.start_line, 3);
  EXPECT_EQ(c.location.end_line, 5);
  EXPECT_EQ(c.stages, (std::vector<std::string>{"prefill", "decode"}));
  const CheckResult* products = find_check(c, "products");
  ASSERT_NE(products, nullptr);
  EXPECT_EQ(products->answer, check::Answer::Holds);
  EXPECT_NE(c.verification_cut.find("rms lines 3-5"), std::string::npos) << c.verification_cut;
}

TEST(CandidateStatus, PrerequisitesAreNamedAndLocated) {
  Source src(kNormModel);
  rules::Rule rule = make_rule("rope.rope_half", "rope", {"npu_rotary_mul"}, {}, "needs_prerequisites");
  rule.prerequisites.push_back(rules::Prerequisite{"rope_cos_sin_cache", "precompute cos/sin once", "预计算", true});
  auto pattern = make_pattern(rule);
  std::vector<MatchSite> sites = {make_match(*pattern, src.dataflow("rms"), 3, 4, "rms")};
  check::FactSet facts;
  CandidateSet set = build_candidates(sites, context_with(facts));
  ASSERT_EQ(set.candidates.size(), 1u);
  const Candidate& c = set.candidates[0];
  EXPECT_EQ(c.status, Status::CandidateWithPrerequisites);
  ASSERT_EQ(c.prerequisites.size(), 1u);
  EXPECT_EQ(c.prerequisites[0].id, "rope_cos_sin_cache");
  EXPECT_TRUE(c.prerequisites[0].mechanical);
  EXPECT_EQ(c.prerequisites[0].where.file, "model.py");
  EXPECT_EQ(c.prerequisites[0].where.start_line, 3);
}

TEST(CandidateStatus, EscapingIntermediateBecomesAManualPrerequisite) {
  Source src(kNormModel);
  rules::Rule rule = make_rule("norm.rms_norm", "norm", {"npu_rms_norm"}, {});
  auto pattern = make_pattern(rule);
  MatchSite site = make_match(*pattern, src.dataflow("rms"), 3, 5, "rms");
  site.match.escapes.push_back(match::Escape{0, -1, "returned", 4});
  check::FactSet facts;
  CandidateSet set = build_candidates({site}, context_with(facts));
  ASSERT_EQ(set.candidates.size(), 1u);
  const Candidate& c = set.candidates[0];
  EXPECT_EQ(c.status, Status::CandidateWithPrerequisites);
  ASSERT_EQ(c.prerequisites.size(), 1u);
  EXPECT_FALSE(c.prerequisites[0].mechanical);
  EXPECT_EQ(c.prerequisites[0].where.start_line, 4);
  ASSERT_EQ(c.escapes.size(), 1u);
}

TEST(CandidateStatus, DisplayOnlyRuleIsNotApplicableCitingItsReason) {
  Source src(kNormModel);
  rules::Rule rule = make_rule("norm.gemma_rms_norm", "norm", {"npu_rms_norm"}, {}, "display_only");
  rule.doc_en.push_back(rules::DocSection{"Why", "The weight enters as (1 + w); npu_rms_norm multiplies by w."});
  auto pattern = make_pattern(rule);
  std::vector<MatchSite> sites = {make_match(*pattern, src.dataflow("rms"), 3, 5, "rms")};
  check::FactSet facts;
  CandidateSet set = build_candidates(sites, context_with(facts));
  ASSERT_EQ(set.candidates.size(), 1u);
  const Candidate& c = set.candidates[0];
  EXPECT_EQ(c.status, Status::NotApplicable);
  ASSERT_FALSE(c.blocking.empty());
  EXPECT_NE(c.blocking[0].find("(1 + w)"), std::string::npos) << c.blocking[0];
}

TEST(CandidateStatus, HeadDim96AgainstTndIsNotApplicableCitingTheConstraintAndDoc) {
  Source src(kAttentionModel);
  rules::Rule rule = make_rule("attention.fia_prefill_tnd", "attention", {"npu_fused_infer_attention_score"},
                               {"npu_fused_infer_attention_score:tnd_head_dims",
                                "npu_fused_infer_attention_score:gqa_ratio_le_64"},
                               "safe", {"prefill"});
  rule.facts = {{"layout", "'TND'"}, {"sparse_mode", "3"}};
  auto pattern = make_pattern(rule);
  std::vector<MatchSite> sites = {make_match(*pattern, src.dataflow("core"), 3, 5, "core")};
  check::FactSet facts;
  facts.set("head_dim", int64_t{96}, "config.json: head_dim");
  facts.set("v_head_dim", int64_t{96}, "config.json: head_dim");
  facts.set("mla", false, "config.json: no kv_lora_rank");
  facts.set("chip", "A2", "--chip");
  CandidateSet set = build_candidates(sites, context_with(facts));
  ASSERT_EQ(set.candidates.size(), 1u);
  const Candidate& c = set.candidates[0];
  EXPECT_EQ(c.status, Status::NotApplicable);
  ASSERT_FALSE(c.blocking.empty());
  EXPECT_NE(c.blocking[0].find("npu_fused_infer_attention_score:tnd_head_dims"), std::string::npos) << c.blocking[0];
  EXPECT_NE(c.blocking[0].find("npu_fused_infer_attention_score.md"), std::string::npos) << c.blocking[0];
  EXPECT_NE(c.blocking[0].find("head_dim = 96"), std::string::npos) << c.blocking[0];
  // The head ratio needs the per-rank head counts: unknown, and asked for.
  const CheckResult* ratio = find_check(c, "gqa_ratio_le_64");
  ASSERT_NE(ratio, nullptr);
  EXPECT_EQ(ratio->answer, check::Answer::Unknown);
  EXPECT_NE(std::find(c.missing_facts.begin(), c.missing_facts.end(), "num_heads"), c.missing_facts.end());
}

TEST(CandidateStatus, HeadDim128AgainstTndHolds) {
  Source src(kAttentionModel);
  rules::Rule rule = make_rule("attention.fia_prefill_tnd", "attention", {"npu_fused_infer_attention_score"},
                               {"npu_fused_infer_attention_score:tnd_head_dims"}, "safe", {"prefill"});
  rule.facts = {{"layout", "\"TND\""}};
  auto pattern = make_pattern(rule);
  std::vector<MatchSite> sites = {make_match(*pattern, src.dataflow("core"), 3, 5, "core")};
  check::FactSet facts;
  facts.set("head_dim", int64_t{128}, "config");
  facts.set("v_head_dim", int64_t{128}, "config");
  facts.set("mla", false, "config");
  facts.set("chip", "A3", "--chip");
  CandidateSet set = build_candidates(sites, context_with(facts));
  ASSERT_EQ(set.candidates.size(), 1u);
  EXPECT_EQ(set.candidates[0].status, Status::Candidate);
  EXPECT_EQ(find_check(set.candidates[0], "tnd_head_dims")->answer, check::Answer::Holds);
}

TEST(CandidateStatus, ChipOutsideTheOperatorsProductsBlocks) {
  Source src(kNormModel);
  rules::Rule rule = make_rule("norm.rms_norm", "norm", {"npu_rms_norm"}, {"npu_rms_norm:*"});
  auto pattern = make_pattern(rule);
  std::vector<MatchSite> sites = {make_match(*pattern, src.dataflow("rms"), 3, 5, "rms")};
  check::FactSet facts;
  facts.set("chip", "950", "--chip");
  CandidateSet set = build_candidates(sites, context_with(facts));
  ASSERT_EQ(set.candidates.size(), 1u);
  const CheckResult* products = find_check(set.candidates[0], "products");
  ASSERT_NE(products, nullptr);
  EXPECT_EQ(products->answer, check::Answer::Violated);
  EXPECT_EQ(set.candidates[0].status, Status::NotApplicable);
}

// npu_swiglu's doc ticks only A2. A3 runs the A2 kernels (facts.toml
// same_kernels), so on A3 the operator is undocumented, not unsupported: a
// warning that keeps the candidate, where a chip with kernels of its own
// (950) is a hard limit.
TEST(CandidateStatus, ChipRunningAListedProductsKernelsIsAWarningNotABlock) {
  Source src(kNormModel);
  rules::Rule rule = make_rule("ffn.swiglu", "ffn", {"npu_swiglu"}, {"npu_swiglu:*"});
  auto pattern = make_pattern(rule);
  std::vector<MatchSite> sites = {make_match(*pattern, src.dataflow("rms"), 3, 5, "rms")};
  for (const std::string chip : {"A3", "950"}) {
    SCOPED_TRACE(chip);
    check::FactSet facts;
    facts.set("chip", chip, "--chip");
    CandidateSet set = build_candidates(sites, context_with(facts));
    ASSERT_EQ(set.candidates.size(), 1u);
    const CheckResult* products = find_check(set.candidates[0], "products");
    ASSERT_NE(products, nullptr);
    EXPECT_EQ(products->answer, check::Answer::Violated);
    if (chip == "A3") {
      EXPECT_EQ(products->severity, "warning");
      EXPECT_NE(products->message_en.find("undocumented there, not unsupported"), std::string::npos) << products->message_en;
      EXPECT_NE(set.candidates[0].status, Status::NotApplicable);
      EXPECT_TRUE(set.candidates[0].blocking.empty());
    } else {
      EXPECT_EQ(products->severity, "error");
      EXPECT_EQ(set.candidates[0].status, Status::NotApplicable);
    }
  }
}

TEST(CandidateStatus, UnknownChipIsAskedForNotGuessed) {
  Source src(kNormModel);
  rules::Rule rule = make_rule("norm.rms_norm", "norm", {"npu_rms_norm"}, {"npu_rms_norm:*"});
  auto pattern = make_pattern(rule);
  std::vector<MatchSite> sites = {make_match(*pattern, src.dataflow("rms"), 3, 5, "rms")};
  check::FactSet facts;
  CandidateSet set = build_candidates(sites, context_with(facts));
  ASSERT_EQ(set.candidates.size(), 1u);
  const Candidate& c = set.candidates[0];
  EXPECT_EQ(c.status, Status::Candidate);
  EXPECT_NE(std::find(c.missing_facts.begin(), c.missing_facts.end(), "chip"), c.missing_facts.end());
}

TEST(CandidateStatus, CheckOfAConstraintTheCatalogLacksIsUnknownNotDropped) {
  Source src(kNormModel);
  rules::Rule rule = make_rule("norm.rms_norm", "norm", {"npu_rms_norm"}, {"npu_rms_norm:no_such_constraint"});
  auto pattern = make_pattern(rule);
  std::vector<MatchSite> sites = {make_match(*pattern, src.dataflow("rms"), 3, 5, "rms")};
  check::FactSet facts;
  facts.set("chip", "A2", "--chip");
  CandidateSet set = build_candidates(sites, context_with(facts));
  const CheckResult* r = find_check(set.candidates.at(0), "no_such_constraint");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->answer, check::Answer::Unknown);
}

// The decode chain's scores are also read by a masked_fill that runs only
// when q_len > 1 (prefill): in decode that read never happens, so it is no
// intermediate the fused call must keep; a prefill candidate keeps it.
TEST(CandidateStatus, AReadOnlyAnotherStageRunsIsNoEscape) {
  const char* text =
      "import torch\n"
      "from torch import nn\n"
      "\n"
      "class Attn(nn.Module):\n"
      "    def forward(self, q, k, mask):\n"
      "        bsz, heads, q_len, _ = q.shape\n"
      "        scores = q @ k\n"
      "        if q_len > 1:\n"
      "            scores = scores.masked_fill(mask, -1e9)\n"
      "        return scores.softmax(-1)\n";
  Source src(text);
  const model::ClassDecl* cls = src.set.find_class("Attn");
  ASSERT_NE(cls, nullptr);
  const frontend::ast::FunctionDef* forward = nullptr;
  for (const frontend::ast::stmt* st : cls->node->body)
    if (auto* f = frontend::ast::as<frontend::ast::FunctionDef>(st); f && f->name == "forward") forward = f;
  ASSERT_NE(forward, nullptr);
  model::FunctionDataflow graph = model::build_dataflow(src.set, *cls->file, *forward);
  std::vector<model::BranchCondition> branches = model::find_branches(src.set, {cls});
  int matmul = -1, masked_fill = -1;
  for (const model::DataflowOp& op : graph.ops) {
    if (op.name == "matmul") matmul = op.id;
    if (op.name == "masked_fill") masked_fill = op.id;
  }
  ASSERT_GE(matmul, 0);
  ASSERT_GE(masked_fill, 0);
  check::FactSet facts;
  for (const char* stage : {"decode", "prefill"}) {
    rules::Rule rule = make_rule("attention.core", "attention", {}, {}, "safe", {stage});
    auto pattern = make_pattern(rule);
    MatchSite site = make_match(*pattern, graph, 7, 7, "Attn.forward", "Attn");
    site.match.escapes.push_back(match::Escape{graph.ops[static_cast<size_t>(matmul)].outputs[0], masked_fill,
                                               "read by masked_fill(...)", 9});
    CandidateContext ctx = context_with(facts);
    ctx.branches = &branches;
    CandidateSet set = build_candidates({site}, ctx);
    ASSERT_EQ(set.candidates.size(), 1u) << stage;
    const Candidate& c = set.candidates[0];
    if (std::string(stage) == "decode") {
      EXPECT_TRUE(c.escapes.empty()) << c.escapes.front();
      EXPECT_EQ(c.status, Status::Candidate);
    } else {
      EXPECT_EQ(c.escapes.size(), 1u);
      EXPECT_EQ(c.status, Status::CandidateWithPrerequisites);
    }
  }
}

}  // namespace
}  // namespace npufuse::plan

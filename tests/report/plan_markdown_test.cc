// The Markdown plan: sections in workflow order, every candidate with its
// checks and their answers, the failing review items, both languages.
#include <gtest/gtest.h>

#include "report/plan_markdown.h"
#include "sample_plan.h"

namespace npufuse::report {
namespace {

size_t pos(const std::string& text, const std::string& needle) {
  size_t p = text.find(needle);
  EXPECT_NE(p, std::string::npos) << "missing: " << needle;
  return p;
}

TEST(PlanMarkdown, SectionsFollowTheWorkflow) {
  std::string md = plan_to_markdown(testing::sample_plan(), Lang::En);
  size_t facts = pos(md, "## Facts");
  size_t step1 = pos(md, "## Step 1: modules");
  size_t step2 = pos(md, "## Step 2: reference-chain coverage");
  size_t step3 = pos(md, "## Step 3: candidates");
  size_t reqs = pos(md, "## New-operator requirements");
  size_t step4 = pos(md, "## Step 4: review");
  EXPECT_LT(facts, step1);
  EXPECT_LT(step1, step2);
  EXPECT_LT(step2, step3);
  EXPECT_LT(step3, reqs);
  EXPECT_LT(reqs, step4);
}

TEST(PlanMarkdown, CandidatesAreGroupedByModuleInWorkflowOrder) {
  plan::Plan p = testing::sample_plan();
  std::swap(p.candidates[0], p.candidates[2]);  // an ffn candidate first in the plan
  std::string md = plan_to_markdown(p, Lang::En);
  size_t step3 = pos(md, "## Step 3");
  size_t rope = md.find("### RoPE", step3);
  size_t norm = md.find("### Norm", step3);
  size_t ffn = md.find("### FFN", step3);
  ASSERT_NE(rope, std::string::npos);
  EXPECT_LT(rope, norm);
  EXPECT_LT(norm, ffn);
}

TEST(PlanMarkdown, EachCheckShowsItsAnswerAndDoc) {
  std::string md = plan_to_markdown(testing::sample_plan(), Lang::En);
  EXPECT_NE(md.find("| `npu_rms_norm` | `dtype` | **holds** | error | x is float16 or bfloat16 (dtype = bfloat16 (config.json)) | "
                    "npu_rms_norm.md#params |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("**unknown**"), std::string::npos);
  EXPECT_NE(md.find("**violated**"), std::string::npos);
  EXPECT_NE(md.find("Facts to give: `torch_npu_version`"), std::string::npos);
}

TEST(PlanMarkdown, LocationsPrerequisitesAndEscapesAreShown) {
  std::string md = plan_to_markdown(testing::sample_plan(), Lang::En);
  EXPECT_NE(md.find("`models/m/model.py:12-18` (and 1 more place: `models/m/model.py:40-46`)"), std::string::npos) << md;
  EXPECT_NE(md.find("`rope_cos_sin_precompute` (mechanical (a refactor that keeps the numbers; `npufuse apply` lists whether it performs it), at `models/m/model.py:30-35`)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- rotate_half(q) is also returned to the caller"), std::string::npos);
  EXPECT_NE(md.find("- npu_swiglu has no clamp"), std::string::npos);
  EXPECT_NE(md.find("Verification cut: RMSNorm.forward lines 12-18"), std::string::npos);
  EXPECT_NE(md.find("- matched lines: `models/m/model.py:12-14`, `models/m/model.py:17-18`"), std::string::npos) << md;
  EXPECT_NE(md.find("| `version` (decode) | **unknown**"), std::string::npos) << md;
}

TEST(PlanMarkdown, AlternativesFollowTheirPreferredChainWithTheirOwnStatus) {
  std::string md = plan_to_markdown(testing::sample_plan(), Lang::En);
  size_t preferred = pos(md, "RoPE, half mode — candidate_with_prerequisites");
  size_t listed = pos(md, "- Alternatives for this chain (less preferred): `rope.rotate_half_mul` (not_applicable)");
  size_t detail = pos(md, "##### 1a. RoPE, half mode, per tensor (alternative) — not_applicable");
  size_t its_block = pos(md, "head_dim 96 is not 64 or 128");
  EXPECT_LT(preferred, listed);
  EXPECT_LT(listed, detail);
  EXPECT_LT(detail, its_block);
  EXPECT_LT(its_block, pos(md, "### Norm"));
}

TEST(PlanMarkdown, TableCellsEscapePipes) {
  std::string md = plan_to_markdown(testing::sample_plan(), Lang::En);
  EXPECT_NE(md.find("RMSNorm | weighted — candidate"), std::string::npos);  // a heading keeps the text as is
  plan::Plan p = testing::sample_plan();
  p.candidates[0].checks[0].message_en = "a | b";
  md = plan_to_markdown(p, Lang::En);
  EXPECT_NE(md.find("a \\| b"), std::string::npos);
}

TEST(PlanMarkdown, ReviewListsFailingItems) {
  std::string md = plan_to_markdown(testing::sample_plan(), Lang::En);
  EXPECT_NE(md.find("- [x] Modules decomposed"), std::string::npos);
  EXPECT_NE(md.find("- [ ] Constraints confirmed\n  - norm.rms_norm@models/m/model.py:12: torch_npu_version unknown"),
            std::string::npos)
      << md;
}

TEST(PlanMarkdown, NoFusedOpBecomesARequirement) {
  std::string md = plan_to_markdown(testing::sample_plan(), Lang::En);
  size_t reqs = pos(md, "## New-operator requirements");
  EXPECT_NE(md.find("subgraph: sigmoid(x) * x * y, clamped", reqs), std::string::npos);
  EXPECT_NE(md.find("why nothing fits: npu_swiglu has no clamp; npu_geglu is GeLU", reqs), std::string::npos);
  EXPECT_NE(md.find("left open: sigmoid(x) * x * y, clamped"), std::string::npos);
}

TEST(PlanMarkdown, CoverageCountsEveryMatchedPlace) {
  std::string md = plan_to_markdown(testing::sample_plan(), Lang::En);
  size_t step2 = pos(md, "## Step 2");
  EXPECT_NE(md.find("covered by: `npu_rms_norm` (2 places)", step2), std::string::npos) << md;
  EXPECT_NE(md.find("covered by: `npu_rotary_mul` (1 place)", step2), std::string::npos) << md;
  EXPECT_NE(md.find("blocked: SwiGLU, clamped", step2), std::string::npos) << md;
}

TEST(PlanMarkdown, UnknownFactsNameTheCandidatesThatAsk) {
  std::string md = plan_to_markdown(testing::sample_plan(), Lang::En);
  EXPECT_NE(md.find("- `torch_npu_version` — needed by: `norm.rms_norm@models/m/model.py:12`"), std::string::npos) << md;
}

TEST(PlanMarkdown, ChineseUsesChineseWordsAndMessages) {
  std::string md = plan_to_markdown(testing::sample_plan(), Lang::Zh);
  EXPECT_NE(md.find("## 第三步：候选清单"), std::string::npos);
  EXPECT_NE(md.find("## 第四步：分析阶段审查"), std::string::npos);
  EXPECT_NE(md.find("x 为 float16 或 bfloat16"), std::string::npos);
  EXPECT_NE(md.find("needs torch_npu >= 2.1"), std::string::npos);  // no Chinese text: English stands in
  EXPECT_NE(md.find("每步预先计算一次 cos/sin"), std::string::npos);
  EXPECT_NE(md.find("— 不适配"), std::string::npos);
  EXPECT_NE(md.find("- [ ] 算子约束已确认"), std::string::npos);
  EXPECT_EQ(md.find("## Step"), std::string::npos);
}

TEST(PlanMarkdown, AssumedFactsAreMarkedInBothLanguages) {
  plan::Plan p = testing::sample_plan();
  p.options.tp = 0;
  p.facts.set("tp", int64_t{1}, "assumed: no --tp and no --deploy file");
  p.assumed_facts = {"tp"};
  std::string en = plan_to_markdown(p, Lang::En);
  EXPECT_NE(en.find("| TP / EP / DP | 1 (assumed) / "), std::string::npos) << en;
  EXPECT_NE(en.find("| `tp` | `1` (assumed) | assumed: no --tp"), std::string::npos) << en;
  std::string zh = plan_to_markdown(p, Lang::Zh);
  EXPECT_NE(zh.find("1 (假定)"), std::string::npos) << zh;
  p.assumed_facts.clear();  // a tp the user gave is not marked
  EXPECT_EQ(plan_to_markdown(p, Lang::En).find("(assumed)"), std::string::npos);
}

TEST(PlanMarkdown, EmptyPlanSaysNothingWasFound) {
  plan::Plan p;
  std::string md = plan_to_markdown(p, Lang::En);
  EXPECT_NE(md.find("No fusable or blocked chain was found"), std::string::npos);
  EXPECT_NE(md.find("No facts are known"), std::string::npos);
}

}  // namespace
}  // namespace npufuse::report

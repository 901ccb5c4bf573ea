// A rule's RULE["rejects"] refuses another rule's candidate on the same
// lines that would call the rejected operator (Gemma's (1 + w) norm is not
// npu_rms_norm).
#include <gtest/gtest.h>

#include "plan/analyze.h"
#include "plan/candidate_builder.h"
#include "plan_test_support.h"

namespace npufuse::plan {
namespace {

using testing::embedded_catalog;
using testing::make_match;
using testing::make_pattern;
using testing::make_rule;
using testing::Source;

TEST(RejectedOperator, RefusesTheOtherRulesCandidateOnTheSameLines) {
  Source src(
      "import torch\n"
      "def norm(x, w):\n"
      "    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)\n"
      "    return y * (1.0 + w)\n");
  rules::Rule plain = make_rule("norm.rms_norm", "norm", {"npu_rms_norm"}, {});
  rules::Rule gemma = make_rule("norm.gemma_rms_norm", "norm", {"npu_gemma_rms_norm"}, {});
  gemma.rejects.push_back({"npu_rms_norm", "the weight enters as (1 + w)", "", "gamma = 1 + w precomputed"});
  auto plain_pattern = make_pattern(plain);
  auto gemma_pattern = make_pattern(gemma);
  const model::FunctionDataflow& g = src.dataflow("norm");
  CandidateContext ctx;
  ctx.catalog = &embedded_catalog();
  check::FactSet facts;
  ctx.facts = &facts;
  CandidateSet set = build_candidates({make_match(*plain_pattern, g, 3, 4, "norm"), make_match(*gemma_pattern, g, 3, 4, "norm")}, ctx);
  ASSERT_EQ(set.candidates.size(), 2u);
  const Candidate& refused = set.candidates[0].rule == "norm.rms_norm" ? set.candidates[0] : set.candidates[1];
  EXPECT_EQ(refused.status, Status::NotApplicable);
  ASSERT_FALSE(refused.blocking.empty());
  EXPECT_NE(refused.blocking.back().find("norm.gemma_rms_norm found this chain"), std::string::npos) << refused.blocking.back();
  EXPECT_NE(refused.blocking.back().find("(1 + w)"), std::string::npos);

  // Without the rejecting rule the same match stays a candidate.
  set = build_candidates({make_match(*plain_pattern, g, 3, 4, "norm")}, ctx);
  ASSERT_EQ(set.candidates.size(), 1u);
  EXPECT_NE(set.candidates[0].status, Status::NotApplicable);
}

// gemma_style: the (1 + w) norm fused with the residual add before it is
// placed at the layer's add, not on the norm's lines; it is refused all the
// same, because the norm's lines are among its own.
TEST(RejectedOperator, AnAddNormPlacedAtTheAddIsRefusedForTheNormItRuns) {
  AnalyzeOptions o;
  std::string dir = std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/gemma_style";
  o.paths = {dir + "/model.py"};
  o.config = dir + "/config.json";
  o.chip = "A2";
  Plan plan = analyze(o);
  int add_norms = 0;
  for (const Candidate& c : plan.candidates) {
    for (const Candidate* x : [&] {
           std::vector<const Candidate*> all = {&c};
           for (const Candidate& a : c.alternatives) all.push_back(&a);
           return all;
         }()) {
      if (x->rule != "norm.add_rms_norm") continue;
      ++add_norms;
      EXPECT_EQ(x->status, Status::NotApplicable) << x->id;
      ASSERT_FALSE(x->blocking.empty()) << x->id;
      EXPECT_NE(x->blocking.back().find("norm.gemma_rms_norm found this chain"), std::string::npos) << x->blocking.back();
      EXPECT_NE(x->blocking.back().find("npu_add_rms_norm"), std::string::npos) << x->blocking.back();
    }
  }
  EXPECT_GE(add_norms, 1);
}

}  // namespace
}  // namespace npufuse::plan

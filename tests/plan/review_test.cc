// The step-4 review: each item fails naming what fails.
#include <gtest/gtest.h>

#include "plan/review.h"
#include "plan_test_support.h"

namespace npufuse::plan {
namespace {

using testing::embedded_catalog;

const ReviewItem& item(const std::vector<ReviewItem>& review, const std::string& id) {
  for (const ReviewItem& r : review)
    if (r.id == id) return r;
  throw std::out_of_range(id);
}

Candidate complete_candidate() {
  Candidate c;
  c.id = "norm.rms_norm@model.py:3";
  c.module = "norm";
  c.rule = "norm.rms_norm";
  c.apis = {"npu_rms_norm"};
  c.stages = {"prefill", "decode"};
  c.location = Location{"model.py", 3, 5};
  c.parts = {c.location};
  c.verification_cut = "rms lines 3-5";
  CheckResult r;
  r.api = "npu_rms_norm";
  r.constraint_id = "products";
  r.answer = check::Answer::Holds;
  c.checks = {r};
  return c;
}

model::BlockChains attention_block(bool with_missing_step) {
  model::ModuleChain chain;
  chain.module = "attention";
  chain.class_name = "Attention";
  chain.instance = "model.layers[*].self_attn";
  model::SubChainStep core;
  core.kind = "attention_core";
  core.spans = {model::SourceSpan{"model.py", 40, 44}};
  chain.steps = {core};
  if (with_missing_step) chain.missing = {"rope"};
  model::BlockChains block;
  block.block_class = "DecoderLayer";
  block.modules = {chain};
  return block;
}

TEST(Review, CompletePlanPassesEveryItem) {
  Plan plan;
  plan.candidates = {complete_candidate()};
  Candidate core = complete_candidate();
  core.id = "attention.fia_prefill@model.py:40";
  core.apis = {"npu_fused_infer_attention_score"};
  core.parts = {Location{"model.py", 40, 44}};
  core.checks[0].api = core.apis[0];
  plan.candidates.push_back(core);
  std::vector<model::BlockChains> blocks = {attention_block(false)};
  auto review = run_review(plan, &blocks, embedded_catalog());
  ASSERT_EQ(review.size(), 4u);
  for (const ReviewItem& r : review) EXPECT_TRUE(r.passed) << r.id << ": " << (r.failing.empty() ? "" : r.failing[0]);
}

TEST(Review, MissingStepAndUnmatchedCoreAreNamed) {
  Plan plan;
  plan.candidates = {complete_candidate()};
  std::vector<model::BlockChains> blocks = {attention_block(true)};
  auto review = run_review(plan, &blocks, embedded_catalog());
  const ReviewItem& decomposition = item(review, "decomposition_complete");
  EXPECT_FALSE(decomposition.passed);
  ASSERT_EQ(decomposition.failing.size(), 1u);
  EXPECT_NE(decomposition.failing[0].find("model.layers[*].self_attn"), std::string::npos);
  EXPECT_NE(decomposition.failing[0].find("rope"), std::string::npos);
  const ReviewItem& reference = item(review, "reference_matched");
  EXPECT_FALSE(reference.passed);
  ASSERT_EQ(reference.failing.size(), 1u);
  EXPECT_NE(reference.failing[0].find("attention_core at model.py:40"), std::string::npos) << reference.failing[0];
}

TEST(Review, WithoutTheDecompositionTheItemFailsSayingSo) {
  Plan plan;
  auto review = run_review(plan, nullptr, embedded_catalog());
  EXPECT_FALSE(item(review, "decomposition_complete").passed);
}

TEST(Review, UnknownCheckFailsConstraintsConfirmedNamingTheFacts) {
  Plan plan;
  Candidate c = complete_candidate();
  c.checks[0].answer = check::Answer::Unknown;
  c.checks[0].missing = {"chip"};
  plan.candidates = {c};
  auto review = run_review(plan, nullptr, embedded_catalog());
  const ReviewItem& constraints = item(review, "constraints_confirmed");
  EXPECT_FALSE(constraints.passed);
  ASSERT_EQ(constraints.failing.size(), 1u);
  EXPECT_EQ(constraints.failing[0], "norm.rms_norm@model.py:3: npu_rms_norm:products unknown, needs chip");
}

TEST(Review, UnknownApiAndIncompleteCandidatesAreNamed) {
  Plan plan;
  Candidate c = complete_candidate();
  c.apis = {"npu_no_such_op"};
  c.status = Status::NotApplicable;
  c.verification_cut.clear();
  plan.candidates = {c};
  auto review = run_review(plan, nullptr, embedded_catalog());
  const ReviewItem& constraints = item(review, "constraints_confirmed");
  EXPECT_FALSE(constraints.passed);
  EXPECT_NE(constraints.failing[0].find("npu_no_such_op is not in the catalog"), std::string::npos);
  const ReviewItem& listed = item(review, "candidates_listed");
  EXPECT_FALSE(listed.passed);
  ASSERT_EQ(listed.failing.size(), 2u);
  EXPECT_NE(listed.failing[0].find("no verification cut"), std::string::npos);
  EXPECT_NE(listed.failing[1].find("without a cited constraint"), std::string::npos);
}

TEST(Review, RefusalForTheSizeOfTheChangeFailsTheListing) {
  Plan plan;
  Candidate hard = complete_candidate();
  hard.status = Status::NotApplicable;
  hard.blocking = {"npu_rms_norm:tail_axis_32_bytes: the last axis must hold at least 32 bytes"};
  Candidate soft = complete_candidate();
  soft.id = "ffn.swiglu@model.py:9";
  soft.status = Status::NotApplicable;
  soft.blocking = {"merging gate and up is too much change for this model"};
  plan.candidates = {hard, soft};
  std::vector<ReviewItem> review = run_review(plan, nullptr, embedded_catalog());
  const ReviewItem& listed = item(review, "candidates_listed");
  EXPECT_FALSE(listed.passed);
  ASSERT_EQ(listed.failing.size(), 1u);
  EXPECT_NE(listed.failing[0].find("ffn.swiglu@model.py:9: refused for the size of the change"), std::string::npos);
}

}  // namespace
}  // namespace npufuse::plan

// Fact `padded_batches`: FIA's compressed causal mask replaces the model's
// own mask, so a padded batch would lose its padding. A model whose entry
// forward takes no mask builds masks from positions only (false, from the
// code); one that takes a mask from its caller (data/padding_fact/masked_entry.py)
// leaves it to the deployment.
#include <gtest/gtest.h>

#include <algorithm>

#include "plan/analyze.h"

namespace npufuse::plan {
namespace {

std::string data(const std::string& name) {
  return std::string(NPUFUSE_SOURCE_DIR) + "/tests/plan/data/padding_fact/" + name;
}

const CheckResult* padding_check(const Plan& plan) {
  for (const Candidate& c : plan.candidates)
    if (c.rule == "attention.fia_prefill")
      for (const CheckResult& r : c.checks)
        if (r.constraint_id == "compressed_mask_drops_padding") return &r;
  return nullptr;
}

// llama_like's LlamaForCausalLM.forward(input_ids, past_key_values, use_cache)
// and the LlamaModel it wraps build the causal mask from positions.
TEST(PaddingFact, AnEntryForwardWithoutAMaskBuildsMasksFromPositions) {
  AnalyzeOptions o;
  o.paths = {std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/llama_like/model.py"};
  o.config = std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/llama_like/config.json";
  Plan plan = analyze(o);
  const check::Fact* fact = plan.facts.find("padded_batches");
  ASSERT_NE(fact, nullptr);
  EXPECT_FALSE(fact->value.as_bool());
  EXPECT_NE(fact->provenance.find("LlamaForCausalLM.forward takes no attention mask"), std::string::npos)
      << fact->provenance;
  const CheckResult* r = padding_check(plan);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->answer, check::Answer::Holds);
}

TEST(PaddingFact, AnEntryForwardTakingAMaskLeavesItToTheDeployment) {
  AnalyzeOptions o;
  o.paths = {data("masked_entry.py")};
  Plan plan = analyze(o);
  EXPECT_EQ(plan.facts.find("padded_batches"), nullptr);
  const CheckResult* r = padding_check(plan);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->answer, check::Answer::Unknown);
  EXPECT_EQ(r->missing, std::vector<std::string>{"padded_batches"});
  EXPECT_NE(std::find(plan.unknown_facts.begin(), plan.unknown_facts.end(), "padded_batches"), plan.unknown_facts.end());
}

}  // namespace
}  // namespace npufuse::plan

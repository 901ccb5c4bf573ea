// analyze() end to end on the llama-like test model: loads everything,
// matches, checks, reviews; facts come from the config and the flags.
#include <gtest/gtest.h>

#include <algorithm>

#include "plan/analyze.h"
#include "util/file_io.h"
#include "util/sha256.h"

namespace npufuse::plan {
namespace {

std::string model_dir(const std::string& name) { return std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/" + name; }

AnalyzeOptions llama_options() {
  AnalyzeOptions o;
  o.paths = {model_dir("llama_like") + "/model.py"};
  o.config = model_dir("llama_like") + "/config.json";
  o.chip = "A2";
  o.tp = 2;
  return o;
}

TEST(Analyze, LlamaLikePlanHasCandidatesFactsHashesAndReview) {
  StageTimes times;
  Plan plan = analyze(llama_options(), &times);
  ASSERT_EQ(plan.files.size(), 1u);
  EXPECT_EQ(plan.file_hashes.at(plan.files[0]), util::sha256_hex(read_file(plan.files[0])));
  EXPECT_EQ(plan.facts.find("chip")->value.as_str(), "A2");
  EXPECT_EQ(plan.facts.find("tp")->value.as_int(), 2);
  ASSERT_NE(plan.facts.find("num_heads"), nullptr);
  ASSERT_EQ(plan.review.size(), 4u);
  std::vector<std::string> stages;
  for (const auto& [stage, ms] : times.ms) stages.push_back(stage);
  EXPECT_EQ(stages, (std::vector<std::string>{"load", "model", "match", "check", "review"}));

  bool norm_found = false;
  for (const Candidate& c : plan.candidates) {
    EXPECT_FALSE(c.stages.empty()) << c.id;
    EXPECT_GT(c.location.start_line, 0) << c.id;
    if (c.status != Status::NoFusedOp) {
      EXPECT_EQ(c.id.rfind(c.rule + "@", 0), 0u) << c.id;
    }
    if (c.status == Status::NotApplicable) {
      EXPECT_FALSE(c.blocking.empty()) << c.id;
    }
    norm_found = norm_found || c.module == "norm";
  }
  EXPECT_TRUE(norm_found);
  // Candidate ids are unique.
  std::vector<std::string> ids;
  for (const Candidate& c : plan.candidates) ids.push_back(c.id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
}

TEST(Analyze, PrefillOnlyPlanKeepsNoDecodeStage) {
  AnalyzeOptions o = llama_options();
  o.stage = "prefill";
  Plan plan = analyze(o);
  for (const Candidate& c : plan.candidates)
    EXPECT_EQ(c.stages, (std::vector<std::string>{"prefill"})) << c.id;
}

TEST(Analyze, WithoutTpOneRankIsAssumedAndSaid) {
  AnalyzeOptions o = llama_options();
  o.tp = 0;
  Plan plan = analyze(o);
  // No --tp and no deployment file: the plan states tp = 1 as an assumption
  // rather than asking, and the per-rank heads follow from it.
  EXPECT_NE(std::find(plan.assumed_facts.begin(), plan.assumed_facts.end(), "tp"), plan.assumed_facts.end());
  const auto* tp = plan.facts.find("tp");
  ASSERT_NE(tp, nullptr);
  EXPECT_NE(tp->provenance.find("assumed"), std::string::npos) << tp->provenance;
  EXPECT_NE(plan.facts.find("num_heads"), nullptr);
}

TEST(Analyze, GivenTpIsNotAnAssumption) {
  AnalyzeOptions o = llama_options();
  o.tp = 2;
  Plan plan = analyze(o);
  EXPECT_EQ(std::find(plan.assumed_facts.begin(), plan.assumed_facts.end(), "tp"), plan.assumed_facts.end());
}

TEST(Analyze, BadDeploymentFileNamesItsPlace) {
  AnalyzeOptions o = llama_options();
  o.deploy = std::string(NPUFUSE_SOURCE_DIR) + "/tests/plan/data/bad_deploy.toml";
  try {
    analyze(o);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bad_deploy.toml:2:"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace npufuse::plan

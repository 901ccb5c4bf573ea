// Facts read off the matched chain (last_dim from the bound modules' sizes),
// cache steps behind `cache.update`, already-fused steps and near-misses kept
// to the function of the item they explain, on the test models.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/function_index.h"
#include "plan/analyze.h"

namespace npufuse::plan {
namespace {

std::string model_dir(const std::string& name) { return std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/" + name; }

Plan plan_of(const std::string& model, const std::string& chip = "A2") {
  AnalyzeOptions o;
  o.paths = {model_dir(model) + "/model.py"};
  o.config = model_dir(model) + "/config.json";
  o.chip = chip;
  return analyze(o, nullptr);
}

const Candidate* with_rule(const Plan& plan, const std::string& rule) {
  for (const Candidate& c : plan.candidates) {
    if (c.rule == rule) return &c;
    for (const Candidate& a : c.alternatives)
      if (a.rule == rule) return &a;
  }
  return nullptr;
}

const CheckResult* check_of(const Candidate& c, const std::string& id) {
  for (const CheckResult& r : c.checks)
    if (r.constraint_id == id) return &r;
  return nullptr;
}

bool mentions(const std::vector<std::string>& v, const std::string& needle) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.find(needle) != std::string::npos; });
}

TEST(ChainFacts, SeparateGateAndUpGiveTheMergedWidthAsLastDim) {
  Plan plan = plan_of("llama_like");
  const Candidate* swiglu = with_rule(plan, "ffn.swiglu");
  ASSERT_NE(swiglu, nullptr);
  const CheckResult* even = check_of(*swiglu, "split_axis_even");
  ASSERT_NE(even, nullptr);
  EXPECT_EQ(even->answer, check::Answer::Holds);
  // intermediate_size 14336, merged [gate, up] = 28672.
  EXPECT_TRUE(mentions(even->evidence, "last_dim = 28672")) << ::testing::PrintToString(even->evidence);
  EXPECT_TRUE(mentions(even->evidence, "gate_proj")) << ::testing::PrintToString(even->evidence);
}

TEST(ChainFacts, NormWidthComesFromTheNormsWeight) {
  // Without a chip the 32-byte tail check is evaluated on every product, so it reads last_dim.
  Plan plan = plan_of("llama_like", "");
  const Candidate* norm = with_rule(plan, "norm.rms_norm");
  ASSERT_NE(norm, nullptr);
  const CheckResult* tail = check_of(*norm, "tail_axis_32_bytes");
  ASSERT_NE(tail, nullptr);
  EXPECT_TRUE(tail->missing.empty() || std::find(tail->missing.begin(), tail->missing.end(), "last_dim") == tail->missing.end())
      << ::testing::PrintToString(tail->missing);
  EXPECT_TRUE(mentions(tail->evidence, "last_dim = 4096")) << ::testing::PrintToString(tail->evidence);
}

TEST(ChainFacts, WithoutTpFlagOneRankIsAssumedForTheHeadChecks) {
  Plan plan = plan_of("llama_like");
  EXPECT_EQ(plan.assumed_facts, std::vector<std::string>{"tp"});
  ASSERT_NE(plan.facts.find("num_kv_heads"), nullptr);
  EXPECT_EQ(plan.facts.find("num_kv_heads")->value.as_int(), 8);
  const Candidate* fia = with_rule(plan, "attention.fia_prefill");
  ASSERT_NE(fia, nullptr);
  const CheckResult* ratio = check_of(*fia, "gqa_ratio_le_64");
  ASSERT_NE(ratio, nullptr);
  EXPECT_EQ(ratio->answer, check::Answer::Holds);
}

TEST(CacheSteps, AnUpdateMethodTheFilesDefineCoversTheCallsSteps) {
  // llama_like's DynamicKVCache.update grows the cache with torch.cat: its
  // writes are candidates, so the attention's update call is no new-operator requirement.
  Plan plan = plan_of("llama_like");
  for (const Candidate& c : plan.candidates)
    EXPECT_FALSE(c.module == "kv_cache" && c.status == Status::NoFusedOp) << c.id;
  EXPECT_TRUE(mentions(plan.notes, "covered where the cache is written")) << ::testing::PrintToString(plan.notes);
}

TEST(UncoveredSteps, AnExistingFusedCallIsNoNewOperatorRequirement) {
  Plan plan = plan_of("gptj_style");
  for (const Candidate& c : plan.candidates)
    EXPECT_FALSE(c.module == "norm" && c.status == Status::NoFusedOp) << c.id;
  EXPECT_TRUE(mentions(plan.notes, "already calls the fused form")) << ::testing::PrintToString(plan.notes);
}

TEST(NearMisses, EachQuotedNearMissLiesInTheFunctionOfItsItem) {
  for (const std::string& model : {"llama_like", "gptj_style", "qwen3_like"}) {
    Plan plan = plan_of(model);
    model::SourceSet sources = model::SourceSet::load({model_dir(model) + "/model.py"});
    model::FunctionIndex functions(sources);
    for (const Candidate& c : plan.candidates) {
      for (const std::string& reason : c.near_miss_reasons) {
        // "rule did not match at FILE:LINE (...)" for matched candidates; the
        // lines a no_fused_op quotes are checked through its location.
        size_t at = reason.find(" did not match at ");
        if (at == std::string::npos) continue;
        std::string place = reason.substr(at + 18, reason.find(' ', at + 18) - at - 18);
        int line = std::stoi(place.substr(place.rfind(':') + 1));
        std::string file = place.substr(0, place.rfind(':'));
        bool same = std::any_of(c.parts.begin(), c.parts.end(), [&](const Location& p) {
          return functions.at_line(file, line) == functions.at_line(p.file, p.start_line);
        });
        EXPECT_TRUE(same) << model << ": " << c.id << " quotes " << reason;
      }
    }
  }
}

TEST(FunctionIndex, InnermostFunctionByLineAndByBytes) {
  model::SourceSet sources = model::SourceSet::load({model_dir("llama_like") + "/model.py"});
  const model::ModelFile& file = *sources.files().front();
  std::vector<model::FunctionRange> functions = model::functions_of(file);
  const model::FunctionRange* rms = nullptr;
  for (const model::FunctionRange& f : functions)
    if (f.qualified == "LlamaRMSNorm.forward") rms = &f;
  ASSERT_NE(rms, nullptr);
  EXPECT_TRUE(rms->is_method);
  EXPECT_EQ(model::function_at_line(functions, rms->first_line + 1), rms);
  EXPECT_EQ(model::function_around(functions, rms->body_begin, rms->body_begin + 1), rms);
  EXPECT_EQ(model::function_at_line(functions, 1), nullptr);  // the module docstring
}

}  // namespace
}  // namespace npufuse::plan

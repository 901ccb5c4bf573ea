#include "scan/scan_summary.h"

#include <gtest/gtest.h>

#include "report/plan_names.h"

namespace npufuse::scan {
namespace {

CandidateSummary candidate(const std::string& module, std::vector<std::string> apis, const std::string& status) {
  plan::Plan p;
  plan::Candidate& c = p.candidates.emplace_back();
  c.module = module;
  c.apis = std::move(apis);
  for (plan::Status s : {plan::Status::Candidate, plan::Status::CandidateWithPrerequisites, plan::Status::NotApplicable,
                         plan::Status::NoFusedOp})
    if (report::status_word(s) == status) c.status = s;
  return summarise_candidates(p).at(0);
}

ModelResult model(const std::string& name, std::vector<CandidateSummary> candidates, bool cached = false) {
  ModelResult r;
  r.name = name;
  r.from_cache = cached;
  r.candidates = std::move(candidates);
  return r;
}

ModelResult broken(const std::string& name, const std::string& error) {
  ModelResult r;
  r.name = name;
  r.failed = true;
  r.error = error;
  return r;
}

std::vector<nlohmann::json> rows() {
  return {
      model_row(model("alpha", {candidate("norm", {"npu_rms_norm"}, "candidate"),
                                candidate("norm", {"npu_rms_norm"}, "not_applicable"),
                                candidate("kv_cache", {}, "no_fused_op")})),
      model_row(model("beta", {candidate("norm", {"npu_rms_norm"}, "candidate_with_prerequisites"),
                               candidate("ffn", {"npu_swiglu"}, "candidate")},
                      true)),
      model_row(broken("gamma", "gamma/model.py:3:7: invalid syntax")),
  };
}

TEST(ModelRow, KeepsTheBestStatusAndTheCountPerOpportunity) {
  nlohmann::json row = rows()[0];
  EXPECT_EQ(row["state"], "analysed");
  EXPECT_EQ(row["plan"], "alpha.plan.json");
  EXPECT_EQ(row["opportunities"]["norm/npu_rms_norm"]["status"], "candidate");
  EXPECT_EQ(row["opportunities"]["norm/npu_rms_norm"]["count"], 2);
  EXPECT_EQ(row["opportunities"]["kv_cache/-"]["status"], "no_fused_op");
  EXPECT_EQ(row["statuses"]["candidate"], 1);
  EXPECT_EQ(row["statuses"]["not_applicable"], 1);
  EXPECT_EQ(row["statuses"]["candidate_with_prerequisites"], 0);
}

TEST(SummaryJson, CountsModelsPerOpportunityAndStatus) {
  nlohmann::json s = summary_json("root", rows());
  EXPECT_EQ(s["counts"]["models"], 3);
  EXPECT_EQ(s["counts"]["analysed"], 2);
  EXPECT_EQ(s["counts"]["cached"], 1);
  EXPECT_EQ(s["counts"]["failed"], 1);
  nlohmann::json norm;
  for (const auto& o : s["opportunities"])
    if (o["module"] == "norm") norm = o;
  ASSERT_FALSE(norm.is_null());
  EXPECT_EQ(norm["api"], "npu_rms_norm");
  EXPECT_EQ(norm["models"]["candidate"], 1);                     // alpha
  EXPECT_EQ(norm["models"]["candidate_with_prerequisites"], 1);  // beta
  EXPECT_EQ(norm["models"]["not_applicable"], 0);                // alpha's second one is not its best
  ASSERT_EQ(s["failures"].size(), 1u);
  EXPECT_EQ(s["failures"][0]["model"], "gamma");
  EXPECT_EQ(s["failures"][0]["error"], "gamma/model.py:3:7: invalid syntax");
}

TEST(SummaryMarkdown, TablesOfOpportunitiesModelsAndFailures) {
  std::string md = summary_markdown(summary_json("root", rows()));
  EXPECT_NE(md.find("3 model folders: 2 analysed, 1 read from the cache, 1 failed."), std::string::npos) << md;
  EXPECT_NE(md.find("| norm | npu_rms_norm | 1 | 1 | 0 | 0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| alpha | 1 | 0 | 1 | 1 | kv_cache/- (none, 1), norm/npu_rms_norm (C, 2) |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| gamma | gamma/model.py:3:7: invalid syntax |"), std::string::npos) << md;
}

TEST(SummaryMarkdown, ChineseSummaryHasTheSameTables) {
  std::string md = summary_markdown(summary_json("root", rows()), "zh");
  EXPECT_NE(md.find("共3个模型目录：本次分析2个，从缓存读取1个，失败1个。"), std::string::npos) << md;
  EXPECT_NE(md.find("## 融合机会"), std::string::npos) << md;
  EXPECT_NE(md.find("| norm | npu_rms_norm | 1 | 1 | 0 | 0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| gamma | | | | | 失败（见下文） |"), std::string::npos) << md;
  EXPECT_EQ(md.find("model folders"), std::string::npos) << md;
}

TEST(SummaryMarkdown, PipesInNamesDoNotBreakTheTable) {
  std::string md = summary_markdown(summary_json("root", {model_row(broken("a|b", "x|y"))}));
  EXPECT_NE(md.find("| a\\|b | x\\|y |"), std::string::npos) << md;
}

}  // namespace
}  // namespace npufuse::scan

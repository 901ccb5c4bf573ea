#include "verify/verify_report.h"

#include <gtest/gtest.h>

namespace npufuse::verify {
namespace {

CheckResult harness_result(bool passed, double max_abs) {
  CheckResult r;
  r.passed = passed;
  r.data = {{"passed", passed}, {"max_abs", max_abs}, {"max_rel", max_abs * 10}, {"cosine", passed ? 1.0 : 0.97},
            {"cut", "function RMSNorm.forward (original file vs patched file)"},
            {"performance", {{"kind", "estimate"},
                             {"stages", {{{"stage", "decode"}, {"unfused_us_per_token", 64.1},
                                          {"fused_us_per_token", 8.0}, {"saving_percent", 87.5}}}}}}};
  return r;
}

VerifyReport two_candidates() {
  VerifyReport report;
  report.settings = {"apply --verify", "plan.json", "cpu", 1, 16, "float32"};
  CandidateVerdict kept;
  kept.id = "rope.rope_half@m.py:86";
  kept.rule = "rope.rope_half";
  kept.status = "kept";
  kept.precision = harness_result(true, 0.0);
  kept.diff = "--- a/m.py\n+++ b/m.py\n";
  CandidateVerdict bad;
  bad.id = "norm.rms_norm@m.py:52";
  bad.rule = "norm.rms_norm";
  bad.status = "rolled_back";
  bad.conclusion = "rolled back: harness: OUT OF TOLERANCE";
  bad.precision = harness_result(false, 0.0957);
  bad.alternatives.push_back({"norm.add_rms_norm@m.py:52", "candidate_with_prerequisites", "not tried: ..."});
  report.candidates = {kept, bad};
  return report;
}

TEST(VerifyReport, JsonHasEveryCandidateWithPrecisionPerformanceAndStatus) {
  auto j = report_json(two_candidates());
  EXPECT_EQ(j["schema"], "npufuse-verify/1");
  ASSERT_EQ(j["candidates"].size(), 2u);
  EXPECT_EQ(j["candidates"][0]["status"], "kept");
  EXPECT_EQ(j["candidates"][0]["performance"]["kind"], "estimate");
  EXPECT_FALSE(j["candidates"][0]["precision"].contains("performance"));
  EXPECT_DOUBLE_EQ(j["candidates"][1]["precision"]["max_abs"].get<double>(), 0.0957);
  EXPECT_EQ(j["candidates"][1]["alternatives"][0]["id"], "norm.add_rms_norm@m.py:52");
  EXPECT_FALSE(j["all_passed"].get<bool>());
  EXPECT_EQ(j["tolerances"].size(), 3u);
}

TEST(VerifyReport, MarkdownShowsTheNumbersAndTheEstimateLabel) {
  std::string md = report_markdown(two_candidates());
  EXPECT_NE(md.find("# npufuse optimisation report"), std::string::npos);
  EXPECT_NE(md.find("| `norm.rms_norm@m.py:52` | rolled_back | OUT OF TOLERANCE"), std::string::npos) << md;
  EXPECT_NE(md.find("max abs 0.0957"), std::string::npos) << md;
  EXPECT_NE(md.find("estimate: decode 64.1 -> 8 us/token (88% less)"), std::string::npos) << md;
  EXPECT_NE(md.find("```diff\n--- a/m.py"), std::string::npos);
}

TEST(VerifyReport, AMeasuredObservationShowsMedianSpreadAndRepeats) {
  VerifyReport report = two_candidates();
  report.candidates[0].precision.data["performance"] = {
      {"kind", "measured"},
      {"original", {{"median_us", 120.0}, {"min_us", 110.5}, {"max_us", 150.0}, {"repeats", 20}, {"warmup", 5}}},
      {"replacement", {{"median_us", 40.0}, {"min_us", 38.0}, {"max_us", 55.25}, {"repeats", 20}, {"warmup", 5}}},
      {"speedup", 3.0}};
  std::string md = report_markdown(report);
  EXPECT_NE(md.find("measured: original 120.0 us (min 110.5, max 150.0), fused 40.0 us (min 38.0, max 55.2); "
                    "medians of 20 calls after 5 warm-up, 3.00x"),
            std::string::npos)
      << md;
  EXPECT_EQ(report_json(report)["candidates"][0]["performance"]["kind"], "measured");
}

TEST(VerifyReport, ManualCandidatesAndASkippedModelCheckDoNotFailTheRun) {
  VerifyReport r = two_candidates();
  r.candidates[1].status = "manual";
  EXPECT_TRUE(r.all_passed());
  CheckResult skipped;
  skipped.data = {{"skipped", "no config"}};
  r.model_check = skipped;
  EXPECT_TRUE(r.all_passed());  // skipped is said in the report, not counted as a failure
  CheckResult differs;
  differs.data = {{"rows", nlohmann::ordered_json::array()}};
  r.model_check = differs;
  EXPECT_FALSE(r.all_passed());
}

}  // namespace
}  // namespace npufuse::verify

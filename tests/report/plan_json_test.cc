// plan_to_json / plan_from_json: every field survives the trip, and a plan
// file that breaks the schema is refused with the JSON path of the fault.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "plan/analyze.h"
#include "report/plan_json.h"
#include "sample_plan.h"

namespace npufuse::report {
namespace {

using nlohmann::json;

TEST(PlanJson, RoundTripKeepsEveryField) {
  plan::Plan original = testing::sample_plan();
  json first = plan_to_json(original);
  plan::Plan read = plan_from_json(first);
  EXPECT_EQ(plan_to_json(read), first);
  // Spot checks on the struct itself, not only on its JSON.
  ASSERT_EQ(read.candidates.size(), 4u);
  EXPECT_EQ(read.candidates[1].status, plan::Status::CandidateWithPrerequisites);
  EXPECT_EQ(read.candidates[1].prerequisites[0].where.start_line, 30);
  EXPECT_TRUE(read.candidates[1].prerequisites[0].mechanical);
  EXPECT_EQ(read.candidates[0].checks[1].answer, check::Answer::Unknown);
  EXPECT_EQ(read.candidates[0].extra_locations.size(), 1u);
  EXPECT_DOUBLE_EQ(read.candidates[0].confidence, 0.9);
  EXPECT_EQ(read.candidates[3].requirement.inputs.size(), 2u);
  EXPECT_EQ(read.file_hashes.size(), 1u);
  EXPECT_EQ(read.options.tp, 8);
  EXPECT_FALSE(read.review[1].passed);
  EXPECT_EQ(read.candidates[0].parts.size(), 2u);
  ASSERT_EQ(read.candidates[1].alternatives.size(), 1u);
  EXPECT_EQ(read.candidates[1].alternatives[0].status, plan::Status::NotApplicable);
  EXPECT_EQ(read.candidates[1].alternatives[0].blocking.size(), 1u);
  EXPECT_EQ(read.candidates[0].checks[1].stage, "decode");
  ASSERT_EQ(read.reference_chains.size(), 1u);
  ASSERT_EQ(read.reference_chains[0].steps.size(), 2u);
  EXPECT_EQ(read.reference_chains[0].steps[0].candidates.size(), 1u);
  EXPECT_EQ(read.reference_chains[0].steps[1].detail_zh, "保留torch");
}

TEST(PlanJson, FactValuesKeepTheirPythonTypes) {
  plan::Plan read = plan_from_json(plan_to_json(testing::sample_plan()));
  EXPECT_TRUE(read.facts.find("head_dim")->value.is_int());
  EXPECT_TRUE(read.facts.find("rms_norm_eps")->value.is_float());
  EXPECT_TRUE(read.facts.find("dtype")->value.is_str());
  EXPECT_TRUE(read.facts.find("tie_word_embeddings")->value.is_bool());
  EXPECT_TRUE(read.facts.find("kv_layout")->value.is_list());
  EXPECT_TRUE(read.facts.find("quant")->value.is_none());
  EXPECT_EQ(read.facts.find("head_dim")->provenance, "config.json: head_dim");
}

TEST(PlanJson, RequiredCandidateFieldsAreWritten) {
  json j = plan_to_json(testing::sample_plan());
  for (const char* key : {"id", "module", "stages", "apis", "status", "location", "rule", "evidence", "prerequisites", "checks"})
    EXPECT_TRUE(j["candidates"][0].contains(key)) << key;
  EXPECT_EQ(j["candidates"][0]["location"]["start_line"], 12);
  EXPECT_EQ(j["candidates"][3]["status"], "no_fused_op");
  EXPECT_TRUE(j["candidates"][3].contains("requirement"));
  EXPECT_FALSE(j["candidates"][0].contains("requirement"));
}

std::string error_of(const json& j) {
  try {
    plan_from_json(j);
  } catch (const PlanFormatError& e) {
    return e.what();
  }
  return "";
}

TEST(PlanJson, UnknownStatusNamesItsPath) {
  json j = plan_to_json(testing::sample_plan());
  j["candidates"][2]["status"] = "maybe";
  EXPECT_NE(error_of(j).find("candidates[2]: status 'maybe'"), std::string::npos) << error_of(j);
}

TEST(PlanJson, WrongTypeNamesItsPath) {
  json j = plan_to_json(testing::sample_plan());
  j["candidates"][0]["location"]["start_line"] = "twelve";
  EXPECT_NE(error_of(j).find("candidates[0].location.start_line: expected number"), std::string::npos) << error_of(j);
}

TEST(PlanJson, MissingRequiredFieldIsAnError) {
  json j = plan_to_json(testing::sample_plan());
  j["candidates"][1].erase("apis");
  EXPECT_NE(error_of(j).find("candidates[1].apis: missing"), std::string::npos) << error_of(j);
}

TEST(PlanJson, OtherSchemaVersionIsRefused) {
  json j = plan_to_json(testing::sample_plan());
  j["schema_version"] = kPlanSchemaVersion + 1;
  EXPECT_NE(error_of(j).find(fmt::format("schema_version {}", kPlanSchemaVersion + 1)), std::string::npos) << error_of(j);
}

TEST(PlanJson, NewPlansCarryTheVersionTheReaderKnows) {
  EXPECT_EQ(plan::Plan().schema_version, kPlanSchemaVersion);
}

TEST(PlanJson, UnknownCheckAnswerIsRefused) {
  json j = plan_to_json(testing::sample_plan());
  j["candidates"][0]["checks"][0]["answer"] = "probably";
  EXPECT_NE(error_of(j).find("candidates[0].checks[0]: answer 'probably'"), std::string::npos) << error_of(j);
}

}  // namespace
}  // namespace npufuse::report

namespace npufuse::report {
namespace {

// plan_json_text writes the plan without the document: its text must be
// what the document dumps, byte for byte.
std::string dumped(const plan::Plan& p) { return plan_to_json(p).dump(2) + "\n"; }

TEST(PlanJsonText, IsTheDocumentDumped) {
  plan::Plan p = testing::sample_plan();
  EXPECT_EQ(plan_json_text(p), dumped(p));
}

TEST(PlanJsonText, SpellsNumbersAndOddCharactersAsTheDocumentDoes) {
  plan::Plan p = testing::sample_plan();
  p.facts.set("tiny", 1e-05, "test");
  p.facts.set("huge", 1e+20, "test");
  p.facts.set("half", 0.5, "test");
  p.facts.set("negative_zero", -0.0, "test");
  p.notes.push_back(std::string("control \x01 \x0b \x1f and \x7f, tab\t, quote \" backslash \\ slash /"));
  p.notes.push_back("中文 notes, é, and an emoji \xF0\x9F\x99\x82");
  p.notes.push_back("");
  p.candidates[0].confidence = 0.55;
  p.candidates[0].evidence.push_back("line\nbreak\r\nand \b\f");
  p.assumed_facts.clear();
  p.candidates[1].title_zh.clear();
  EXPECT_EQ(plan_json_text(p), dumped(p));
  // Bytes that are no UTF-8 (a file name may hold them) are refused as the document refuses them.
  p.candidates[0].location.file = "model\xff.py";
  EXPECT_THROW(dumped(p), nlohmann::json::type_error);
  EXPECT_THROW(plan_json_text(p), nlohmann::json::type_error);
}

TEST(PlanJsonText, IsTheDocumentDumpedForEveryTestModel) {
  const std::string models = std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/";
  for (const char* name : {"llama_like", "qwen3_like", "qwen3_moe_like", "deepseek_v3_like", "deepseek_v32_like",
                           "gemma_style", "gptj_style", "gpt_oss_like", "hybrid_moe_like", "vllm_style"}) {
    plan::AnalyzeOptions o;
    o.paths = {models + name + "/model.py"};
    o.config = models + name + "/config.json";
    o.chip = "A2";
    o.tp = 4;
    plan::Plan p = plan::analyze(o);
    EXPECT_EQ(plan_json_text(p), dumped(p)) << name;
  }
}

}  // namespace
}  // namespace npufuse::report

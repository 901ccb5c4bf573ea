// `npufuse explain` as a user runs it: the full reasoning of one candidate,
// the fix preview apply would make, the closest ids for an unknown one, a
// stale plan explained with a warning, JSON and Chinese output.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

struct CliRun {
  int status = -1;
  std::string out, err;
};

CliRun npufuse(const std::string& args) {
  fs::path err = fs::temp_directory_path() / ("npufuse_explain_cli_" + std::to_string(::getpid()) + ".err");
  std::string command = std::string("cd '") + NPUFUSE_SOURCE_DIR + "' && NPUFUSE_HTML_LAYOUT=builtin '" + NPUFUSE_BINARY +
                        "' " + args + " 2>'" + err.string() + "'";
  CliRun r;
  std::FILE* pipe = ::popen(command.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream in(err);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  fs::remove(err);
  return r;
}

class ExplainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("npufuse_explain_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    fs::copy(fs::path(NPUFUSE_SOURCE_DIR) / "tests/models/llama_like", dir_ / "model", fs::copy_options::recursive);
    plan_ = (dir_ / "plan.json").string();
    CliRun r = npufuse("analyze '" + (dir_ / "model").string() + "' --config '" + (dir_ / "model/config.json").string() +
                       "' --format json -o '" + plan_ + "'");
    ASSERT_EQ(r.status, 0) << r.err;
    std::ifstream in(plan_);
    plan_json_ = nlohmann::json::parse(in);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The id of the first entry of `rule`, or empty.
  std::string id_of(const std::string& rule) const {
    for (const auto& c : plan_json_["candidates"])
      if (c.value("rule", "") == rule) return c["id"];
    return "";
  }

  fs::path dir_;
  std::string plan_;
  nlohmann::json plan_json_;
};

TEST_F(ExplainCli, ShowsTheWholeReasoningAndTheFixPreview) {
  std::string id = id_of("norm.rms_norm");
  ASSERT_FALSE(id.empty());
  CliRun r = npufuse("explain '" + id + "' --plan '" + plan_ + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* part : {"## Rule", "`norm.rms_norm`", "## Matched lines", "## Constraint checks", "## Verification cut",
                           "## Fix preview", "```diff"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  EXPECT_NE(r.out.find("# Explanation of `" + id + "`"), std::string::npos);
  // The matched lines are marked, the fix calls the fused operator.
  EXPECT_NE(r.out.find("\n> "), std::string::npos);
  EXPECT_NE(r.out.find("+"), std::string::npos);
  EXPECT_NE(r.out.find("npu_rms_norm"), std::string::npos);
  // Each check of the plan is there with its answer.
  for (const auto& c : plan_json_["candidates"])
    if (c["id"] == id)
      for (const auto& ch : c["checks"])
        EXPECT_NE(r.out.find(ch["api"].get<std::string>() + ":" + ch["constraint_id"].get<std::string>()), std::string::npos)
            << ch.dump();
}

TEST_F(ExplainCli, UnknownIdListsTheClosestOnes) {
  std::string id = id_of("norm.rms_norm");
  std::string typo = id;
  typo.replace(typo.find("rms_norm"), 8, "rms_nrom");
  CliRun r = npufuse("explain '" + typo + "' --plan '" + plan_ + "'");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no candidate '" + typo + "'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("closest ids:\n  " + id), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST_F(ExplainCli, StalePlanIsExplainedWithAWarningAndNoPreview) {
  std::string id = id_of("norm.rms_norm");
  {
    std::ofstream f(dir_ / "model/model.py", std::ios::app);
    f << "\n# edited after the plan\n";
  }
  CliRun r = npufuse("explain '" + id + "' --plan '" + plan_ + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("warning: stale plan"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("changed since"), std::string::npos);
  EXPECT_NE(r.out.find("no fix preview"), std::string::npos);
  EXPECT_EQ(r.out.find("```diff"), std::string::npos);
}

TEST_F(ExplainCli, JsonCarriesThePlanCandidateAndTheRule) {
  std::string id = id_of("norm.rms_norm");
  CliRun r = npufuse("explain '" + id + "' --plan '" + plan_ + "' --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["candidate"]["id"], id);
  EXPECT_EQ(j["rule"]["id"], "norm.rms_norm");
  EXPECT_FALSE(j["snippets"].empty());
  ASSERT_FALSE(j["fix"].empty());
  EXPECT_NE(j["fix"][0]["replacement"].get<std::string>().find("npu_rms_norm"), std::string::npos);
}

TEST_F(ExplainCli, ChineseHeadings) {
  std::string id = id_of("norm.rms_norm");
  CliRun r = npufuse("explain '" + id + "' --plan '" + plan_ + "' --lang zh");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("## 规则"), std::string::npos);
  EXPECT_NE(r.out.find("## 约束检查"), std::string::npos);
}

TEST(ExplainCliInput, MissingPlanIsAnInputError) {
  CliRun r = npufuse("explain some.id --plan /nonexistent/plan.json");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("/nonexistent/plan.json"), std::string::npos) << r.err;
}

}  // namespace

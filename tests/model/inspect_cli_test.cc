// `npufuse inspect` end to end: exit codes, the JSON schema's fields, and
// that the output says which inventory parts are not computed.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <sys/wait.h>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace {

struct CommandResult {
  int status = -1;
  std::string out;
};

CommandResult run_npufuse(const std::string& args) {
  std::string cmd = std::string(NPUFUSE_BINARY) + " " + args + " 2>&1";
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string model(const std::string& name, const std::string& file) {
  return std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/" + name + "/" + file;
}

TEST(InspectCli, JsonFollowsTheDocumentedSchema) {
  CommandResult r = run_npufuse("inspect " + model("qwen3_moe_like", "model.py") + " --config " + model("qwen3_moe_like", "config.json") +
              " --format json");
  ASSERT_EQ(r.status, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "npufuse-inspect/1");
  EXPECT_EQ(j["structure"]["pipeline"]["block_class"], "Qwen3MoeDecoderLayer");
  EXPECT_EQ(j["structure"]["pipeline"]["block_count"]["value"], 48);
  bool top_k = false;
  for (const auto& f : j["facts"])
    if (f["name"] == "top_k") top_k = f["known"] == true && f["value"] == 8;
  EXPECT_TRUE(top_k);
  std::vector<std::string> pending;
  for (const auto& p : j["not_computed"]) pending.push_back(p["part"]);
  EXPECT_NE(std::find(pending.begin(), pending.end(), "dataflow"), pending.end());
  EXPECT_EQ(std::find(pending.begin(), pending.end(), "branches"), pending.end());
  EXPECT_EQ(std::find(pending.begin(), pending.end(), "sub_chains"), pending.end());
  ASSERT_EQ(j["chains"].size(), 1u);
  EXPECT_EQ(j["chains"][0]["block_class"], "Qwen3MoeDecoderLayer");
  std::vector<std::string> modules;
  for (const auto& m : j["chains"][0]["modules"]) modules.push_back(m["module"]);
  EXPECT_NE(std::find(modules.begin(), modules.end(), "moe"), modules.end());
  EXPECT_EQ(j["chains"][0]["modules"][0]["layout"]["layout"], "BNSD");
  bool training_branch = false;
  for (const auto& b : j["branches"])
    for (const auto& k : b["kinds"]) training_branch = training_branch || k == "training_only";
  EXPECT_TRUE(training_branch);
}

TEST(InspectCli, WithoutConfigFactsAreUnknown) {
  CommandResult r = run_npufuse("inspect " + model("llama_like", "model.py") + " --format json");
  ASSERT_EQ(r.status, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["config"].is_null());
  for (const auto& f : j["facts"]) EXPECT_FALSE(f["known"].get<bool>()) << f.dump();
}

TEST(InspectCli, MarkdownSaysWhatIsNotComputed) {
  CommandResult r = run_npufuse("inspect " + model("gptj_style", "model.py"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("## Not computed yet"), std::string::npos);
  EXPECT_NE(r.out.find("- dataflow:"), std::string::npos);
  EXPECT_EQ(r.out.find("- sub_chains:"), std::string::npos);
  EXPECT_NE(r.out.find("## Sub-chains"), std::string::npos);
  CommandResult zh = run_npufuse("inspect " + model("gptj_style", "model.py") + " --lang zh");
  EXPECT_NE(zh.out.find("尚未计算"), std::string::npos);
  EXPECT_NE(zh.out.find("## 子链"), std::string::npos);
}

TEST(InspectCli, InputErrorsNameTheFileAndExitTwo) {
  CommandResult missing = run_npufuse("inspect /nonexistent/model.py");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.out.find("/nonexistent/model.py"), std::string::npos);
  std::string bad = ::testing::TempDir() + "/broken_model.py";
  FILE* f = std::fopen(bad.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("class A(:\n", f);
  std::fclose(f);
  CommandResult syntax = run_npufuse("inspect " + bad);
  EXPECT_EQ(syntax.status, 2);
  EXPECT_NE(syntax.out.find(bad + ":1:"), std::string::npos) << syntax.out;
}

}  // namespace

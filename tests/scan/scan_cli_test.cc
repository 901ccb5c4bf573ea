// `npufuse analyze DIR` run as a user would, output piped: the tree scan's
// exit codes, summary, per-model plans and the absence of a progress bar.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "scan_test_support.h"

namespace npufuse::scan {
namespace {

using testing::copy_test_model;
using testing::ScratchDir;
using testing::shell;
using testing::write_text;
namespace fs = std::filesystem;

std::string analyze(const std::string& args) { return std::string(NPUFUSE_BINARY) + " analyze " + args; }

TEST(ScanCli, TreeScanExitsOneWhenAModelFailsAndTheRestIsWritten) {
  ScratchDir tree("cli_tree"), out("cli_out");
  copy_test_model("llama_like", tree.str(), "llama");
  write_text(tree.file("broken/model.py"), "class A(:\n    pass\n");
  std::string cmd = analyze(tree.str() + " --out " + out.str() + " --jobs 2 > " + out.file("stdout.md") + " 2> " +
                            out.file("stderr.txt"));
  EXPECT_EQ(shell(cmd), 1);
  std::string stdout_text = read_file(out.file("stdout.md"));
  std::string stderr_text = read_file(out.file("stderr.txt"));
  EXPECT_NE(stdout_text.find("# npufuse scan of"), std::string::npos) << stdout_text;
  EXPECT_NE(stdout_text.find("| llama |"), std::string::npos) << stdout_text;
  EXPECT_NE(stderr_text.find("broken/model.py:1:"), std::string::npos) << stderr_text;
  EXPECT_NE(stderr_text.find("2 model folders: 2 analysed, 0 from the cache, 1 failed"), std::string::npos)
      << stderr_text;
  // stderr is a file here, not a terminal: no bar, no carriage returns.
  EXPECT_EQ(stderr_text.find('\r'), std::string::npos);
  EXPECT_TRUE(fs::exists(out.file("llama.plan.json")));
  EXPECT_EQ(read_file(out.file("summary.md")), stdout_text);
}

TEST(ScanCli, TreeScanExitsZeroWhenAllModelsAreAnalysedAndReusesTheCache) {
  ScratchDir tree("cli_ok_tree"), out("cli_ok_out");
  copy_test_model("llama_like", tree.str(), "a");
  copy_test_model("gemma_style", tree.str(), "b");
  std::string base = analyze(tree.str() + " --out " + out.str() + " --format json -o " + out.file("s.json"));
  EXPECT_EQ(shell(base + " 2> " + out.file("err1.txt")), 0);
  EXPECT_EQ(shell(base + " 2> " + out.file("err2.txt")), 0);
  EXPECT_NE(read_file(out.file("err2.txt")).find("0 analysed, 2 from the cache, 0 failed"), std::string::npos);
  nlohmann::json s = nlohmann::json::parse(read_file(out.file("s.json")));
  EXPECT_EQ(s["counts"]["models"], 2);
}

TEST(ScanCli, AModelFolderOrFileIsStillOneModel) {
  ScratchDir out("cli_single");
  std::string dir = testing::source_path("tests/models/llama_like");
  EXPECT_EQ(shell(analyze(dir + "/model.py --config " + dir + "/config.json --format json -o " + out.file("a.json"))), 0);
  EXPECT_EQ(shell(analyze(dir + " --config " + dir + "/config.json --format json -o " + out.file("b.json"))), 0);
  EXPECT_TRUE(nlohmann::json::parse(read_file(out.file("b.json"))).contains("candidates"));
}

// A model folder given alone binds its own config.json, as in a tree scan;
// --config still wins, and a file path guesses nothing.
TEST(ScanCli, AModelFolderReadsItsOwnConfig) {
  ScratchDir out("cli_folder_config");
  copy_test_model("llama_like", out.str(), "m");
  auto config_of = [&](const std::string& args, const std::string& name) {
    EXPECT_EQ(shell(analyze(args + " --format json -o " + out.file(name))), 0) << args;
    nlohmann::json plan = nlohmann::json::parse(read_file(out.file(name)));
    return plan["options"].value("config", std::string());
  };
  EXPECT_EQ(config_of(out.file("m"), "folder.json"), out.file("m") + "/config.json");
  EXPECT_EQ(config_of(out.file("m/model.py"), "file.json"), "");
  write_text(out.file("other.json"), "{\"hidden_size\": 64}\n");
  EXPECT_EQ(config_of(out.file("m") + " --config " + out.file("other.json"), "flag.json"), out.file("other.json"));
}

TEST(ScanCli, SarifIsForOneModel) {
  ScratchDir tree("cli_sarif"), out("cli_sarif_out");
  copy_test_model("llama_like", tree.str(), "a");
  EXPECT_EQ(shell(analyze(tree.str() + " --out " + out.str() + " --format sarif 2> /dev/null")), 2);
}

}  // namespace
}  // namespace npufuse::scan

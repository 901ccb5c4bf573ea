#include "scan/tree_scan.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "scan_test_support.h"

namespace npufuse::scan {
namespace {

using testing::copy_test_model;
using testing::ScratchDir;
using testing::write_text;
namespace fs = std::filesystem;

// Two real test models (one in transformers' file naming) and one that does not parse.
void build_tree(const std::string& root) {
  copy_test_model("llama_like", root, "llama");
  copy_test_model("qwen3_like", root, "org/qwen3", "modeling_qwen3.py");
  write_text(root + "/broken/model.py", "import torch\n\ndef f(x:\n    return x\n");
}

ScanOptions options_for(const ScratchDir& tree, const ScratchDir& out, unsigned jobs = 2) {
  ScanOptions o;
  o.root = tree.str();
  o.out_dir = out.str();
  o.jobs = jobs;
  o.tool_version = "test";
  return o;
}

TEST(TreeScan, AnalysesEveryModelAndReportsTheBrokenOne) {
  ScratchDir tree("tree"), out("out");
  build_tree(tree.str());
  ScanReport r = run_tree_scan(options_for(tree, out));
  EXPECT_EQ(r.counts.models, 3u);
  EXPECT_EQ(r.counts.analysed, 3u);
  EXPECT_EQ(r.counts.cached, 0u);
  EXPECT_EQ(r.counts.failed, 1u);

  ASSERT_EQ(r.summary["failures"].size(), 1u);
  std::string error = r.summary["failures"][0]["error"];
  EXPECT_TRUE(std::regex_search(error, std::regex("broken/model\\.py:3:\\d+: "))) << error;

  EXPECT_TRUE(fs::exists(out.file("llama.plan.json")));
  EXPECT_TRUE(fs::exists(out.file("llama.plan.md")));
  EXPECT_TRUE(fs::exists(out.file("org/qwen3.plan.json")));
  EXPECT_FALSE(fs::exists(out.file("broken.plan.json")));
  EXPECT_TRUE(fs::exists(out.file("summary.json")));
  EXPECT_TRUE(fs::exists(out.file("summary.md")));

  // Each model used its own config.json: the plan records it.
  nlohmann::json llama = nlohmann::json::parse(read_file(out.file("llama.plan.json")));
  EXPECT_EQ(fs::path(llama["options"]["config"].get<std::string>()), fs::path(tree.file("llama/config.json")));
  EXPECT_FALSE(llama["candidates"].empty());
}

TEST(TreeScan, SecondRunReanalysesOnlyWhatChanged) {
  ScratchDir tree("cache_tree"), out("cache_out");
  build_tree(tree.str());
  ScanOptions o = options_for(tree, out);
  nlohmann::json first = run_tree_scan(o).summary;
  const std::string plan_json = read_file(out.file("llama.plan.json")), plan_md = read_file(out.file("llama.plan.md"));
  fs::remove(out.file("llama.plan.json"));

  ScanReport again = run_tree_scan(o);
  EXPECT_EQ(again.counts.analysed, 0u);
  EXPECT_EQ(again.counts.cached, 3u);
  EXPECT_EQ(again.counts.failed, 1u);  // the unchanged broken file is still reported
  EXPECT_EQ(again.summary["opportunities"], first["opportunities"]);
  // The plans written from the cache are the bytes the analysis wrote, and so are the summary rows.
  EXPECT_EQ(read_file(out.file("llama.plan.json")), plan_json);
  EXPECT_EQ(read_file(out.file("llama.plan.md")), plan_md);
  ASSERT_EQ(again.summary["models"].size(), first["models"].size());
  for (size_t i = 0; i < first["models"].size(); ++i) {
    EXPECT_EQ(again.summary["models"][i]["opportunities"], first["models"][i]["opportunities"]);
    EXPECT_EQ(again.summary["models"][i]["statuses"], first["models"][i]["statuses"]);
  }

  // One model file edited, one sibling file added to another folder: those two only.
  std::ofstream(tree.file("llama/model.py"), std::ios::app) << "\n# edited\n";
  write_text(tree.file("org/qwen3/configuration_qwen3.py"), "X = 1\n");
  ScanReport edited = run_tree_scan(o);
  EXPECT_EQ(edited.counts.analysed, 2u);
  EXPECT_EQ(edited.counts.cached, 1u);

  // Another flag changes every key.
  o.analysis.stage = "prefill";
  EXPECT_EQ(run_tree_scan(o).counts.analysed, 3u);

  // Fixing the broken file makes it an ordinary model.
  write_text(tree.file("broken/model.py"), "import torch\n\ndef f(x):\n    return x\n");
  ScanReport fixed = run_tree_scan(o);
  EXPECT_EQ(fixed.counts.analysed, 1u);
  EXPECT_EQ(fixed.counts.failed, 0u);
  EXPECT_TRUE(fs::exists(out.file("broken.plan.json")));
}

TEST(TreeScan, NoCacheAnalysesEverythingAndWritesNoCache) {
  ScratchDir tree("nocache_tree"), out("nocache_out");
  build_tree(tree.str());
  ScanOptions o = options_for(tree, out);
  o.use_cache = false;
  run_tree_scan(o);
  EXPECT_EQ(run_tree_scan(o).counts.analysed, 3u);
  EXPECT_FALSE(fs::exists(cache_dir_of(o)));
}

TEST(TreeScan, ThreadCountDoesNotChangeTheResults) {
  ScratchDir tree("jobs_tree"), out1("jobs_out1"), out4("jobs_out4");
  build_tree(tree.str());
  copy_test_model("gptj_style", tree.str(), "gptj");
  copy_test_model("deepseek_v3_like", tree.str(), "deepseek");
  copy_test_model("qwen3_moe_like", tree.str(), "qwen3_moe");
  ScanOptions one = options_for(tree, out1, 1), four = options_for(tree, out4, 4);
  one.use_cache = four.use_cache = false;
  nlohmann::json a = run_tree_scan(one).summary, b = run_tree_scan(four).summary;
  EXPECT_EQ(a["models"], b["models"]);
  EXPECT_EQ(read_file(out1.file("deepseek.plan.md")), read_file(out4.file("deepseek.plan.md")));
}

TEST(TreeScan, OutputFolderInsideTheTreeIsNotScanned) {
  ScratchDir tree("inside_tree");
  build_tree(tree.str());
  ScanOptions o;
  o.root = tree.str();
  o.out_dir = tree.file("scan-out");
  o.tool_version = "test";
  run_tree_scan(o);
  write_text(tree.file("scan-out/stray/model.py"), "x = 1\n");
  EXPECT_EQ(run_tree_scan(o).counts.models, 3u);
}

TEST(TreeScan, ATreeWithoutModelsIsAnError) {
  ScratchDir tree("empty_tree"), out("empty_out");
  write_text(tree.file("docs/notes.py"), "x = 1\n");
  EXPECT_THROW(run_tree_scan(options_for(tree, out)), std::invalid_argument);
}

}  // namespace
}  // namespace npufuse::scan

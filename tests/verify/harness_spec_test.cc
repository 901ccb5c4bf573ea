#include "verify/harness_spec.h"

#include <gtest/gtest.h>

namespace npufuse::verify {
namespace {

nlohmann::ordered_json rms_rule() {
  return nlohmann::ordered_json::parse(R"({
    "inputs": {"hidden_states": {"shape": ["B", "S", "H"], "dtype": "act"},
               "weight": {"shape": ["H"], "dtype": "act"},
               "eps": {"dtype": "param", "value": 1e-6}},
    "sizes": {"B": 2, "S": 5, "H": 64}})");
}

TEST(HarnessSpec, ConfiguredSizesComeFromTheFacts) {
  check::FactSet facts;
  facts.set("hidden_size", check::Value(int64_t{4096}), "config");
  facts.set("intermediate_size", check::Value(int64_t{14336}), "config");
  facts.set("moe_intermediate_size", check::Value(int64_t{768}), "config");
  facts.set("head_dim", check::Value(int64_t{128}), "config");
  facts.set("dtype", check::Value("bfloat16"), "config");
  auto dense = configured_sizes(facts, "ffn");
  EXPECT_EQ(dense.at("H"), 4096);
  EXPECT_EQ(dense.at("I"), 14336);
  EXPECT_EQ(dense.at("D"), 128);
  EXPECT_FALSE(dense.count("N"));  // not given: never guessed
  EXPECT_EQ(configured_sizes(facts, "moe_experts").at("I"), 768);
}

TEST(HarnessSpec, IndexerRulesTakeTheIndexersHeads) {
  check::FactSet facts;
  facts.set("head_dim", check::Value(int64_t{192}), "config");
  facts.set("num_heads", check::Value(int64_t{16}), "config");
  facts.set("index_head_dim", check::Value(int64_t{128}), "config");
  facts.set("index_n_heads", check::Value(int64_t{64}), "config");
  auto indexer = configured_sizes(facts, "indexer");
  EXPECT_EQ(indexer.at("D"), 128);
  EXPECT_EQ(indexer.at("N"), 64);
  auto attention = configured_sizes(facts, "mla");
  EXPECT_EQ(attention.at("D"), 192);
  EXPECT_EQ(attention.at("N"), 16);
}

// DeepSeek-V3 rotates 64 of its 192 query/key dims: a RoPE rule's D is
// those 64, unless the rule calls them R beside the whole head's D.
TEST(HarnessSpec, RopeRulesTakeTheRotatedWidth) {
  check::FactSet facts;
  facts.set("head_dim", check::Value(int64_t{192}), "config");
  facts.set("rope_dim", check::Value(int64_t{64}), "config");
  EXPECT_EQ(configured_sizes(facts, "rope").at("D"), 64);
  EXPECT_EQ(configured_sizes(facts, "rope", true).at("D"), 192);
  EXPECT_EQ(configured_sizes(facts, "rope", true).at("R"), 64);
  EXPECT_EQ(configured_sizes(facts, "attention").at("D"), 192);
  check::FactSet llama;
  llama.set("head_dim", check::Value(int64_t{128}), "config");
  EXPECT_EQ(configured_sizes(llama, "rope").at("D"), 128);
}

TEST(HarnessSpec, RuleSizesTakeBatchSequenceAndModelSizes) {
  ChosenSizes c = choose_sizes(rms_rule(), {{"H", 4096}, {"D", 128}}, 1, 16, 1'000'000);
  EXPECT_EQ(c.sizes.at("B"), 1);
  EXPECT_EQ(c.sizes.at("S"), 16);
  EXPECT_EQ(c.sizes.at("H"), 4096);
  EXPECT_FALSE(c.sizes.count("D"));  // only names the rule declares
  EXPECT_TRUE(c.note.empty());
}

TEST(HarnessSpec, TooLargeForTheCpuFallsBackToTheRuleSizesAndSaysSo) {
  // 4 * 4096 * 4096 + 4096 elements is more than a budget of 1000.
  ChosenSizes c = choose_sizes(rms_rule(), {{"H", 4096}}, 4, 4096, 1000);
  EXPECT_EQ(c.sizes.at("H"), 64);
  EXPECT_NE(c.note.find("more than 1000"), std::string::npos) << c.note;
  EXPECT_EQ(c.sizes.at("B"), 2);  // even B*S*64 is over 1000 here: the rule's own sizes
}

TEST(HarnessSpec, JsonCarriesTheCutAndItsArguments) {
  HarnessSpec s;
  s.candidate = "norm.rms_norm@m.py:3";
  s.rule = "norm.rms_norm";
  s.cut = FunctionCut{"/a/m.py", "/b/m.py", "RMSNorm.forward", {{"weight", "self.weight"}}};
  auto j = s.to_json();
  EXPECT_EQ(j["cut"]["function"], "RMSNorm.forward");
  EXPECT_EQ(j["cut"]["arguments"]["weight"], "self.weight");
  s.cut.reset();
  EXPECT_TRUE(s.to_json()["cut"].is_null());
}

}  // namespace
}  // namespace npufuse::verify

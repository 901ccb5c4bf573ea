// The deployment file and the facts of the deployment: flags over the file
// over the config, per-rank shares, unknowns with what would answer them.
#include <gtest/gtest.h>

#include "plan/deployment.h"
#include "plan/deployment_facts.h"
#include "plan/fact_literal.h"
#include "plan_test_support.h"

namespace npufuse::plan {
namespace {

using testing::embedded_catalog;

const catalog::FactVocabulary& vocabulary() { return embedded_catalog().facts(); }

std::string error_of(const std::string& text) {
  try {
    parse_deployment(text, "deploy.toml", vocabulary());
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(DeploymentFile, ReadsFlagsAndOtherFacts) {
  auto settings = parse_deployment("tp = 4\nchip = \"A3\"\nbatch_size = 16\nstage = \"decode\"\n", "deploy.toml",
                                   vocabulary());
  ASSERT_EQ(settings.size(), 4u);
  std::map<std::string, DeploymentSetting> by_name;
  for (auto& s : settings) by_name[s.name] = s;
  EXPECT_EQ(by_name.at("tp").value.as_int(), 4);
  EXPECT_EQ(by_name.at("chip").value.as_str(), "A3");
  EXPECT_EQ(by_name.at("tp").where, "deploy.toml:1:6");
}

TEST(DeploymentFile, ErrorsNameFileLineAndColumn) {
  EXPECT_EQ(error_of("tp = 2\ntp_size = 4\n").rfind("deploy.toml:2:11: unknown key 'tp_size'", 0), 0u)
      << error_of("tp = 2\ntp_size = 4\n");
  EXPECT_NE(error_of("tp = \"four\"\n").find("deploy.toml:1:6: 'tp' must be of type int"), std::string::npos);
  EXPECT_NE(error_of("chip = \"B9\"\n").find("deploy.toml:1:8: 'chip' = 'B9' is not one of"), std::string::npos);
  EXPECT_EQ(error_of("tp = = 2\n").rfind("deploy.toml:1:", 0), 0u) << error_of("tp = = 2\n");
}

std::vector<model::Fact> llama_config_facts() {
  return {
      model::Fact{"num_heads", true, 32, "config: num_attention_heads"},
      model::Fact{"num_kv_heads", true, 8, "config: num_key_value_heads"},
      model::Fact{"head_dim", true, 128, "derived: hidden_size / num_attention_heads"},
      model::Fact{"dtype", true, "bfloat16", "config: torch_dtype"},
      model::Fact{"hidden_act", true, "silu", "config: hidden_act"},
      model::Fact{"expert_num", true, 64, "config: num_experts"},
      model::Fact{"quantization_config", false, nullptr, "absent from config: quantization_config"},
  };
}

TEST(DeploymentFacts, PerRankSharesFollowTheSplit) {
  AnalyzeOptions options;
  options.tp = 16;
  options.ep = 8;
  options.chip = "A2";
  DeploymentFacts d = deployment_facts(llama_config_facts(), {}, options, vocabulary());
  EXPECT_EQ(d.facts.find("num_heads")->value.as_int(), 2);
  EXPECT_EQ(d.facts.find("num_kv_heads")->value.as_int(), 1);  // 8 / 16 rounds to at least one
  EXPECT_EQ(d.facts.find("local_expert_num")->value.as_int(), 8);
  EXPECT_EQ(d.facts.find("expert_num")->value.as_int(), 64);
  EXPECT_EQ(d.facts.find("head_dim")->value.as_int(), 128);
  EXPECT_EQ(d.facts.find("dtype_bytes")->value.as_int(), 2);
  EXPECT_EQ(d.facts.find("activation")->value.as_str(), "silu");
  EXPECT_EQ(d.facts.find("quant")->value.as_str(), "bf16");
  EXPECT_NE(d.facts.find("num_heads")->provenance.find("--tp 16"), std::string::npos);
}

TEST(DeploymentFacts, AnFp8CheckpointComputesInBfloat16) {
  for (const char* stored : {"fp8", "float8_e4m3fn", "torch.float8_e5m2"}) {
    std::vector<model::Fact> config = llama_config_facts();
    config[3] = model::Fact{"dtype", true, stored, "config: dtype"};
    DeploymentFacts d = deployment_facts(config, {}, AnalyzeOptions(), vocabulary());
    const check::Fact* dtype = d.facts.find("dtype");
    ASSERT_NE(dtype, nullptr) << stored;
    EXPECT_EQ(dtype->value.as_str(), "bfloat16") << stored;
    EXPECT_NE(dtype->provenance.find("weights are stored in float8"), std::string::npos) << dtype->provenance;
    EXPECT_EQ(d.facts.find("dtype_bytes")->value.as_int(), 2);
  }
  std::vector<model::Fact> config = llama_config_facts();
  config[3] = model::Fact{"dtype", true, "float16", "config: dtype"};
  EXPECT_EQ(deployment_facts(config, {}, AnalyzeOptions(), vocabulary()).facts.find("dtype")->value.as_str(), "float16");
}

TEST(DeploymentFacts, WithNeitherFlagNorFileOneRankIsAssumedAndSaid) {
  DeploymentFacts d = deployment_facts(llama_config_facts(), {}, AnalyzeOptions(), vocabulary());
  ASSERT_NE(d.facts.find("tp"), nullptr);
  EXPECT_EQ(d.facts.find("tp")->value.as_int(), 1);
  EXPECT_EQ(d.facts.find("tp")->provenance.rfind("assumed:", 0), 0u);
  EXPECT_EQ(d.assumed, std::vector<std::string>{"tp"});
  EXPECT_EQ(d.facts.find("num_heads")->value.as_int(), 32);
  EXPECT_EQ(d.facts.find("num_kv_heads")->value.as_int(), 8);
  EXPECT_EQ(d.facts.find("chip"), nullptr);
  // The expert split is not assumed: experts per rank still ask for --ep.
  EXPECT_EQ(d.facts.find("local_expert_num"), nullptr);
  EXPECT_NE(d.hints.at("local_expert_num").find("--ep"), std::string::npos);
}

TEST(DeploymentFacts, AFileWithoutTpLeavesPerRankHeadsUnknownWithAHint) {
  auto file = parse_deployment("chip = \"A3\"\n", "d.toml", vocabulary());
  DeploymentFacts d = deployment_facts(llama_config_facts(), file, AnalyzeOptions(), vocabulary());
  EXPECT_EQ(d.facts.find("tp"), nullptr);
  EXPECT_TRUE(d.assumed.empty());
  EXPECT_EQ(d.facts.find("num_heads"), nullptr);
  ASSERT_TRUE(d.hints.count("num_kv_heads"));
  EXPECT_NE(d.hints.at("num_kv_heads").find("--tp"), std::string::npos);
}

TEST(DeploymentFacts, PerRankKeyValueHeadsAreTheConfigsKeyValueHeadsOverTp) {
  AnalyzeOptions options;
  options.tp = 4;
  DeploymentFacts d = deployment_facts(llama_config_facts(), {}, options, vocabulary());
  EXPECT_EQ(d.facts.find("num_kv_heads")->value.as_int(), 2);  // num_key_value_heads 8 / tp 4
  EXPECT_EQ(d.facts.find("num_heads")->value.as_int(), 8);     // num_attention_heads 32 / tp 4
  EXPECT_NE(d.facts.find("num_kv_heads")->provenance.find("num_key_value_heads"), std::string::npos);
  EXPECT_TRUE(d.assumed.empty());
}

// A gated delta net's heads are split over tensor parallelism like attention's.
TEST(DeploymentFacts, LinearAttentionHeadsPerRankFollowTp) {
  std::vector<model::Fact> config = {
      model::Fact{"linear_num_key_heads", true, 16, "config: linear_num_key_heads"},
      model::Fact{"linear_num_value_heads", true, 32, "config: linear_num_value_heads"},
      model::Fact{"linear_key_head_dim", true, 128, "config: linear_key_head_dim"},
  };
  AnalyzeOptions options;
  options.tp = 4;
  DeploymentFacts d = deployment_facts(config, {}, options, vocabulary());
  EXPECT_EQ(d.facts.find("linear_num_key_heads")->value.as_int(), 4);
  EXPECT_EQ(d.facts.find("linear_num_value_heads")->value.as_int(), 8);
  EXPECT_EQ(d.facts.find("linear_key_head_dim")->value.as_int(), 128);  // a head's width is not split
  EXPECT_NE(d.facts.find("linear_num_value_heads")->provenance.find("--tp 4"), std::string::npos);
  // Without --tp one rank is assumed, as for attention heads.
  DeploymentFacts one = deployment_facts(config, {}, AnalyzeOptions(), vocabulary());
  EXPECT_EQ(one.facts.find("linear_num_key_heads")->value.as_int(), 16);
  EXPECT_EQ(one.assumed, std::vector<std::string>{"tp"});
}

TEST(DeploymentFacts, FlagsWinOverTheFile) {
  auto file = parse_deployment("tp = 2\nchip = \"A3\"\nstage = \"prefill\"\n", "d.toml", vocabulary());
  AnalyzeOptions options;
  options.tp = 8;
  DeploymentFacts d = deployment_facts(llama_config_facts(), file, options, vocabulary());
  EXPECT_EQ(d.facts.find("tp")->value.as_int(), 8);
  EXPECT_EQ(d.facts.find("chip")->value.as_str(), "A3");
  EXPECT_EQ(d.facts.find("chip")->provenance, "d.toml:2:8");
  EXPECT_EQ(d.stage, "prefill");
  EXPECT_EQ(d.facts.find("num_heads")->value.as_int(), 4);
}

TEST(DeploymentFacts, BadFlagValuesAreRejected) {
  AnalyzeOptions options;
  options.chip = "B9";
  EXPECT_THROW(deployment_facts({}, {}, options, vocabulary()), std::invalid_argument);
  options.chip = "";
  options.stage = "train";
  EXPECT_THROW(deployment_facts({}, {}, options, vocabulary()), std::invalid_argument);
  options.stage = "both";
  options.quant = "w3a3";
  EXPECT_THROW(deployment_facts({}, {}, options, vocabulary()), std::invalid_argument);
}

TEST(FactLiteral, ReadsTheRuleBindingsSpellings) {
  EXPECT_EQ(parse_fact_literal("'BNSD'")->as_str(), "BNSD");
  EXPECT_EQ(parse_fact_literal("\"prefill\"")->as_str(), "prefill");
  EXPECT_EQ(parse_fact_literal("3")->as_int(), 3);
  EXPECT_TRUE(parse_fact_literal("True")->as_bool());
  EXPECT_DOUBLE_EQ(parse_fact_literal("0.5")->as_number(), 0.5);
  EXPECT_EQ(parse_fact_literal("[1, 2]")->as_list().size(), 2u);
  EXPECT_FALSE(parse_fact_literal("None").has_value());
  EXPECT_FALSE(parse_fact_literal("head_dim").has_value());
}

}  // namespace
}  // namespace npufuse::plan

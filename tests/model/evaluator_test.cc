// Static evaluation of size expressions against a config.
#include "model/evaluator.h"

#include <gtest/gtest.h>

#include "model/init_attributes.h"

namespace npufuse::model {
namespace {

// Evaluates `expr` inside `__init__(self, config)` of a one-class file.
class EvaluatorTest : public ::testing::Test {
 protected:
  SymValue eval(const std::string& prelude, const std::string& expr, const nlohmann::json* config_json = nullptr) {
    return eval_init(prelude, "        self.out = " + expr + "\n", config_json);
  }
  // self.out as `init_body` (M.__init__'s body, indented) leaves it.
  SymValue eval_init(const std::string& prelude, const std::string& init_body, const nlohmann::json* config_json) {
    std::string text = prelude + "\nclass M:\n    def __init__(self, config):\n" + init_body;
    sources_ = std::make_unique<SourceSet>(SourceSet::from_texts({{"m.py", text}}));
    config_ = config_json ? ModelConfig::from_json(*config_json, "config.json") : ModelConfig();
    schema_ = ConfigSchema::discover(*sources_);
    ev_ = std::make_unique<Evaluator>(*sources_, config_, schema_);
    instance_ = describe_instance(*sources_, *ev_, *sources_->find_class("M"), nullptr);
    for (const Attribute& a : instance_.attributes)
      if (a.name == "out" && !a.sizes.empty()) return a.sizes[0].value;
    return SymValue::unknown("<no attribute>");
  }

  std::unique_ptr<SourceSet> sources_;
  ModelConfig config_;
  ConfigSchema schema_;
  std::unique_ptr<Evaluator> ev_;
  ClassInstance instance_;
};

// A configuration class whose field is computed from a constructor argument
// of the same name (wav2vec2's `self.conv_dim = list(conv_dim)`): reading it
// reads itself. The evaluator must stop at its depth limit, not overflow the
// stack, and the fields around it still evaluate.
TEST_F(EvaluatorTest, ConfigFieldDerivedFromItsOwnNameEnds) {
  const char* config_class =
      "class AudioConfig(PretrainedConfig):\n"
      "    def __init__(self, conv_dim=(512, 512, 512), hidden_size=768, **kwargs):\n"
      "        self.conv_dim = list(conv_dim)\n"
      "        self.num_feat_extract_layers = len(self.conv_dim)\n"
      "        self.hidden_size = hidden_size\n";
  SymValue layers = eval(config_class, "config.num_feat_extract_layers");
  EXPECT_FALSE(layers.text.empty());
  SymValue last = eval(config_class, "config.conv_dim[-1]");
  EXPECT_FALSE(last.text.empty());
  nlohmann::json cfg = {{"hidden_size", 1024}};
  SymValue hidden = eval(config_class, "config.hidden_size * 2", &cfg);
  ASSERT_TRUE(hidden.is_known());
  EXPECT_EQ(hidden.value, 2048);
}

TEST_F(EvaluatorTest, ConfigFieldsStaySymbolicWithoutConfig) {
  SymValue v = eval("", "config.num_key_value_heads * config.head_dim");
  EXPECT_FALSE(v.is_known());
  EXPECT_EQ(v.text, "num_key_value_heads * head_dim");
}

TEST_F(EvaluatorTest, ConfigBindsValues) {
  nlohmann::json cfg = {{"num_key_value_heads", 8}, {"head_dim", 128}};
  SymValue v = eval("", "config.num_key_value_heads * config.head_dim", &cfg);
  ASSERT_TRUE(v.is_known());
  EXPECT_EQ(v.integer(), 1024);
  EXPECT_EQ(v.text, "num_key_value_heads * head_dim");
}

TEST_F(EvaluatorTest, GetattrFallsBackToItsDefaultWhenTheKeyIsAbsent) {
  nlohmann::json cfg = {{"hidden_size", 4096}, {"num_attention_heads", 32}};
  SymValue v = eval("", "getattr(config, 'head_dim', config.hidden_size // config.num_attention_heads)", &cfg);
  ASSERT_TRUE(v.is_known());
  EXPECT_EQ(v.integer(), 128);
  EXPECT_NE(v.text.find("(default)"), std::string::npos);
  nlohmann::json with_head_dim = {{"head_dim", 64}};
  EXPECT_EQ(eval("", "getattr(config, 'head_dim', 1)", &with_head_dim).integer(), 64);
}

TEST_F(EvaluatorTest, PythonIntegerSemantics) {
  nlohmann::json cfg = {{"a", -7}, {"b", 2}};
  EXPECT_EQ(eval("", "config.a // config.b", &cfg).integer(), -4);  // floor, not truncation
  EXPECT_EQ(eval("", "config.a % config.b", &cfg).integer(), 1);
  EXPECT_EQ(eval("", "config.b ** 3", &cfg).integer(), 8);
}

TEST_F(EvaluatorTest, TernaryOnNoneChoosesTheBranch) {
  nlohmann::json cfg = {{"q_lora_rank", nullptr}, {"hidden_size", 10}};
  SymValue v = eval("", "config.hidden_size if config.q_lora_rank is None else config.q_lora_rank", &cfg);
  EXPECT_EQ(v.integer(), 10);
  SymValue symbolic = eval("", "config.hidden_size if config.q_lora_rank is None else config.q_lora_rank");
  EXPECT_FALSE(symbolic.is_known());
  EXPECT_NE(symbolic.text.find(" if "), std::string::npos);
}

TEST_F(EvaluatorTest, ModuleConstantsAndNestedConfigDicts) {
  nlohmann::json cfg = {{"rope_scaling", {{"factor", 40}}}};
  EXPECT_EQ(eval("world_size = 4", "config.rope_scaling['factor'] // world_size", &cfg).integer(), 10);
  EXPECT_EQ(eval("", "config.rope_scaling.get('missing', 3)", &cfg).integer(), 3);
}

TEST_F(EvaluatorTest, InBetweenStringsIsASubstringTest) {
  nlohmann::json cfg = {{"rope_type", "dynamic"}};
  SymValue in = eval("", "'dyn' in config.rope_type", &cfg);
  ASSERT_TRUE(in.is_known());
  EXPECT_EQ(in.value, true);
  EXPECT_EQ(eval("", "'yarn' in config.rope_type", &cfg).value, false);
  EXPECT_EQ(eval("", "'yarn' not in config.rope_type", &cfg).value, true);
  EXPECT_FALSE(eval("", "3 in config.rope_type", &cfg).is_known());  // a TypeError in Python
  EXPECT_FALSE(eval("", "'dyn' in config.rope_type").is_known());
}

// HF's rotary module picks its rope type in an if/else on the config; a
// later read of the attribute sees the arm the config takes, not the first
// one written.
TEST_F(EvaluatorTest, AnAttributeSetInBothArmsTakesTheArmTheConfigSelects) {
  const char* body =
      "        if hasattr(config, 'rope_scaling') and config.rope_scaling is not None:\n"
      "            self.rope_type = config.rope_scaling.get('rope_type', config.rope_scaling.get('type'))\n"
      "        else:\n"
      "            self.rope_type = 'default'\n"
      "        self.out = self.rope_type\n";
  nlohmann::json none = {{"rope_scaling", nullptr}};
  EXPECT_EQ(eval_init("", body, &none).value, "default");
  nlohmann::json linear = {{"rope_scaling", {{"type", "linear"}}}};
  EXPECT_EQ(eval_init("", body, &linear).value, "linear");
  nlohmann::json yarn = {{"rope_scaling", {{"rope_type", "yarn"}, {"type", "linear"}}}};
  EXPECT_EQ(eval_init("", body, &yarn).value, "yarn");
  EXPECT_FALSE(eval_init("", body, nullptr).is_known());
  // An arm reading the attribute itself keeps the earlier definition.
  const char* doubling =
      "        self.n = 2\n"
      "        if config.double:\n"
      "            self.n = self.n * 2\n"
      "        self.out = self.n\n";
  nlohmann::json yes = {{"double", true}};
  EXPECT_EQ(eval_init("", doubling, &yes).value, 2);
}

TEST(ConfigSchema, DataclassFieldsMapThroughTheFillingFunction) {
  std::string text =
      "from dataclasses import dataclass\n"
      "@dataclass\n"
      "class Args:\n"
      "    dim: int = 16\n"
      "    factor: float = 1.0\n"
      "def parse_config(cfg):\n"
      "    rope = cfg.get('rope_scaling') or {}\n"
      "    return Args(dim=cfg['hidden_size'], factor=rope.get('factor', 1.0))\n"
      "class M:\n"
      "    def __init__(self, args: Args):\n"
      "        self.width = args.dim * 2\n"
      "        self.f = args.factor\n";
  SourceSet sources = SourceSet::from_texts({{"m.py", text}});
  ConfigSchema schema = ConfigSchema::discover(sources);
  EXPECT_EQ(schema.field("Args", "dim").key, "hidden_size");
  EXPECT_EQ(schema.field("Args", "factor").key, "rope_scaling.factor");
  ModelConfig config = ModelConfig::from_json({{"hidden_size", 7168}, {"rope_scaling", {{"factor", 40}}}}, "c.json");
  Evaluator ev(sources, config, schema);
  ClassInstance inst = describe_instance(sources, ev, *sources.find_class("M"), nullptr);
  ASSERT_EQ(inst.attributes.size(), 2u);
  EXPECT_EQ(inst.attributes[0].sizes[0].value.integer(), 14336);
  EXPECT_EQ(inst.attributes[0].sizes[0].value.text, "hidden_size * 2");
  EXPECT_EQ(inst.attributes[1].sizes[0].value.integer(), 40);
}

TEST(ModelConfig, InvalidJsonNamesFileLineAndColumn) {
  // Written to a temporary file so the error carries a real path.
  std::string path = ::testing::TempDir() + "/bad_config.json";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\n  \"a\": 1,\n  oops\n}\n", f);
  std::fclose(f);
  try {
    ModelConfig::load(path);
    FAIL() << "expected an error";
  } catch (const frontend::SyntaxError& e) {
    EXPECT_EQ(e.diagnostic().path, path);
    EXPECT_EQ(e.diagnostic().line, 3);
  }
}

}  // namespace
}  // namespace npufuse::model

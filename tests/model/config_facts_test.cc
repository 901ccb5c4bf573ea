// Facts bound from config.json: what a window the config switches off reads as,
// and a multimodal config's text model read through its nested text_config.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "frontend/diagnostic.h"
#include "model/facts.h"
#include "model/inventory.h"
#include "model/model_config.h"

namespace npufuse::model {
namespace {

const Fact& fact(const std::vector<Fact>& facts, const std::string& name) {
  for (const Fact& f : facts)
    if (f.name == name) return f;
  static const Fact none{};
  ADD_FAILURE() << "no fact " << name;
  return none;
}

TEST(ConfigFacts, SlidingWindowSwitchedOffIsFullAttention) {
  auto facts = bind_facts(ModelConfig::from_json({{"sliding_window", 4096}, {"use_sliding_window", false}}, "c.json"));
  const Fact& window = fact(facts, "sliding_window");
  EXPECT_TRUE(window.known);
  EXPECT_EQ(window.value, 0);
  EXPECT_NE(window.source.find("use_sliding_window"), std::string::npos);
}

TEST(ConfigFacts, SlidingWindowAbsentOrNullIsFullAttention) {
  for (nlohmann::json config : {nlohmann::json{{"hidden_size", 64}}, nlohmann::json{{"sliding_window", nullptr}}}) {
    const Fact& window = fact(bind_facts(ModelConfig::from_json(config, "c.json")), "sliding_window");
    EXPECT_TRUE(window.known);
    EXPECT_EQ(window.value, 0);
  }
}

TEST(ConfigFacts, SlidingWindowInUseKeepsItsLength) {
  const Fact& window = fact(bind_facts(ModelConfig::from_json({{"sliding_window", 128}}, "c.json")), "sliding_window");
  EXPECT_EQ(window.value, 128);
}

TEST(ConfigFacts, WithoutAConfigTheWindowStaysUnknown) {
  const Fact& window = fact(bind_facts(ModelConfig{}), "sliding_window");
  EXPECT_FALSE(window.known);
}

// A multimodal checkpoint (Gemma 3, LLaVA style): the text model's sizes,
// window and experts sit under text_config, beside a vision_config.
nlohmann::json multimodal_config() {
  return nlohmann::json{
      {"model_type", "gemma3"},
      {"vision_config", {{"model_type", "siglip_vision_model"}, {"hidden_size", 1152}, {"num_attention_heads", 16}}},
      {"text_config",
       {{"model_type", "gemma3_text"}, {"hidden_size", 2560}, {"num_attention_heads", 8}, {"num_key_value_heads", 4},
        {"head_dim", 256}, {"sliding_window", 1024}, {"num_local_experts", 8}, {"num_experts_per_tok", 2}}}};
}

TEST(ConfigFacts, NestedTextConfigGivesTheTextModelsFacts) {
  auto facts = bind_facts(ModelConfig::from_json(multimodal_config(), "c.json"));
  EXPECT_EQ(fact(facts, "hidden_size").value, 2560);  // not the vision tower's 1152
  EXPECT_EQ(fact(facts, "num_heads").value, 8);
  EXPECT_EQ(fact(facts, "num_kv_heads").value, 4);
  EXPECT_EQ(fact(facts, "head_dim").value, 256);
  EXPECT_EQ(fact(facts, "expert_num").value, 8);
  const Fact& window = fact(facts, "sliding_window");
  EXPECT_TRUE(window.known);
  EXPECT_EQ(window.value, 1024);
  EXPECT_EQ(window.source, "config: text_config.sliding_window");
}

TEST(ConfigFacts, TopLevelKeyWinsOverTheNestedOne) {
  nlohmann::json c = multimodal_config();
  c["hidden_size"] = 4096;
  ModelConfig config = ModelConfig::from_json(c, "c.json");
  EXPECT_EQ(*config.find("hidden_size"), 4096);
  EXPECT_EQ(config.nested_origin("hidden_size"), "");
  EXPECT_EQ(config.nested_origin("head_dim"), "text_config");
  EXPECT_EQ(*config.find("text_config.head_dim"), 256);  // an explicit path still works
}

TEST(ConfigFacts, AbsentKeyOfANestingConfigStaysUnknown) {
  // The window and MLA ranks may be set in a sub-config the tool does not
  // read: their absence is no evidence of full attention or of no MLA.
  nlohmann::json c = {{"model_type", "omni"},
                      {"thinker_config", {{"model_type", "omni_thinker"}, {"text_config", {{"sliding_window", 512}}}}}};
  auto facts = bind_facts(ModelConfig::from_json(c, "c.json"));
  EXPECT_FALSE(fact(facts, "sliding_window").known);
  for (const Fact& f : facts) EXPECT_NE(f.name, "mla") << "mla derived as " << f.value << " from " << f.source;
}

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

// Python's json writes non-finite floats as bare NaN / Infinity (HF configs
// of Mamba-style models carry them): read as null, strings left alone.
TEST(ConfigFacts, NonFiniteFloatsReadAsNull) {
  std::string path = write_temp("npufuse_cfg_nonfinite.json",
                                "{\"time_step_limit\": [0.0, Infinity], \"low\": -Infinity, \"x\": NaN,\n"
                                " \"note\": \"NaN and Infinity stay in strings \\\" Infinity\", \"hidden_size\": 64}\n");
  ModelConfig c = ModelConfig::load(path);
  EXPECT_EQ((*c.find("time_step_limit"))[0], 0.0);
  EXPECT_TRUE((*c.find("time_step_limit"))[1].is_null());
  EXPECT_TRUE(c.find("low")->is_null());
  EXPECT_TRUE(c.find("x")->is_null());
  EXPECT_EQ(*c.find("note"), "NaN and Infinity stay in strings \" Infinity");
  EXPECT_EQ(*c.find("hidden_size"), 64);
}

TEST(ConfigFacts, ErrorPositionAfterANonFiniteFloatIsTheFilesOwn) {
  // The same fault placed after a plain number and after Infinity is
  // reported at the same line and column of the file.
  auto position = [](const std::string& name, const std::string& text) {
    try {
      ModelConfig::load(write_temp(name, text));
    } catch (const frontend::SyntaxError& e) {
      return std::make_pair(e.diagnostic().line, e.diagnostic().col);
    }
    ADD_FAILURE() << "no error for " << text;
    return std::make_pair(0, 0);
  };
  auto plain = position("npufuse_cfg_bad_plain.json", "{\"a\": 12345678,\n \"b\": [1, 2,, 3]}\n");
  auto inf = position("npufuse_cfg_bad_inf.json", "{\"a\": Infinity,\n \"b\": [1, 2,, 3]}\n");
  EXPECT_EQ(plain.first, 2);
  EXPECT_EQ(inf, plain);
  auto nan = position("npufuse_cfg_bad_nan.json", "{\"a\": NaN, \"b\": [1, 2,, 3]}\n");
  auto nan_plain = position("npufuse_cfg_bad_nan_plain.json", "{\"a\": 123, \"b\": [1, 2,, 3]}\n");
  EXPECT_EQ(nan, nan_plain);
}
// The window under another config name: `sliding_window_size` is read as the
// window; a window key the code reads that the binder does not know leaves
// the window unknown, never a derived 0 (full attention).
const Fact& window_of(const std::string& code, nlohmann::json config) {
  static std::vector<std::unique_ptr<std::pair<SourceSet, ModelConfig>>> keep;
  keep.push_back(std::make_unique<std::pair<SourceSet, ModelConfig>>(SourceSet::from_texts({{"m.py", code}}),
                                                                     ModelConfig::from_json(config, "config.json")));
  static std::vector<Inventory> inventories;
  inventories.push_back(build_inventory(keep.back()->first, keep.back()->second));
  return fact(inventories.back().facts, "sliding_window");
}

const char* kWindowedAttention = R"(import torch
from torch import nn

class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.window = config.WINDOW_KEY
        self.q = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x):
        return self.q(x)
)";

std::string with_key(const std::string& key) {
  std::string code = kWindowedAttention;
  code.replace(code.find("WINDOW_KEY"), 10, key);
  return code;
}

TEST(ConfigFacts, SlidingWindowSizeIsTheWindow) {
  const Fact& w = fact(bind_facts(ModelConfig::from_json({{"sliding_window_size", 4096}}, "c.json")), "sliding_window");
  EXPECT_TRUE(w.known);
  EXPECT_EQ(w.value, 4096);
}

TEST(ConfigFacts, AWindowTheCodeReadsUnderAnotherNameIsUnknown) {
  const Fact& w = window_of(with_key("attention_window"), {{"hidden_size", 64}, {"attention_window", 512}});
  EXPECT_FALSE(w.known) << w.source;
  EXPECT_NE(w.source.find("config.attention_window"), std::string::npos) << w.source;
  // A key that is no window length (a layer pattern) leaves the derived 0.
  const Fact& p = window_of(with_key("sliding_window_pattern"), {{"hidden_size", 64}, {"sliding_window_pattern", 6}});
  EXPECT_TRUE(p.known) << p.source;
  EXPECT_EQ(p.value, 0);
}

// A BERT-family config run as an encoder attends both ways: not causal-only.
// One run as a decoder, or a config without the key, is.
TEST(ConfigFacts, EncoderConfigIsNotCausalOnly) {
  auto encoder = bind_facts(ModelConfig::from_json({{"hidden_size", 64}, {"is_decoder", false}}, "c.json"));
  const Fact& beyond = fact(encoder, "mask_beyond_causal");
  ASSERT_TRUE(beyond.known);
  EXPECT_NE(beyond.value.get<std::string>().find("is_decoder = false"), std::string::npos) << beyond.value;
  auto decoder = bind_facts(ModelConfig::from_json({{"hidden_size", 64}, {"is_decoder", true}}, "c.json"));
  EXPECT_EQ(fact(decoder, "mask_beyond_causal").value, "none");
  auto plain = bind_facts(ModelConfig::from_json({{"hidden_size", 64}}, "c.json"));
  EXPECT_EQ(fact(plain, "mask_beyond_causal").value, "none");
}

// A dense model's FFN width is intermediate_size; an MoE config leaves it
// unknown (its experts' width and split differ from the dense layers').
TEST(ConfigFacts, FfnWidthOfADenseModelOnly) {
  auto dense = bind_facts(ModelConfig::from_json({{"intermediate_size", 11008}}, "c.json"));
  EXPECT_EQ(fact(dense, "ffn_width").value, 11008);
  auto moe = bind_facts(ModelConfig::from_json({{"intermediate_size", 11008}, {"num_local_experts", 8}}, "c.json"));
  for (const Fact& f : moe) EXPECT_NE(f.name, "ffn_width");
}

// A hybrid model's gated delta net is sized by its own keys; the short
// convolution's width goes by several names (LFM2 calls it conv_L_cache).
TEST(ConfigFacts, LinearAttentionSizesAndConvolutionWidth) {
  auto facts = bind_facts(ModelConfig::from_json({{"linear_num_key_heads", 16}, {"linear_num_value_heads", 32},
                                                  {"linear_key_head_dim", 128}, {"linear_value_head_dim", 128},
                                                  {"linear_conv_kernel_dim", 4}},
                                                 "c.json"));
  EXPECT_EQ(fact(facts, "linear_num_key_heads").value, 16);
  EXPECT_EQ(fact(facts, "linear_num_value_heads").value, 32);
  EXPECT_EQ(fact(facts, "linear_key_head_dim").value, 128);
  EXPECT_EQ(fact(facts, "linear_value_head_dim").value, 128);
  EXPECT_EQ(fact(facts, "conv_kernel_size").value, 4);
  for (const char* key : {"conv_kernel", "mamba_d_conv", "conv_L_cache"}) {
    const Fact& width = fact(bind_facts(ModelConfig::from_json({{key, 3}}, "c.json")), "conv_kernel_size");
    EXPECT_TRUE(width.known) << key;
    EXPECT_EQ(width.value, 3) << key;
    EXPECT_NE(width.source.find(key), std::string::npos) << width.source;
  }
  // A config without them leaves them unknown, never a derived 0.
  auto plain = bind_facts(ModelConfig::from_json({{"hidden_size", 64}}, "c.json"));
  EXPECT_FALSE(fact(plain, "linear_num_key_heads").known);
  EXPECT_FALSE(fact(plain, "conv_kernel_size").known);
}

}  // namespace
}  // namespace npufuse::model

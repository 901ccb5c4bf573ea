// Facts bound from config.json: what a window the config switches off reads as,
// and a multimodal config's text model read through its nested text_config.
#include <gtest/gtest.h>

#include "model/facts.h"
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

}  // namespace
}  // namespace npufuse::model

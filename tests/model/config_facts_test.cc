// Facts bound from config.json: what a window the config switches off reads as.
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

}  // namespace
}  // namespace npufuse::model

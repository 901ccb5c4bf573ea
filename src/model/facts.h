#pragma once
// The model facts a fusion check needs, bound from config.json. Names follow
// catalog/facts.toml where a fact is defined there (num_heads, num_kv_heads,
// head_dim, expert_num, top_k, group_count, k_group, ...); the rest use the
// config.json key. Without a config every fact is reported unknown, naming
// the key it would come from; nothing is guessed.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace npufuse::model {

struct Fact {
  std::string name;
  bool known = false;
  nlohmann::json value;   // when known
  std::string source;     // "config: num_attention_heads", "derived: hidden_size / num_attention_heads"
};

std::vector<Fact> bind_facts(const ModelConfig& config);

}  // namespace npufuse::model

#pragma once
// What one candidate's harness checks, as data: the rule and its file, the
// dtype and sizes of the random inputs, the tolerances, and the cut (the
// user's function in the original and in the patched file, with the
// spelling of each rule input inside it). harness_writer.h turns it into a
// runnable Python file.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "check/facts.h"

namespace npufuse::verify {

struct FunctionCut {
  std::string original_module;  // absolute path of the user's file
  std::string patched_module;   // absolute path of the patched copy
  std::string function;         // "LlamaRMSNorm.forward" or "apply_rotary_pos_emb"
  std::map<std::string, std::string> arguments;  // rule input -> spelling in the function
};

struct HarnessSpec {
  std::string candidate;
  std::string rule;
  std::string rule_file;  // a copy of the rule file the harness imports
  std::string dtype = "float32";
  std::map<std::string, int64_t> sizes;  // the rule's sizes with the configured values put in
  std::string sizes_note;                // how the sizes were chosen, when not plainly from the config
  std::optional<FunctionCut> cut;
  std::string cut_note;                  // why there is no function cut
  std::string device = "auto";           // cpu | npu | auto
  int warmup = 5, repeats = 20;
  nlohmann::ordered_json estimate;       // the cost model's numbers (reported when nothing is measured)

  nlohmann::ordered_json to_json() const;
};

// The configured value of each size name a rule may use: H hidden_size,
// I intermediate_size (moe_intermediate_size for moe rules), D head_dim,
// N num_heads, KVN num_kv_heads, E expert_num, K top_k, C kv_lora_rank,
// G group_count, R the rotated width (qk_rope_head_dim, else rope_dim); for
// indexer rules D index_head_dim and N index_n_heads; for RoPE rules D the
// rotated width (rope_dim, else head_dim) unless the rule declares R
// (`declares_rope_size`: D is then the whole head). Only names the facts
// give are returned.
std::map<std::string, int64_t> configured_sizes(const check::FactSet& facts, const std::string& rule_module,
                                                bool declares_rope_size = false);

struct ChosenSizes {
  std::map<std::string, int64_t> sizes;
  std::string note;  // why some sizes are the rule's own (too large for a CPU check)
};

// The rule's RULE["sizes"] with B, S, T = B*S and the configured sizes put
// in (only names the rule declares). When the inputs would then hold more
// than max_elements elements, the configured model sizes are dropped (B and
// S stay), and the note says so.
ChosenSizes choose_sizes(const nlohmann::ordered_json& rule_literal, const std::map<std::string, int64_t>& configured,
                         int64_t batch, int64_t seq, int64_t max_elements);

}  // namespace npufuse::verify

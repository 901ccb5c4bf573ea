#include "model/facts.h"

#include <initializer_list>
#include <set>
#include <string>
#include <vector>

namespace npufuse::model {

namespace {

using json = nlohmann::json;

struct Binder {
  const ModelConfig& config;
  std::vector<Fact> facts;

  const json* first(std::initializer_list<const char*> keys, std::string* which) const {
    for (const char* k : keys) {
      const json* j = config.find(k);
      if (j && !j->is_null()) {
        *which = k;
        return j;
      }
    }
    return nullptr;
  }

  // A fact read from the first present key of `keys`.
  void direct(const char* name, std::initializer_list<const char*> keys) {
    Fact f;
    f.name = name;
    std::string which;
    if (const json* j = first(keys, &which)) {
      f.known = true;
      f.value = *j;
      std::string nested = config.nested_origin(which);
      f.source = "config: " + (nested.empty() ? which : nested + "." + which);
    } else {
      std::string all;
      for (const char* k : keys) all += (all.empty() ? "" : " | ") + std::string(k);
      f.source = (config.loaded() ? "absent from config: " : "needs config: ") + all;
    }
    facts.push_back(std::move(f));
  }

  void derived(const char* name, json value, std::string how) {
    Fact f;
    f.name = name;
    f.known = true;
    f.value = std::move(value);
    f.source = "derived: " + std::move(how);
    facts.push_back(std::move(f));
  }

  Fact* find(const std::string& name) {
    for (Fact& f : facts)
      if (f.name == name) return &f;
    return nullptr;
  }
};

}  // namespace

std::vector<Fact> bind_facts(const ModelConfig& config) {
  Binder b{config, {}};
  b.direct("hidden_size", {"hidden_size", "dim", "d_model", "n_embd"});
  b.direct("num_layers", {"num_hidden_layers", "n_layers", "n_layer"});
  b.direct("num_heads", {"num_attention_heads", "n_heads", "n_head"});
  b.direct("num_kv_heads", {"num_key_value_heads", "n_kv_heads"});
  b.direct("head_dim", {"head_dim"});
  b.direct("v_head_dim", {"v_head_dim"});
  b.direct("intermediate_size", {"intermediate_size", "inter_dim", "n_inner"});
  b.direct("moe_intermediate_size", {"moe_intermediate_size", "moe_inter_dim"});
  b.direct("expert_num", {"n_routed_experts", "num_local_experts", "num_experts"});
  b.direct("top_k", {"num_experts_per_tok", "n_activated_experts", "moe_top_k"});
  b.direct("n_shared_experts", {"n_shared_experts"});
  b.direct("group_count", {"n_group", "n_expert_groups"});
  b.direct("k_group", {"topk_group", "n_limited_groups"});
  b.direct("scoring_func", {"scoring_func", "score_func"});
  b.direct("norm_topk_prob", {"norm_topk_prob"});
  b.direct("routed_scaling_factor", {"routed_scaling_factor", "route_scale"});
  b.direct("first_k_dense_replace", {"first_k_dense_replace", "n_dense_layers"});
  b.direct("q_lora_rank", {"q_lora_rank"});
  b.direct("kv_lora_rank", {"kv_lora_rank"});
  b.direct("qk_nope_head_dim", {"qk_nope_head_dim"});
  b.direct("qk_rope_head_dim", {"qk_rope_head_dim"});
  b.direct("index_n_heads", {"index_n_heads"});
  b.direct("index_head_dim", {"index_head_dim"});
  b.direct("index_topk", {"index_topk"});
  b.direct("rope_theta", {"rope_theta"});
  b.direct("rope_scaling", {"rope_scaling", "rope_parameters"});
  b.direct("partial_rotary_factor", {"partial_rotary_factor"});
  b.direct("rotary_dim", {"rotary_dim"});
  b.direct("sliding_window", {"sliding_window", "sliding_window_size"});
  b.direct("quantization_config", {"quantization_config"});
  b.direct("dtype", {"torch_dtype", "dtype"});
  b.direct("vocab_size", {"vocab_size"});
  b.direct("hidden_act", {"hidden_act", "activation_function"});
  b.direct("rms_norm_eps", {"rms_norm_eps", "layer_norm_epsilon", "layer_norm_eps"});
  b.direct("tie_word_embeddings", {"tie_word_embeddings"});
  // Linear-attention (gated delta rule) layers of hybrid models, sized apart
  // from the full-attention layers (Qwen3-Next, Qwen3.5).
  b.direct("linear_num_key_heads", {"linear_num_key_heads"});
  b.direct("linear_num_value_heads", {"linear_num_value_heads"});
  b.direct("linear_key_head_dim", {"linear_key_head_dim"});
  b.direct("linear_value_head_dim", {"linear_value_head_dim"});
  // The short causal convolution's width: Qwen3-Next's linear_conv_kernel_dim,
  // Mamba's conv_kernel, Falcon-H1's mamba_d_conv, LFM2's conv_L_cache (its
  // nn.Conv1d kernel_size).
  b.direct("conv_kernel_size",
           {"conv_kernel_size", "linear_conv_kernel_dim", "conv_kernel", "mamba_d_conv", "d_conv", "conv_L_cache"});

  // Facts other facts imply, where the config leaves them out.
  auto value = [&](const char* name) -> const json* {
    Fact* f = b.find(name);
    return f && f->known ? &f->value : nullptr;
  };
  const json* hidden = value("hidden_size");
  const json* heads = value("num_heads");
  const json* nope = value("qk_nope_head_dim");
  const json* rope = value("qk_rope_head_dim");
  bool mla = value("kv_lora_rank") != nullptr;
  if (Fact* f = b.find("num_kv_heads"); f && !f->known && heads && config.loaded() && !mla) {
    *f = Fact{"num_kv_heads", true, *heads, "derived: num_attention_heads (no num_key_value_heads: MHA)"};
  }
  if (Fact* f = b.find("head_dim"); f && !f->known) {
    if (mla && nope && rope && nope->is_number_integer() && rope->is_number_integer())
      *f = Fact{"head_dim", true, nope->get<long long>() + rope->get<long long>(), "derived: qk_nope_head_dim + qk_rope_head_dim (MLA)"};
    else if (hidden && heads && hidden->is_number_integer() && heads->is_number_integer() && heads->get<long long>() > 0)
      *f = Fact{"head_dim", true, hidden->get<long long>() / heads->get<long long>(), "derived: hidden_size / num_attention_heads"};
  }
  // A dense model's FFN width: intermediate_size, split per rank by --tp
  // later. An MoE config leaves it unknown: its experts' width, and whether
  // TP or EP splits them, differ from its dense layers'.
  if (const json* inter = value("intermediate_size");
      inter && inter->is_number_integer() && !value("expert_num") && !value("moe_intermediate_size"))
    b.derived("ffn_width", *inter, "intermediate_size (a dense model: its one FFN width)");
  if (Fact* f = b.find("v_head_dim"); f && !f->known) {
    if (const json* hd = value("head_dim"); hd && !mla) *f = Fact{"v_head_dim", true, *hd, "derived: head_dim"};
  }
  // A window the config switches off (use_sliding_window: false) or a flat
  // config leaves out is full attention: 0, so a windowed rewrite is never
  // offered on it.
  if (Fact* f = b.find("sliding_window"); f && config.loaded()) {
    const json* use = config.find("use_sliding_window");
    if (use && use->is_boolean() && !use->get<bool>())
      *f = Fact{"sliding_window", true, 0, "derived: use_sliding_window is false (full attention)"};
    else if (!f->known && !config.has_sub_configs())
      *f = Fact{"sliding_window", true, 0, "derived: no sliding_window in the config (full attention)"};
    // A config nesting other configs may set the window in one of them: the
    // window stays unknown rather than a derived 0.
  }
  if (config.loaded() && (mla || !config.has_sub_configs())) b.derived("mla", mla, mla ? "kv_lora_rank present" : "no kv_lora_rank");
  // What the model's attention mask carries beyond the causal limit, from the
  // config: windowed or chunked layers, a window length in use, an ALiBi
  // bias, an indexer's top-k selection. "none" only where the config shows a causal-only mask;
  // a window the config leaves unknown leaves this unknown too.
  if (config.loaded()) {
    std::vector<std::string> beyond;
    if (const json* types = config.find("layer_types"); types && types->is_array()) {
      std::set<std::string> windowed;
      for (const json& t : *types)
        if (t.is_string() && (t.get<std::string>().find("sliding") != std::string::npos ||
                              t.get<std::string>().find("local") != std::string::npos ||
                              t.get<std::string>().find("chunk") != std::string::npos))
          windowed.insert(t.get<std::string>());
      for (const std::string& t : windowed) beyond.push_back("layer_types has " + t);
    }
    const json* window = value("sliding_window");
    if (window && window->is_number_integer() && window->get<long long>() > 0 && beyond.empty())
      beyond.push_back("sliding_window = " + window->dump());
    if (const json* chunk = config.find("attention_chunk_size"); chunk && chunk->is_number_integer() && chunk->get<long long>() > 0 &&
                                                                 beyond.empty() && !config.find("layer_types"))
      beyond.push_back("attention_chunk_size = " + chunk->dump());
    // ALiBi: a per-head position bias added to the scores, which a
    // compressed causal mask does not carry either (MPT's attn_config.alibi,
    // Falcon's alibi).
    for (const char* key : {"alibi", "attn_config.alibi"})
      if (const json* alibi = config.find(key); alibi && alibi->is_boolean() && alibi->get<bool>()) {
        beyond.push_back(std::string(key) + " = true (an ALiBi position bias added to the scores)");
        break;
      }
    if (const json* topk = value("index_topk"); topk && !topk->is_null())
      beyond.push_back("index_topk = " + topk->dump() + " (an indexer's top-k selection)");
    // BERT-family configs say whether the stack runs as a decoder: as an
    // encoder (is_decoder false) every token attends both ways.
    if (const json* decoder = config.find("is_decoder"); decoder && decoder->is_boolean() && !decoder->get<bool>())
      beyond.push_back("is_decoder = false (bidirectional attention: the mask is the padding mask of an encoder)");
    if (!beyond.empty()) {
      std::string all;
      for (const std::string& x : beyond) all += (all.empty() ? "" : "; ") + x;
      b.derived("mask_beyond_causal", all, "the config's " + all);
    } else if (Fact* w = b.find("sliding_window"); w && w->known) {
      b.derived("mask_beyond_causal", "none", "no windowed layers, no window in use, no indexer in the config");
    }
  }
  // ALiBi, where the config says so either way.
  for (const char* key : {"alibi", "attn_config.alibi"})
    if (const json* alibi = config.find(key); alibi && alibi->is_boolean()) {
      b.derived("alibi", *alibi, std::string("the config's ") + key);
      break;
    }
  // rope_dim: rotated channels per head.
  if (rope) {
    b.derived("rope_dim", *rope, "qk_rope_head_dim");
  } else if (const json* rd = value("rotary_dim")) {
    b.derived("rope_dim", *rd, "rotary_dim");
  } else if (const json* hd = value("head_dim"); hd && hd->is_number_integer()) {
    const json* prf = value("partial_rotary_factor");
    double factor = prf && prf->is_number() ? prf->get<double>() : 1.0;
    b.derived("rope_dim", static_cast<long long>(hd->get<long long>() * factor),
              prf ? "head_dim * partial_rotary_factor" : "head_dim (no partial_rotary_factor)");
  } else {
    b.facts.push_back(Fact{"rope_dim", false, nullptr, config.loaded() ? "not derivable from config" : "needs config"});
  }
  return b.facts;
}

}  // namespace npufuse::model

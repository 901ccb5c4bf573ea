#pragma once
// What a module is. Roles are inferred from what the module holds and what
// its forward computes (see module_roles.h); the names below are the
// vocabulary the inventory reports in.
#include <string_view>

namespace npufuse::model {

enum class ModuleRole {
  Unknown,
  Linear,          // y = x W^T (+ b), incl. tensor-parallel and merged variants
  Embedding,       // token lookup table
  RMSNorm,
  LayerNorm,
  Rotary,          // RoPE tables / application
  Activation,      // SiLU, GELU, SiluAndMul, ...
  Dropout,
  AttentionCore,   // softmax(QK^T)V without its own projections (paged / eager cores)
  Attention,       // projections + core (+ RoPE, cache)
  Mlp,             // dense feed-forward (one expert too)
  Router,          // MoE gate: scores + top-k
  MoE,             // router + experts (+ shared experts)
  Indexer,         // sparse-attention indexer (projections + top-k over keys)
  DecoderLayer,    // one transformer block
  Backbone,        // embedding + blocks + final norm
  CausalLM,        // backbone + LM head
  Container,       // ModuleList / ModuleDict / Sequential
  Other,           // a module of none of these kinds
};

const char* role_name(ModuleRole r);

// Role of a class that is not defined in the analysed files, by its
// qualified name (torch.nn.*, HF and serving-engine layers); Unknown when the
// name is not one npufuse knows.
ModuleRole known_module_role(std::string_view qualified);

// Whether a base class named so makes a class an nn.Module (torch.nn.Module,
// PreTrainedModel, GenerationMixin, HF layer mixins, known layers).
bool is_known_module_base(std::string_view qualified);

}  // namespace npufuse::model

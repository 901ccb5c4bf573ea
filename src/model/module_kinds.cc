#include "model/module_kinds.h"

#include <map>
#include <string>

namespace npufuse::model {

namespace {

std::string_view last_component(std::string_view q) {
  size_t dot = q.rfind('.');
  return dot == std::string_view::npos ? q : q.substr(dot + 1);
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Layers from torch.nn, HF and serving engines, by their class name.
const std::map<std::string, ModuleRole, std::less<>>& known_layers() {
  static const std::map<std::string, ModuleRole, std::less<>> table = {
      {"Linear", ModuleRole::Linear},
      {"ColumnParallelLinear", ModuleRole::Linear},
      {"RowParallelLinear", ModuleRole::Linear},
      {"ReplicatedLinear", ModuleRole::Linear},
      {"MergedColumnParallelLinear", ModuleRole::Linear},
      {"QKVParallelLinear", ModuleRole::Linear},
      {"ParallelLMHead", ModuleRole::Linear},
      {"Conv1D", ModuleRole::Linear},  // transformers.pytorch_utils: a linear layer with a transposed weight
      {"Embedding", ModuleRole::Embedding},
      {"VocabParallelEmbedding", ModuleRole::Embedding},
      {"ParallelEmbedding", ModuleRole::Embedding},
      {"LayerNorm", ModuleRole::LayerNorm},
      {"RMSNorm", ModuleRole::RMSNorm},
      {"SiLU", ModuleRole::Activation},
      {"GELU", ModuleRole::Activation},
      {"ReLU", ModuleRole::Activation},
      {"Tanh", ModuleRole::Activation},
      {"Sigmoid", ModuleRole::Activation},
      {"SiluAndMul", ModuleRole::Activation},
      {"GeluAndMul", ModuleRole::Activation},
      {"Dropout", ModuleRole::Dropout},
      {"Conv1d", ModuleRole::Other},  // torch.nn.Conv1d: a mixer's depthwise causal convolution
      {"Softmax", ModuleRole::Other},  // torch.nn.Softmax: an attention's softmax held as a module
      {"ModuleList", ModuleRole::Container},
      {"ModuleDict", ModuleRole::Container},
      {"Sequential", ModuleRole::Container},
  };
  return table;
}

}  // namespace

const char* role_name(ModuleRole r) {
  switch (r) {
    case ModuleRole::Unknown: return "unknown";
    case ModuleRole::Linear: return "linear";
    case ModuleRole::Embedding: return "embedding";
    case ModuleRole::RMSNorm: return "rms_norm";
    case ModuleRole::LayerNorm: return "layer_norm";
    case ModuleRole::Rotary: return "rotary_embedding";
    case ModuleRole::Activation: return "activation";
    case ModuleRole::Dropout: return "dropout";
    case ModuleRole::AttentionCore: return "attention_core";
    case ModuleRole::Attention: return "attention";
    case ModuleRole::Mlp: return "mlp";
    case ModuleRole::Router: return "router";
    case ModuleRole::MoE: return "moe";
    case ModuleRole::Indexer: return "indexer";
    case ModuleRole::DecoderLayer: return "decoder_layer";
    case ModuleRole::Backbone: return "backbone";
    case ModuleRole::CausalLM: return "causal_lm";
    case ModuleRole::Container: return "container";
    case ModuleRole::Other: return "other";
  }
  return "unknown";
}

ModuleRole known_module_role(std::string_view qualified) {
  auto it = known_layers().find(last_component(qualified));
  return it == known_layers().end() ? ModuleRole::Unknown : it->second;
}

bool is_known_module_base(std::string_view qualified) {
  std::string_view last = last_component(qualified);
  if (last == "Module" || last == "PreTrainedModel" || last == "GenerationMixin" ||
      last == "GradientCheckpointingLayer" || ends_with(last, "PreTrainedModel") ||
      ends_with(last, "PretrainedModel"))
    return true;
  if (last.substr(0, 10) == "GenericFor") return true;
  return known_module_role(qualified) != ModuleRole::Unknown;
}

}  // namespace npufuse::model

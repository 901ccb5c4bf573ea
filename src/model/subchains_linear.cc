// Linear-attention and state-space mixers (Qwen3-Next's gated delta net,
// Kimi's delta attention, Mamba mixers, LFM2's short convolution): a module in
// an attention's place whose forward runs a depthwise causal convolution and
// no softmax over scores. Its steps are the convolution and the recurrence
// after it, not an attention core, a K/V cache or RoPE.
#include <algorithm>
#include <map>

#include "model/function_index.h"
#include "model/subchains_graph.h"

namespace npufuse::model::subchains {

namespace {

// What the names in `ops` say: each op's name, attribute path and text, and
// the name of the function its code is in (an inlined helper:
// `torch_chunk_gated_delta_rule`), one after the other.
std::string names_in(const BlockGraph& bg, const std::vector<int>& ops) {
  std::map<const ModelFile*, std::vector<FunctionRange>> functions;
  std::string names;
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    names += o.name + " " + bg.attribute_path(o) + " " + bg.text(o) + " ";
    if (!o.file) continue;
    auto it = functions.find(o.file);
    if (it == functions.end()) it = functions.emplace(o.file, functions_of(*o.file)).first;
    if (const FunctionRange* fn = function_around(it->second, o.begin, o.end)) names += fn->qualified + " ";
  }
  return names;
}

bool holds_any(const std::string& names, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(), [&](const char* w) { return names.find(w) != std::string::npos; });
}

}  // namespace

bool is_linear_mixer(const BlockGraph& bg, const std::vector<int>& ops) {
  bool conv = false;
  for (int id : ops) {
    const std::string& name = bg.op(id).name;
    if (name == "softmax" || name == "scaled_dot_product_attention" || name == "log_softmax") return false;
    conv = conv || name == "conv1d";
  }
  return conv;
}

void find_linear_mixer_steps(const BlockGraph& bg, const std::string& scope, const std::vector<int>& ops,
                             ModuleChain& chain) {
  const size_t n = bg.size();
  std::vector<int> conv;
  for (int id : ops)
    if (bg.op(id).name == "conv1d") conv.push_back(id);
  add_steps(chain, bg, "conv1d", conv, "depthwise causal conv1d over the projected sequence");

  // The recurrence: what the module computes from the convolution's output,
  // projections, the convolution itself and submodules (an output norm) left out.
  const OpSet after_conv = bg.downstream(set_of(n, conv));
  std::vector<int> recurrence;
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    if (!after_conv[static_cast<size_t>(id)] || o.name == "conv1d" || is_linear(o) || o.scope != scope) continue;
    if (o.cls != OpClass::Compute && o.cls != OpClass::Call) continue;
    recurrence.push_back(id);
  }
  // What the recurrence is, from the names the code uses; a short
  // convolution gated by products (LFM2) has none.
  if (recurrence.empty()) return;
  const std::string names = names_in(bg, ops);
  std::string detail;
  if (holds_any(names, {"kimi_delta", "kda"})) detail = "Kimi delta attention (a decay per key channel)";
  else if (holds_any(names, {"delta_rule"})) detail = "gated delta rule";
  else if (holds_any(names, {"A_log", "dt_bias", "selective_scan", "ssd", "ssm"})) detail = "selective state-space scan";
  if (detail.empty()) return;
  add_steps(chain, bg, "recurrence", recurrence, detail);
}

}  // namespace npufuse::model::subchains

#include "model/module_roles.h"

#include "model/ast_walk.h"
#include "model/op_names.h"

#include <algorithm>
#include <fmt/format.h>

namespace npufuse::model {

namespace {

bool is_module_class(const SourceSet& sources, const ClassDecl& cls, int depth = 0) {
  if (depth > 16) return false;
  for (const ast::expr* b : cls.node->bases) {
    std::string q = sources.qualified_name(*cls.file, b);
    if (const ClassDecl* local = sources.find_class(q); local && local != &cls && local->node->name == q) {
      if (is_module_class(sources, *local, depth + 1)) return true;
      continue;
    }
    if (is_known_module_base(q)) return true;
  }
  return false;
}

bool has(const ForwardCensus& c, const char* op) { return c.ops.count(op) > 0; }

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

const Attribute* parameter_named(const ClassInstance& inst, std::string_view name) {
  for (const Attribute& a : inst.attributes)
    if (a.kind == AttributeKind::Parameter && a.name == name) return &a;
  return nullptr;
}

size_t rank_of(const Attribute& a) {
  size_t n = 0;
  for (const SizeValue& s : a.sizes)
    if (s.label.rfind("shape", 0) == 0) ++n;
  return n;
}

}  // namespace

RoleTable RoleTable::infer(const SourceSet& sources, Evaluator& ev) {
  RoleTable t;
  t.sources_ = &sources;
  const std::map<std::string, std::set<std::string>> per_layer = per_layer_parameters(sources);
  for (const ClassDecl& c : sources.classes()) {
    std::string name(c.node->name);
    if (!is_module_class(sources, c) || t.instances_.count(name)) continue;
    t.module_classes_.push_back(&c);
    auto varies = per_layer.find(name);
    t.instances_.emplace(name, describe_instance(sources, ev, c, nullptr, varies == per_layer.end() ? nullptr : &varies->second));
    const ModelConfig& config = ev.config();
    t.censuses_.emplace(name, census_forward(sources, c, [&config](std::string_view key) { return config.find(key); }));
  }
  for (const ClassDecl* c : t.module_classes_) t.resolve(std::string(c->node->name));
  return t;
}

bool RoleTable::is_module(std::string_view local_class) const { return instances_.count(local_class) > 0; }

const ClassRole* RoleTable::find(std::string_view local_class) const {
  auto it = roles_.find(local_class);
  return it == roles_.end() ? nullptr : &it->second;
}

const ClassInstance* RoleTable::standalone(std::string_view local_class) const {
  auto it = instances_.find(local_class);
  return it == instances_.end() ? nullptr : &it->second;
}

const ForwardCensus* RoleTable::census(std::string_view local_class) const {
  auto it = censuses_.find(local_class);
  return it == censuses_.end() ? nullptr : &it->second;
}

ModuleRole RoleTable::role_of(const ModuleCtor& ctor) const {
  if (ctor.local) {
    const ClassRole* r = find(ctor.local->node->name);
    return r ? r->role : ModuleRole::Unknown;
  }
  return known_module_role(ctor.qualified);
}

ModuleRole RoleTable::resolve(const std::string& name) {
  if (auto it = roles_.find(name); it != roles_.end()) return it->second.role;
  if (in_progress_.count(name)) return ModuleRole::Unknown;
  const ClassDecl* cls = sources_->find_class(name);
  if (!cls || !instances_.count(name)) return ModuleRole::Unknown;
  in_progress_.insert(name);
  ClassRole r = classify(*cls);
  // A call target the code picks from a table nobody can read here is named,
  // so no role or sub-chain is taken to cover it.
  for (const std::string& d : censuses_.at(name).unresolved_dispatch) r.evidence.push_back("unresolved dispatch " + d);
  in_progress_.erase(name);
  roles_[name] = r;
  return r.role;
}

namespace {

// An nn.Conv1d child (a convolution over the sequence). HF's Conv1D, a
// projection, is a Linear and spelled with a capital D.
bool holds_conv1d(const ClassInstance& inst) {
  for (const Attribute& a : inst.attributes)
    if (a.kind == AttributeKind::Submodule && !a.module.local && known_module_role(a.module.qualified) == ModuleRole::Other &&
        a.module.qualified.size() >= 6 && a.module.qualified.compare(a.module.qualified.size() - 6, 6, "Conv1d") == 0)
      return true;
  return false;
}

}  // namespace

ClassRole RoleTable::classify(const ClassDecl& cls) {
  const ClassInstance& inst = instances_.at(std::string(cls.node->name));
  const ForwardCensus& ops = censuses_.at(std::string(cls.node->name));
  ClassRole out;

  // Children by role, including those of module lists (their element role).
  std::map<ModuleRole, std::vector<std::string>> children;
  std::map<ModuleRole, std::vector<std::string>> list_elements;
  bool has_activation_attr = false;
  std::vector<const Attribute*> params, buffers;
  for (const Attribute& a : inst.attributes) {
    switch (a.kind) {
      case AttributeKind::Submodule: {
        ModuleRole r = a.module.local ? resolve(std::string(a.module.local->node->name)) : known_module_role(a.module.qualified);
        children[r].push_back(a.name);
        if (r == ModuleRole::Activation) has_activation_attr = true;
        break;
      }
      case AttributeKind::ModuleList:
      case AttributeKind::ModuleDict: {
        ModuleRole r = a.module.local ? resolve(std::string(a.module.local->node->name)) : known_module_role(a.module.qualified);
        list_elements[r].push_back(a.name);
        break;
      }
      case AttributeKind::Parameter: params.push_back(&a); break;
      case AttributeKind::Buffer: buffers.push_back(&a); break;
      case AttributeKind::Callable: has_activation_attr = true; break;
      default: break;
    }
  }
  auto count = [&](ModuleRole r) { return children.count(r) ? children[r].size() : 0; };
  // DBRX's norm_attn_norm: a child of no role of its own that holds the
  // attention (with the norms around it) stands for the attention in a layer.
  std::vector<std::string> attention_holders;
  for (const Attribute& a : inst.attributes) {
    if (a.kind != AttributeKind::Submodule || !a.module.local) continue;
    std::string child(a.module.local->node->name);
    if (child == std::string(cls.node->name) || resolve(child) != ModuleRole::Other) continue;
    const ClassInstance& sub = instances_.at(child);
    for (const Attribute& g : sub.attributes)
      if (g.kind == AttributeKind::Submodule && g.module.local && resolve(std::string(g.module.local->node->name)) == ModuleRole::Attention) {
        attention_holders.push_back(a.name);
        break;
      }
  }
  size_t module_children = 0;
  for (const auto& [r, v] : children) module_children += v.size();
  for (const auto& [r, v] : list_elements) module_children += v.size();
  size_t linears = count(ModuleRole::Linear);
  bool activation_op = has(ops, "silu") || has(ops, "gelu") || has(ops, "relu") || has(ops, "sigmoid") ||
                       has(ops, "tanh") || has_activation_attr || count(ModuleRole::Activation) > 0;
  // An nn.Softmax child (CPM-Ant's `self.softmax(score)`) is the softmax op.
  bool softmax_child = std::any_of(inst.attributes.begin(), inst.attributes.end(), [](const Attribute& a) {
    return a.kind == AttributeKind::Submodule && !a.module.local && last_component(a.module.qualified) == "Softmax";
  });
  bool attention_op = has(ops, "softmax") || softmax_child || has(ops, "sdpa") || !ops.dispatch_tables.empty() ||
                      count(ModuleRole::AttentionCore) > 0;
  auto evidence = [&](std::string s) { out.evidence.push_back(std::move(s)); };
  auto decide = [&](ModuleRole r) {
    out.role = r;
    return out;
  };

  const Attribute* weight = parameter_named(inst, "weight");
  bool norm_math = has(ops, "rms_norm") || has(ops, "layer_norm") || (has(ops, "rsqrt") && has(ops, "mean")) ||
                   (has(ops, "sqrt") && has(ops, "mean")) || has(ops, "var");

  // Whole-model shapes first: they are made of the smaller ones.
  if (list_elements.count(ModuleRole::DecoderLayer) && count(ModuleRole::Embedding)) {
    evidence("embedding " + join(children[ModuleRole::Embedding]) + " and a list of decoder layers " +
             join(list_elements[ModuleRole::DecoderLayer]));
    if (linears) {
      evidence("plus linear head " + join(children[ModuleRole::Linear]));
      return decide(ModuleRole::CausalLM);
    }
    return decide(ModuleRole::Backbone);
  }
  if (count(ModuleRole::Backbone) || count(ModuleRole::CausalLM)) {
    const auto& inner = count(ModuleRole::Backbone) ? children[ModuleRole::Backbone] : children[ModuleRole::CausalLM];
    if (linears) {
      evidence("backbone " + join(inner) + " and linear head " + join(children[ModuleRole::Linear]));
      return decide(ModuleRole::CausalLM);
    }
    evidence("wraps backbone " + join(inner));
    return decide(ModuleRole::Other);
  }
  // BERT-style children of no role of their own: an output head (one linear,
  // with a norm or dropout beside it: BertSelfOutput, BertOutput) and an
  // up-projection with its activation (BertIntermediate).
  std::vector<std::string> output_heads, activated_ups;
  std::set<std::string> attention_names;
  for (const Attribute& a : inst.attributes) {
    if (a.kind != AttributeKind::Submodule) continue;
    if (a.module.local && resolve(std::string(a.module.local->node->name)) == ModuleRole::Attention) attention_names.insert(a.name);
    if (!a.module.local || std::string(a.module.local->node->name) == std::string(cls.node->name) ||
        resolve(std::string(a.module.local->node->name)) != ModuleRole::Other)
      continue;
    const ClassInstance& sub = instances_.at(std::string(a.module.local->node->name));
    size_t sub_linears = 0, sub_other = 0;
    bool sub_activation = false;
    for (const Attribute& g : sub.attributes) {
      if (g.kind == AttributeKind::Callable) sub_activation = true;
      if (g.kind != AttributeKind::Submodule) continue;
      ModuleRole r = g.module.local ? resolve(std::string(g.module.local->node->name)) : known_module_role(g.module.qualified);
      if (r == ModuleRole::Linear) ++sub_linears;
      else if (r == ModuleRole::Activation) sub_activation = true;
      else if (r != ModuleRole::LayerNorm && r != ModuleRole::RMSNorm && r != ModuleRole::Dropout) ++sub_other;
    }
    if (sub_linears != 1 || sub_other) continue;
    (sub_activation ? activated_ups : output_heads).push_back(a.name);
  }
  bool ffn_child = count(ModuleRole::Mlp) || count(ModuleRole::MoE);
  // Mamba's block: a norm and a mixer in the attention's place that runs a
  // convolution over the sequence (an nn.Conv1d child or F.conv1d), with no
  // feed-forward of its own.
  std::vector<std::string> conv_mixers;
  for (const Attribute& a : inst.attributes) {
    if (a.kind != AttributeKind::Submodule || !a.module.local) continue;
    std::string child(a.module.local->node->name);
    if (child == std::string(cls.node->name) || resolve(child) != ModuleRole::Attention) continue;
    if (censuses_.at(child).ops.count("conv1d") || holds_conv1d(instances_.at(child))) conv_mixers.push_back(a.name);
  }
  if (!ffn_child && !conv_mixers.empty() && count(ModuleRole::Attention) == conv_mixers.size() &&
      (count(ModuleRole::RMSNorm) || count(ModuleRole::LayerNorm))) {
    evidence("norm " + join(count(ModuleRole::RMSNorm) ? children[ModuleRole::RMSNorm] : children[ModuleRole::LayerNorm]) +
             " and a convolution mixer " + join(conv_mixers) + ", no feed-forward");
    return decide(ModuleRole::DecoderLayer);
  }
  // BERT's layer: the feed-forward split over an up-projection child with the
  // activation and an output child with the down projection.
  bool split_ffn = !ffn_child && !activated_ups.empty() && !output_heads.empty() &&
                   (count(ModuleRole::Attention) || !attention_holders.empty());
  if (split_ffn) {
    evidence("attention " + join(count(ModuleRole::Attention) ? children[ModuleRole::Attention] : attention_holders) +
             " and a feed-forward split over " + join(activated_ups) + " and " + join(output_heads));
    return decide(ModuleRole::DecoderLayer);
  }
  // OPT / XGLM / BART-decoder style: the feed-forward's linears (fc1, fc2)
  // and activation sit in the layer itself, beside the attention child.
  bool inline_ffn = !ffn_child && count(ModuleRole::Attention) && linears >= 2 && activation_op;
  if (inline_ffn) {
    evidence("attention " + join(children[ModuleRole::Attention]) + " and an inline feed-forward " +
             join(children[ModuleRole::Linear]));
    return decide(ModuleRole::DecoderLayer);
  }
  if ((count(ModuleRole::Attention) || !attention_holders.empty()) && ffn_child) {
    evidence("attention " + join(count(ModuleRole::Attention) ? children[ModuleRole::Attention] : attention_holders) + " and feed-forward " +
             join(count(ModuleRole::MoE) ? children[ModuleRole::MoE] : children[ModuleRole::Mlp]));
    return decide(ModuleRole::DecoderLayer);
  }
  // LongCat-Flash's layer: two attention sublayers held in a short list
  // (`self.self_attn[0]`, `self.self_attn[1]`), with a feed-forward child
  // and norms (lists too) of its own. A model's body holding parallel lists
  // of attentions and feed-forwards (XLM) has no feed-forward child.
  if (list_elements.count(ModuleRole::Attention) && ffn_child && !count(ModuleRole::Embedding) &&
      (list_elements.count(ModuleRole::RMSNorm) || list_elements.count(ModuleRole::LayerNorm) ||
       count(ModuleRole::RMSNorm) || count(ModuleRole::LayerNorm))) {
    evidence("attention sublayers " + join(list_elements[ModuleRole::Attention]) + " and feed-forward " +
             join(count(ModuleRole::MoE) ? children[ModuleRole::MoE] : children[ModuleRole::Mlp]));
    return decide(ModuleRole::DecoderLayer);
  }
  // MoE: experts (a list of MLPs, or a stacked-experts module) with a router.
  bool expert_list = list_elements.count(ModuleRole::Mlp) > 0;
  bool router = count(ModuleRole::Router) > 0;
  // Dispatch ops alone (one_hot, index_add, bincount) also build token-type
  // masks and scatter sums in dense models (XLNet's layer list): with no
  // router child and no linear to score with, the forward must select by topk.
  bool dispatch_ops = has(ops, "one_hot") || has(ops, "index_add") || has(ops, "bincount");
  bool routing_ops = has(ops, "topk") || (linears && dispatch_ops);
  if (expert_list && (router || linears || routing_ops)) {
    evidence("expert list " + join(list_elements[ModuleRole::Mlp]) +
             (router ? " with router " + join(children[ModuleRole::Router]) : std::string(" with routing ops")));
    return decide(ModuleRole::MoE);
  }
  if (router && count(ModuleRole::Mlp)) {
    evidence("router " + join(children[ModuleRole::Router]) + " and experts " + join(children[ModuleRole::Mlp]));
    return decide(ModuleRole::MoE);
  }
  // DBRX's FFN: the router child only scores (its linear); the module itself
  // picks the experts with softmax and top-k and hands them to its experts child.
  if (count(ModuleRole::Mlp) == 1 && module_children <= 3 && !count(ModuleRole::Attention) && has(ops, "topk") &&
      (has(ops, "softmax") || has(ops, "sigmoid"))) {
    evidence("experts " + join(children[ModuleRole::Mlp]) + " chosen by a softmax/sigmoid and top-k in its forward");
    return decide(ModuleRole::MoE);
  }
  if (has(ops, "topk") && (has(ops, "softmax") || has(ops, "sigmoid")) && module_children <= 1 && !expert_list &&
      ((weight && rank_of(*weight) == 2) || linears == 1)) {
    evidence("forward scores with softmax/sigmoid and selects with topk over a " +
             std::string(linears ? "linear child" : "2-D weight"));
    return decide(ModuleRole::Router);
  }
  if (has(ops, "topk") && linears >= 2 && !has(ops, "softmax")) {
    evidence("projections " + join(children[ModuleRole::Linear]) + " and a top-k selection without softmax");
    return decide(ModuleRole::Indexer);
  }
  // A wrapper whose one child is the attention (GPT-Neo's GPTNeoAttention
  // holding the implementation a table picks) is that attention.
  if (count(ModuleRole::Attention) == 1 && module_children == 1 && params.empty()) {
    evidence("wraps attention " + join(children[ModuleRole::Attention]));
    return decide(ModuleRole::Attention);
  }
  // BERT's BertAttention: the attention (one attribute, whichever class the
  // constructor picks) and its output projection with the norm in a child;
  // a pre-norm variant (RoBERTa-PreLayerNorm, XLM-RoBERTa-XL) holds the norm
  // it applies before the attention beside them.
  size_t own_norms = count(ModuleRole::LayerNorm) + count(ModuleRole::RMSNorm);
  if (attention_names.size() == 1 && output_heads.size() == 1 && activated_ups.empty() && params.empty() &&
      own_norms <= 1 && module_children == count(ModuleRole::Attention) + 1 + own_norms) {
    evidence("attention " + *attention_names.begin() + " with its output projection and norm in " + output_heads.front() +
             (own_norms ? " and an input norm " +
                              join(count(ModuleRole::LayerNorm) ? children[ModuleRole::LayerNorm] : children[ModuleRole::RMSNorm])
                        : std::string()));
    return decide(ModuleRole::Attention);
  }
  // A linear-attention or state-space mixer (Mamba, gated delta rule): its
  // projections and a convolution over the sequence, no softmax over scores.
  bool conv_op = has(ops, "conv1d") || holds_conv1d(inst);
  // A mixer returns one tensor: a module returning several values from its
  // projections (ZAYA's convolutional q/k/v projection) is not one.
  bool returns_tuple = false;
  if (ops.forward)
    walk(ops.forward, [&](const ast::Node* n) {
      if (auto* r = ast::as<ast::Return>(n); r && ast::as<ast::Tuple>(r->value)) returns_tuple = true;
      return !returns_tuple;
    });
  if (conv_op && linears >= 2 && !returns_tuple && !has(ops, "softmax") && !has(ops, "sdpa")) {
    evidence("projections " + join(children[ModuleRole::Linear]) + " and a convolution over the sequence (a mixer in the attention's place)");
    return decide(ModuleRole::Attention);
  }
  if (attention_op && (linears >= 2 || (linears >= 1 && count(ModuleRole::AttentionCore)))) {
    std::string how = has(ops, "softmax") ? "softmax" : softmax_child ? "an nn.Softmax child" : has(ops, "sdpa") ? "sdpa" : !ops.dispatch_tables.empty() ? "dispatch table " + *ops.dispatch_tables.begin() : "attention core child";
    evidence("projections " + join(children[ModuleRole::Linear]) + " and " + how);
    return decide(ModuleRole::Attention);
  }
  if ((has(ops, "softmax") || has(ops, "sdpa")) && linears == 0 && (has(ops, "matmul") || has(ops, "einsum")) &&
      params.empty()) {
    evidence("softmax over matmul scores, no projections of its own");
    return decide(ModuleRole::AttentionCore);
  }
  if (linears >= 2 && activation_op && !has(ops, "softmax")) {
    evidence("linears " + join(children[ModuleRole::Linear]) + " with an activation");
    return decide(ModuleRole::Mlp);
  }
  size_t stacked = 0;
  for (const Attribute* p : params) {
    if (rank_of(*p) == 3) ++stacked;
    // DBRX keeps the experts' weights flattened to 2-D, [E * I, H], and
    // views one expert's slice: the first axis counts experts times a width.
    if (rank_of(*p) == 2)
      for (const SizeValue& sz : p->sizes)
        if (sz.label == "shape[0]" && sz.written.find("experts") != std::string::npos &&
            sz.written.find('*') != std::string::npos)
          ++stacked;
  }
  // Stacked experts ([E, 2I, H] / [E, H, I]) are applied per expert with
  // matmul, einsum, bmm, grouped_mm or F.linear on one expert's slice.
  if (stacked >= 2 &&
      (has(ops, "matmul") || has(ops, "einsum") || has(ops, "grouped_mm") || has(ops, "bmm") || has(ops, "linear")) &&
      module_children == 0) {
    evidence(fmt::format("{} stacked expert weights ([E, ...] or [E * I, H]) multiplied per expert", stacked));
    return decide(ModuleRole::Mlp);
  }
  if (module_children == 0 && !params.empty() && norm_math) {
    bool layer = has(ops, "layer_norm") || has(ops, "var") || ops.subtracts_mean;
    out.weight_offset_one = ops.weight_plus_one;
    std::vector<std::string> used;
    for (const char* op : {"rms_norm", "layer_norm", "rsqrt", "sqrt", "mean", "var", "pow"})
      if (has(ops, op)) used.push_back(op);
    evidence("forward uses " + join(used) + (layer ? " and centres by the mean" : "") +
             (out.weight_offset_one ? "; scales by (1 + weight)" : ""));
    return decide(layer ? ModuleRole::LayerNorm : ModuleRole::RMSNorm);
  }
  if (module_children == 0 && weight && rank_of(*weight) != 1 && has(ops, "embedding")) {
    evidence("weight looked up with embedding");
    return decide(ModuleRole::Embedding);
  }
  if (module_children == 0 && weight && (rank_of(*weight) == 2 || rank_of(*weight) == 0) &&
      (has(ops, "linear") || has(ops, "matmul"))) {
    evidence("2-D weight applied with linear/matmul");
    return decide(ModuleRole::Linear);
  }
  // A class with no forward of its own that extends a local linear.
  for (const ast::expr* b : cls.node->bases) {
    if (const ClassDecl* base = sources_->find_class(dotted_name(b)); base && base != &cls) {
      ModuleRole r = resolve(std::string(base->node->name));
      if (r != ModuleRole::Unknown && r != ModuleRole::Other) {
        evidence("extends " + std::string(base->node->name));
        return decide(r);
      }
    }
    std::string q = sources_->qualified_name(*cls.file, b);
    if (ModuleRole r = known_module_role(q); r != ModuleRole::Unknown && r != ModuleRole::Container) {
      evidence("extends " + q);
      return decide(r);
    }
  }
  bool rope_buffer = false;
  for (const Attribute* b : buffers)
    if (b->name == "inv_freq" || b->name == "cos_sin_cache" || b->name == "freqs_cis" || b->name.find("cos") != std::string::npos)
      rope_buffer = true;
  if (linears == 0 && ((has(ops, "cos") && has(ops, "sin")) || (rope_buffer && ops.has_forward))) {
    evidence(has(ops, "cos") && has(ops, "sin") ? "forward computes cos and sin" : "holds a frequency table buffer");
    return decide(ModuleRole::Rotary);
  }
  if (module_children == 0 && params.empty() && ops.has_forward && activation_op && !attention_op) {
    evidence("parameter-free forward applying an activation");
    return decide(ModuleRole::Activation);
  }
  if (ffn_child && !count(ModuleRole::Attention)) {
    evidence("wraps feed-forward " + join(count(ModuleRole::MoE) ? children[ModuleRole::MoE] : children[ModuleRole::Mlp]));
    return decide(count(ModuleRole::MoE) ? ModuleRole::MoE : ModuleRole::Mlp);
  }
  return decide(ModuleRole::Other);
}

const ModuleCtor* RoleTableSubmodules::find(const ClassDecl& owner, std::string_view attribute) const {
  const ClassDecl* cur = &owner;
  // The attribute may be set by a local base class's __init__; the standalone
  // description already includes those (inherited) attributes.
  const ClassInstance* inst = roles_.standalone(cur->node->name);
  if (!inst) return nullptr;
  const ModuleCtor* first = nullptr;
  for (const Attribute& a : inst->attributes) {
    if (a.name != attribute || a.module.qualified.empty()) continue;
    if (a.kind != AttributeKind::Submodule && a.kind != AttributeKind::ModuleList && a.kind != AttributeKind::ModuleDict) continue;
    if (a.active && *a.active) return &a.module;
    if (!first && !(a.active && !*a.active)) first = &a.module;
  }
  return first;
}

std::vector<SubmoduleLookup::Alternative> RoleTableSubmodules::alternatives(const ClassDecl& owner,
                                                                            std::string_view attribute) const {
  const ClassInstance* inst = roles_.standalone(owner.node->name);
  if (!inst) return {};
  std::vector<Alternative> out;
  for (const Attribute& a : inst->attributes) {
    if (a.name != attribute || a.kind != AttributeKind::Submodule || !a.module.local) continue;
    if (a.active) {
      if (*a.active) return {};  // the config picks this one: find() gives it
      continue;
    }
    if (a.condition.empty()) return {};  // built unconditionally (perhaps replaced later): one way
    out.push_back({&a.module, a.condition});
  }
  if (out.size() < 2) return {};
  return out;
}

bool RoleTableSubmodules::is_parameter(const ClassDecl& owner, std::string_view attribute) const {
  const ClassInstance* inst = roles_.standalone(owner.node->name);
  if (!inst) return false;
  for (const Attribute& a : inst->attributes)
    if (a.name == attribute && (a.kind == AttributeKind::Parameter || a.kind == AttributeKind::Buffer)) return true;
  return false;
}

bool RoleTableSubmodules::builds_block(const ModuleCtor& ctor) const {
  return roles_.role_of(ctor) == ModuleRole::DecoderLayer;
}

std::string RoleTableSubmodules::callable_op(const ClassDecl& owner, std::string_view attribute) const {
  const ClassInstance* inst = roles_.standalone(owner.node->name);
  if (!inst) return {};
  for (const Attribute& a : inst->attributes) {
    if (a.name != attribute || a.kind != AttributeKind::Callable || a.sizes.empty()) continue;
    const SymValue& key = a.sizes[0].value;
    if (key.is_known() && key.value.is_string()) return canonical_call(key.value.get<std::string>()).name;
    return "activation[" + key.text + "]";
  }
  return {};
}

const nlohmann::json* RoleTableSubmodules::config_field(std::string_view key) const {
  return config_ ? config_->find(key) : nullptr;
}

}  // namespace npufuse::model

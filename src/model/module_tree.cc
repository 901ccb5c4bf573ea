#include "model/module_tree.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>

namespace npufuse::model {

namespace {

constexpr int kMaxDepth = 12;

bool is_norm(ModuleRole r) { return r == ModuleRole::RMSNorm || r == ModuleRole::LayerNorm; }
bool is_ffn(ModuleRole r) { return r == ModuleRole::Mlp || r == ModuleRole::MoE; }

// Sizes of a local linear / embedding / norm, read from its instance's weight.
std::vector<SizeValue> weight_sizes(ModuleRole role, const ClassInstance& inst) {
  std::vector<SizeValue> out;
  const Attribute* weight = nullptr;
  for (const Attribute& a : inst.attributes)
    if (a.kind == AttributeKind::Parameter && a.name == "weight") weight = &a;
  if (!weight) return out;
  std::vector<const SizeValue*> dims;
  for (const SizeValue& s : weight->sizes)
    if (s.label.rfind("shape[", 0) == 0) dims.push_back(&s);
  if (role == ModuleRole::Linear && dims.size() == 2) {
    out.push_back(SizeValue{"in", dims[1]->written, dims[1]->value});
    out.push_back(SizeValue{"out", dims[0]->written, dims[0]->value});
  } else if (role == ModuleRole::Embedding && dims.size() == 2) {
    out.push_back(SizeValue{"num", dims[0]->written, dims[0]->value});
    out.push_back(SizeValue{"dim", dims[1]->written, dims[1]->value});
  } else if (role == ModuleRole::Router && dims.size() == 2) {
    out.push_back(SizeValue{"experts", dims[0]->written, dims[0]->value});
    out.push_back(SizeValue{"in", dims[1]->written, dims[1]->value});
  } else if ((role == ModuleRole::RMSNorm || role == ModuleRole::LayerNorm) && dims.size() == 1) {
    out.push_back(SizeValue{"dim", dims[0]->written, dims[0]->value});
  }
  return out;
}

class TreeBuilder {
 public:
  TreeBuilder(const SourceSet& sources, Evaluator& ev, const RoleTable& roles) : sources_(sources), ev_(ev), roles_(roles) {}

  ModuleNode root(const ClassDecl& cls) {
    ModuleNode n;
    n.path = std::string(cls.node->name);
    n.attribute = "";
    n.class_name = std::string(cls.node->name);
    n.local = true;
    n.class_where = cls.file->span_of(cls.node);
    n.where = n.class_where;
    const ClassRole* r = roles_.find(cls.node->name);
    n.role = r ? r->role : ModuleRole::Unknown;
    expand(n, cls, nullptr, 0);
    return n;
  }

 private:
  void expand(ModuleNode& node, const ClassDecl& cls, const std::map<std::string, SymValue, std::less<>>* bindings,
              int depth) {
    if (depth > kMaxDepth || stack_.count(&cls)) return;
    stack_.insert(&cls);
    ClassInstance inst = describe_instance(sources_, ev_, cls, bindings);
    if (node.local && node.sizes.empty()) node.sizes = weight_sizes(node.role, inst);
    for (const Attribute& a : inst.attributes) {
      if (a.kind != AttributeKind::Submodule && a.kind != AttributeKind::ModuleList && a.kind != AttributeKind::ModuleDict)
        continue;
      ModuleNode child;
      child.attribute = a.name;
      bool list = a.kind != AttributeKind::Submodule;
      child.path = node.path + "." + a.name + (list ? "[*]" : "");
      child.kind = a.kind;
      child.where = a.where;
      child.condition = a.condition;
      child.active = a.active;
      child.count = a.count;
      child.element_condition = a.element_condition;
      child.note = a.note;
      child.sizes = a.sizes;
      child.local = a.module.local != nullptr;
      child.class_name = a.module.local ? std::string(a.module.local->node->name)
                                        : (a.module.qualified.empty() ? a.module.written : a.module.qualified);
      child.role = roles_.role_of(a.module);
      if (a.module.local) {
        child.class_where = a.module.local->file->span_of(a.module.local->node);
        expand(child, *a.module.local, &a.module.bindings, depth + 1);
      }
      node.children.push_back(std::move(child));
    }
    assign_positions(node, cls);
    head_by_vocabulary(node);
    stack_.erase(&cls);
  }

  // Where each child sits in the parent's forward, from the order of calls.
  void assign_positions(ModuleNode& node, const ClassDecl& cls) {
    const ForwardCensus* census = roles_.census(cls.node->name);
    if (!census) return;
    auto call_index = [&](const std::string& name) -> int {
      auto it = std::find(census->child_calls.begin(), census->child_calls.end(), name);
      return it == census->child_calls.end() ? -1 : static_cast<int>(it - census->child_calls.begin());
    };
    int attn = -1, ffn = -1, blocks = -1;
    for (const ModuleNode& c : node.children) {
      int i = call_index(c.attribute);
      if (i < 0) continue;
      if (c.role == ModuleRole::Attention && attn < 0) attn = i;
      if (is_ffn(c.role) && ffn < 0) ffn = i;
      if (c.role == ModuleRole::DecoderLayer && blocks < 0) blocks = i;
    }
    const SymValue* expert_count = nullptr;
    bool expert_list = false;
    for (const ModuleNode& c : node.children) {
      if (c.role == ModuleRole::Mlp && c.kind != AttributeKind::Submodule) {
        expert_list = true;
        expert_count = &c.count;
      }
    }
    for (ModuleNode& c : node.children) {
      int i = call_index(c.attribute);
      if (c.role == ModuleRole::Embedding) c.position = "embedding";
      if (c.role == ModuleRole::DecoderLayer) c.position = "blocks";
      if (c.role == ModuleRole::Rotary) c.position = "rotary embedding";
      if (c.role == ModuleRole::Attention) c.position = "attention";
      if (is_ffn(c.role)) c.position = "feed-forward";
      if (c.role == ModuleRole::Router) c.position = "router";
      if (c.role == ModuleRole::Mlp && node.role == ModuleRole::MoE) {
        if (c.kind != AttributeKind::Submodule) c.position = "routed experts";
        else c.position = expert_list ? "shared experts" : "stacked experts";
      }
      // A plain linear whose outputs are one score per expert is the gate.
      if (c.role == ModuleRole::Linear && node.role == ModuleRole::MoE && expert_count && c.kind == AttributeKind::Submodule) {
        for (const SizeValue& sz : c.sizes)
          if (sz.label == "out" && (sz.value.text == expert_count->text ||
                                    (sz.value.is_known() && expert_count->is_known() && sz.value.value == expert_count->value)))
            c.position = "router";
      }
      if (is_norm(c.role)) {
        if (i < 0) c.position = "norm (not called directly by forward)";
        else if (blocks >= 0) c.position = i > blocks ? "final norm" : "norm before the blocks";
        else if (attn >= 0 && i < attn) c.position = "norm before attention";
        else if (attn >= 0 && ffn >= 0 && i > attn && i < ffn) c.position = "norm between attention and feed-forward";
        else if (ffn >= 0 && i > ffn) c.position = "norm after feed-forward";
        else if (attn < 0 && ffn >= 0 && i < ffn) c.position = "norm before feed-forward";
      }
      if (c.role == ModuleRole::Linear && (node.role == ModuleRole::CausalLM) && blocks_or_backbone_before(node, c, census))
        c.position = "lm_head";
    }
  }

  // A causal LM whose head is applied outside forward (vLLM's compute_logits):
  // the linear that maps back to the vocabulary, i.e. whose output size is the
  // embedding's row count.
  static void head_by_vocabulary(ModuleNode& node) {
    if (node.role != ModuleRole::CausalLM) return;
    for (const ModuleNode& c : node.children)
      if (c.position == "lm_head") return;
    std::function<const ModuleNode*(const ModuleNode&)> embedding = [&](const ModuleNode& n) -> const ModuleNode* {
      if (n.role == ModuleRole::Embedding) return &n;
      for (const ModuleNode& c : n.children)
        if (const ModuleNode* e = embedding(c)) return e;
      return nullptr;
    };
    const ModuleNode* emb = embedding(node);
    const SizeValue* rows = nullptr;
    if (emb)
      for (const SizeValue& s : emb->sizes)
        if (s.label == "num") rows = &s;
    if (!rows) return;
    for (ModuleNode& c : node.children) {
      if (c.role != ModuleRole::Linear || !c.position.empty()) continue;
      for (const SizeValue& s : c.sizes) {
        bool same = s.label == "out" && (s.value.text == rows->value.text ||
                                         (s.value.is_known() && rows->value.is_known() && s.value.value == rows->value.value));
        if (same) {
          c.position = "lm_head";
          return;
        }
      }
    }
  }

  // A linear called after the blocks (or after the backbone) is the LM head.
  bool blocks_or_backbone_before(const ModuleNode& node, const ModuleNode& c, const ForwardCensus* census) {
    auto idx = [&](const std::string& name) {
      auto it = std::find(census->child_calls.begin(), census->child_calls.end(), name);
      return it == census->child_calls.end() ? -1 : static_cast<int>(it - census->child_calls.begin());
    };
    int me = idx(c.attribute);
    if (me < 0) return false;
    for (const ModuleNode& o : node.children) {
      if ((o.role == ModuleRole::DecoderLayer || o.role == ModuleRole::Backbone) && idx(o.attribute) >= 0 &&
          idx(o.attribute) < me)
        return true;
    }
    return false;
  }

  const SourceSet& sources_;
  Evaluator& ev_;
  const RoleTable& roles_;
  std::set<const ClassDecl*> stack_;
};

size_t tree_size(const ModuleNode& n) {
  size_t s = 1;
  for (const ModuleNode& c : n.children) s += tree_size(c);
  return s;
}

int root_rank(ModuleRole r) {
  switch (r) {
    case ModuleRole::CausalLM: return 3;
    case ModuleRole::Backbone: return 2;
    case ModuleRole::DecoderLayer: return 1;
    default: return 0;
  }
}

const ModuleNode* find_node(const ModuleNode& n, const std::function<bool(const ModuleNode&)>& pred) {
  if (pred(n)) return &n;
  for (const ModuleNode& c : n.children)
    if (const ModuleNode* f = find_node(c, pred)) return f;
  return nullptr;
}

}  // namespace

ModelStructure build_structure(const SourceSet& sources, Evaluator& ev, const RoleTable& roles) {
  ModelStructure out;
  // Classes no other module class builds are the candidates for the top.
  std::set<std::string> built;
  for (const ClassDecl* c : roles.module_classes()) {
    const ClassInstance* inst = roles.standalone(c->node->name);
    if (!inst) continue;
    for (const Attribute& a : inst->attributes)
      if (a.module.local && a.module.local != c) built.insert(std::string(a.module.local->node->name));
    // A base class is not a separate top either.
    for (const ast::expr* b : c->node->bases) built.insert(dotted_name(b));
  }
  std::vector<const ClassDecl*> tops;
  for (const ClassDecl* c : roles.module_classes())
    if (!built.count(std::string(c->node->name))) tops.push_back(c);

  // The config's `architectures` names the class a checkpoint is built as
  // (HF: the causal LM, not the classification heads beside it).
  std::set<std::string> named;
  if (const nlohmann::json* arch = ev.config().find("architectures"); arch && arch->is_array())
    for (const nlohmann::json& a : *arch)
      if (a.is_string()) named.insert(a.get<std::string>());
  TreeBuilder builder(sources, ev, roles);
  std::optional<ModuleNode> best;
  // A multimodal wrapper the checkpoint names may build its language model
  // outside the analysed files (AutoModel.from_config): a top that holds the
  // decoder layers itself is then the one to analyse.
  auto has_blocks = [](const ModuleNode& n) {
    return find_node(n, [](const ModuleNode& m) { return m.role == ModuleRole::DecoderLayer && m.kind != AttributeKind::Submodule; }) != nullptr;
  };
  bool best_blocks = false;
  for (const ClassDecl* c : tops) {
    ModuleNode n = builder.root(*c);
    bool n_named = named.count(n.class_name) > 0, best_named = best && named.count(best->class_name) > 0;
    bool n_blocks = has_blocks(n);
    bool better = !best || (n_blocks && !best_blocks) ||
                  (n_blocks == best_blocks &&
                   ((n_named && !best_named) ||
                    (n_named == best_named &&
                     (root_rank(n.role) > root_rank(best->role) ||
                      (root_rank(n.role) == root_rank(best->role) && tree_size(n) > tree_size(*best))))));
    if (better) {
      if (best) out.other_roots.push_back(best->class_name);
      best = std::move(n);
      best_blocks = n_blocks;
    } else {
      out.other_roots.push_back(n.class_name);
    }
  }
  if (best && !named.empty() && !named.count(best->class_name))
    for (const std::string& root : out.other_roots)
      if (named.count(root)) {
        out.notes.push_back("the config's architectures names `" + root + "`, which holds no decoder layers in the analysed files; analysed `" + best->class_name + "`, which does");
        break;
      }
  out.root = std::move(best);
  if (!out.root) {
    out.notes.push_back("no nn.Module class found");
    return out;
  }
  const ModuleNode& root = *out.root;
  out.embedding.node = find_node(root, [](const ModuleNode& n) { return n.position == "embedding"; });
  // The decoder's layers: in a multimodal model, the language model's list,
  // not a vision or audio tower's that comes first in the tree.
  std::vector<const ModuleNode*> layer_lists;
  std::function<void(const ModuleNode&)> collect = [&](const ModuleNode& n) {
    if (n.role == ModuleRole::DecoderLayer && n.kind != AttributeKind::Submodule) {
      layer_lists.push_back(&n);
      return;
    }
    for (const ModuleNode& c : n.children) collect(c);
  };
  collect(root);
  auto tower = [](const ModuleNode& n) {
    std::string path = n.path;
    std::transform(path.begin(), path.end(), path.begin(), [](unsigned char ch) { return std::tolower(ch); });
    for (const char* w : {"vision", "visual", "audio", "image", "speech", "video"})
      if (path.find(w) != std::string::npos) return true;
    return false;
  };
  for (const ModuleNode* n : layer_lists)
    if (!out.blocks.node && !tower(*n)) out.blocks.node = n;
  if (!out.blocks.node && !layer_lists.empty()) out.blocks.node = layer_lists.front();
  if (const ModuleNode* blocks = out.blocks.node) {
    const ModuleNode* parent = find_node(root, [&](const ModuleNode& n) {
      return std::any_of(n.children.begin(), n.children.end(), [&](const ModuleNode& c) { return &c == blocks; });
    });
    if (parent)
      for (const ModuleNode& c : parent->children)
        if (&c != blocks && c.path == blocks->path && c.role == ModuleRole::DecoderLayer && c.class_name != blocks->class_name)
          out.other_block_classes.push_back(&c);
  }
  out.final_norm.node = find_node(root, [](const ModuleNode& n) { return n.position == "final norm"; });
  out.lm_head.node = find_node(root, [](const ModuleNode& n) { return n.position == "lm_head"; });
  if (!out.embedding.node) out.notes.push_back("no embedding module found");
  if (!out.blocks.node) out.notes.push_back("no list of decoder layers found");
  if (!out.final_norm.node) out.notes.push_back("no final norm found after the blocks");
  if (!out.lm_head.node)
    out.notes.push_back("no LM-head module found (the logits may come from the embedding weight, i.e. a tied head)");
  return out;
}

}  // namespace npufuse::model

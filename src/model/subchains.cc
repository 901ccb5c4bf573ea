// The block's sub-chains: build the decoder layer's inlined forward, split
// its ops by the submodule whose code emitted them, run the finder for each
// module's role, then attach the block-level norms and residual adds and the
// escaping intermediates.
#include "model/subchains.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "model/subchains_graph.h"

namespace npufuse::model {

namespace {

using namespace subchains;

// The first component under the block's `self`: "self.mlp.experts[]" -> "self.mlp".
std::string top_scope(const std::string& scope) {
  if (scope.rfind("self.", 0) != 0) return "";
  size_t end = scope.find_first_of(".[", 5);
  return scope.substr(0, end);
}

// A lookup that builds one attribute of one class from a chosen alternative.
class AlternativeLookup : public SubmoduleLookup {
 public:
  AlternativeLookup(const SubmoduleLookup& base, const ClassDecl& owner, std::string attribute, const ModuleCtor& ctor)
      : base_(base), owner_(owner), attribute_(std::move(attribute)), ctor_(ctor) {}
  const ModuleCtor* find(const ClassDecl& owner, std::string_view attribute) const override {
    if (owner.node == owner_.node && attribute == attribute_) return &ctor_;
    return base_.find(owner, attribute);
  }
  std::string callable_op(const ClassDecl& owner, std::string_view attribute) const override {
    return base_.callable_op(owner, attribute);
  }

 private:
  const SubmoduleLookup& base_;
  const ClassDecl& owner_;
  std::string attribute_;
  const ModuleCtor& ctor_;
};

struct ModuleOps {
  std::string scope;
  ModuleRole role = ModuleRole::Unknown;
  std::string class_name;
  std::vector<int> ops;
};

// A value computed only from the block forward's inputs (through casts and
// views), not from any op that reads a weight.
bool from_block_input(const BlockGraph& bg, int value) {
  const DataflowOp& s = bg.source(value);
  return s.cls == OpClass::Input;
}

// The kind of norm each op belongs to, by op id: "rms_norm", "layer_norm"
// (centred: a layer_norm or group_norm op, a subtraction or a variance among
// its ops) or "" for an op of no norm.
std::vector<std::string> norm_kinds(const BlockGraph& bg, const std::vector<Norm>& norms) {
  std::vector<std::string> kind_of(bg.size());
  for (const Norm& n : norms) {
    bool centred = std::any_of(n.ops.begin(), n.ops.end(), [&](int id) {
      const std::string& name = bg.op(id).name;
      return name == "layer_norm" || name == "group_norm" || name == "sub" || name == "var";
    });
    for (int id : n.ops) kind_of[static_cast<size_t>(id)] = centred ? "layer_norm" : "rms_norm";
  }
  return kind_of;
}

// Which norm reads a value: following it through views, casts, slices and
// tuple building (never through arithmetic, a module or a call) to an op of
// a norm (`norm_kind`, from norm_kinds); "" when no norm reads it.
// `returned` tells whether the value leaves the block.
std::string norm_reading(const BlockGraph& bg, const std::vector<int>& start_values,
                         const std::vector<std::string>& norm_kind, bool* returned) {
  std::vector<char> marked(bg.g.values.size(), 0);
  for (int v : start_values) marked[static_cast<size_t>(v)] = 1;
  std::set<int> returns(bg.g.returns.begin(), bg.g.returns.end());
  int first_op = std::numeric_limits<int>::max();
  for (int v : start_values) {
    int p = bg.g.values[static_cast<size_t>(v)].producer;
    first_op = std::min(first_op, p < 0 ? 0 : p);
  }
  if (returned) *returned = std::any_of(start_values.begin(), start_values.end(), [&](int v) { return returns.count(v) > 0; });
  for (const DataflowOp& o : bg.g.ops) {
    if (o.id <= first_op) continue;
    bool hit = false;
    for (int v : o.inputs) hit = hit || marked[static_cast<size_t>(v)];
    if (!hit) continue;
    if (const std::string& kind = norm_kind[static_cast<size_t>(o.id)]; !kind.empty()) return kind;
    if (o.cls != OpClass::View && o.cls != OpClass::Cast && o.cls != OpClass::Slice && o.cls != OpClass::Structure)
      continue;
    for (int v : o.outputs) {
      marked[static_cast<size_t>(v)] = 1;
      if (returned && returns.count(v)) *returned = true;
    }
  }
  return "";
}

// What reads a residual add's sum: a norm of this block, or, when the sum
// leaves the block, the norm the block's first input meets first (the next
// layer's input norm); "none" when neither is a norm.
std::string residual_sum_reader(const BlockGraph& bg, const DataflowOp& add, const std::vector<std::string>& norm_kind) {
  bool returned = false;
  std::string here = norm_reading(bg, add.outputs, norm_kind, &returned);
  if (!here.empty()) return here;
  if (!returned) return "none";
  for (const DataflowOp& o : bg.g.ops) {
    if (o.cls != OpClass::Input) continue;
    std::string next = norm_reading(bg, o.outputs, norm_kind, nullptr);
    return next.empty() ? "none" : next;  // the first parameter: the hidden state the layer is given
  }
  return "";
}

ModuleRole role_of(const RoleTable& roles, const ModuleCtor* ctor) { return ctor ? roles.role_of(*ctor) : ModuleRole::Unknown; }

std::string ctor_name(const ModuleCtor* ctor) {
  if (!ctor) return "";
  return ctor->local ? std::string(ctor->local->node->name) : ctor->qualified;
}

const std::vector<std::string>& expected_steps(const std::string& module, bool q_latent) {
  static const std::vector<std::string> attention = {"input_norm",     "qkv_projection", "rope",         "cache_write",
                                                     "attention_core", "o_projection",   "residual_add"};
  static const std::vector<std::string> mla = {"input_norm", "q_down", "q_norm", "q_up", "kv_down", "kv_norm", "nope_rope_split",
                                               "rope", "cache_write", "attention_core", "o_projection", "residual_add"};
  static const std::vector<std::string> mla_no_q_latent = {"input_norm", "kv_down", "kv_norm", "nope_rope_split", "rope",
                                                           "cache_write", "attention_core", "o_projection", "residual_add"};
  static const std::vector<std::string> moe = {"post_norm", "gate", "topk", "dispatch", "experts", "combine", "residual_add"};
  static const std::vector<std::string> ffn = {"post_norm", "gate_up_projection", "activation", "down_projection", "residual_add"};
  static const std::vector<std::string> indexer = {"index_q", "index_k", "index_score", "index_topk"};
  static const std::vector<std::string> linear_attention = {"input_norm", "conv1d", "residual_add"};
  static const std::vector<std::string> none;
  if (module == "attention") return attention;
  if (module == "mla") return q_latent ? mla : mla_no_q_latent;
  if (module == "moe") return moe;
  if (module == "ffn") return ffn;
  if (module == "indexer") return indexer;
  if (module == "linear_attention") return linear_attention;
  return none;
}

void fill_missing(ModuleChain& chain) {
  bool q_latent = false;
  for (const SubChainStep& s : chain.steps) q_latent = q_latent || s.kind == "q_down";
  for (const std::string& kind : expected_steps(chain.module, q_latent)) {
    bool found = std::any_of(chain.steps.begin(), chain.steps.end(), [&](const SubChainStep& s) { return s.kind == kind; });
    if (!found && std::find(chain.missing.begin(), chain.missing.end(), kind) == chain.missing.end()) chain.missing.push_back(kind);
  }
}

void sort_steps(ModuleChain& chain) {
  std::stable_sort(chain.steps.begin(), chain.steps.end(), [](const SubChainStep& a, const SubChainStep& b) {
    int fa = a.ops.empty() ? 0 : a.ops.front();
    int fb = b.ops.empty() ? 0 : b.ops.front();
    return fa < fb;
  });
}

// A feed-forward written in the block itself (OPT, XGLM, BART decoders:
// `fc2(act(fc1(x)))` on the block's own linears): when no submodule is an
// MLP or MoE, the block-level linears around an activation, and the ops
// between them, are the FFN module.
void inline_feed_forward(const BlockGraph& bg, const ClassDecl& cls, std::vector<ModuleOps>& modules,
                         std::vector<int>& block_ops) {
  for (const ModuleOps& m : modules)
    if (m.role == ModuleRole::Mlp || m.role == ModuleRole::MoE) return;
  size_t n = bg.size();
  std::vector<int> linears;
  for (int id : block_ops)
    if (is_linear(bg.op(id))) linears.push_back(id);
  if (linears.size() < 2) return;
  OpSet linear_set = set_of(n, linears);
  for (int id : block_ops) {
    if (!is_activation(bg.op(id))) continue;
    OpSet act = set_of(n, {id});
    OpSet up = bg.upstream(act), down = bg.downstream(act);
    std::vector<int> before, after;
    for (int l : linears) {
      if (up[static_cast<size_t>(l)]) before.push_back(l);
      if (down[static_cast<size_t>(l)]) after.push_back(l);
    }
    if (before.empty() || after.empty()) continue;
    OpSet from_before = bg.downstream(set_of(n, before));
    OpSet to_after = bg.upstream(set_of(n, after));
    std::vector<int> own, rest;
    for (int b : block_ops) {
      size_t i = static_cast<size_t>(b);
      bool between = from_before[i] && to_after[i];
      if (between || (linear_set[i] && (up[i] || down[i])) || b == id) own.push_back(b);
      else rest.push_back(b);
    }
    modules.push_back(ModuleOps{"self", ModuleRole::Mlp, std::string(cls.node->name), own});
    block_ops = std::move(rest);
    return;
  }
}

// Splits the graph's ops by the block's submodules and runs each module's finder.
std::vector<ModuleChain> analyse_block(const BlockGraph& bg, const SourceSet& sources, const RoleTable& roles,
                                       const SubmoduleLookup& lookup, const ClassDecl& cls, const std::string& instance,
                                       const std::string* only_scope) {
  (void)sources;
  std::vector<ModuleOps> modules;
  std::map<std::string, size_t> index;
  std::vector<int> block_ops;
  // Ops come in runs of one scope: its module is looked up once per run.
  const std::string* last_scope = nullptr;
  std::string top;
  const ModuleCtor* ctor = nullptr;
  ModuleRole role = ModuleRole::Unknown;
  for (const DataflowOp& o : bg.g.ops) {
    if (!last_scope || o.scope != *last_scope) {
      last_scope = &o.scope;
      top = top_scope(o.scope);
      ctor = top.empty() ? nullptr : lookup.find(cls, top.substr(5));
      role = role_of(roles, ctor);
      // A child of no role that holds the attention with the norms around it
      // (DBRX's norm_attn_norm, CPM-Ant's self_att): the attention inside is
      // the module, one scope deeper.
      if (ctor && ctor->local && role == ModuleRole::Other && o.scope.size() > top.size() + 1 &&
          o.scope[top.size()] == '.') {
        std::string inner = o.scope.substr(top.size() + 1);
        inner = inner.substr(0, inner.find_first_of(".["));
        const ModuleCtor* held = lookup.find(*ctor->local, inner);
        ModuleRole held_role = role_of(roles, held);
        if (held_role == ModuleRole::Attention || held_role == ModuleRole::AttentionCore) {
          top += "." + inner;
          ctor = held;
          role = held_role;
        }
      }
    }
    bool chain_role = role == ModuleRole::Attention || role == ModuleRole::MoE || role == ModuleRole::Mlp ||
                      role == ModuleRole::AttentionCore || role == ModuleRole::Indexer;
    if (!chain_role) {
      block_ops.push_back(o.id);
      continue;
    }
    auto [it, fresh] = index.try_emplace(top, modules.size());
    if (fresh) modules.push_back(ModuleOps{top, role, ctor_name(ctor), {}});
    modules[it->second].ops.push_back(o.id);
  }

  inline_feed_forward(bg, cls, modules, block_ops);

  std::vector<ModuleChain> chains;
  std::vector<std::vector<int>> chain_ops;
  for (const ModuleOps& m : modules) {
    // An indexer inside the attention module is its own chain.
    std::vector<int> own = m.ops;
    if (m.role == ModuleRole::Attention || m.role == ModuleRole::AttentionCore) {
      const ModuleCtor* attn = lookup.find(cls, m.scope.substr(5));
      std::map<std::string, std::vector<int>> indexers;
      std::map<std::string, std::string> indexer_class;
      if (attn && attn->local) {
        std::vector<int> rest;
        const std::string* sub_scope = nullptr;  // the scope `sub` and `c` were worked out for
        std::string sub;
        const ModuleCtor* c = nullptr;
        bool indexer = false;
        for (int id : m.ops) {
          const std::string& sc = bg.op(id).scope;
          if (!sub_scope || sc != *sub_scope) {
            sub_scope = &sc;
            sub = sc.size() > m.scope.size() + 1 && sc[m.scope.size()] == '.' ? sc.substr(m.scope.size() + 1) : "";
            sub = sub.substr(0, sub.find_first_of(".["));
            c = sub.empty() ? nullptr : lookup.find(*attn->local, sub);
            indexer = c && roles.role_of(*c) == ModuleRole::Indexer;
          }
          if (indexer) {
            indexers[m.scope + "." + sub].push_back(id);
            indexer_class.try_emplace(m.scope + "." + sub, ctor_name(c));
          } else {
            rest.push_back(id);
          }
        }
        own = rest;
      }
      for (const auto& [scope, ops] : indexers) {
        ModuleChain ic;
        ic.module = "indexer";
        ic.instance = instance + scope.substr(4);
        find_indexer_steps(bg, scope, ops, ic);
        ic.class_name = indexer_class[scope];
        chains.push_back(std::move(ic));
        chain_ops.push_back(ops);
      }
    }
    ModuleChain c;
    c.class_name = m.class_name;
    c.instance = instance + m.scope.substr(4);
    if (m.role == ModuleRole::MoE) {
      c.module = "moe";
      find_moe_steps(bg, m.scope, own, c);
    } else if (m.role == ModuleRole::Mlp) {
      c.module = "ffn";
      find_ffn_steps(bg, m.scope, own, c);
    } else if (m.role == ModuleRole::Indexer) {
      c.module = "indexer";
      find_indexer_steps(bg, m.scope, own, c);
    } else if (is_linear_mixer(bg, own)) {
      c.module = "linear_attention";
      find_linear_mixer_steps(bg, m.scope, own, c);
    } else {
      c.module = "attention";
      find_attention_steps(bg, m.scope, own, c);
    }
    chains.push_back(std::move(c));
    chain_ops.push_back(own);
  }

  size_t n = bg.size();
  std::vector<int> module_of(n, -1);
  for (size_t i = 0; i < chain_ops.size(); ++i)
    for (int id : chain_ops[i]) module_of[static_cast<size_t>(id)] = static_cast<int>(i);

  // Block-level norms go to each module their output reaches directly:
  // through block-level ops only, not through another module or another
  // norm. A parallel block's one norm feeds both its attention and its FFN.
  std::vector<Norm> block_norms = norms_in(bg, block_ops);
  OpSet in_some_norm = make_set(n);
  for (const Norm& nm : block_norms)
    for (int id : nm.ops) in_some_norm[static_cast<size_t>(id)] = 1;
  const std::vector<std::string> norm_kind = norm_kinds(bg, block_norms);
  for (const Norm& nm : block_norms) {
    OpSet own = set_of(n, nm.ops);
    std::vector<char> marked(bg.g.values.size(), 0);
    for (int id : nm.ops)
      for (int v : bg.op(id).outputs) marked[static_cast<size_t>(v)] = 1;
    std::vector<int> reached;  // module indices, first reached first
    for (const DataflowOp& o : bg.g.ops) {
      if (own[static_cast<size_t>(o.id)]) continue;
      bool hit = false;
      for (int v : o.inputs) hit = hit || marked[static_cast<size_t>(v)];
      if (!hit) continue;
      int m = module_of[static_cast<size_t>(o.id)];
      if (m >= 0) {
        if (chains[static_cast<size_t>(m)].module != "indexer" && std::find(reached.begin(), reached.end(), m) == reached.end())
          reached.push_back(m);
        continue;
      }
      if (in_some_norm[static_cast<size_t>(o.id)]) continue;
      for (int v : o.outputs) marked[static_cast<size_t>(v)] = 1;
    }
    for (int m : reached) {
      ModuleChain& c = chains[static_cast<size_t>(m)];
      bool attention = c.module == "attention" || c.module == "mla" || c.module == "linear_attention";
      std::string kind = attention ? "input_norm" : "post_norm";
      bool has = std::any_of(c.steps.begin(), c.steps.end(), [&](const SubChainStep& s) { return s.kind == kind; });
      if (has) continue;
      std::string detail = nm.key;
      if (reached.size() > 1) detail += " (one norm shared by " + std::to_string(reached.size()) + " modules)";
      add_steps(c, bg, kind, nm.ops, detail);
    }
  }
  // Residual adds: the stream plus a module's output. An add is the residual
  // add of module m when one operand carries m's output and every module the
  // other operand carries ran before m (`h + mlp(norm(h))`, where h carries
  // the attention output). A parallel block (`attn(x) + mlp(x) + x`) adds
  // both outputs to the stream in one add: it is the residual add of both.
  std::vector<int> inputs;
  for (const DataflowOp& o : bg.g.ops)
    if (o.cls == OpClass::Input) inputs.push_back(o.id);
  OpSet from_inputs = bg.downstream(set_of(n, inputs));
  for (int i : inputs) from_inputs[static_cast<size_t>(i)] = 1;
  std::vector<OpSet> after_module;
  for (const std::vector<int>& ops : chain_ops) after_module.push_back(bg.downstream(set_of(n, ops)));
  auto carries = [&](int value, size_t m) {
    int p = bg.producer(value).id;
    return after_module[m][static_cast<size_t>(p)] || module_of[static_cast<size_t>(p)] == static_cast<int>(m);
  };
  // Module `earlier` ran before `later` when some op of `later` reads its result.
  auto ran_before = [&](size_t earlier, size_t later) {
    return std::any_of(chain_ops[later].begin(), chain_ops[later].end(),
                       [&](int id) { return after_module[earlier][static_cast<size_t>(id)] != 0; });
  };
  std::vector<int> unattributed_adds;
  for (int id : block_ops) {
    const DataflowOp& o = bg.op(id);
    if (o.name != "add" || o.inputs.size() != 2) continue;
    std::vector<size_t> owners;
    bool any_module = false;
    for (size_t m = 0; m < chain_ops.size(); ++m) {
      if (chains[m].module == "indexer") continue;
      bool a = carries(o.inputs[0], m), b = carries(o.inputs[1], m);
      any_module = any_module || a || b;
      if (a == b) continue;
      int other = a ? o.inputs[1] : o.inputs[0];
      if (!from_inputs[static_cast<size_t>(bg.producer(other).id)]) continue;  // `out + 1.0` is no residual
      // The output of a submodule no chain or norm holds (`moe_out + self.shared_mlp(h)`) is a
      // branch joining the module's output, not the residual stream.
      const DataflowOp& other_source = bg.source(other);
      if ((other_source.scope != "self" || other_source.cls == OpClass::Module) &&
          module_of[static_cast<size_t>(other_source.id)] < 0 &&
          !in_some_norm[static_cast<size_t>(other_source.id)])
        continue;
      bool other_earlier = true;
      for (size_t m2 = 0; m2 < chain_ops.size(); ++m2)
        if (m2 != m && chains[m2].module != "indexer" && carries(other, m2) && !ran_before(m2, m)) other_earlier = false;
      if (other_earlier) owners.push_back(m);
    }
    if (!any_module) unattributed_adds.push_back(id);
    if (owners.empty()) continue;
    std::string detail = o.scope == "self" ? "residual + module output" : "inside " + o.scope + " (add fused with the next norm)";
    if (owners.size() > 1) detail = "parallel residual: the stream plus the outputs of " + std::to_string(owners.size()) + " modules in one sum";
    std::string reader = residual_sum_reader(bg, o, norm_kind);
    for (size_t m : owners) {
      size_t before = chains[m].steps.size();
      add_steps(chains[m], bg, "residual_add", {id}, detail);
      for (size_t k = before; k < chains[m].steps.size(); ++k) chains[m].steps[k].sum_read_by = reader;
    }
  }
  // A block that returns its last module's output and the residual apart
  // (vLLM's `return hidden_states, residual`) leaves that add to the next
  // block: the add of two block inputs inside its first norm.
  if (!chains.empty() && !unattributed_adds.empty()) {
    size_t last = 0;
    for (size_t m = 0; m < chains.size(); ++m)
      if (chains[m].module != "indexer" && chain_ops[m].back() > chain_ops[last].back()) last = m;
    bool has = std::any_of(chains[last].steps.begin(), chains[last].steps.end(),
                           [](const SubChainStep& s) { return s.kind == "residual_add"; });
    for (int id : unattributed_adds) {
      const DataflowOp& o = bg.op(id);
      if (has || o.scope == "self") continue;
      bool both_inputs = from_block_input(bg, o.inputs[0]) && from_block_input(bg, o.inputs[1]);
      if (!both_inputs) continue;
      add_steps(chains[last], bg, "residual_add", {id},
                "carried to the next block: the returned output plus the residual, added inside " + o.scope +
                    " of the next layer");
      break;
    }
  }

  OpSet block_steps = make_set(n);
  for (const ModuleChain& c : chains)
    for (const SubChainStep& s : c.steps)
      for (int id : s.ops) block_steps[static_cast<size_t>(id)] = 1;
  std::vector<ModuleChain> out;
  for (size_t i = 0; i < chains.size(); ++i) {
    ModuleChain& c = chains[i];
    if (only_scope && c.instance != instance + only_scope->substr(4)) continue;
    sort_steps(c);
    fill_missing(c);
    find_escapes(bg, chain_ops[i], block_steps, c);
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<BlockChains> block_subchains(const SourceSet& sources, const RoleTable& roles, const ModuleNode& node,
                                           const SubmoduleLookup& lookup, const std::vector<BranchCondition>& branches,
                                           const CacheOrganisation& kv_cache) {
  const ClassDecl* cls = sources.find_class(node.class_name);
  if (!cls) return std::nullopt;
  BlockChains block;
  block.block_class = node.class_name;
  block.instance = node.path;

  FunctionDataflow g = build_inlined_forward(sources, *cls, lookup);
  BlockGraph bg{g, branches, kv_cache};
  block.modules = analyse_block(bg, sources, roles, lookup, *cls, node.path, nullptr);
  block.forward = std::make_shared<FunctionDataflow>(std::move(g));

  // Submodules built under alternatives (`MLP(...) if dense else MoE(...)`):
  // each other alternative is analysed in a forward built with it.
  if (const ClassInstance* inst = roles.standalone(cls->node->name)) {
    std::map<std::string, std::vector<const Attribute*>> alternatives;
    for (const Attribute& a : inst->attributes)
      if (a.kind == AttributeKind::Submodule && a.module.local) alternatives[a.name].push_back(&a);
    for (const auto& [name, alts] : alternatives) {
      if (alts.size() < 2) continue;
      const ModuleCtor* chosen = lookup.find(*cls, name);
      std::string scope = "self." + name;
      for (ModuleChain& m : block.modules)
        if (m.instance == node.path + "." + name)
          for (const Attribute* a : alts)
            if (&a->module == chosen) m.alternative = a->module.written + (a->condition.empty() ? "" : " if " + a->condition);
      for (const Attribute* a : alts) {
        if (&a->module == chosen || (chosen && a->module.local == chosen->local)) continue;
        AlternativeLookup alt(lookup, *cls, name, a->module);
        FunctionDataflow ag = build_inlined_forward(sources, *cls, alt);
        BlockGraph abg{ag, branches, kv_cache};
        for (ModuleChain& m : analyse_block(abg, sources, roles, alt, *cls, node.path, &scope)) {
          m.alternative = a->module.written + (a->condition.empty() ? "" : " if " + a->condition);
          m.default_graph = false;
          block.modules.push_back(std::move(m));
        }
      }
    }
  }
  return block;
}

}  // namespace

std::vector<BlockChains> find_subchains(const SourceSet& sources, const RoleTable& roles, const ModelStructure& structure,
                                        const SubmoduleLookup& lookup, const std::vector<BranchCondition>& branches,
                                        const CacheOrganisation& kv_cache) {
  std::vector<BlockChains> out;
  if (!structure.blocks.node) return out;
  std::vector<const ModuleNode*> nodes{structure.blocks.node};
  nodes.insert(nodes.end(), structure.other_block_classes.begin(), structure.other_block_classes.end());
  for (const ModuleNode* n : nodes)
    if (std::optional<BlockChains> block = block_subchains(sources, roles, *n, lookup, branches, kv_cache))
      out.push_back(std::move(*block));
  return out;
}


}  // namespace npufuse::model

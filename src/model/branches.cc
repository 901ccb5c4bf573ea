#include "model/branches.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "model/ast_walk.h"

namespace npufuse::model {

namespace {

using ast::as;

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// Identifiers that appear in an expression: names and attribute names.
std::vector<std::string> identifiers(const ast::expr* e) {
  std::vector<std::string> out;
  walk(e, [&](const ast::Node* n) {
    if (const auto* nm = as<ast::Name>(n)) out.emplace_back(nm->id);
    if (const auto* at = as<ast::Attribute>(n)) out.emplace_back(at->attr);
    return true;
  });
  return out;
}

// Identifiers that decide the truth of a test: those of a call's arguments
// are left out, because an argument only parameterises the callee
// (`_ignore_causal_mask_sdpa(mask, is_training=self.training)` asks about the
// mask, not whether the model trains); the callee's own name counts.
std::vector<std::string> deciding_identifiers(const ast::expr* e) {
  std::vector<std::string> out;
  walk(e, [&](const ast::Node* n) {
    if (const auto* c = as<ast::Call>(n)) {
      for (std::string& id : identifiers(c->func)) out.push_back(std::move(id));
      return false;
    }
    if (const auto* nm = as<ast::Name>(n)) out.emplace_back(nm->id);
    if (const auto* at = as<ast::Attribute>(n)) out.emplace_back(at->attr);
    return true;
  });
  return out;
}

// A test that reads only the module's own settings and literals
// (`self.score_func == "softmax"`, `self.n_groups > 1`, `self.bias is not
// None`): fixed once the module is built from its config, so one arm is dead
// code for a given model.
bool is_configuration_choice(const ast::expr* test) {
  bool reads_setting = false, reads_other = false;
  walk(test, [&](const ast::Node* n) {
    if (as<ast::Call>(n)) {
      reads_other = true;
      return false;
    }
    if (const auto* at = as<ast::Attribute>(n)) {
      std::string base = dotted_name(at);
      if (base.rfind("self.", 0) == 0 || base.rfind("config.", 0) == 0) {
        reads_setting = true;
        return false;
      }
    }
    if (as<ast::Name>(n)) reads_other = true;
    return true;
  });
  return reads_setting && !reads_other;
}

bool any_id(const std::vector<std::string>& ids, bool (*pred)(std::string_view)) {
  return std::any_of(ids.begin(), ids.end(), [&](const std::string& s) { return pred(s); });
}

bool is_cache_name(std::string_view s) {
  // `use_cache` is a flag and `cache_position` a position, not a cache object.
  if (s.rfind("use_", 0) == 0 || contains(s, "position")) return false;
  return s == "past" || s == "layer_past" || contains(s, "past_key_value") || contains(s, "cache") || s == "past_kv";
}
bool is_seq_len_name(std::string_view s) {
  return s == "q_len" || s == "seq_len" || s == "seqlen" || s == "query_length" || s == "seq_length" || s == "q_length" ||
         s == "num_tokens";
}
bool is_start_name(std::string_view s) {
  return s == "start_pos" || s == "past_len" || s == "past_length" || s == "past_seen_tokens" || s == "cache_position";
}
bool is_stage_name(std::string_view s) { return contains(s, "prefill") || contains(s, "decode"); }
bool is_training_name(std::string_view s) { return s == "training" || contains(s, "dropout"); }
bool is_dispatch_name(std::string_view s) {
  return contains(s, "attn_impl") || contains(s, "attn_implementation") || s == "use_flash_attn" || s == "use_sdpa";
}
bool is_parallel_name(std::string_view s) {
  return contains(s, "world_size") || s == "tp_size" || s == "ep_size" || s == "dp_size" || s == "tp_rank" || s == "ep_rank" ||
         contains(s, "tensor_model_parallel") || contains(s, "tensor_parallel") || s == "is_initialized" ||
         s == "reduce_results" || s == "process_group";
}
bool is_quant_name(std::string_view s) {
  return contains(s, "quant") || s == "scale" || contains(s, "weight_scale") || s == "scale_inv" || s == "gemm_impl" || contains(s, "int8") ||
         contains(s, "int4") || contains(s, "float8") || contains(s, "fp8") || s == "element_size";
}
bool is_collective(std::string_view callee) {
  return callee.rfind("dist.", 0) == 0 || callee.rfind("torch.distributed.", 0) == 0 || contains(callee, "all_reduce") ||
         contains(callee, "all_gather") || contains(callee, "all_to_all") || contains(callee, "reduce_scatter") ||
         contains(callee, "tensor_model_parallel_") || contains(callee, "broadcast");
}

std::optional<long> int_constant(const ast::expr* e) {
  const auto* c = as<ast::Constant>(e);
  if (!c || c->value.kind != ast::ConstantKind::Int) return std::nullopt;
  try {
    return std::stol(std::string(c->value.number));
  } catch (...) {
    return std::nullopt;
  }
}
bool is_none(const ast::expr* e) {
  const auto* c = as<ast::Constant>(e);
  return c && c->value.kind == ast::ConstantKind::None;
}

// The stage in which `test` is true, from the shapes of condition that say it.
std::string stage_when_true(const ast::expr* test) {
  if (const auto* u = as<ast::UnaryOp>(test); u && u->op == ast::unaryop::Not) return opposite_stage(stage_when_true(u->operand));
  if (const auto* b = as<ast::BoolOp>(test)) {
    std::set<std::string> stages;
    for (const ast::expr* v : b->values) {
      std::string s = stage_when_true(v);
      if (!s.empty()) stages.insert(s);
      else if (b->op == ast::boolop::Or) return "";
    }
    return stages.size() == 1 ? *stages.begin() : "";
  }
  if (as<ast::Name>(test) || as<ast::Attribute>(test)) {
    std::string last = identifiers(test).empty() ? "" : identifiers(test).front();
    if (const auto* at = as<ast::Attribute>(test)) last = std::string(at->attr);
    if (contains(last, "prefill")) return "prefill";
    if (contains(last, "decode")) return "decode";
    return "";
  }
  const auto* cmp = as<ast::Compare>(test);
  if (!cmp || cmp->ops.size != 1) return "";
  ast::cmpop op = cmp->ops[0];
  const ast::expr* right = cmp->comparators[0];
  std::vector<std::string> ids = identifiers(cmp->left);
  auto has = [&](bool (*pred)(std::string_view)) { return any_id(ids, pred); };
  if (is_none(right) && has(is_cache_name)) {
    if (op == ast::cmpop::Is || op == ast::cmpop::Eq) return "no_cache";
    if (op == ast::cmpop::IsNot || op == ast::cmpop::NotEq) return "with_cache";
  }
  std::optional<long> k = int_constant(right);
  if (!k) return "";
  bool eq = op == ast::cmpop::Eq, ne = op == ast::cmpop::NotEq, gt = op == ast::cmpop::Gt;
  if (has(is_seq_len_name) && *k == 1) {
    if (eq || op == ast::cmpop::LtE) return "decode";
    if (ne || gt) return "prefill";
  }
  if (has(is_start_name) && *k == 0) {
    if (eq) return "prefill";
    if (ne || gt) return "decode";
  }
  std::string joined;
  for (const std::string& s : ids) joined += s + " ";
  if (*k == 0 && (gt || ne)) {
    if (contains(joined, "prefill")) return "prefill";
    if (contains(joined, "decode")) return "decode";
  }
  if (*k == 0 && eq) {
    if (contains(joined, "prefill")) return "decode";
    if (contains(joined, "decode")) return "prefill";
  }
  return "";
}

bool mentions_prefill_decode(const ast::expr* test, const std::vector<std::string>& ids) {
  if (any_id(ids, is_stage_name) || std::find(ids.begin(), ids.end(), "use_cache") != ids.end()) return true;
  // A conjunction of two stage claims (`start_pos == 0 and cache is None`)
  // tells no single stage but is still a stage branch.
  bool any_part = false;
  walk(test, [&](const ast::Node* n) {
    if (as<ast::Compare>(n) || as<ast::UnaryOp>(n)) any_part = any_part || !stage_when_true(static_cast<const ast::expr*>(n)).empty();
    return !any_part;
  });
  return any_part;
}

void add_unique(std::vector<std::string>& v, std::string s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
}

// Callees in statements or an expression, as written (`self.q_proj`, `torch.cat`).
template <class Root>
void collect_calls(const ModelFile& file, const Root* root, std::vector<std::string>& out) {
  walk(root, [&](const ast::Node* n) {
    if (const auto* c = as<ast::Call>(n)) {
      std::string callee = dotted_name(c->func);
      if (callee.empty()) {
        if (const auto* at = as<ast::Attribute>(c->func)) callee = "." + std::string(at->attr);
      }
      if (!callee.empty()) add_unique(out, callee);
    }
    return true;
  });
}

class BranchFinder {
 public:
  BranchFinder(const SourceSet& sources, std::vector<BranchCondition>& out) : sources_(sources), out_(out) {}

  void function(const ModelFile& file, const ast::FunctionDef* fn, const std::string& owner) {
    std::string name = owner.empty() ? std::string(fn->name) : owner + "." + std::string(fn->name);
    for (const ast::stmt* s : fn->body) {
      walk(s, [&](const ast::Node* n) {
        if (const auto* i = as<ast::If>(n)) {
          BranchCondition b = start(file, name, owner, n, i->test, "if");
          for (const ast::stmt* t : i->body) collect_calls(file, t, b.then_calls);
          for (const ast::stmt* t : i->orelse) collect_calls(file, t, b.else_calls);
          finish(std::move(b));
          note_stage_body(*i, out_.back().true_stage);
        } else if (const auto* x = as<ast::IfExp>(n)) {
          BranchCondition b = start(file, name, owner, n, x->test, "ternary");
          collect_calls(file, x->body, b.then_calls);
          collect_calls(file, x->orelse, b.else_calls);
          finish(std::move(b));
        }
        if (const auto* c = as<ast::Call>(n)) {
          if (const auto* nm = as<ast::Name>(c->func)) called_.insert(std::string(nm->id));
        }
        if (const auto* a = as<ast::Assign>(n)) note_assignment(*a);
        return true;
      });
    }
  }

  const std::set<std::string>& called() const { return called_; }

  // Names that hold a tensor in one stage only and None in the other: a
  // mask built `... if seqlen > 1 else None`, or `mask = None` and then
  // `if seqlen > 1: mask = ...` (DeepSeek's inference code hands it down to
  // every layer by that name). name -> the stage in which it is not None;
  // a name seen gated both ways, or never assigned None, is left out.
  std::map<std::string, std::string> stage_gated_names() const {
    std::map<std::string, std::string> out;
    for (const auto& [name, stages] : gated_)
      if (stages.size() == 1 && assigned_none_.count(name)) out[name] = *stages.begin();
    return out;
  }

 private:
  BranchCondition start(const ModelFile& file, const std::string& name, const std::string& owner, const ast::Node* n,
                        const ast::expr* test, const char* form) {
    BranchCondition b;
    b.function = name;
    b.owner = owner;
    b.where = file.span_of(n);
    b.form = form;
    b.condition = std::string(file.text_of(test));
    b.test = test;
    test_ = test;
    return b;
  }

  void finish(BranchCondition b) {
    std::vector<std::string> ids = identifiers(test_);
    for (const auto& calls : {b.then_calls, b.else_calls})
      for (const std::string& c : calls)
        if (is_collective(c)) add_unique(b.communication, c);
    std::vector<std::string> test_calls;
    walk(test_, [&](const ast::Node* n) {
      if (const auto* c = as<ast::Call>(n)) test_calls.push_back(dotted_name(c->func));
      return true;
    });
    bool test_collective = std::any_of(test_calls.begin(), test_calls.end(), [](const std::string& c) {
      return c.rfind("dist.", 0) == 0 || c.rfind("torch.distributed.", 0) == 0;
    });
    if (mentions_prefill_decode(test_, ids)) {
      b.kinds.push_back(BranchKind::PrefillDecode);
      b.true_stage = stage_when_true(test_);
    }
    if (any_id(ids, is_quant_name)) b.kinds.push_back(BranchKind::Quantization);
    if (any_id(ids, is_parallel_name) || test_collective || !b.communication.empty()) b.kinds.push_back(BranchKind::Parallel);
    if (any_id(deciding_identifiers(test_), is_training_name)) b.kinds.push_back(BranchKind::TrainingOnly);
    if (any_id(ids, is_dispatch_name)) b.kinds.push_back(BranchKind::AttentionDispatch);
    if (b.kinds.empty() && is_configuration_choice(test_)) b.kinds.push_back(BranchKind::ConfigChoice);
    out_.push_back(std::move(b));
  }

  static std::vector<std::string> assigned_names(const ast::Assign& a) {
    std::vector<std::string> out;
    for (const ast::expr* t : a.targets)
      if (const auto* nm = as<ast::Name>(t)) out.emplace_back(nm->id);
    return out;
  }

  // `if seqlen > 1: mask = ...`: the names the body of a stage branch assigns a value.
  void note_stage_body(const ast::If& i, const std::string& stage) {
    if (stage != "prefill" && stage != "decode") return;
    for (const ast::stmt* t : i.body)
      if (const auto* a = as<ast::Assign>(t); a && !is_none(a->value))
        for (const std::string& name : assigned_names(*a)) gated_[name].insert(stage);
  }

  void note_assignment(const ast::Assign& a) {
    if (is_none(a.value)) {
      for (const std::string& name : assigned_names(a)) assigned_none_.insert(name);
      return;
    }
    const auto* x = as<ast::IfExp>(a.value);
    if (!x || is_none(x->body) == is_none(x->orelse)) return;
    std::string stage = stage_when_true(x->test);
    if (stage != "prefill" && stage != "decode") return;
    if (is_none(x->body)) stage = opposite_stage(stage);
    for (const std::string& name : assigned_names(a)) {
      gated_[name].insert(stage);
      assigned_none_.insert(name);
    }
  }

  const SourceSet& sources_;
  std::vector<BranchCondition>& out_;
  std::set<std::string> called_;
  std::map<std::string, std::set<std::string>> gated_;
  std::set<std::string> assigned_none_;
  const ast::expr* test_ = nullptr;
};

}  // namespace

const char* branch_kind_name(BranchKind k) {
  switch (k) {
    case BranchKind::PrefillDecode: return "prefill_decode";
    case BranchKind::Quantization: return "quantization";
    case BranchKind::Parallel: return "parallel";
    case BranchKind::TrainingOnly: return "training_only";
    case BranchKind::AttentionDispatch: return "attention_dispatch";
    case BranchKind::ConfigChoice: return "config_choice";
  }
  return "?";
}

std::string opposite_stage(const std::string& stage) {
  if (stage == "prefill") return "decode";
  if (stage == "decode") return "prefill";
  if (stage == "no_cache") return "with_cache";
  if (stage == "with_cache") return "no_cache";
  return "";
}

std::vector<BranchCondition> find_branches(const SourceSet& sources, const std::vector<const ClassDecl*>& module_classes) {
  std::vector<BranchCondition> out;
  BranchFinder finder(sources, out);
  for (const ClassDecl* c : module_classes) {
    for (const ast::stmt* s : c->node->body) {
      const auto* fn = as<ast::FunctionDef>(s);
      if (!fn || fn->name == "__init__") continue;
      finder.function(*c->file, fn, std::string(c->node->name));
    }
  }
  // Module-level helpers reached by name from those methods, and from the
  // helpers they call in turn.
  visit_reached_functions(
      sources, [&] { return finder.called(); },
      [&](const FunctionDecl& f, const std::string&) { finder.function(*f.file, f.node, ""); });
  // `if mask is not None:` where the mask exists in one stage only is a
  // stage branch too.
  std::map<std::string, std::string> gated = finder.stage_gated_names();
  for (BranchCondition& b : out) {
    if (!b.true_stage.empty() || !b.test) continue;
    const auto* cmp = as<ast::Compare>(b.test);
    if (!cmp || cmp->ops.size != 1 || !is_none(cmp->comparators[0])) continue;
    const auto* name = as<ast::Name>(cmp->left);
    if (!name) continue;
    auto it = gated.find(std::string(name->id));
    if (it == gated.end()) continue;
    ast::cmpop op = cmp->ops[0];
    if (op != ast::cmpop::IsNot && op != ast::cmpop::Is) continue;
    b.true_stage = op == ast::cmpop::IsNot ? it->second : opposite_stage(it->second);
    if (std::find(b.kinds.begin(), b.kinds.end(), BranchKind::PrefillDecode) == b.kinds.end())
      b.kinds.insert(b.kinds.begin(), BranchKind::PrefillDecode);
  }
  std::stable_sort(out.begin(), out.end(), [](const BranchCondition& a, const BranchCondition& b) {
    if (a.where.file != b.where.file) return a.where.file < b.where.file;
    return a.where.line < b.where.line;
  });
  return out;
}

}  // namespace npufuse::model

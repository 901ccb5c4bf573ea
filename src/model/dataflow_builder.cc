// Builds the SSA dataflow of one function (see dataflow.h).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "model/ast_walk.h"
#include "model/dataflow.h"
#include "model/dispatch_table.h"
#include "model/forward_census.h"
#include "model/loss_helpers.h"
#include "model/op_names.h"

namespace npufuse::model {

namespace {

// Ops that only change dtype, or only shape/strides; matching looks through them.
bool is_cast(const std::string& op) { return op == "to"; }
bool is_view(const std::string& op) {
  static const std::set<std::string> views = {"view",   "reshape",   "transpose", "permute", "unsqueeze",  "squeeze",
                                              "flatten", "unflatten", "expand",    "expand_as", "contiguous", "view_as",
                                              "movedim", "t",         "split",     "chunk",   "unbind",     "narrow"};
  return views.count(op) > 0;
}

const std::set<std::string>& builtins() {
  static const std::set<std::string> names = {"len",   "int",  "float", "bool",  "isinstance", "range", "min",
                                              "max",   "sum",  "abs",   "tuple", "list",       "zip",   "enumerate",
                                              "getattr", "hasattr", "round", "print", "dict", "str", "type", "iter", "next",
                                              "reversed", "sorted", "any", "all", "slice", "super"};
  return names;
}

const char* compare_name(ast::cmpop op) {
  switch (op) {
    case ast::cmpop::Eq: return "eq";
    case ast::cmpop::NotEq: return "ne";
    case ast::cmpop::Lt: return "lt";
    case ast::cmpop::LtE: return "le";
    case ast::cmpop::Gt: return "gt";
    case ast::cmpop::GtE: return "ge";
    case ast::cmpop::Is: return "is";
    case ast::cmpop::IsNot: return "is_not";
    case ast::cmpop::In: return "in";
    case ast::cmpop::NotIn: return "not_in";
  }
  return "compare";
}

// One function a local may hold when it is called: a function of the
// analysed files, or an unresolved target (its text and why), bound under
// `guard` (the condition of the branch that bound it, "" when unconditional).
struct Callee {
  const FunctionDecl* fn = nullptr;
  std::string text;
  std::string why_unresolved;
  std::string guard;
  // A submodule held in a local (`expert = self.experts[i]`): the attribute
  // and "[]" when an element of a module list was picked.
  std::string submodule;
  std::string suffix;

  bool operator==(const Callee& o) const {
    return fn == o.fn && text == o.text && guard == o.guard && submodule == o.submodule && suffix == o.suffix;
  }
};
using CalleeEnv = std::map<std::string, std::vector<Callee>>;

std::string join_guard(const std::string& outer, const std::string& inner) {
  if (outer.empty()) return inner;
  if (inner.empty()) return outer;
  return outer + " and " + inner;
}

class Builder {
 public:
  Builder(const SourceSet& sources, const ModelFile& file, FunctionDataflow& g, const SubmoduleLookup* lookup,
          const ClassDecl* cls, int max_depth)
      : sources_(sources), file_(&file), g_(g), lookup_(lookup), cls_(cls), max_depth_(max_depth) {}

  void unroll_module_loops() { unroll_module_loops_ = true; }

  void function(const ast::FunctionDef& fn) {
    const ast::arguments* a = fn.args;
    auto param = [&](const ast::arg* p) {
      if (!p || p->arg == "self") return;
      int op = emit("input", OpClass::Input, {}, {std::string(p->arg)}, 1, &fn);
      bind(std::string(p->arg), g_.ops[static_cast<size_t>(op)].outputs[0]);
    };
    for (const ast::arg* p : a->posonlyargs) param(p);
    for (const ast::arg* p : a->args) param(p);
    param(a->vararg);
    for (const ast::arg* p : a->kwonlyargs) param(p);
    param(a->kwarg);
    stack_.push_back(&fn);
    statements(fn.body);
    stack_.pop_back();
    for (const auto& set : return_sets_) g_.returns.insert(g_.returns.end(), set.begin(), set.end());
  }

 private:
  int line_of(const ast::Node* n) { return n ? line_at(n->begin) : 0; }

  // The line holding byte `offset` of the current file. Ops come in source
  // order, mostly several to a line, so the last line found is tried first.
  int line_at(uint32_t offset) {
    if (line_file_ != file_ || offset < line_begin_ || offset >= line_end_) {
      const frontend::SourceFile& src = file_->parsed->source;
      line_file_ = file_;
      line_ = src.line_col(offset).line;
      line_begin_ = src.line_start(line_);
      line_end_ = line_ < src.line_count() ? src.line_start(line_ + 1) : UINT32_MAX;
    }
    return line_;
  }

  int new_value(const std::string& name, int producer) {
    DataflowValue v;
    v.id = static_cast<int>(g_.values.size());
    v.name = name;
    v.producer = producer;
    g_.values.push_back(v);
    return v.id;
  }

  // Emits an op with `n_out` fresh outputs; returns the op id.
  int emit(std::string name, OpClass cls, std::vector<int> inputs, std::vector<std::string> attrs, int n_out,
           const ast::Node* at, bool in_place = false) {
    DataflowOp op;
    op.id = static_cast<int>(g_.ops.size());
    op.name = std::move(name);
    op.cls = cls;
    op.inputs = std::move(inputs);
    op.attrs = std::move(attrs);
    op.in_place = in_place;
    op.line = line_of(at);
    op.end_line = at ? line_at(at->end > at->begin ? at->end - 1 : at->begin) : 0;
    op.file = file_;
    if (at) {
      op.begin = at->begin;
      op.end = at->end;
    }
    op.condition = condition_text();
    op.scope = self_path_;
    op.unrolled = unroll_copy_;
    const int id = op.id;
    g_.ops.push_back(std::move(op));
    for (int i = 0; i < n_out; ++i) {
      int v = new_value("", id);
      g_.ops.back().outputs.push_back(v);
    }
    return id;
  }
  int emit_value(std::string name, OpClass cls, std::vector<int> inputs, std::vector<std::string> attrs, const ast::Node* at,
                 bool in_place = false) {
    int op = emit(std::move(name), cls, std::move(inputs), std::move(attrs), 1, at, in_place);
    return g_.ops[static_cast<size_t>(op)].outputs[0];
  }

  // The enclosing conditions joined by " and ", every op's: rebuilt only
  // after they change.
  const std::string& condition_text() {
    if (condition_stale_) {
      condition_joined_.clear();
      for (const std::string& c : conditions_) {
        if (!condition_joined_.empty()) condition_joined_ += " and ";
        condition_joined_ += c;
      }
      condition_stale_ = false;
    }
    return condition_joined_;
  }
  void push_condition(std::string c) {
    conditions_.push_back(std::move(c));
    condition_stale_ = true;
  }
  void pop_conditions(size_t n = 1) {
    conditions_.resize(conditions_.size() - n);
    condition_stale_ = true;
  }

  // A value is named by the first name it gets in the shallowest function
  // that names it: the function being built, else the inlined callee
  // nearest to it (`z = self.shared_experts(x)` in the MoE block names the
  // shared expert's output z, not `y` inside the shared MLP's last linear):
  // the name a reader finds closest to where the chain is reported.
  void bind(const std::string& name, int value) {
    env_[name] = value;
    callees_.erase(name);
    std::string& current = g_.values[static_cast<size_t>(value)].name;
    size_t depth = stack_.size();
    auto named = named_at_depth_.find(value);
    if (current.empty() || named == named_at_depth_.end() || depth < named->second) {
      current = name;
      named_at_depth_[value] = depth;
    }
  }

  // An in-place write into a view (`cache.view(-1, h, d).index_copy_(...)`,
  // `flat = cache.view(...); flat[slots] = k`) changes the tensor it views:
  // later reads of that tensor's names see the written version.
  void rebind_view_bases(int written, int out) {
    for (int v = written;;) {
      const DataflowOp& producer = g_.producer_of(v);
      if (producer.cls != OpClass::View || producer.inputs.empty()) return;
      v = producer.inputs[0];
      std::vector<std::string> names;
      for (const auto& [name, value] : env_)
        if (value == v) names.push_back(name);
      for (const std::string& name : names) bind(name, out);
    }
  }

  // A callee's parameter bound to the caller's value: the value keeps the
  // caller's name (or none), not the callee's parameter name, so evidence
  // never calls the q projection `hidden_states` because an inlined norm
  // names its input so.
  void bind_argument(const std::string& name, int value) {
    env_[name] = value;
    callees_.erase(name);
  }

  int lookup(const ast::Name* n) {
    std::string id(n->id);
    auto it = env_.find(id);
    if (it != env_.end()) return it->second;
    if (id == "self" && cls_) {
      // `self` handed to a helper (eager_attention_forward(self, ...)): the
      // helper's `module.X` reads are this module's attributes.
      int v = emit_value(self_path_, OpClass::Attribute, {}, {}, n);
      self_values_[v] = self_path_;
      env_[id] = v;
      return v;
    }
    // A module-level or builtin name read for the first time.
    int v = emit_value("global", OpClass::Attribute, {}, {id}, n);
    env_[id] = v;
    return v;
  }

  // ---- statements -------------------------------------------------------

  // The statements after `if c: ... return` (no else) run only when c is
  // false: they carry `not (c)` like an else arm would (a norm's
  // `if hasattr(F, "rms_norm"): return F.rms_norm(...)` before the
  // spelled-out form), so the two forms are seen as alternatives.
  void statements(const Span<ast::stmt*>& body) {
    size_t pushed = 0;
    for (const ast::stmt* s : body) {
      statement(s);
      auto* i = ast::as<ast::If>(s);
      if (i && i->orelse.empty() && i->body.size > 0 && ast::as<ast::Return>(i->body[i->body.size - 1])) {
        push_condition("not (" + std::string(file_->text_of(i->test)) + ")");
        ++pushed;
      }
    }
    pop_conditions(pushed);
  }

  void statement(const ast::stmt* s) {
    if (auto* a = ast::as<ast::Assign>(s)) {
      int v = expr(a->value);
      for (const ast::expr* t : a->targets) {
        store(t, v, s);
        remember_callees(t, a->value);
      }
    } else if (auto* an = ast::as<ast::AnnAssign>(s)) {
      if (an->value) {
        store(an->target, expr(an->value), s);
        remember_callees(an->target, an->value);
      }
    } else if (auto* au = ast::as<ast::AugAssign>(s)) {
      int target = expr(au->target);
      int value = expr(au->value);
      int out = au->op == ast::operator_::Add ? joined_tuple(target, value, s) : -1;
      if (out < 0) out = emit_value(canonical_binop(au->op), OpClass::Compute, {target, value}, {}, s, true);
      store(au->target, out, s);
    } else if (auto* e = ast::as<ast::Expr>(s)) {
      // A bare literal statement is a docstring: no dataflow.
      if (!ast::as<ast::Constant>(e->value)) expr(e->value);
    } else if (auto* r = ast::as<ast::Return>(s)) {
      if (!r->value) return;
      std::vector<int> values;
      if (auto* t = ast::as<ast::Tuple>(r->value)) {
        for (const ast::expr* x : t->elts) values.push_back(expr(x));
      } else {
        values.push_back(expr(r->value));
      }
      return_sets_.push_back(values);
    } else if (auto* i = ast::as<ast::If>(s)) {
      if_statement(i);
    } else if (auto* f = ast::as<ast::For>(s)) {
      int iter = expr(f->iter);
      const ModuleLoop layers = module_loop(f);
      loop(std::string("for ") + std::string(file_->text_of(f->target)) + " in " + std::string(file_->text_of(f->iter)), s,
           [&] {
             // A loop over the class's own decoder layers runs the layer's
             // forward; unrolled, its body is walked twice, so the chain
             // from one layer's output into the next one's input is seen.
             for (int copy = 1; copy <= (layers ? 2 : 1); ++copy) {
               if (layers) unroll_copy_ = copy;
               int element = emit_value("iterate", OpClass::Structure, {iter}, {}, f);
               if (rows_of_nonzero(iter)) one_element_ids_.insert(element);
               store(f->target, element, f);
               if (layers) callees_[layers.name] = {Callee{nullptr, layers.name, "", "", layers.attribute, "[]"}};
               statements(f->body);
             }
             if (layers) unroll_copy_ = 0;
           });
    } else if (auto* w = ast::as<ast::While>(s)) {
      expr(w->test);
      loop("while " + std::string(file_->text_of(w->test)), s, [&] { statements(w->body); });
    } else if (auto* w = ast::as<ast::With>(s)) {
      for (const ast::withitem* item : w->items) {
        (void)item;
      }
      statements(w->body);
    } else if (auto* t = ast::as<ast::Try>(s)) {
      statements(t->body);
      statements(t->orelse);
      statements(t->finalbody);
    }
    // Pass, Raise, Assert, Delete, nested definitions: no dataflow.
  }

  // `isinstance(NAME, tuple)` (or `(tuple, list)`): the name tested, else "".
  static std::string tuple_test_name(const ast::expr* test) {
    auto* call = ast::as<ast::Call>(test);
    auto* callee = call ? ast::as<ast::Name>(call->func) : nullptr;
    if (!callee || callee->id != "isinstance" || call->args.size != 2 || call->keywords.size) return "";
    auto* name = ast::as<ast::Name>(call->args[0]);
    auto names_tuple = [](const ast::expr* e) {
      auto* n = ast::as<ast::Name>(e);
      return n && (n->id == "tuple" || n->id == "list");
    };
    bool tuple_type = names_tuple(call->args[1]);
    if (auto* types = ast::as<ast::Tuple>(call->args[1]))
      tuple_type = types->elts.size > 0 && std::all_of(types->elts.begin(), types->elts.end(), names_tuple);
    return name && tuple_type ? std::string(name->id) : "";
  }

  // A value a module returns one way or another (a submodule built as an MoE
  // block returning `(out, router_logits)` or as a dense MLP returning a
  // tensor, merged by a phi), tested with `isinstance(v, tuple)`: each arm
  // of the if sees only the values that take it, the tuples in the true arm
  // and the tensors (results of torch ops) in the false one. Empty when some
  // value could be either.
  struct TupleSplit {
    std::string name;
    std::vector<int> tuples, tensors;
  };
  std::optional<TupleSplit> split_by_tuple_test(const ast::If* i) const {
    std::string name = tuple_test_name(i->test);
    auto bound = env_.find(name);
    if (name.empty() || bound == env_.end()) return std::nullopt;
    std::vector<int> arms{bound->second};
    if (const DataflowOp& p = g_.producer_of(bound->second); p.name == "phi" && p.cls == OpClass::Structure) arms = p.inputs;
    TupleSplit split{name, {}, {}};
    for (int v : arms) {
      const DataflowOp& p = g_.producer_of(v);
      if (p.name == "tuple" && p.cls == OpClass::Structure) split.tuples.push_back(v);
      else if (p.cls == OpClass::Compute) split.tensors.push_back(v);
      else return std::nullopt;
    }
    return split;
  }

  // The truth of `if flag:` / `if not flag:` where `flag` is an inlined
  // function's parameter bound to a literal True or False (the call passes
  // `use_qk_l2norm_in_kernel=True`, or the default stands): only that arm runs
  // in this call. Unknown otherwise.
  std::optional<bool> literal_flag(const ast::expr* test) const {
    bool negate = false;
    if (const auto* u = ast::as<ast::UnaryOp>(test); u && u->op == ast::unaryop::Not) {
      negate = true;
      test = u->operand;
    }
    const auto* name = ast::as<ast::Name>(test);
    if (!name || stack_.empty()) return std::nullopt;
    auto it = env_.find(std::string(name->id));
    if (it == env_.end() || it->second < 0) return std::nullopt;
    const DataflowOp& p = g_.producer_of(it->second);
    if (p.cls != OpClass::Constant || p.attrs.size() != 1) return std::nullopt;
    if (p.attrs[0] != "True" && p.attrs[0] != "False") return std::nullopt;
    return (p.attrs[0] == "True") != negate;
  }

  void if_statement(const ast::If* i) {
    int test = expr(i->test);
    (void)test;
    std::string cond(file_->text_of(i->test));
    if (std::optional<bool> taken = literal_flag(i->test)) {
      push_condition(*taken ? cond : "not (" + cond + ")");
      statements(*taken ? i->body : i->orelse);
      pop_conditions();
      return;
    }
    std::string negated = "not (" + cond + ")";
    std::optional<TupleSplit> split = split_by_tuple_test(i);
    // One arm under its condition; with a split, the tested name bound to
    // the values that take it.
    auto arm = [&](const Span<ast::stmt*>& body, const std::string& condition, const std::vector<int>* values) {
      if (values) env_[split->name] = values->size() == 1 ? values->front() : emit_value("phi", OpClass::Structure, *values, {}, i);
      push_condition(condition);
      statements(body);
      pop_conditions();
    };
    // Every value takes one arm: only that arm runs.
    if (split && (split->tuples.empty() || split->tensors.empty())) {
      if (split->tensors.empty()) arm(i->body, cond, &split->tuples);
      else arm(i->orelse, negated, &split->tensors);
      return;
    }
    auto before = env_;
    CalleeEnv callees_before = callees_;
    arm(i->body, cond, split ? &split->tuples : nullptr);
    auto after_then = env_;
    CalleeEnv callees_then = callees_;
    env_ = before;
    callees_ = callees_before;
    arm(i->orelse, negated, split ? &split->tensors : nullptr);
    auto after_else = env_;
    merge(before, after_then, after_else, i);
    merge_callees(callees_then, callees_, cond, negated);
  }

  // A parameter its module's __init__ sets to None when a flag of the
  // constructor is off (`self.bias = nn.Parameter(...) if bias else None`;
  // `if bias: ... else: self.register_parameter("bias", None)`), in the
  // instance whose forward is inlined, built with that flag off
  // (`Linear(dim, inter)`, `bias` left at its default False).
  bool none_in_this_instance(const std::string& attr) const {
    if (!instance_ || !cls_) return false;
    // The constructor's own flags, from the instance's bound arguments.
    std::function<std::optional<bool>(std::string_view)> bound = [&](std::string_view name) -> std::optional<bool> {
      auto it = instance_->bindings.find(std::string(name));
      if (it == instance_->bindings.end() || !it->second.is_known()) return std::nullopt;
      const nlohmann::json& v = it->second.value;
      if (v.is_boolean()) return v.get<bool>();
      if (v.is_null()) return false;
      return std::nullopt;
    };
    return none_set_by_init(attr, *cls_, bound, 0);
  }

  // Whether the __init__ that `cls` runs sets `self.<attr>` to None, with the
  // flags its parameters hold given by `flag_of`. A subclass whose __init__
  // only hands its flag on (`super().__init__(in_f, out_f // world, bias)`)
  // is followed into the base's __init__ with the argument mapped.
  bool none_set_by_init(const std::string& attr, const ClassDecl& cls,
                        const std::function<std::optional<bool>(std::string_view)>& flag_of, int depth) const {
    if (depth > 4) return false;
    const ClassDecl* owner = nullptr;
    const ast::FunctionDef* init = find_method(sources_, cls, "__init__", &owner);
    if (!init) return false;
    auto flag = [&](const ast::expr* test) -> std::optional<bool> {
      auto* n = ast::as<ast::Name>(test);
      if (!n) return std::nullopt;
      return flag_of(n->id);
    };
    auto is_none = [](const ast::expr* e) {
      auto* k = ast::as<ast::Constant>(e);
      return k && k->value.kind == ast::ConstantKind::None;
    };
    auto sets_self_attr = [&](const ast::expr* target) {
      auto* t = ast::as<ast::Attribute>(target);
      auto* base = t ? ast::as<ast::Name>(t->value) : nullptr;
      return base && base->id == "self" && t->attr == attr;
    };
    // The branch sets the attribute to None (or registers it as None).
    auto sets_none = [&](const Span<ast::stmt*>& body) {
      for (const ast::stmt* st : body) {
        if (auto* as = ast::as<ast::Assign>(st))
          for (const ast::expr* t : as->targets)
            if (sets_self_attr(t) && is_none(as->value)) return true;
        if (auto* ex = ast::as<ast::Expr>(st))
          if (auto* c = ast::as<ast::Call>(ex->value))
            if (auto* f = ast::as<ast::Attribute>(c->func); f && f->attr == "register_parameter" && c->args.size == 2 &&
                                                             is_none(c->args[1]))
              if (auto* name = ast::as<ast::Constant>(c->args[0]);
                  name && name->value.kind == ast::ConstantKind::Str && ast::constant_string(name->value) == attr)
                return true;
      }
      return false;
    };
    for (const ast::stmt* st : init->body) {
      if (auto* as = ast::as<ast::Assign>(st)) {
        auto* pick = ast::as<ast::IfExp>(as->value);
        if (!pick || as->targets.size != 1 || !sets_self_attr(as->targets[0])) continue;
        std::optional<bool> on = flag(pick->test);
        if (on && ((!*on && is_none(pick->orelse)) || (*on && is_none(pick->body)))) return true;
      } else if (auto* i = ast::as<ast::If>(st)) {
        std::optional<bool> on = flag(i->test);
        if (on && sets_none(*on ? i->body : i->orelse)) return true;
      }
    }
    // super().__init__(...): the base's parameters take this call's arguments.
    for (const ast::stmt* st : init->body) {
      auto* ex = ast::as<ast::Expr>(st);
      auto* call = ex ? ast::as<ast::Call>(ex->value) : nullptr;
      auto* f = call ? ast::as<ast::Attribute>(call->func) : nullptr;
      auto* sup = f ? ast::as<ast::Call>(f->value) : nullptr;
      auto* sup_name = sup ? ast::as<ast::Name>(sup->func) : nullptr;
      if (!f || f->attr != "__init__" || !sup_name || sup_name->id != "super") continue;
      const ClassDecl* base = nullptr;
      for (const ast::expr* b : owner->node->bases)
        if (const ClassDecl* c = sources_.find_class(dotted_name(b)); c && c != owner) {
          base = c;
          break;
        }
      if (!base) return false;
      const ast::FunctionDef* base_init = find_method(sources_, *base, "__init__");
      if (!base_init) return false;
      std::map<std::string, const ast::expr*> passed;
      const auto& params = base_init->args->args;
      for (size_t k = 0; k < call->args.size && k + 1 < params.size; ++k)
        passed[std::string(params[k + 1]->arg)] = call->args[k];  // params[0] is self
      for (const ast::keyword* kw : call->keywords)
        if (kw->arg.size()) passed[std::string(kw->arg)] = kw->value;
      auto mapped = [&](std::string_view name) -> std::optional<bool> {
        auto it = passed.find(std::string(name));
        if (it == passed.end()) return std::nullopt;
        if (auto* n = ast::as<ast::Name>(it->second)) return flag_of(n->id);
        if (auto* k = ast::as<ast::Constant>(it->second)) {
          if (k->value.kind == ast::ConstantKind::None) return false;
          if (k->value.kind == ast::ConstantKind::True) return true;
          if (k->value.kind == ast::ConstantKind::False) return false;
        }
        return std::nullopt;
      };
      return none_set_by_init(attr, *base, mapped, depth + 1);
    }
    return false;
  }

  // `for layer in self.layers[...]` (or `enumerate(self.layers)`) in the
  // class's own forward, when unrolling is asked for and the list's element
  // is a local decoder layer whose forward can be inlined: the element's name in
  // the body and the list's attribute. Empty otherwise.
  struct ModuleLoop {
    std::string name, attribute;
    explicit operator bool() const { return !name.empty(); }
  };
  ModuleLoop module_loop(const ast::For* f) const {
    if (!unroll_module_loops_ || !lookup_ || !cls_ || stack_.size() != 1 || unroll_copy_ != 0) return {};
    const ast::expr* iter = f->iter;
    const ast::expr* target = f->target;
    if (auto* c = ast::as<ast::Call>(iter); c && c->args.size == 1 && c->keywords.size == 0) {
      auto* fn = ast::as<ast::Name>(c->func);
      auto* t = ast::as<ast::Tuple>(target);
      if (!fn || fn->id != "enumerate" || !t || t->elts.size != 2) return {};
      iter = c->args[0];
      target = t->elts[1];
    }
    if (auto* sub = ast::as<ast::Subscript>(iter); sub && ast::as<ast::Slice>(sub->slice)) iter = sub->value;
    auto* a = ast::as<ast::Attribute>(iter);
    auto* base = a ? ast::as<ast::Name>(a->value) : nullptr;
    auto* name = ast::as<ast::Name>(target);
    if (!base || base->id != "self" || !name) return {};
    const ModuleCtor* ctor = lookup_->find(*cls_, a->attr);
    if (!ctor || !ctor->local || !lookup_->builds_block(*ctor) || !find_method(sources_, *ctor->local, "forward", nullptr))
      return {};
    return {std::string(name->id), std::string(a->attr)};
  }

  // `outputs = (h,); outputs += (attn_weights,)`: two tuples joined are one
  // tuple of their elements. -1 when either side is no tuple built here.
  int joined_tuple(int left, int right, const ast::Node* at) {
    const DataflowOp& l = g_.producer_of(left);
    const DataflowOp& r = g_.producer_of(right);
    if (l.name != "tuple" || r.name != "tuple" || l.cls != OpClass::Structure || r.cls != OpClass::Structure) return -1;
    std::vector<int> parts = l.inputs;
    parts.insert(parts.end(), r.inputs.begin(), r.inputs.end());
    return emit_value("tuple", OpClass::Structure, parts, {}, at);
  }

  // `layer_outputs[0]` of a merge of tuples (a layer that appends to its
  // output tuple under `if output_attentions:`): the merge of the element
  // at that place, or the element itself where every arm holds the same.
  // -1 when the base is no such merge or the index no literal.
  int element_of_merged_tuples(int base, int index, const ast::Node* at) {
    const DataflowOp& merge = g_.producer_of(base);
    const DataflowOp& k = g_.producer_of(index);
    if (merge.name != "phi" || merge.cls != OpClass::Structure || k.cls != OpClass::Constant || k.attrs.empty()) return -1;
    char* end = nullptr;
    long at_index = std::strtol(k.attrs[0].c_str(), &end, 10);
    if (!end || *end != '\0' || at_index < 0) return -1;
    std::vector<int> elements;
    for (int in : merge.inputs) {
      const DataflowOp& t = g_.producer_of(in);
      if (t.name != "tuple" || t.cls != OpClass::Structure || static_cast<size_t>(at_index) >= t.inputs.size()) return -1;
      elements.push_back(t.inputs[static_cast<size_t>(at_index)]);
    }
    if (elements.empty()) return -1;
    if (std::all_of(elements.begin(), elements.end(), [&](int v) { return v == elements.front(); })) return elements.front();
    return emit_value("phi", OpClass::Structure, elements, {}, at);
  }

  // `x.nonzero()` of a 1-D x (no as_tuple): an [n, 1] tensor whose rows, the
  // elements a loop over it visits, each hold one index.
  bool rows_of_nonzero(int iter) const {
    const DataflowOp& p = g_.producer_of(iter);
    if (p.name != "nonzero" || p.cls != OpClass::Compute) return false;
    return std::none_of(p.attrs.begin(), p.attrs.end(), [](const std::string& a) { return a == "as_tuple="; });
  }

  // `t[i].squeeze(0)` where `i` holds one index as a tensor of shape [1]
  // (a row of `nonzero()`): the leading axis of 1 that indexing by a
  // tensor keeps is dropped again, so it is `t[i]` read with an integer.
  bool squeezes_one_element_index(const std::vector<int>& ins) const {
    if (ins.empty() || ins.size() > 2) return false;
    const DataflowOp& p = g_.producer_of(ins[0]);
    if (p.name != "getitem" || p.inputs.size() != 2 || !one_element_ids_.count(p.inputs[1])) return false;
    if (ins.size() == 1) return true;
    const DataflowOp& axis = g_.producer_of(ins[1]);
    return axis.cls == OpClass::Constant && !axis.attrs.empty() && axis.attrs[0] == "0";
  }

  template <class Body>
  void loop(const std::string& header, const ast::stmt* s, Body body) {
    auto before = env_;
    CalleeEnv callees_before = callees_;
    push_condition(header);
    body();
    pop_conditions();
    auto after = env_;
    merge(before, after, before, s);
    merge_callees(callees_, callees_before, header, "");
  }

  // ---- function-valued locals ------------------------------------------

  // `name = <expr>`: the functions <expr> may be, remembered for a later call of `name`.
  void remember_callees(const ast::expr* target, const ast::expr* value) {
    auto* n = ast::as<ast::Name>(target);
    if (!n) return;
    std::vector<Callee> alts = callees_of(value);
    if (alts.empty()) callees_.erase(std::string(n->id));
    else callees_[std::string(n->id)] = std::move(alts);
  }

  // `torch`, `nn.functional`, `torch.distributed`: a dotted chain rooted at
  // a module-level name (not `self`, not a local), so `X.f(...)` calls a
  // module's function rather than a method of a value.
  bool module_function(const ast::expr* receiver) const {
    const ast::expr* e = receiver;
    while (auto* a = ast::as<ast::Attribute>(e)) e = a->value;
    auto* root = ast::as<ast::Name>(e);
    if (!root || root->id == "self" || !module_level(std::string(root->id))) return false;
    // A local class or function of the analysed files is not a module; a
    // module-level object (`logger`) keeps its calls named as written.
    return !sources_.find_class(root->id) && !sources_.find_function(root->id);
  }

  // A name not bound by the function itself: a module-level one (a first
  // read caches it in env_ as a `global` op).
  bool module_level(const std::string& id) const {
    auto it = env_.find(id);
    if (it == env_.end()) return true;
    const DataflowOp& p = g_.producer_of(it->second);
    return p.name == "global" && p.cls == OpClass::Attribute && !p.attrs.empty() && p.attrs[0] == id;
  }

  std::vector<Callee> callees_of(const ast::expr* e) {
    if (auto* n = ast::as<ast::Name>(e)) {
      std::string id(n->id);
      if (auto it = callees_.find(id); it != callees_.end()) return it->second;
      if (!module_level(id)) return {};
      if (const FunctionDecl* f = sources_.find_function(id)) return {Callee{f, id, "", "", "", ""}};
      return {};
    }
    if (auto* a = ast::as<ast::Attribute>(e)) {
      auto* base = ast::as<ast::Name>(a->value);
      if (base && base->id == "self") return {submodule_callee(std::string(a->attr), "", e)};
      return {};
    }
    if (auto* s = ast::as<ast::Subscript>(e)) {
      if (auto* a = ast::as<ast::Attribute>(s->value)) {
        auto* base = ast::as<ast::Name>(a->value);
        if (base && base->id == "self") return {submodule_callee(std::string(a->attr), "[]", e)};
        return {};
      }
      auto* table = ast::as<ast::Name>(s->value);
      if (!table || !module_level(std::string(table->id))) return {};
      return {dispatch_callee(*s)};
    }
    if (auto* call = ast::as<ast::Call>(e)) return table_get_callees(*call);
    if (auto* i = ast::as<ast::IfExp>(e)) {
      std::string cond(file_->text_of(i->test));
      std::vector<Callee> out;
      for (Callee c : callees_of(i->body)) {
        c.guard = join_guard(cond, c.guard);
        out.push_back(std::move(c));
      }
      for (Callee c : callees_of(i->orelse)) {
        c.guard = join_guard("not (" + cond + ")", c.guard);
        out.push_back(std::move(c));
      }
      return out;
    }
    return {};
  }

  // `TABLE.get_interface(key, default)` / `TABLE.get(key, default)` (HF 5's
  // attention and experts dispatch): the default function where the key
  // picks it, and the table's other entries, outside the analysed files,
  // as an unresolved call under the opposite condition. A key the config
  // fixes keeps only the side it picks.
  std::vector<Callee> table_get_callees(const ast::Call& call) {
    std::optional<TableGet> get = table_get(call);
    if (!get || !module_level(std::string(get->table->id))) return {};
    bool interface = get->interface;
    std::vector<Callee> defaults = callees_of(get->fallback);
    if (defaults.empty()) return {};
    std::string key(file_->text_of(get->key));
    std::string table_name(get->table->id);
    std::string picks_default = interface ? key + " == \"eager\"" : key + " not in " + table_name;
    ConfigFieldReader config = [this](std::string_view k) { return lookup_ ? lookup_->config_field(k) : nullptr; };
    std::optional<std::string> known = static_string_key(sources_, *file_, get->key, config);
    if (known && interface && *known == "eager") return defaults;
    Callee other;
    other.text = std::string(file_->text_of(&call));
    other.why_unresolved = fmt::format("table {} is not defined by literals in the analysed files", table_name);
    if (known && interface) return {other};
    for (Callee& c : defaults) c.guard = join_guard(picks_default, c.guard);
    other.guard = "not (" + picks_default + ")";
    defaults.push_back(std::move(other));
    return defaults;
  }

  Callee submodule_callee(const std::string& attr, const std::string& suffix, const ast::expr* e) {
    Callee c;
    c.text = std::string(file_->text_of(e));
    c.submodule = attr;
    c.suffix = suffix;
    return c;
  }

  Callee dispatch_callee(const ast::Subscript& s) {
    ConfigFieldReader config = [this](std::string_view key) { return lookup_ ? lookup_->config_field(key) : nullptr; };
    DispatchTarget t = resolve_dispatch(sources_, *file_, s, config);
    Callee c;
    c.fn = t.function;
    c.text = t.function ? std::string(t.function->node->name) : std::string(file_->text_of(&s));
    c.why_unresolved = t.why_unresolved;
    return c;
  }

  // After a branch: a local bound to different functions on the two paths may
  // hold either, each under the condition of its path.
  void merge_callees(const CalleeEnv& a, const CalleeEnv& b, const std::string& cond_a, const std::string& cond_b) {
    CalleeEnv result;
    std::set<std::string> names;
    for (const auto& [k, v] : a) names.insert(k);
    for (const auto& [k, v] : b) names.insert(k);
    for (const std::string& n : names) {
      auto ia = a.find(n), ib = b.find(n);
      if (ia != a.end() && ib != b.end() && ia->second == ib->second) {
        result[n] = ia->second;
        continue;
      }
      std::vector<Callee> alts;
      if (ia != a.end())
        for (Callee c : ia->second) {
          c.guard = join_guard(cond_a, c.guard);  // the submodule it holds is kept too
          alts.push_back(std::move(c));
        }
      if (ib != b.end())
        for (Callee c : ib->second) {
          c.guard = join_guard(cond_b, c.guard);  // the submodule it holds is kept too
          alts.push_back(std::move(c));
        }
      result[n] = std::move(alts);
    }
    callees_ = std::move(result);
  }

  // A call through a function-valued local or a table lookup: each function
  // it may reach inlined under the condition that picks it, unresolved
  // targets kept as opaque calls; several results meet in a phi.
  int dispatch_call(const std::vector<Callee>& alts, int callee_value, const std::vector<int>& ins,
                    const std::vector<std::string>& labels, const ast::Call* c) {
    std::vector<int> results;
    for (const Callee& alt : alts) {
      if (!alt.guard.empty()) push_condition(alt.guard);
      if (alt.suffix == "[]") note_element_index(alt.submodule, callee_value);
      int v = alt.submodule.empty() ? -1 : submodule_call(alt.submodule, alt.suffix, ins, labels, c);
      if (v >= 0) {
        results.push_back(v);
      } else if (alt.fn && can_inline(alt.fn->node)) {
        results.push_back(inline_function(*alt.fn->node, *alt.fn->file, ins, labels, self_path_, cls_, c));
      } else {
        std::vector<int> args = ins;
        std::vector<std::string> arg_labels = labels;
        args.insert(args.begin(), callee_value);
        arg_labels.insert(arg_labels.begin(), "callee=");
        int op = emit("call:" + alt.text, OpClass::Call, args, arg_labels, 1, c);
        if (!alt.fn && alt.submodule.empty()) {
          g_.ops[static_cast<size_t>(op)].unresolved = true;
          g_.ops[static_cast<size_t>(op)].unresolved_reason = alt.why_unresolved;
        }
        results.push_back(g_.ops[static_cast<size_t>(op)].outputs[0]);
      }
      if (!alt.guard.empty()) pop_conditions();
    }
    if (results.size() == 1) return results[0];
    return emit_value("phi", OpClass::Structure, results, {}, c);
  }

  // Names bound differently on two paths get a phi after the join.
  void merge(const std::map<std::string, int>& before, const std::map<std::string, int>& a,
             const std::map<std::string, int>& b, const ast::Node* at) {
    std::map<std::string, int> result = before;
    std::set<std::string> names;
    for (const auto& [k, v] : a) names.insert(k);
    for (const auto& [k, v] : b) names.insert(k);
    for (const std::string& n : names) {
      auto ia = a.find(n), ib = b.find(n);
      if (ia != a.end() && ib != b.end() && ia->second == ib->second) {
        result[n] = ia->second;
        continue;
      }
      std::vector<int> ins;
      if (ia != a.end()) ins.push_back(ia->second);
      if (ib != b.end()) ins.push_back(ib->second);
      if (ins.size() == 1) {
        result[n] = ins[0];  // bound on one path only (used after the join only on that path)
        continue;
      }
      int v = emit_value("phi", OpClass::Structure, ins, {}, at);
      g_.values[static_cast<size_t>(v)].name = n;
      result[n] = v;
    }
    env_ = result;
  }

  void store(const ast::expr* target, int value, const ast::Node* at) {
    if (auto* n = ast::as<ast::Name>(target)) {
      bind(std::string(n->id), value);
    } else if (auto* t = ast::as<ast::Tuple>(target)) {
      unpack(t->elts, value, at);
    } else if (auto* l = ast::as<ast::List>(target)) {
      unpack(l->elts, value, at);
    } else if (auto* a = ast::as<ast::Attribute>(target)) {
      std::string owner = dotted_name(a->value);
      std::vector<int> ins = {value};
      if (owner != "self") ins.insert(ins.begin(), expr(a->value));
      emit("setattr", OpClass::Structure, ins, {owner == "self" ? "self." + std::string(a->attr) : std::string(a->attr)}, 0, at);
    } else if (auto* s = ast::as<ast::Subscript>(target)) {
      // x[idx] = v writes into x: a new version of x (a cache write, typically).
      int base = expr(s->value);
      int index = expr(s->slice);
      int out = emit_value("setitem", OpClass::Slice, {base, index, value}, {}, at, true);
      if (auto* n = ast::as<ast::Name>(s->value)) bind(std::string(n->id), out);
      rebind_view_bases(base, out);
    } else if (auto* st = ast::as<ast::Starred>(target)) {
      store(st->value, value, at);
    }
  }

  void unpack(const Span<ast::expr*>& elts, int value, const ast::Node* at) {
    int op = emit("unpack", OpClass::Structure, {value}, {}, static_cast<int>(elts.size), at);
    std::vector<int> outs = g_.ops[static_cast<size_t>(op)].outputs;
    for (size_t i = 0; i < elts.size; ++i) store(elts[i], outs[i], at);
  }

  // ---- expressions ------------------------------------------------------

  int expr(const ast::expr* e) {
    if (!e) return emit_value("const", OpClass::Constant, {}, {"None"}, nullptr);
    if (auto* n = ast::as<ast::Name>(e)) return lookup(n);
    if (ast::as<ast::Constant>(e)) return emit_value("const", OpClass::Constant, {}, {std::string(file_->text_of(e))}, e);
    if (auto* b = ast::as<ast::BinOp>(e)) {
      int l = expr(b->left), r = expr(b->right);
      if (b->op == ast::operator_::Add)
        if (int t = joined_tuple(l, r, e); t >= 0) return t;
      return emit_value(canonical_binop(b->op), OpClass::Compute, {l, r}, {}, e);
    }
    if (auto* u = ast::as<ast::UnaryOp>(e)) {
      int x = expr(u->operand);
      const char* name = u->op == ast::unaryop::USub ? "neg" : u->op == ast::unaryop::Not ? "not" : u->op == ast::unaryop::Invert ? "bitwise_not" : "pos";
      return emit_value(name, OpClass::Compute, {x}, {}, e);
    }
    if (auto* c = ast::as<ast::Compare>(e)) {
      std::vector<int> ins = {expr(c->left)};
      for (const ast::expr* x : c->comparators) ins.push_back(expr(x));
      return emit_value(compare_name(c->ops[0]), OpClass::Compute, ins, {}, e);
    }
    if (auto* b = ast::as<ast::BoolOp>(e)) {
      std::vector<int> ins;
      for (const ast::expr* x : b->values) ins.push_back(expr(x));
      return emit_value(b->op == ast::boolop::And ? "and" : "or", OpClass::Compute, ins, {}, e);
    }
    if (auto* i = ast::as<ast::IfExp>(e)) {
      int t = expr(i->test), a = expr(i->body), b = expr(i->orelse);
      return emit_value("select", OpClass::Structure, {t, a, b}, {}, e);
    }
    if (auto* c = ast::as<ast::Call>(e)) return call(c);
    if (auto* a = ast::as<ast::Attribute>(e)) return attribute(a);
    if (auto* s = ast::as<ast::Subscript>(e)) {
      int base = expr(s->value);
      if (int v = leading_new_axes(s, base); v >= 0) return v;
      if (int v = new_axes_only(s, base); v >= 0) return v;
      int index = expr(s->slice);
      if (int v = element_of_merged_tuples(base, index, e); v >= 0) return v;
      return emit_value("getitem", OpClass::Slice, {base, index}, {}, e);
    }
    if (auto* sl = ast::as<ast::Slice>(e)) {
      std::vector<int> ins;
      for (const ast::expr* x : {sl->lower, sl->upper, sl->step})
        if (x) ins.push_back(expr(x));
      return emit_value("slice", OpClass::Structure, ins, {std::string(file_->text_of(e))}, e);
    }
    if (auto* t = ast::as<ast::Tuple>(e)) return sequence("tuple", t->elts, e);
    if (auto* l = ast::as<ast::List>(e)) return sequence("list", l->elts, e);
    if (auto* st = ast::as<ast::Starred>(e)) return expr(st->value);
    if (auto* d = ast::as<ast::Dict>(e)) {
      std::vector<int> ins;
      for (const ast::expr* v : d->values) ins.push_back(expr(v));
      return emit_value("dict", OpClass::Structure, ins, {}, e);
    }
    if (auto* ne = ast::as<ast::NamedExpr>(e)) {
      int v = expr(ne->value);
      store(ne->target, v, e);
      return v;
    }
    // Comprehensions, lambdas, f-strings: one opaque op reading the names they use.
    std::vector<int> ins;
    std::set<std::string> seen;
    walk(e, [&](const ast::Node* n) {
      if (auto* name = ast::as<ast::Name>(n)) {
        auto it = env_.find(std::string(name->id));
        if (it != env_.end() && seen.insert(std::string(name->id)).second) ins.push_back(it->second);
      }
      return true;
    });
    return emit_value("opaque", OpClass::Call, ins, {std::string(ast::kind_name(e->kind))}, e);
  }

  // `x[None, idx]`: new leading axes, then one index into x's first axis. It
  // is `x[idx]` with the axes added after, written so that the index reads
  // like any other `x[idx]` (HF Mixtral's expert rows).
  // -1: not that form.
  int leading_new_axes(const ast::Subscript* s, int base) {
    auto* t = ast::as<ast::Tuple>(s->slice);
    if (!t || t->elts.size < 2) return -1;
    size_t nones = 0;
    while (nones < t->elts.size) {
      auto* k = ast::as<ast::Constant>(t->elts[nones]);
      if (!k || k->value.kind != ast::ConstantKind::None) break;
      ++nones;
    }
    if (nones == 0 || nones + 1 != t->elts.size) return -1;
    const ast::expr* index = t->elts[nones];
    // A slice or a literal (`x[None, :]`, a broadcast) keeps its own spelling.
    if (ast::as<ast::Slice>(index) || ast::as<ast::Constant>(index)) return -1;
    int v = emit_value("getitem", OpClass::Slice, {base, expr(index)}, {}, s);
    // The new axes only reshape the rows picked: a reshape, which a chain
    // reading the rows (`.reshape(-1, hidden)` after it) looks through.
    return emit_value("reshape", OpClass::View, {v}, {""}, s);
  }

  // `x[:, None, :]`, `x[..., None]`, `x[None]`: an index of whole-axis slices,
  // at most one Ellipsis and at least one None only adds axes, so it is
  // `x.unsqueeze(d)` (once per None), the spelling patterns and other models
  // use. A None before the Ellipsis (or with none) is counted from the front,
  // one after it from the back.
  // -1: not that form.
  int new_axes_only(const ast::Subscript* s, int base) {
    std::vector<const ast::expr*> elts;
    if (auto* t = ast::as<ast::Tuple>(s->slice)) {
      for (const ast::expr* x : t->elts) elts.push_back(x);
    } else {
      elts.push_back(s->slice);
    }
    auto is_none = [](const ast::expr* x) {
      auto* k = ast::as<ast::Constant>(x);
      return k && k->value.kind == ast::ConstantKind::None;
    };
    auto is_ellipsis = [](const ast::expr* x) {
      auto* k = ast::as<ast::Constant>(x);
      return k && k->value.kind == ast::ConstantKind::Ellipsis;
    };
    auto is_whole = [](const ast::expr* x) {
      auto* sl = ast::as<ast::Slice>(x);
      return sl && !sl->lower && !sl->upper && !sl->step;
    };
    size_t ellipsis = elts.size();
    std::vector<int> front, back;  // output axes of the Nones: from the front, and (as -k) from the back
    for (size_t i = 0; i < elts.size(); ++i) {
      if (is_ellipsis(elts[i])) {
        if (ellipsis != elts.size()) return -1;
        ellipsis = i;
      } else if (!is_none(elts[i]) && !is_whole(elts[i])) {
        return -1;
      }
    }
    for (size_t i = 0; i < elts.size(); ++i) {
      if (!is_none(elts[i])) continue;
      if (i < ellipsis) front.push_back(static_cast<int>(i));
      else back.push_back(-static_cast<int>(elts.size() - i));
    }
    if (front.empty() && back.empty()) return -1;
    int v = base;
    auto unsqueeze = [&](int dim) {
      // a negative axis as source spells it: `-k` is neg(k). One counted
      // from the back of an Ellipsis says nothing of the rank: its third attr
      // says so, and the matcher lets it meet the same axis counted from the
      // front (`x[..., None]` in a pattern, `x[:, :, None]` in a model).
      int d = emit_value("const", OpClass::Constant, {}, {std::to_string(dim < 0 ? -dim : dim)}, s);
      if (dim < 0) d = emit_value("neg", OpClass::Compute, {d}, {}, s);
      std::vector<std::string> attrs = {"", ""};
      if (dim < 0) attrs.push_back(kAfterEllipsis);
      v = emit_value("unsqueeze", OpClass::View, {v, d}, attrs, s);
    };
    for (int dim : front) unsqueeze(dim);                                 // left to right: each index is final
    for (auto it = back.rbegin(); it != back.rend(); ++it) unsqueeze(*it);  // right to left from the back
    return v;
  }

  int sequence(const char* name, const Span<ast::expr*>& elts, const ast::Node* at) {
    std::vector<int> ins;
    for (const ast::expr* x : elts) ins.push_back(expr(x));
    return emit_value(name, OpClass::Structure, ins, {}, at);
  }

  static bool returns_values_indices(const std::string& op) {
    static const std::set<std::string> ops = {"topk", "sort", "max", "min", "kthvalue", "mode", "median", "cummax", "cummin"};
    return ops.count(op) != 0;
  }

  int attribute(const ast::Attribute* a) {
    std::string attr(a->attr);
    if (auto* n = ast::as<ast::Name>(a->value); n && n->id == "self") {
      if (cls_ && lookup_ && lookup_->is_parameter(*cls_, attr)) {
        if (none_in_this_instance(attr)) return emit_value("const", OpClass::Constant, {}, {"None"}, a);
        return parameter_read(self_path_ + "." + attr, a);
      }
      return emit_value(self_path_ + "." + attr, OpClass::Attribute, {}, {}, a);
    }
    if (auto* n = ast::as<ast::Name>(a->value)) {
      auto bound = env_.find(std::string(n->id));
      if (bound != env_.end())
        if (auto alias = self_values_.find(bound->second); alias != self_values_.end())
          return emit_value(alias->second + "." + attr, OpClass::Attribute, {}, {}, a);
    }
    if (auto* n = ast::as<ast::Name>(a->value); n && !env_.count(std::string(n->id))) {
      // torch.float32, math.pi: a module attribute, not a value read.
      std::string q = sources_.qualified_name(*file_, a);
      return emit_value("global", OpClass::Attribute, {}, {q}, a);
    }
    int base = expr(a->value);
    // `scores.topk(k).indices` is `scores.topk(k)[1]`: the fields of the
    // (values, indices) tuples torch returns read as the positions they name,
    // so either spelling meets the other.
    if ((attr == "values" || attr == "indices") && returns_values_indices(g_.producer_of(base).name)) {
      int index = emit_value("const", OpClass::Constant, {}, {attr == "values" ? "0" : "1"}, a);
      return emit_value("getitem", OpClass::Slice, {base, index}, {}, a);
    }
    if (attr == "shape" || attr == "dtype" || attr == "device" || attr == "T" || attr == "mT")
      return emit_value(attr, attr == "T" || attr == "mT" ? OpClass::View : OpClass::Attribute, {base}, {}, a);
    return emit_value("getattr", OpClass::Attribute, {base}, {attr}, a);
  }

  // Arguments in order: positional, then keywords labelled "name=".
  void arguments(const ast::Call* c, std::vector<int>& ins, std::vector<std::string>& labels) {
    for (const ast::expr* x : c->args) {
      ins.push_back(expr(x));
      labels.push_back(ast::as<ast::Starred>(x) ? "*" : "");
    }
    for (const ast::keyword* kw : c->keywords) {
      ins.push_back(expr(kw->value));
      labels.push_back(ast::present(kw->arg) ? std::string(kw->arg) + "=" : "**");
    }
  }

  int call(const ast::Call* c) {
    const ast::expr* func = c->func;
    std::vector<int> ins;
    std::vector<std::string> labels;
    // self.X(...): a submodule (or an own method, when the class defines X).
    if (auto* a = ast::as<ast::Attribute>(func)) {
      auto* base = ast::as<ast::Name>(a->value);
      if (base && base->id == "self") {
        arguments(c, ins, labels);
        if (int v = submodule_call(std::string(a->attr), "", ins, labels, c); v >= 0) return v;
        return emit_value(self_path_ + "." + std::string(a->attr), OpClass::Module, ins, labels, c);
      }
      if (module_function(a->value)) {
        // A module function: torch.pow, F.silu, nn.functional.softmax, dist.all_reduce.
        std::string q = sources_.qualified_name(*file_, func);
        arguments(c, ins, labels);
        return function_op(q, ins, labels, c);
      }
      // Fn.apply(x) on a local torch.autograd.Function: its static forward, with
      // an opaque ctx first (save_for_backward and the like stay calls on it).
      const ModelFile* fwd_file = nullptr;
      if (const ast::FunctionDef* fwd = lookup_ ? autograd_forward(sources_, func, &fwd_file) : nullptr;
          fwd && can_inline(fwd)) {
        ins.push_back(emit_value("autograd_ctx", OpClass::Attribute, {}, {}, c));
        labels.push_back("");
        arguments(c, ins, labels);
        return inline_function(*fwd, *fwd_file, ins, labels, self_path_, cls_, c);
      }
      // A method on a value: x.pow(2), h.view(...).transpose(1, 2).
      ins.push_back(expr(a->value));
      labels.push_back("");
      arguments(c, ins, labels);
      if (a->attr == "square" || a->attr == "square_") implicit_exponent_two(ins, labels, c);
      if (a->attr == "squeeze" && squeezes_one_element_index(ins)) return ins[0];
      CanonicalOp op = canonical_call(a->attr);
      OpClass cls = is_cast(op.name) ? OpClass::Cast : is_view(op.name) ? OpClass::View : OpClass::Compute;
      if (op.name == "update" || op.name == "append" || op.name == "get_seq_length") cls = OpClass::Call;
      int out = emit_value(op.name, cls, ins, labels, c, op.in_place);
      // x.add_(y): later reads of x see the new version. A local list grown by
      // `outputs.append(y)` likewise: a later `torch.cat(outputs)` reads y.
      bool grows_list = op.name == "append" || op.name == "extend";
      if (op.in_place || grows_list)
        if (auto* n = ast::as<ast::Name>(a->value)) bind(std::string(n->id), out);
      if (op.in_place) rebind_view_bases(ins.front(), out);
      return out;
    }
    // self.experts[i](...), TABLE[key](...)
    if (auto* s = ast::as<ast::Subscript>(func)) {
      auto* a = ast::as<ast::Attribute>(s->value);
      auto* base = a ? ast::as<ast::Name>(a->value) : nullptr;
      if (base && base->id == "self") {
        int index = expr(s->slice);
        arguments(c, ins, labels);
        element_index_[self_path_ + "." + std::string(a->attr) + "[]"] = index;
        if (int v = submodule_call(std::string(a->attr), "[]", ins, labels, c); v >= 0) return v;
        ins.insert(ins.begin(), index);
        labels.insert(labels.begin(), "index=");
        return emit_value(self_path_ + "." + std::string(a->attr) + "[]", OpClass::Module, ins, labels, c);
      }
      auto* table = ast::as<ast::Name>(s->value);
      if (lookup_ && table && module_level(std::string(table->id))) {
        int callee = expr(func);
        arguments(c, ins, labels);
        return dispatch_call({dispatch_callee(*s)}, callee, ins, labels, c);
      }
      ins.push_back(expr(func));
      labels.push_back("callee=");
      arguments(c, ins, labels);
      return emit_value("call:" + std::string(file_->text_of(s->value)) + "[]", OpClass::Call, ins, labels, c);
    }
    if (auto* n = ast::as<ast::Name>(func)) {
      std::string id(n->id);
      if (!module_level(id)) {
        if (auto held = callees_.find(id); lookup_ && held != callees_.end() && !held->second.empty()) {
          std::vector<Callee> alts = held->second;
          int callee = env_[id];
          arguments(c, ins, labels);
          return dispatch_call(alts, callee, ins, labels, c);
        }
        // A local holding a function (attention_interface = ...): kept opaque, callee first.
        ins.push_back(env_[id]);
        labels.push_back("callee=");
        arguments(c, ins, labels);
        return emit_value("call:" + id, OpClass::Call, ins, labels, c);
      }
      // HF's apply_chunking_to_forward(self.ff_chunk, chunk_size, seq_dim, *tensors)
      // runs the method over sequence chunks and concatenates: the same values
      // as calling it on the whole tensors, which is what the graph shows.
      if (id == "apply_chunking_to_forward" && lookup_ && c->args.size >= 4 && !sources_.find_function(id)) {
        auto* method = ast::as<ast::Attribute>(c->args[0]);
        auto* base = method ? ast::as<ast::Name>(method->value) : nullptr;
        if (base && base->id == "self") {
          std::vector<int> chunk_ins;
          std::vector<std::string> chunk_labels;
          for (size_t k = 3; k < c->args.size; ++k) {
            chunk_ins.push_back(expr(c->args[k]));
            chunk_labels.push_back("");
          }
          if (int v = submodule_call(std::string(method->attr), "", chunk_ins, chunk_labels, c); v >= 0) return v;
        }
      }
      arguments(c, ins, labels);
      if (const FunctionDecl* helper = sources_.find_function(id)) {
        if (lookup_ && can_inline(helper->node) && !training_only(id)) return inline_function(*helper->node, *helper->file, ins, labels, self_path_, cls_, c);
        return emit_value("call:" + id, OpClass::Call, ins, labels, c);
      }
      if (sources_.find_class(id)) return emit_value("new:" + id, OpClass::Call, ins, labels, c);
      if (builtins().count(id)) return emit_value(id, OpClass::Compute, ins, labels, c);
      return function_op(sources_.qualified_name(*file_, func), ins, labels, c);
    }
    // A torch.nn layer built and called in one expression (`nn.Softmax(dim=-1)(x)`,
    // CodeGen): the functional op on the call's arguments with the constructor's, where
    // the layer's name is a spelling of one (`Softmax` is `softmax`).
    if (auto* ctor = ast::as<ast::Call>(func)) {
      std::string qualified = sources_.qualified_name(*file_, ctor->func);
      if (qualified.rfind("torch.nn.", 0) == 0 && qualified.rfind("torch.nn.functional.", 0) != 0) {
        CanonicalOp op = canonical_call(qualified);
        std::string layer = qualified.substr(qualified.rfind('.') + 1);
        if (op.name != layer && !op.name.empty() && std::islower(static_cast<unsigned char>(op.name[0]))) {
          arguments(c, ins, labels);
          arguments(ctor, ins, labels);
          return function_op(qualified, ins, labels, c);
        }
      }
    }
    ins.push_back(expr(func));
    labels.push_back("callee=");
    arguments(c, ins, labels);
    return emit_value("call:?", OpClass::Call, ins, labels, c);
  }

  // `expert = self.experts[i]; expert(x)`: the index the held element was picked by.
  void note_element_index(const std::string& attr, int held) {
    if (held < 0) return;
    const DataflowOp& p = g_.producer_of(held);
    if (p.name == "getitem" && p.inputs.size() == 2) element_index_[self_path_ + "." + attr + "[]"] = p.inputs[1];
  }

  // A parameter read. Inside the forward of a module-list element picked by
  // an index (`self.experts[i](x)`), the element's weight is the i-th slice of
  // the experts' weights stacked: it is written `getitem(<path>, i)`, the form
  // a stacked-weight chain (`w_gate[e]`) is written in, so both spellings of
  // an expert loop are one dataflow.
  int parameter_read(const std::string& path, const ast::Node* at) {
    int v = emit_value(path, OpClass::Attribute, {}, {}, at);
    size_t cut = path.rfind("[]");
    if (cut == std::string::npos) return v;
    auto it = element_index_.find(path.substr(0, cut + 2));
    if (it == element_index_.end()) return v;
    return emit_value("getitem", OpClass::Slice, {v, it->second}, {}, at);
  }

  // An auxiliary-loss helper stays one opaque call: an inference run never
  // executes it, so its ops are no chain of the forward (loss_helpers.h).
  bool training_only(const std::string& helper) { return sources_.training_only().count(helper) > 0; }

  bool can_inline(const ast::FunctionDef* fn) const {
    return lookup_ && static_cast<int>(stack_.size()) <= max_depth_ &&
           std::find(stack_.begin(), stack_.end(), fn) == stack_.end();
  }

  // self.X(...) with inlining on: an own method or a local submodule's forward
  // is inlined; a known layer becomes its canonical op. -1: keep the call opaque.
  int submodule_call(const std::string& attr, const std::string& suffix, const std::vector<int>& ins,
                     const std::vector<std::string>& labels, const ast::Call* c) {
    if (!lookup_ || !cls_) return -1;
    const ClassDecl* owner = nullptr;
    if (suffix.empty()) {
      if (const ast::FunctionDef* m = find_method(sources_, *cls_, attr, &owner); m && can_inline(m))
        return inline_function(*m, *owner->file, ins, labels, self_path_, cls_, c);
    }
    const ModuleCtor* ctor = lookup_->find(*cls_, attr);
    if (!ctor) {
      // self.act_fn = ACT2FN[config.hidden_act]: the activation it names.
      std::string op = suffix.empty() ? lookup_->callable_op(*cls_, attr) : std::string();
      if (op.empty()) return -1;
      // HF's tanh-approximated GELUs (gelu_pytorch_tanh is F.gelu(x, approximate="tanh");
      // gelu_new and gelu_fast spell the same tanh formula out) are that call.
      if (op == "gelu_pytorch_tanh" || op == "gelu_new" || op == "gelu_fast") {
        std::vector<int> tanh_ins = ins;
        std::vector<std::string> tanh_labels = labels;
        tanh_ins.push_back(emit_value("const", OpClass::Constant, {}, {"\"tanh\""}, c));
        tanh_labels.push_back("approximate=");
        return emit_value("gelu", OpClass::Compute, tanh_ins, tanh_labels, c);
      }
      return emit_value(op, OpClass::Compute, ins, labels, c);
    }
    std::string path = self_path_ + "." + attr + suffix;
    // Built one of several ways (a dense MLP in the first layers, an MoE in
    // the rest): in an unrolled layer loop, each way's forward under its
    // condition, merged, so a chain from the MoE into the next layer is
    // there. (The inventory analyses each way in a forward of its own.)
    if (unroll_module_loops_ && ctor->local && suffix.empty()) {
      std::vector<SubmoduleLookup::Alternative> ways = lookup_->alternatives(*cls_, attr);
      std::vector<int> results;
      for (const SubmoduleLookup::Alternative& way : ways) {
        push_condition(way.condition);
        int v = local_forward(*way.ctor, ins, labels, path, c);
        pop_conditions();
        if (v < 0) {
          results.clear();
          break;
        }
        results.push_back(v);
      }
      if (results.size() > 1) return emit_value("phi", OpClass::Structure, results, {}, c);
    }
    if (ctor->local) return local_forward(*ctor, ins, labels, path, c);
    // A known layer: its computation under its canonical name, reading its weight.
    static const std::map<std::string, std::string> layers = {
        {"Linear", "linear"},       {"Embedding", "embedding"}, {"LayerNorm", "layer_norm"}, {"RMSNorm", "rms_norm"},
        {"SiLU", "silu"},           {"GELU", "gelu"},           {"ReLU", "relu"},            {"Dropout", "dropout"},
        {"Tanh", "tanh"},           {"Sigmoid", "sigmoid"},     {"Softmax", "softmax"},
        // torch.nn.Conv1d: a convolution over the sequence (a linear-attention
        // or state-space mixer's depthwise causal conv1d), as F.conv1d.
        {"Conv1d", "conv1d"},
        // HF's Conv1D (GPT-2): a projection whose weight is stored [in, out]
        // and which always has a bias. Its own op name, so the sub-chain
        // finder sees a projection while rules written for F.linear's
        // [out, in] weight do not bind it.
        {"Conv1D", "conv1d_linear"}};
    std::string last = ctor->qualified.substr(ctor->qualified.rfind('.') + 1);
    auto it = layers.find(last);
    if (it == layers.end()) return -1;
    std::vector<int> args = ins;
    std::vector<std::string> arg_labels = labels;
    bool weighted = it->second == "linear" || it->second == "conv1d_linear" || it->second == "conv1d" ||
                    it->second == "embedding" || it->second == "layer_norm" || it->second == "rms_norm";
    if (weighted) {
      args.push_back(parameter_read(path + ".weight", c));
      arg_labels.push_back("weight=");
    }
    if ((it->second == "linear" && linear_has_bias(ctor->call)) || it->second == "conv1d_linear") {
      args.push_back(parameter_read(path + ".bias", c));
      arg_labels.push_back("bias=");
    }
    // nn.Softmax(dim=-1): the axis its constructor fixed, as F.softmax's dim.
    if (it->second == "softmax" && ctor->call && cls_ && cls_->file == file_) {
      const ast::expr* dim = ctor->call->args.empty() ? nullptr : ctor->call->args[0];
      for (const ast::keyword* kw : ctor->call->keywords)
        if (ast::present(kw->arg) && std::string_view(kw->arg) == "dim") dim = kw->value;
      if (!dim) return -1;
      args.push_back(expr(dim));
      arg_labels.push_back("dim=");
    }
    return emit_value(it->second, OpClass::Compute, args, arg_labels, c);
  }

  // The forward of a local module class built by `ctor`, inlined with its
  // attributes read under `path`; -1 when it cannot be inlined.
  int local_forward(const ModuleCtor& ctor, const std::vector<int>& ins, const std::vector<std::string>& labels,
                    const std::string& path, const ast::Call* c) {
    const ClassDecl* owner = nullptr;
    const ast::FunctionDef* fwd = find_method(sources_, *ctor.local, "forward", &owner);
    if (!fwd || !can_inline(fwd)) return -1;
    const ModuleCtor* saved_instance = instance_;
    instance_ = &ctor;
    int v = inline_function(*fwd, *owner->file, ins, labels, path, ctor.local, c);
    instance_ = saved_instance;
    return v;
  }

  // Whether an nn.Linear built by `ctor` adds a bias: torch's default (no
  // `bias` argument) or a literal True. A setting read from the config
  // (`bias=config.mlp_bias`) is left out, as are bias-free layers.
  static bool linear_has_bias(const ast::Call* ctor) {
    if (!ctor) return false;
    const ast::expr* bias = ctor->args.size > 2 ? ctor->args[2] : nullptr;
    for (const ast::keyword* kw : ctor->keywords)
      if (ast::present(kw->arg) && kw->arg == "bias") bias = kw->value;
    if (!bias) return true;
    const auto* literal = ast::as<ast::Constant>(bias);
    return literal && literal->value.kind == ast::ConstantKind::True;
  }

  // Splices `fn`'s dataflow in place of a call: parameters bound to the
  // call's arguments (defaults evaluated in the callee), result = what it returns.
  int inline_function(const ast::FunctionDef& fn, const ModelFile& file, const std::vector<int>& ins,
                      const std::vector<std::string>& labels, const std::string& self_path, const ClassDecl* cls,
                      const ast::Call* c) {
    auto saved_env = env_;
    CalleeEnv saved_callees = std::move(callees_);
    callees_.clear();
    auto saved_returns = std::move(return_sets_);
    const ModelFile* saved_file = file_;
    std::string saved_path = self_path_;
    const ClassDecl* saved_cls = cls_;
    env_.clear();
    return_sets_.clear();
    file_ = &file;
    self_path_ = self_path;
    cls_ = cls;
    stack_.push_back(&fn);

    const ast::arguments* a = fn.args;
    std::vector<const ast::arg*> positional;
    for (const ast::arg* p : a->posonlyargs) positional.push_back(p);
    for (const ast::arg* p : a->args) positional.push_back(p);
    // A method's `self`, or a classmethod's `cls` (`self._merge_heads(x, n, d)` on a
    // @classmethod binds x to its second parameter), is not among the arguments.
    bool classmethod = std::any_of(fn.decorator_list.begin(), fn.decorator_list.end(), [](const ast::expr* d) {
      auto* n = ast::as<ast::Name>(d);
      return n && n->id == "classmethod";
    });
    size_t first = (!positional.empty() && (positional[0]->arg == "self" || classmethod)) ? 1 : 0;
    size_t pi = first;
    std::map<std::string, int> given;
    std::set<std::string> named;
    for (const ast::arg* p : positional) named.insert(std::string(p->arg));
    for (const ast::arg* p : a->kwonlyargs) named.insert(std::string(p->arg));
    // Arguments no named parameter takes go to *args / **kwargs.
    std::vector<int> extra_positional, extra_keyword;
    std::vector<std::string> extra_keyword_labels;
    for (size_t i = 0; i < ins.size(); ++i) {
      const std::string& label = i < labels.size() ? labels[i] : "";
      if (label.empty()) {
        if (pi < positional.size()) given[std::string(positional[pi++]->arg)] = ins[i];
        else extra_positional.push_back(ins[i]);
      } else if (label.back() == '=' && named.count(label.substr(0, label.size() - 1))) {
        given[label.substr(0, label.size() - 1)] = ins[i];
      } else if (label == "*") {
        extra_positional.push_back(ins[i]);
      } else {
        extra_keyword.push_back(ins[i]);
        extra_keyword_labels.push_back(label);
      }
    }
    if (a->vararg) bind(std::string(a->vararg->arg), emit_value("tuple", OpClass::Structure, extra_positional, {}, c));
    if (a->kwarg)
      bind(std::string(a->kwarg->arg), emit_value("dict", OpClass::Structure, extra_keyword, extra_keyword_labels, c));
    size_t first_default = positional.size() - a->defaults.size;
    for (size_t i = first; i < positional.size(); ++i) {
      std::string name(positional[i]->arg);
      if (auto it = given.find(name); it != given.end()) bind_argument(name, it->second);
      else if (i >= first_default) bind(name, expr(a->defaults[i - first_default]));
    }
    for (size_t i = 0; i < a->kwonlyargs.size; ++i) {
      std::string name(a->kwonlyargs[i]->arg);
      if (auto it = given.find(name); it != given.end()) bind_argument(name, it->second);
      else if (i < a->kw_defaults.size && a->kw_defaults[i]) bind(name, expr(a->kw_defaults[i]));
    }
    statements(fn.body);

    int result;
    std::vector<int> per_return;
    for (const auto& set : return_sets_) {
      if (set.size() == 1) per_return.push_back(set[0]);
      else per_return.push_back(emit_value("tuple", OpClass::Structure, set, {}, c));
    }
    if (per_return.empty()) result = emit_value("const", OpClass::Constant, {}, {"None"}, c);
    else if (per_return.size() == 1) result = per_return[0];
    else result = emit_value("phi", OpClass::Structure, per_return, {}, c);

    stack_.pop_back();
    env_ = std::move(saved_env);
    callees_ = std::move(saved_callees);
    return_sets_ = std::move(saved_returns);
    file_ = saved_file;
    self_path_ = saved_path;
    cls_ = saved_cls;
    return result;
  }

  // `square` is canonically `pow`: its exponent 2 is made explicit so that
  // x.square(), torch.square(x), x.pow(2) and x ** 2 are one dataflow.
  void implicit_exponent_two(std::vector<int>& ins, std::vector<std::string>& labels, const ast::Call* c) {
    ins.push_back(emit_value("const", OpClass::Constant, {}, {"2"}, c));
    labels.push_back("");
  }

  int function_op(const std::string& qualified, std::vector<int> ins, std::vector<std::string> labels, const ast::Call* c) {
    std::string head = qualified.substr(0, qualified.find('.'));
    if (head == "torch" || head == "math") {
      if (qualified == "torch.square") implicit_exponent_two(ins, labels, c);
      CanonicalOp op = canonical_call(qualified);
      OpClass cls = is_cast(op.name) ? OpClass::Cast : is_view(op.name) ? OpClass::View : OpClass::Compute;
      int out = emit_value(op.name, cls, std::move(ins), std::move(labels), c, op.in_place);
      return out;
    }
    return emit_value("call:" + qualified, OpClass::Call, std::move(ins), std::move(labels), c);
  }

  const SourceSet& sources_;
  const ModelFile* file_;
  FunctionDataflow& g_;
  const SubmoduleLookup* lookup_;  // null: no inlining
  const ClassDecl* cls_;           // the class whose `self` the current code sees
  int max_depth_;
  bool unroll_module_loops_ = false;
  int unroll_copy_ = 0;  // the copy of an unrolled module-list loop body being walked (1, 2), or 0
  std::string self_path_ = "self";
  std::vector<const ast::FunctionDef*> stack_;
  std::map<int, size_t> named_at_depth_;  // value -> the inlining depth its name was given at
  std::vector<std::vector<int>> return_sets_;
  std::map<std::string, int> env_;
  CalleeEnv callees_;                    // locals that hold functions
  std::map<int, std::string> self_values_;  // values that are a module (`self` passed on), with its path
  std::map<std::string, int> element_index_;  // "self.experts[]" -> the value its element was picked by
  std::set<int> one_element_ids_;              // loop elements that are one index held in a [1] tensor
  const ModuleCtor* instance_ = nullptr;       // the module instance whose forward is being inlined
  std::vector<std::string> conditions_;  // changed through push_condition / pop_conditions
  std::string condition_joined_;
  bool condition_stale_ = false;
  // line_at's last answer: the line and its byte range in `line_file_`.
  const ModelFile* line_file_ = nullptr;
  int line_ = 0;
  uint32_t line_begin_ = 0, line_end_ = 0;
};

}  // namespace

FunctionDataflow build_dataflow(const SourceSet& sources, const ModelFile& file, const ast::FunctionDef& fn) {
  FunctionDataflow g;
  g.function = std::string(fn.name);
  g.file = &file;
  Builder b(sources, file, g, nullptr, nullptr, 0);
  b.function(fn);
  return g;
}

FunctionDataflow build_inlined_forward(const SourceSet& sources, const ClassDecl& cls, const SubmoduleLookup& lookup,
                                       int max_depth, bool unroll_module_loops) {
  FunctionDataflow g;
  const ClassDecl* owner = nullptr;
  const ast::FunctionDef* fwd = find_method(sources, cls, "forward", &owner);
  g.function = std::string(cls.node->name) + ".forward";
  if (!fwd) return g;
  g.file = owner->file;
  Builder b(sources, *owner->file, g, &lookup, &cls, max_depth);
  if (unroll_module_loops) b.unroll_module_loops();
  b.function(*fwd);
  return g;
}

}  // namespace npufuse::model

#include "model/init_attributes.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "model/ast_walk.h"
#include "model/dispatch_table.h"
#include "model/forward_census.h"

namespace npufuse::model {

namespace {

constexpr int kMaxBaseDepth = 8;

bool is_self_attr(const ast::expr* e, std::string* name) {
  auto* a = ast::as<ast::Attribute>(e);
  if (!a) return false;
  auto* n = ast::as<ast::Name>(a->value);
  if (!n || n->id != "self") return false;
  if (name) *name = std::string(a->attr);
  return true;
}

const ast::expr* keyword_arg(const ast::Call* c, std::string_view name) {
  for (const ast::keyword* kw : c->keywords)
    if (ast::present(kw->arg) && kw->arg == name) return kw->value;
  return nullptr;
}

// Positional argument `i`, or the keyword with one of `names`.
const ast::expr* argument(const ast::Call* c, size_t i, std::initializer_list<std::string_view> names) {
  if (i < c->args.size && !ast::as<ast::Starred>(c->args[i])) return c->args[i];
  for (std::string_view n : names)
    if (const ast::expr* e = keyword_arg(c, n)) return e;
  return nullptr;
}

std::string last_component(const std::string& q) {
  size_t dot = q.rfind('.');
  return dot == std::string::npos ? q : q.substr(dot + 1);
}

// The annotation's class name (`config: LlamaConfig`, `Optional[Cfg]` -> Cfg).
std::string annotation_class(const ast::expr* a) {
  if (!a) return {};
  if (auto* s = ast::as<ast::Subscript>(a)) return annotation_class(s->slice);
  if (auto* c = ast::as<ast::Constant>(a); c && c->value.kind == ast::ConstantKind::Str) return ast::constant_string(c->value);
  return last_component(dotted_name(a));
}

class InitDescriber {
 public:
  InitDescriber(const SourceSet& sources, Evaluator& ev, ClassInstance& out, const ClassDecl& owner, int base_depth)
      : sources_(sources), ev_(ev), out_(out), owner_(owner), base_depth_(base_depth) {}

  void run(const ast::FunctionDef* init, const ModelFile& file) {
    file_ = &file;
    collect_definitions(init->body);
    statements(init->body, "", std::nullopt);
  }

 private:
  // First pass: every `self.X = v` and local `x = v`, so later expressions
  // can use them whatever the statement order of the conditions.
  void collect_definitions(const Span<ast::stmt*>& body) {
    for (const ast::stmt* s : body) {
      if (auto* a = ast::as<ast::Assign>(s)) {
        for (const ast::expr* t : a->targets) define(t, a->value);
      } else if (auto* an = ast::as<ast::AnnAssign>(s); an && an->value) {
        define(an->target, an->value);
      } else if (auto* i = ast::as<ast::If>(s)) {
        collect_definitions(i->body);
        collect_definitions(i->orelse);
      } else if (auto* f = ast::as<ast::For>(s)) {
        // experts = []; for e in range(n): experts.append(Expert(...)):
        // the element a later nn.ModuleList(experts) holds.
        for (const ast::stmt* b : f->body) {
          // layer_class = TYPES[config.layers_block_type[i]]: the class the
          // loop's appended elements are built from.
          if (auto* a = ast::as<ast::Assign>(b); a && a->targets.size == 1)
            if (auto* n = ast::as<ast::Name>(a->targets[0])) local_values_.try_emplace(std::string(n->id), a->value);
          auto* e = ast::as<ast::Expr>(b);
          auto* c = e ? ast::as<ast::Call>(e->value) : nullptr;
          auto* fa = c ? ast::as<ast::Attribute>(c->func) : nullptr;
          auto* list = fa ? ast::as<ast::Name>(fa->value) : nullptr;
          if (list && fa->attr == "append" && !c->args.empty()) appended_.try_emplace(std::string(list->id), AppendLoop{f, c->args[0]});
        }
      }
    }
  }

  void define(const ast::expr* target, const ast::expr* value) {
    std::string name;
    if (is_self_attr(target, &name)) {
      out_.scope.self_attrs.try_emplace(name, value);
    } else if (auto* n = ast::as<ast::Name>(target)) {
      if (!out_.scope.bound.count(n->id)) out_.scope.locals.try_emplace(std::string(n->id), value);
    } else if (auto* t = ast::as<ast::Tuple>(target)) {
      if (auto* v = ast::as<ast::Tuple>(value); v && v->elts.size == t->elts.size) {
        for (size_t i = 0; i < t->elts.size; ++i) define(t->elts[i], v->elts[i]);
      }
    }
  }

  // `if cfg.x: self.t = a` / `else: self.t = b`: where the config decides
  // the arm, the arm it takes defines self.t, not the first one written
  // (collect_definitions). A value reading self.t itself keeps the earlier one.
  void taken_definition(const ast::expr* target, const ast::expr* value) {
    std::string name;
    if (!is_self_attr(target, &name)) return;
    bool reads_itself = false;
    walk(value, [&](const ast::Node* x) {
      std::string read;
      if (auto* a = ast::as<ast::Attribute>(x); a && is_self_attr(a, &read) && read == name) reads_itself = true;
      return !reads_itself;
    });
    if (reads_itself) return;
    out_.scope.self_attrs[name] = value;
    out_.scope.cache.erase("self:" + name);
  }

  void statements(const Span<ast::stmt*>& body, const std::string& condition, std::optional<bool> active) {
    for (const ast::stmt* s : body) statement(s, condition, active);
  }

  static std::optional<bool> both(std::optional<bool> outer, std::optional<bool> inner) {
    if (outer && !*outer) return false;
    if (inner && !*inner) return false;
    if (outer && inner) return true;
    if (!outer && !inner) return std::nullopt;
    return outer ? inner : outer;
  }

  void statement(const ast::stmt* s, const std::string& condition, std::optional<bool> active) {
    if (auto* i = ast::as<ast::If>(s)) {
      std::string test(file_->text_of(i->test));
      std::optional<bool> t = ev_.truth(i->test, out_.scope);
      auto join = [&](const std::string& c) { return condition.empty() ? c : condition + " and " + c; };
      // Statements under no condition always run: an arm the config takes
      // there is active, not undecided.
      std::optional<bool> outer = condition.empty() ? std::optional<bool>(true) : active;
      statements(i->body, join(test), both(outer, t));
      if (!i->orelse.empty()) {
        std::optional<bool> nt = t ? std::optional<bool>(!*t) : std::nullopt;
        statements(i->orelse, join("not (" + test + ")"), both(outer, nt));
      }
      return;
    }
    if (auto* a = ast::as<ast::Assign>(s)) {
      if (active && *active)
        for (const ast::expr* t : a->targets) taken_definition(t, a->value);
      for (const ast::expr* t : a->targets) assignment(t, a->value, s, condition, active);
      return;
    }
    if (auto* an = ast::as<ast::AnnAssign>(s); an && an->value) {
      assignment(an->target, an->value, s, condition, active);
      return;
    }
    if (auto* e = ast::as<ast::Expr>(s)) {
      if (auto* c = ast::as<ast::Call>(e->value)) call_statement(c, s, condition, active);
      return;
    }
    if (auto* f = ast::as<ast::For>(s)) {
      loop(f, condition, active);
      return;
    }
  }

  // self.register_buffer(...), self.register_parameter(...), super().__init__(...),
  // self.layers.append(...).
  void call_statement(const ast::Call* c, const ast::stmt* s, const std::string& condition, std::optional<bool> active) {
    auto* fa = ast::as<ast::Attribute>(c->func);
    if (!fa) return;
    std::string method(fa->attr);
    if (is_self_name(fa->value) && (method == "register_buffer" || method == "register_parameter") && !c->args.empty()) {
      SymValue name = ev_.eval(c->args[0], out_.scope);
      if (!name.is_known() || !name.value.is_string()) return;
      Attribute a;
      a.name = name.value.get<std::string>();
      a.kind = method == "register_buffer" ? AttributeKind::Buffer : AttributeKind::Parameter;
      a.where = file_->span_of(s);
      a.condition = condition;
      a.active = active;
      const ast::expr* value = c->args.size > 1 ? c->args[1] : nullptr;
      if (value) tensor_shape(value, a, 0);
      if (const ast::expr* p = keyword_arg(c, "persistent"))
        a.note += (a.note.empty() ? "" : "; ") + std::string("persistent=") + std::string(file_->text_of(p));
      if (auto* k = ast::as<ast::Constant>(value); k && k->value.kind == ast::ConstantKind::None) a.note = "None";
      add(std::move(a));
      return;
    }
    if (method == "__init__" && is_super_call(fa->value)) {
      base_init(c);
      return;
    }
    if (method == "append" || method == "extend") {
      std::string list;
      if (is_self_attr(fa->value, &list) && !c->args.empty()) {
        if (Attribute* a = find(list)) {
          if (auto* ctor = ast::as<ast::Call>(c->args[0])) a->module = module_ctor(ctor);
        }
      }
    }
  }

  static bool is_self_name(const ast::expr* e) {
    auto* n = ast::as<ast::Name>(e);
    return n && n->id == "self";
  }

  static bool is_super_call(const ast::expr* e) {
    auto* c = ast::as<ast::Call>(e);
    return c && dotted_name(c->func) == "super";
  }

  // for i in range(n): self.layers.append(Block(i, args))
  void loop(const ast::For* f, const std::string& condition, std::optional<bool> active) {
    for (const ast::stmt* s : f->body) {
      auto* e = ast::as<ast::Expr>(s);
      auto* c = e ? ast::as<ast::Call>(e->value) : nullptr;
      auto* fa = c ? ast::as<ast::Attribute>(c->func) : nullptr;
      std::string list;
      if (!fa || fa->attr != "append" || !is_self_attr(fa->value, &list) || c->args.empty()) continue;
      Attribute* a = find(list);
      if (!a) continue;
      if (auto* ctor = ast::as<ast::Call>(c->args[0])) {
        bind_loop_variable(f->target);
        a->module = module_ctor(ctor);
        a->count = range_length(f->iter);
      }
    }
    (void)condition;
    (void)active;
  }

  void bind_loop_variable(const ast::expr* target) {
    if (auto* n = ast::as<ast::Name>(target)) out_.scope.bound[std::string(n->id)] = SymValue::unknown(std::string(n->id));
  }

  SymValue range_length(const ast::expr* iter) {
    auto* c = ast::as<ast::Call>(iter);
    if (!c || dotted_name(c->func) != "range") return SymValue::unknown(std::string(file_->text_of(iter)));
    if (c->args.size == 1) return ev_.eval(c->args[0], out_.scope);
    if (c->args.size >= 2) {
      SymValue lo = ev_.eval(c->args[0], out_.scope), hi = ev_.eval(c->args[1], out_.scope);
      if (lo.is_known() && hi.is_known() && lo.integer() && hi.integer())
        return SymValue::known(*hi.integer() - *lo.integer(), hi.text + " - " + lo.text_at(kPrecAdd + 1));
      return SymValue::unknown(hi.text + " - " + lo.text_at(kPrecAdd + 1), kPrecAdd);
    }
    return SymValue::unknown(std::string(file_->text_of(iter)));
  }

  void base_init(const ast::Call* c) {
    if (base_depth_ >= kMaxBaseDepth) return;
    for (const ast::expr* b : owner_.node->bases) {
      const ClassDecl* base = sources_.find_class(dotted_name(b));
      if (!base || base == &owner_) continue;
      const ClassDecl* owner = nullptr;
      const ast::FunctionDef* init = find_method(sources_, *base, "__init__", &owner);
      if (!init) return;
      auto bindings = bind_arguments(init, *owner->file, c, file_, ev_, &out_.scope);
      ClassInstance inherited;
      inherited.cls = base;
      inherited.init = init;
      inherited.scope.file = owner->file;
      inherited.scope.bound = bindings;
      InitDescriber d(sources_, ev_, inherited, *owner, base_depth_ + 1);
      d.run(init, *owner->file);
      for (Attribute& a : inherited.attributes) {
        a.inherited = true;
        add(std::move(a));
      }
      // The subclass sees what the base computed (self.weight, self.output_size_per_partition).
      for (auto& [k, v] : inherited.scope.self_attrs) {
        auto key = "self:" + k;
        SymValue value = ev_.eval(v, inherited.scope);
        out_.scope.cache.try_emplace(key, value);
        out_.scope.self_attrs.try_emplace(k, v);
      }
      return;
    }
  }

  Attribute* find(const std::string& name) {
    for (Attribute& a : out_.attributes)
      if (a.name == name) return &a;
    return nullptr;
  }

  void add(Attribute a) { out_.attributes.push_back(std::move(a)); }

  // A module class picked from a table of classes written in the analysed
  // files, by a key the code or the config fixes
  // (`GPTJ_ATTENTION_CLASSES[config._attn_implementation](config)`). A config
  // that does not set the attention implementation gets transformers'
  // reference path, the "eager" entry, whose code spells the computation out.
  // A local name bound earlier in __init__ to a class, or to `A if cond else B`
  // with cond decided by the config (`ffn_layer_class = MoE if num_experts > 1
  // else MLP; self.feed_forward = ffn_layer_class(config)`): the local class.
  const ClassDecl* class_held_by(const ast::expr* e, int depth = 0) {
    if (depth > 8 || !e) return nullptr;
    if (auto* n = ast::as<ast::Name>(e)) {
      if (auto it = local_values_.find(std::string(n->id)); it != local_values_.end()) return class_held_by(it->second, depth + 1);
      const ClassDecl* local = sources_.find_class(n->id);
      return local && local->node->name == n->id ? local : nullptr;
    }
    if (auto* i = ast::as<ast::IfExp>(e)) {
      std::optional<bool> t = ev_.truth(i->test, out_.scope);
      return t ? class_held_by(*t ? i->body : i->orelse, depth + 1) : nullptr;
    }
    return nullptr;
  }

  // The classes a constructor call may build where neither the code nor the
  // config fixes one: a local held as `A if cond else B` with cond undecided,
  // or a pick from a table of local classes by a key known only per instance
  // (`ALL_DECODER_LAYER_TYPES[config.layers_block_type[i]]`,
  // `MIXER_TYPES[self.block_type]`). Each with the condition it is built
  // under. A config list the key indexes (`layers_block_type`) leaves out the
  // entries it never names. Empty when the call builds one class or none.
  std::vector<std::pair<const ClassDecl*, std::string>> class_choices(const ast::Call* c) {
    std::vector<std::pair<const ClassDecl*, std::string>> out;
    const ast::expr* picked = c->func;
    if (auto* n = ast::as<ast::Name>(picked)) {
      auto held = local_values_.find(std::string(n->id));
      if (held == local_values_.end()) return out;
      picked = held->second;
    }
    if (auto* i = ast::as<ast::IfExp>(picked)) {
      if (ev_.truth(i->test, out_.scope)) return out;
      const ClassDecl* body = class_held_by(i->body);
      const ClassDecl* orelse = class_held_by(i->orelse);
      if (!body || !orelse) return out;
      std::string test(file_->text_of(i->test));
      out.emplace_back(body, test);
      out.emplace_back(orelse, "not (" + test + ")");
      return out;
    }
    auto* s = ast::as<ast::Subscript>(picked);
    auto* table_name = s ? ast::as<ast::Name>(s->value) : nullptr;
    if (!table_name || table_class(c)) return out;
    std::optional<DispatchTable> table = find_dispatch_table(sources_, table_name->id);
    if (!table) return out;
    std::set<std::string> named = config_list_values(s->slice);
    std::string key(file_->text_of(s->slice));
    for (const auto& [k, v] : table->entries) {
      auto* cls = ast::as<ast::Name>(v);
      const ClassDecl* local = cls ? sources_.find_class(cls->id) : nullptr;
      if (!local || local->node->name != cls->id) return {};
      if (!named.empty() && !named.count(k)) continue;
      out.emplace_back(local, key + " == \"" + k + "\"");
    }
    if (out.size() < 2) out.clear();
    return out;
  }

  // The strings of a config list a key reads one element of
  // (`config.layers_block_type[i]`, through a local or `self.X` holding it);
  // empty when the key reads none or the config lacks the list.
  std::set<std::string> config_list_values(const ast::expr* key, int depth = 0) {
    std::set<std::string> out;
    if (!key || depth > 4) return out;
    if (auto* n = ast::as<ast::Name>(key)) {
      auto it = local_values_.find(std::string(n->id));
      return it == local_values_.end() ? out : config_list_values(it->second, depth + 1);
    }
    std::string self_name;
    if (is_self_attr(key, &self_name)) {
      auto it = out_.scope.self_attrs.find(self_name);
      return it == out_.scope.self_attrs.end() ? out : config_list_values(it->second, depth + 1);
    }
    auto* s = ast::as<ast::Subscript>(key);
    auto* field = s ? ast::as<ast::Attribute>(s->value) : nullptr;
    if (!field) return out;
    std::string owner = dotted_name(field->value);
    if (owner != "config" && owner != "self.config") return out;
    const nlohmann::json* list = ev_.config().find(std::string(field->attr));
    if (!list || !list->is_array()) return out;
    for (const nlohmann::json& v : *list)
      if (v.is_string()) out.insert(v.get<std::string>());
    return out;
  }

  const ClassDecl* table_class(const ast::Call* c) {
    if (forced_ && c == forced_call_) return forced_;
    if (auto* n = ast::as<ast::Name>(c->func); n && local_values_.count(std::string(n->id))) return class_held_by(n);
    auto* s = ast::as<ast::Subscript>(c->func);
    if (!s) return nullptr;
    ConfigFieldReader reader = [this](std::string_view key) { return ev_.config().find(key); };
    std::optional<std::string> eager;
    if (file_->text_of(s->slice).find("attn_implementation") != std::string_view::npos) eager = "eager";
    auto* cls = ast::as<ast::Name>(dispatch_entry(sources_, *file_, *s, reader, eager).entry);
    const ClassDecl* local = cls ? sources_.find_class(cls->id) : nullptr;
    return local && local->node->name == cls->id ? local : nullptr;
  }

  ModuleCtor module_ctor(const ast::Call* c) {
    ModuleCtor m;
    m.call = c;
    m.written = std::string(file_->text_of(c->func));
    m.qualified = sources_.qualified_name(*file_, c->func);
    if (auto* s = ast::as<ast::Subscript>(c->func)) m.qualified = dotted_name(s->value) + "[...]";
    if (const ClassDecl* picked = table_class(c)) m.qualified = std::string(picked->node->name);
    if (const ClassDecl* local = sources_.find_class(last_component(m.qualified)); local && local->node->name == m.qualified) {
      m.local = local;
      const ClassDecl* owner = nullptr;
      if (const ast::FunctionDef* init = find_method(sources_, *local, "__init__", &owner))
        m.bindings = bind_arguments(init, *owner->file, c, file_, ev_, &out_.scope);
    }
    return m;
  }

  bool is_module_ctor(const ast::Call* c) {
    if (table_class(c)) return true;
    std::string q = sources_.qualified_name(*file_, c->func);
    if (q.empty()) return false;
    if (const ClassDecl* local = sources_.find_class(q); local && local->node->name == q) return true;
    return known_module_role(q) != ModuleRole::Unknown && (q.rfind("torch.", 0) == 0 || q.find('.') == std::string::npos ||
                                                           q[0] == '.' || q.rfind("vllm", 0) == 0);
  }

  void assignment(const ast::expr* target, const ast::expr* value, const ast::stmt* s, const std::string& condition,
                  std::optional<bool> active) {
    if (auto* t = ast::as<ast::Tuple>(target)) {
      if (auto* v = ast::as<ast::Tuple>(value); v && v->elts.size == t->elts.size) {
        for (size_t i = 0; i < t->elts.size; ++i) assignment(t->elts[i], v->elts[i], s, condition, active);
      } else {
        for (const ast::expr* e : t->elts) assignment(e, nullptr, s, condition, active);
      }
      return;
    }
    std::string name;
    if (!is_self_attr(target, &name)) {
      if (auto* n = ast::as<ast::Name>(target); n && value) local_values_[std::string(n->id)] = value;
      return;
    }
    // self.ffn = MLP(...) if dense else MoE(...): two alternatives, like an if statement.
    if (auto* i = ast::as<ast::IfExp>(value)) {
      auto* body = ast::as<ast::Call>(i->body);
      auto* orelse = ast::as<ast::Call>(i->orelse);
      std::optional<bool> t = ev_.truth(i->test, out_.scope);
      if (body && orelse && is_module_ctor(body) && is_module_ctor(orelse) && !t) {
        std::string test(file_->text_of(i->test));
        auto join = [&](const std::string& c) { return condition.empty() ? c : condition + " and " + c; };
        assignment(target, i->body, s, join(test), active);
        assignment(target, i->orelse, s, join("not (" + test + ")"), active);
        return;
      }
    }
    // A class the config does not fix (per layer): a local held as a
    // conditional pick, or a table entry chosen by a per-layer key. One
    // alternative per class, as for an if statement; for a list of modules
    // (`nn.ModuleList(decoder_layers)` filled in a loop), one list per class.
    if (auto* c = ast::as<ast::Call>(value); c && !forced_) {
      const ast::Call* ctor = list_element_ctor(c);
      if (!ctor && !is_container_ctor(c)) ctor = c;
      auto choices = ctor ? class_choices(ctor) : std::vector<std::pair<const ClassDecl*, std::string>>{};
      if (!choices.empty()) {
        auto join = [&](const std::string& cond) { return condition.empty() ? cond : condition + " and " + cond; };
        forced_call_ = ctor;
        for (const auto& [cls, cond] : choices) {
          forced_ = cls;
          assignment(target, value, s, join(cond), active);
        }
        forced_ = nullptr;
        forced_call_ = nullptr;
        return;
      }
    }
    Attribute a;
    a.name = name;
    a.where = file_->span_of(s);
    a.condition = condition;
    a.active = active;
    if (!value) {
      a.kind = AttributeKind::Scalar;
      add(std::move(a));
      return;
    }
    classify_value(value, a);
    add(std::move(a));
  }

  void classify_value(const ast::expr* value, Attribute& a) {
    // X if cond else None (optional submodules, bias parameters).
    if (auto* i = ast::as<ast::IfExp>(value)) {
      auto is_none = [](const ast::expr* e) {
        auto* k = ast::as<ast::Constant>(e);
        return k && k->value.kind == ast::ConstantKind::None;
      };
      std::string test(file_->text_of(i->test));
      std::optional<bool> t = ev_.truth(i->test, out_.scope);
      if (is_none(i->orelse) || is_none(i->body)) {
        bool body_is_value = is_none(i->orelse);
        std::string cond = body_is_value ? test : "not (" + test + ")";
        a.condition = a.condition.empty() ? cond : a.condition + " and " + cond;
        std::optional<bool> ct = t ? std::optional<bool>(body_is_value ? *t : !*t) : std::nullopt;
        a.active = both(a.active, ct);
        classify_value(body_is_value ? i->body : i->orelse, a);
        return;
      }
      if (t) {
        classify_value(*t ? i->body : i->orelse, a);
        return;
      }
      // A module or something else: the module describes the attribute, the note names the other.
      if (auto* bc = ast::as<ast::Call>(i->body); bc && is_module_ctor(bc)) {
        classify_value(i->body, a);
        a.note = "if " + test + ", else " + std::string(file_->text_of(i->orelse));
        return;
      }
      scalar(value, a);
      return;
    }
    auto* c = ast::as<ast::Call>(value);
    if (!c) {
      scalar(value, a);
      return;
    }
    std::string q = sources_.qualified_name(*file_, c->func);
    std::string last = last_component(q);
    if (last == "Parameter") {
      a.kind = AttributeKind::Parameter;
      if (!c->args.empty()) tensor_shape(c->args[0], a, 0);
      return;
    }
    if (last == "ModuleList" || last == "Sequential" || last == "ModuleDict") {
      a.kind = last == "ModuleDict" ? AttributeKind::ModuleDict : AttributeKind::ModuleList;
      a.container = std::string(file_->text_of(c->func));
      module_list(c, a);
      return;
    }
    if (is_module_ctor(c)) {
      a.kind = AttributeKind::Submodule;
      a.module = module_ctor(c);
      a.sizes = known_layer_sizes(a.module, *file_, ev_, out_.scope);
      return;
    }
    scalar(value, a);
  }

  void scalar(const ast::expr* value, Attribute& a) {
    // self.act = F.silu / torch.sigmoid: the attribute is that torch function,
    // and calling it is that op (the key holds the qualified name).
    if (ast::as<ast::Name>(value) || ast::as<ast::Attribute>(value)) {
      std::string q = sources_.qualified_name(*file_, value);
      if (q.rfind("torch.", 0) == 0 && is_torch_function_path(q)) {
        a.kind = AttributeKind::Callable;
        a.note = q;
        a.sizes.push_back(SizeValue{"function", std::string(file_->text_of(value)), SymValue::known(q, q)});
        return;
      }
    }
    // A function picked by name: ACT2FN[config.hidden_act] (a table of
    // functions) or get_activation(config.activation) (transformers' lookup
    // in that table). The key names the function.
    const ast::expr* key_expr = nullptr;
    std::string note_open, note_close;  // the note around the key: "ACT2FN[" "]", "get_activation(" ")"
    if (auto* s = ast::as<ast::Subscript>(value)) {
      std::string table = dotted_name(s->value);
      if (!table.empty() && table != "config" && is_function_table(table)) {
        key_expr = s->slice;
        note_open = table + "[";
        note_close = "]";
      }
    } else if (auto* c = ast::as<ast::Call>(value);
               c && c->args.size == 1 && c->keywords.size == 0 &&
               last_component(sources_.qualified_name(*file_, c->func)) == "get_activation") {
      key_expr = c->args[0];
      note_open = "get_activation(";
      note_close = ")";
    }
    if (key_expr) {
      SymValue key = ev_.eval(key_expr, out_.scope);
      if (!key.is_config()) {
        a.kind = AttributeKind::Callable;
        a.note = note_open + key.display() + note_close;
        a.sizes.push_back(SizeValue{"key", std::string(file_->text_of(key_expr)), key});
        return;
      }
    }
    SymValue v = ev_.eval(value, out_.scope);
    if (v.is_config()) {
      a.kind = AttributeKind::Config;
      return;
    }
    a.kind = AttributeKind::Scalar;
    a.sizes.push_back(SizeValue{"value", std::string(file_->text_of(value)), v});
  }

  // torch.nn.functional.X, torch.X.Y: a function of torch's function
  // namespaces, not a dtype or a class (torch.float32, torch.nn.Linear).
  static bool is_torch_function_path(const std::string& q) {
    static const std::set<std::string> not_functions = {
        "float32", "float16", "bfloat16", "float64", "float", "half", "double", "int8",  "int16", "int32",
        "int64",   "uint8",   "bool",     "long",    "int",   "complex64", "complex128", "float8_e4m3fn",
        "float8_e5m2", "pi", "e", "inf", "nan", "device", "dtype", "finfo", "iinfo"};
    std::string last = q.substr(q.rfind('.') + 1);
    if (last.empty() || !std::islower(static_cast<unsigned char>(last[0])) || not_functions.count(last)) return false;
    return q.rfind("torch.nn.functional.", 0) == 0 || q.rfind("torch.special.", 0) == 0 ||
           q.rfind("torch.nn.", 0) != 0;
  }

  // A table of functions: imported (ACT2FN), or a module-level dict whose
  // values are all names of functions rather than data.
  bool is_function_table(const std::string& table) const {
    if (const ConstantDecl* c = sources_.find_constant(table)) {
      auto* d = ast::as<ast::Dict>(c->value);
      if (!d) return false;
      // nn.ReLU() beside the functions (OpenAI GPT's ACT_FNS): an activation
      // module called like one.
      for (const ast::expr* v : d->values) {
        auto* call = ast::as<ast::Call>(v);
        bool activation_module = call && call->args.empty() && call->keywords.empty() &&
                                 known_module_role(sources_.qualified_name(*c->file, call->func)) == ModuleRole::Activation;
        if (!ast::as<ast::Name>(v) && !ast::as<ast::Attribute>(v) && !activation_module) return false;
      }
      return true;
    }
    std::string head = table.substr(0, table.find('.'));
    return file_->aliases.count(head) > 0;
  }

  bool is_container_ctor(const ast::Call* c) const {
    std::string last = last_component(sources_.qualified_name(*file_, c->func));
    return last == "ModuleList" || last == "Sequential" || last == "ModuleDict";
  }

  // The constructor call of the elements of `nn.ModuleList(name)` where
  // `name` is a local list filled by `name.append(Cls(...))` in a loop.
  const ast::Call* list_element_ctor(const ast::Call* c) {
    if (!is_container_ctor(c) || c->args.size != 1) return nullptr;
    auto* n = ast::as<ast::Name>(c->args[0]);
    auto built = n ? appended_.find(std::string(n->id)) : appended_.end();
    return built == appended_.end() ? nullptr : ast::as<ast::Call>(built->second.element);
  }

  void module_list(const ast::Call* c, Attribute& a) {
    const ast::expr* arg = c->args.empty() ? nullptr : c->args[0];
    if (c->args.size > 1 || (arg && ast::as<ast::Call>(arg))) {
      // nn.Sequential(A(), B()) or a single module.
      if (auto* first = ast::as<ast::Call>(arg); first && is_module_ctor(first)) a.module = module_ctor(first);
      a.count = SymValue::known(static_cast<long long>(c->args.size));
      return;
    }
    if (!arg) {
      a.count = SymValue::known(0);
      return;
    }
    const ast::expr* elt = nullptr;
    Span<ast::comprehension*> gens;
    if (auto* n = ast::as<ast::Name>(arg)) {
      auto built = appended_.find(std::string(n->id));
      if (built != appended_.end()) {
        bind_loop_variable(built->second.loop->target);
        a.count = range_length(built->second.loop->iter);
        elt = built->second.element;
      }
    }
    if (auto* lc = ast::as<ast::ListComp>(arg)) {
      elt = lc->elt;
      gens = lc->generators;
    } else if (auto* ge = ast::as<ast::GeneratorExp>(arg)) {
      elt = ge->elt;
      gens = ge->generators;
    } else if (auto* dc = ast::as<ast::DictComp>(arg)) {
      elt = dc->value;
      gens = dc->generators;
    } else if (auto* l = ast::as<ast::List>(arg)) {
      a.count = SymValue::known(static_cast<long long>(l->elts.size));
      if (!l->elts.empty()) elt = l->elts[0];
    } else if (auto* d = ast::as<ast::Dict>(arg)) {
      a.count = SymValue::known(static_cast<long long>(d->values.size));
      if (!d->values.empty()) elt = d->values[0];
    }
    if (!gens.empty()) {
      bind_loop_variable(gens[0]->target);
      a.count = range_length(gens[0]->iter);
    }
    // Expert(...) if start <= i < end else None: only some elements are built (EP).
    if (auto* i = ast::as<ast::IfExp>(elt)) {
      a.element_condition = std::string(file_->text_of(i->test));
      auto* k = ast::as<ast::Constant>(i->orelse);
      elt = (k && k->value.kind == ast::ConstantKind::None) ? i->body : i->orelse;
      if (!ast::as<ast::Call>(elt)) elt = i->body;
    }
    if (auto* ctor = ast::as<ast::Call>(elt)) a.module = module_ctor(ctor);
  }

  // The shape of a tensor expression: torch.zeros(a, b), torch.randn((a, b)) * s,
  // torch.ones(n).float(), a local bound to one of those, or a helper call.
  void tensor_shape(const ast::expr* e, Attribute& a, int depth) {
    if (!e || depth > 6) return;
    if (auto* b = ast::as<ast::BinOp>(e)) {
      size_t before = a.sizes.size();
      tensor_shape(b->left, a, depth + 1);
      if (a.sizes.size() == before) tensor_shape(b->right, a, depth + 1);
      return;
    }
    if (auto* n = ast::as<ast::Name>(e)) {
      auto it = out_.scope.locals.find(n->id);
      if (it != out_.scope.locals.end()) {
        size_t before = a.sizes.size();
        tensor_shape(it->second, a, depth + 1);
        if (a.sizes.size() == before && a.note.empty()) a.note = "from " + std::string(file_->text_of(it->second));
      }
      return;
    }
    auto* c = ast::as<ast::Call>(e);
    if (!c) return;
    std::string q = sources_.qualified_name(*file_, c->func);
    std::string last = last_component(q);
    static const char* factories[] = {"zeros", "ones", "empty", "randn", "rand", "full", "tensor_like"};
    bool factory = q.rfind("torch.", 0) == 0 && std::find(std::begin(factories), std::end(factories), last) != std::end(factories);
    if (!factory) {
      if (auto* fa = ast::as<ast::Attribute>(c->func); fa && q.rfind("torch.", 0) != 0) {
        // x.float(), x.to(dtype): the shape of x.
        tensor_shape(fa->value, a, depth + 1);
        return;
      }
      if (a.note.empty()) a.note = "from " + std::string(file_->text_of(e));
      return;
    }
    std::vector<const ast::expr*> dims;
    size_t ndims = last == "full" ? 1 : c->args.size;
    if (ndims == 1 && c->args.size >= 1) {
      if (auto* t = ast::as<ast::Tuple>(c->args[0])) {
        for (const ast::expr* d : t->elts) dims.push_back(d);
      } else if (auto* l = ast::as<ast::List>(c->args[0])) {
        for (const ast::expr* d : l->elts) dims.push_back(d);
      } else {
        dims.push_back(c->args[0]);
      }
    } else {
      for (size_t i = 0; i < c->args.size; ++i) dims.push_back(c->args[i]);
    }
    for (size_t i = 0; i < dims.size(); ++i) {
      if (auto* st = ast::as<ast::Starred>(dims[i])) {
        a.sizes.push_back(SizeValue{"shape", std::string(file_->text_of(dims[i])), ev_.eval(st->value, out_.scope)});
        continue;
      }
      a.sizes.push_back(
          SizeValue{"shape[" + std::to_string(i) + "]", std::string(file_->text_of(dims[i])), ev_.eval(dims[i], out_.scope)});
    }
  }

  // A local list filled by `name.append(element)` in a for loop.
  struct AppendLoop {
    const ast::For* loop;
    const ast::expr* element;
  };

  const SourceSet& sources_;
  Evaluator& ev_;
  ClassInstance& out_;
  std::map<std::string, AppendLoop> appended_;
  std::map<std::string, const ast::expr*> local_values_;  // `name = value` in __init__, for a class held in a local
  const ClassDecl* forced_ = nullptr;                       // the arm being described of such a class pick
  const ast::Call* forced_call_ = nullptr;
  const ClassDecl& owner_;  // the class whose __init__ runs
  const ModelFile* file_ = nullptr;
  int base_depth_;
};

}  // namespace

const char* attribute_kind_name(AttributeKind k) {
  switch (k) {
    case AttributeKind::Submodule: return "submodule";
    case AttributeKind::ModuleList: return "module_list";
    case AttributeKind::ModuleDict: return "module_dict";
    case AttributeKind::Parameter: return "parameter";
    case AttributeKind::Buffer: return "buffer";
    case AttributeKind::Scalar: return "scalar";
    case AttributeKind::Config: return "config";
    case AttributeKind::Callable: return "callable";
    case AttributeKind::Other: return "other";
  }
  return "other";
}

std::vector<SizeValue> known_layer_sizes(const ModuleCtor& ctor, const ModelFile& file, Evaluator& ev, EvalScope& scope) {
  std::vector<SizeValue> out;
  if (ctor.local || !ctor.call) return out;
  const ast::Call* c = ctor.call;
  std::string last = last_component(ctor.qualified);
  auto add = [&](const char* label, const ast::expr* e) {
    if (e) out.push_back(SizeValue{label, std::string(file.text_of(e)), ev.eval(e, scope)});
  };
  if (last == "Linear" || last == "ColumnParallelLinear" || last == "RowParallelLinear" || last == "ReplicatedLinear") {
    add("in", argument(c, 0, {"in_features", "input_size"}));
    add("out", argument(c, 1, {"out_features", "output_size"}));
    if (const ast::expr* b = keyword_arg(c, "bias")) add("bias", b);
  } else if (last == "Conv1D") {
    // HF's GPT-2 projection: Conv1D(nf, nx) is a linear layer from nx to nf
    // (weight stored [nx, nf], applied with addmm).
    add("in", argument(c, 1, {"nx"}));
    add("out", argument(c, 0, {"nf"}));
  } else if (last == "MergedColumnParallelLinear") {
    add("in", argument(c, 0, {"input_size"}));
    if (const ast::expr* sizes = argument(c, 1, {"output_sizes"})) {
      SymValue v = ev.eval(sizes, scope);
      SymValue total = v;
      if (v.is_known() && v.value.is_array()) {
        long long sum = 0;
        bool ok = true;
        for (const auto& x : v.value) {
          if (x.is_number_integer()) sum += x.get<long long>();
          else ok = false;
        }
        if (ok) total = SymValue::known(sum, "sum(" + v.text + ")");
      } else {
        total = SymValue::unknown("sum(" + v.text + ")");
      }
      out.push_back(SizeValue{"out", "sum(" + std::string(file.text_of(sizes)) + ")", total});
      out.push_back(SizeValue{"out_parts", std::string(file.text_of(sizes)), v});
    }
  } else if (last == "QKVParallelLinear") {
    add("in", argument(c, 0, {"hidden_size"}));
    const ast::expr* head = argument(c, 1, {"head_size"});
    const ast::expr* heads = argument(c, 2, {"total_num_heads"});
    const ast::expr* kv = argument(c, 3, {"total_num_kv_heads"});
    if (head && heads) {
      SymValue h = ev.eval(head, scope), n = ev.eval(heads, scope);
      SymValue k = kv ? ev.eval(kv, scope) : n;
      std::string text = "(" + n.text_at(kPrecAdd) + " + 2 * " + k.text_at(kPrecMul) + ") * " + h.text_at(kPrecMul + 1);
      SymValue total = SymValue::unknown(text, kPrecMul);
      if (h.integer() && n.integer() && k.integer())
        total = SymValue::known((*n.integer() + 2 * *k.integer()) * *h.integer(), text);
      out.push_back(SizeValue{"out", "(heads + 2 * kv_heads) * head_size", total});
    }
  } else if (last == "Embedding" || last == "VocabParallelEmbedding" || last == "ParallelEmbedding") {
    add("num", argument(c, 0, {"num_embeddings"}));
    add("dim", argument(c, 1, {"embedding_dim"}));
  } else if (last == "ParallelLMHead") {
    add("in", argument(c, 1, {"embedding_dim"}));
    add("out", argument(c, 0, {"num_embeddings"}));
  } else if (last == "LayerNorm" || last == "RMSNorm") {
    add("dim", argument(c, 0, {"normalized_shape"}));
    add("eps", argument(c, 1, {"eps"}));
  } else if (last == "Dropout") {
    add("p", argument(c, 0, {"p"}));
  }
  return out;
}

std::map<std::string, SymValue, std::less<>> bind_arguments(const ast::FunctionDef* fn, const ModelFile& callee_file,
                                                             const ast::Call* call, const ModelFile* caller_file,
                                                             Evaluator& ev, EvalScope* caller_scope, bool skip_self) {
  std::map<std::string, SymValue, std::less<>> out;
  const ast::arguments* args = fn->args;
  std::vector<const ast::arg*> positional;
  for (const ast::arg* a : args->posonlyargs) positional.push_back(a);
  for (const ast::arg* a : args->args) positional.push_back(a);
  size_t first = (skip_self && !positional.empty() && positional[0]->arg == "self") ? 1 : 0;
  size_t n_defaults = args->defaults.size;
  size_t first_default = positional.size() - n_defaults;

  std::map<std::string, const ast::expr*, std::less<>> given;
  if (call) {
    size_t pi = first;
    for (const ast::expr* e : call->args) {
      if (ast::as<ast::Starred>(e)) break;  // *args: the rest is not known statically
      if (pi < positional.size()) given[std::string(positional[pi++]->arg)] = e;
    }
    for (const ast::keyword* kw : call->keywords)
      if (ast::present(kw->arg)) given[std::string(kw->arg)] = kw->value;
  }
  auto bind = [&](const ast::arg* a, const ast::expr* default_value) {
    std::string name(a->arg);
    auto it = given.find(name);
    if (it != given.end() && caller_scope) {
      out[name] = ev.eval(it->second, *caller_scope);
      return;
    }
    std::string cls = annotation_class(a->annotation);
    if ((it == given.end() || !caller_scope) &&
        (is_config_parameter_name(name) || (!cls.empty() && ev.schema().is_config_class(cls)))) {
      out[name] = SymValue::config_object(cls);
      return;
    }
    if (default_value) {
      EvalScope s;
      s.file = &callee_file;
      out[name] = ev.eval(default_value, s);
      return;
    }
    out[name] = SymValue::unknown(name);
  };
  for (size_t i = first; i < positional.size(); ++i)
    bind(positional[i], i >= first_default ? args->defaults[i - first_default] : nullptr);
  for (size_t i = 0; i < args->kwonlyargs.size; ++i)
    bind(args->kwonlyargs[i], i < args->kw_defaults.size ? args->kw_defaults[i] : nullptr);
  (void)caller_file;
  return out;
}

ClassInstance describe_instance(const SourceSet& sources, Evaluator& ev, const ClassDecl& cls,
                                const std::map<std::string, SymValue, std::less<>>* bindings,
                                const std::set<std::string>* per_layer) {
  ClassInstance inst;
  inst.cls = &cls;
  const ClassDecl* owner = nullptr;
  inst.init = find_method(sources, cls, "__init__", &owner);
  if (!inst.init) return inst;
  inst.scope.file = owner->file;
  inst.scope.bound = bindings ? *bindings : bind_arguments(inst.init, *owner->file, nullptr, nullptr, ev, nullptr);
  if (!bindings && per_layer)
    for (const std::string& name : *per_layer)
      if (auto it = inst.scope.bound.find(name); it != inst.scope.bound.end()) it->second = SymValue::unknown(name);
  InitDescriber d(sources, ev, inst, *owner, 0);
  d.run(inst.init, *owner->file);
  return inst;
}

std::map<std::string, std::set<std::string>> per_layer_parameters(const SourceSet& sources) {
  std::map<std::string, std::set<std::string>> out;
  // config.X[i] / self.config.X[i] with an index that is not a literal.
  auto per_layer_value = [](const ast::expr* e) {
    auto* s = ast::as<ast::Subscript>(e);
    auto* field = s ? ast::as<ast::Attribute>(s->value) : nullptr;
    if (!field || ast::as<ast::Constant>(s->slice)) return false;
    std::string owner = dotted_name(field->value);
    return owner == "config" || owner == "self.config";
  };
  for (const auto& f : sources.files()) {
    if (!f->parsed || !f->parsed->module) continue;
    walk(f->parsed->module, [&](const ast::Node* n) {
      auto* c = ast::as<ast::Call>(n);
      auto* callee = c ? ast::as<ast::Name>(c->func) : nullptr;
      if (!callee) return true;
      const ClassDecl* cls = sources.find_class(callee->id);
      if (!cls || cls->node->name != callee->id) return true;
      for (const ast::keyword* kw : c->keywords)
        if (ast::present(kw->arg) && per_layer_value(kw->value)) out[std::string(callee->id)].insert(std::string(kw->arg));
      const ast::FunctionDef* init = find_method(sources, *cls, "__init__");
      if (!init) return true;
      std::vector<std::string> params;
      for (const ast::arg* a : init->args->posonlyargs) params.emplace_back(a->arg);
      for (const ast::arg* a : init->args->args) params.emplace_back(a->arg);
      size_t first = !params.empty() && params[0] == "self" ? 1 : 0;
      for (size_t i = 0; i < c->args.size && first + i < params.size(); ++i) {
        if (ast::as<ast::Starred>(c->args[i])) break;
        if (per_layer_value(c->args[i])) out[std::string(callee->id)].insert(params[first + i]);
      }
      return true;
    });
  }
  return out;
}

}  // namespace npufuse::model

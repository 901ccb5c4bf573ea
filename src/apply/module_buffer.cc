#include "apply/module_buffer.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "model/ast_walk.h"
#include "model/config_schema.h"
#include "model/evaluator.h"
#include "model/init_attributes.h"
#include "util/identifier.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;

// One mention of `<self>.<method>` in a method of the class.
struct Mention {
  const ast::FunctionDef* in = nullptr;
  int line = 0;
  bool ruled_out = false;  // in an if arm the config does not take
  std::string guard;       // the innermost if test of the mention's arm, if any
  bool decided = false;    // the config takes that arm
};

// The class's mentions of `self.<method>` and whether the config rules each
// one out. Ifs are followed; other compound statements count as taken.
class MethodMentions {
 public:
  MethodMentions(const model::ModelFile& file, model::Evaluator& ev, model::EvalScope& scope, std::string_view method)
      : file_(file), ev_(ev), scope_(scope), method_(method) {}

  void in_method(const ast::FunctionDef& fn) {
    fn_ = &fn;
    self_ = first_param(fn);
    body(fn.body, false, {"", false});
  }
  const std::vector<Mention>& found() const { return found_; }

 private:
  struct Guard {
    std::string test;
    bool decided = false;
  };
  void body(const frontend::Span<ast::stmt*>& stmts, bool ruled_out, const Guard& guard) {
    for (const ast::stmt* s : stmts) {
      if (auto* i = ast::as<ast::If>(s)) {
        expression(i->test, ruled_out, guard);
        std::optional<bool> t = ruled_out ? std::nullopt : ev_.truth(i->test, scope_);
        std::string test = text_of(file_, i->test);
        // An arm the config takes inside one it leaves open is open.
        bool open_outside = !guard.test.empty() && !guard.decided;
        body(i->body, ruled_out || (t && !*t), t && open_outside ? guard : Guard{test, t.has_value()});
        body(i->orelse, ruled_out || (t && *t), t && open_outside ? guard : Guard{"not (" + test + ")", t.has_value()});
        continue;
      }
      expression(s, ruled_out, guard);
    }
  }
  void expression(const ast::Node* n, bool ruled_out, const Guard& guard) {
    model::walk(n, [&](const ast::Node* x) {
      if (auto* a = ast::as<ast::Attribute>(x); a && a->attr == method_ && is_name(a->value, self_))
        found_.push_back(Mention{fn_, static_cast<int>(a->lineno), ruled_out, guard.test, guard.decided});
      return true;
    });
  }

  const model::ModelFile& file_;
  model::Evaluator& ev_;
  model::EvalScope& scope_;
  std::string_view method_;
  const ast::FunctionDef* fn_ = nullptr;
  std::string self_;
  std::vector<Mention> found_;
};

// How many times any file of `sources` reads an attribute named `name`.
size_t attribute_reads(const model::SourceSet& sources, std::string_view name) {
  size_t n = 0;
  for (const auto& f : sources.files())
    model::walk(f->parsed->module, [&](const ast::Node* x) {
      if (auto* a = ast::as<ast::Attribute>(x); a && a->attr == name) ++n;
      return true;
    });
  return n;
}

struct ClassAt {
  const model::ModelFile* file = nullptr;
  const ast::ClassDef* cls = nullptr;
  const ast::FunctionDef* init = nullptr;
  std::string name;
};

// Why a method of the class other than __init__ that changes `self.<attr>`
// may run, or "" when none may. A helper the class calls only in if arms
// the config rules out (HF's `if "dynamic" in self.rope_type:
// self._dynamic_frequency_update(...)` with a default rope type), and that no
// other code names, does not run. A method the class never calls is part of
// its interface: anyone may call it.
std::string changed_after_init(const ClassAt& at, const model::SourceSet& sources, const model::ModelConfig* config,
                               std::string_view attr) {
  std::optional<model::ModelConfig> none;
  std::optional<model::ConfigSchema> schema;
  std::optional<model::Evaluator> ev;
  std::optional<model::ClassInstance> instance;
  const model::ClassDecl* decl = sources.find_class(at.name);
  for (const ast::stmt* s : at.cls->body) {
    auto* method = ast::as<ast::FunctionDef>(s);
    if (!method || method->name == "__init__") continue;
    int line = changes_attribute(*method, attr);
    if (!line) continue;
    std::string changed = fmt::format("self.{} is changed after __init__, at {}:{}", attr, at.file->path, line);
    if (method->name == "forward" || std::string_view(method->name).rfind("__", 0) == 0 || !decl) return changed;
    if (!ev) {
      if (!config) config = &none.emplace();
      schema.emplace(model::ConfigSchema::discover(sources));
      ev.emplace(sources, *config, *schema);
      instance.emplace(model::describe_instance(sources, *ev, *decl, nullptr));
    }
    MethodMentions mentions(*at.file, *ev, instance->scope, method->name);
    for (const ast::stmt* other : at.cls->body)
      if (auto* fn = ast::as<ast::FunctionDef>(other)) mentions.in_method(*fn);
    if (mentions.found().empty()) return changed;
    if (attribute_reads(sources, method->name) > mentions.found().size())
      return fmt::format("{}, by {}, which code outside {} calls", changed, method->name, at.name);
    for (const Mention& m : mentions.found()) {
      if (m.ruled_out) continue;
      // The guard, and what the config says of it (`config` is set here:
      // without a plan config it points at an empty one).
      std::string when;
      if (!m.guard.empty()) {
        when = " when " + m.guard;
        if (m.decided) when += config->loaded() ? fmt::format(", as it is with {}", config->origin()) : "";
        else when += config->loaded() ? fmt::format(", which {} does not decide", config->origin())
                                      : ", which the plan, made without --config, cannot decide";
      }
      return fmt::format("{}, by {}, which {} calls at {}:{}{}", changed, method->name, m.in->name, at.file->path,
                         m.line, when);
    }
  }
  return "";
}

bool is_parameter_call(const ast::expr* e) {
  auto* call = ast::as<ast::Call>(e);
  if (!call) return false;
  if (auto* n = ast::as<ast::Name>(call->func)) return n->id == "Parameter";
  auto* a = ast::as<ast::Attribute>(call->func);
  return a && a->attr == "Parameter";
}

// Why `self.<attr>` is not a value fixed once __init__ has run, or "".
std::string not_fixed_at_init(const ClassAt& at, const model::SourceSet& sources, const model::ModelConfig* config,
                              std::string_view attr) {
  std::string self = first_param(*at.init);
  std::string how;  // how __init__ sets it: "" (not at all), "ok" or the reason it is not fixed
  model::walk(at.init, [&](const ast::Node* x) {
    if (auto* assign = ast::as<ast::Assign>(x))
      for (const ast::expr* t : assign->targets)
        if (is_self_attribute(t, self, attr))
          how = is_parameter_call(assign->value) ? "it is an nn.Parameter, which loading weights replaces" : "ok";
    if (const ast::Call* call = registration(x, self, attr)) {
      auto* f = ast::as<ast::Attribute>(call->func);
      bool persistent = true;
      if (call->args.size >= 3)
        if (auto* c = ast::as<ast::Constant>(call->args[2]); c && c->value.kind == ast::ConstantKind::False) persistent = false;
      for (const ast::keyword* k : call->keywords)
        if (ast::present(k->arg) && std::string(k->arg) == "persistent")
          if (auto* c = ast::as<ast::Constant>(k->value); c && c->value.kind == ast::ConstantKind::False) persistent = false;
      if (!f || f->attr != "register_buffer") how = "it is registered as a parameter, which loading weights replaces";
      else if (persistent) how = "it is a persistent buffer, which a checkpoint loaded after __init__ may replace";
      else how = "ok";
    }
    return true;
  });
  if (how.empty()) return fmt::format("{}.__init__ does not set self.{}", at.name, attr);
  if (how != "ok") return fmt::format("self.{}: {}", attr, how);
  return changed_after_init(at, sources, config, attr);
}

// Whether some file of `sources` reads an attribute `attr` of anything, or
// declares a class-level field of that name (a config's dataclass field).
bool attribute_known(const model::SourceSet& sources, std::string_view attr) {
  bool known = false;
  for (const auto& f : sources.files()) {
    model::walk(f->parsed->module, [&](const ast::Node* x) {
      if (known) return false;
      if (auto* a = ast::as<ast::Attribute>(x); a && a->attr == attr) known = true;
      if (auto* cls = ast::as<ast::ClassDef>(x))
        for (const ast::stmt* s : cls->body) {
          if (auto* ann = ast::as<ast::AnnAssign>(s); ann && is_name(ann->target, attr)) known = true;
          if (auto* assign = ast::as<ast::Assign>(s))
            for (const ast::expr* t : assign->targets) known = known || is_name(t, attr);
        }
      return true;
    });
    if (known) break;
  }
  return known;
}

// `spelling` ("max_position_embeddings", "self.max_seq_len_cached",
// "config.max_position_embeddings") as a value in at.init's last line, or
// why not.
std::string spelling_unusable(const ClassAt& at, const model::SourceSet& sources, const model::ModelConfig* config,
                              const std::string& spelling) {
  size_t dot = spelling.find('.');
  std::set<std::string> params = parameter_names(*at.init);
  if (dot == std::string::npos)
    return params.count(spelling) ? "" : fmt::format("{}.__init__ has no parameter {}", at.name, spelling);
  std::string base = spelling.substr(0, dot), attr = spelling.substr(dot + 1);
  if (base == first_param(*at.init)) return not_fixed_at_init(at, sources, config, attr);
  if (!params.count(base)) return fmt::format("{}.__init__ has no parameter {}", at.name, base);
  if (!attribute_known(sources, attr)) return fmt::format("no file defines or reads an attribute {}", attr);
  return "";
}

// Every name used in `fn` (parameters, locals, globals it reads).
std::set<std::string> names_in_function(const ast::FunctionDef& fn) {
  std::set<std::string> out = parameter_names(fn);
  model::walk(&fn, [&](const ast::Node* x) {
    if (auto* name = ast::as<ast::Name>(x)) out.insert(std::string(name->id));
    return true;
  });
  return out;
}

// Every attribute the class's methods read or set on self, its methods and
// class-level names, and the buffers it registers.
std::set<std::string> attributes_of(const ast::ClassDef& cls) {
  std::set<std::string> out;
  for (const ast::stmt* s : cls.body) {
    if (auto* def = ast::as<ast::FunctionDef>(s)) {
      out.insert(std::string(def->name));
      std::string self = first_param(*def);
      model::walk(def, [&](const ast::Node* x) {
        if (auto* a = ast::as<ast::Attribute>(x); a && is_name(a->value, self)) out.insert(std::string(a->attr));
        if (auto* call = ast::as<ast::Call>(x))
          if (auto* f = ast::as<ast::Attribute>(call->func); f && f->attr == "register_buffer" && call->args.size)
            if (auto* c = ast::as<ast::Constant>(call->args[0]); c && c->value.kind == ast::ConstantKind::Str)
              out.insert(ast::constant_string(c->value));
        return true;
      });
    }
    for (const std::string& n : names_in(s, ast::expr_context::Store)) out.insert(n);
  }
  return out;
}

std::string fresh(const std::string& name, const std::set<std::string>& taken) {
  if (!taken.count(name)) return name;
  std::string candidate = "npu_" + name;
  for (int n = 2; taken.count(candidate); ++n) candidate = fmt::format("npu_{}_{}", name, n);
  return candidate;
}

// `value`'s text with each name of `names` read replaced by its spelling.
std::string substituted(std::string_view source, const ast::expr* value, const std::map<std::string, std::string>& names) {
  std::vector<std::pair<const ast::Name*, const std::string*>> at;
  model::walk(value, [&](const ast::Node* x) {
    if (auto* n = ast::as<ast::Name>(x); n && n->ctx == ast::expr_context::Load)
      if (auto it = names.find(std::string(n->id)); it != names.end()) at.emplace_back(n, &it->second);
    return true;
  });
  std::sort(at.begin(), at.end(), [](const auto& a, const auto& b) { return a.first->begin < b.first->begin; });
  std::string out;
  uint32_t from = value->begin;
  for (const auto& [n, text] : at) {
    out.append(source.substr(from, n->begin - from));
    out += *text;
    from = n->end;
  }
  out.append(source.substr(from, value->end - from));
  return out;
}

// Decorators that leave the module's state alone.
bool harmless_decorator(const model::ModelFile& file, const ast::expr* d) {
  std::string text = text_of(file, d);
  return text == "torch.no_grad()" || text == "torch.inference_mode()" || text == "no_grad()" || text == "torch.no_grad" ||
         text == "staticmethod";
}

// The last name of a decorator: `dynamic_rope_update` for
// `@rope_utils.dynamic_rope_update` or `@dynamic_rope_update(...)`.
std::string decorator_name(const ast::expr* d) {
  if (auto* call = ast::as<ast::Call>(d)) d = call->func;
  return last_name(d);
}

// Why the decorator may change the module before a call, for this config;
// empty when it leaves it alone (RULE["apply"]["decorators"]).
std::string stale_by_decorator(const rules::Rule& rule, const std::string& name,
                               const model::ModelConfig* config) {
  auto known = std::find_if(rule.decorators.begin(), rule.decorators.end(),
                            [&](const rules::Rule::ConfigDecorator& k) { return k.name == name; });
  if (known == rule.decorators.end()) return "which may change the module's state before each call";
  if (!config || !config->loaded())
    return fmt::format("which changes the module's state before a call for some values of {}, and the plan was "
                       "made without --config to tell which",
                       known->config_keys.front());
  std::string key = known->config_keys.front(), setting = "default";
  for (const std::string& k : known->config_keys)
    if (const nlohmann::json* v = config->find(k); v && v->is_string()) {
      key = k;
      setting = v->get<std::string>();
      break;
    }
  for (const std::string& stale : known->stale_when)
    if (setting.find(stale) != std::string::npos)
      return fmt::format("which changes the module's state before each call with {} = '{}' ({})", key, setting,
                         config->origin());
  return "";
}

}  // namespace

InitSplit split_init_time(const ast::FunctionDef& replace, const std::set<std::string>& init_params,
                          const std::map<std::string, std::string>& why_not) {
  InitSplit out;
  for (const std::string& p : parameter_names(replace))
    if (!init_params.count(p)) {
      auto it = why_not.find(p);
      out.call_time[p] = it != why_not.end() ? it->second : p + " is known only when the chain runs";
    }
  std::vector<InitStatement> found;
  std::vector<const ast::stmt*> call_time_statements;
  for (const ast::stmt* s : replace.body) {
    if (is_docstring(s)) continue;
    auto* assign = ast::as<ast::Assign>(s);
    const ast::Name* target = assign && assign->targets.size == 1 ? ast::as<ast::Name>(assign->targets[0]) : nullptr;
    std::string because;
    for (const std::string& read : names_in(s, ast::expr_context::Load))
      if (auto it = out.call_time.find(read); it != out.call_time.end() && because.empty()) because = it->second;
    bool assigned_before = target && std::any_of(found.begin(), found.end(), [&](const InitStatement& i) { return i.name == target->id; });
    if (target && because.empty() && !assigned_before) {
      found.push_back(InitStatement{std::string(target->id), assign->value, false});
      continue;
    }
    if (because.empty()) because = "assigned by a statement that runs with the chain";
    for (const std::string& stored : names_in(s, ast::expr_context::Store)) out.call_time.emplace(stored, because);
    call_time_statements.push_back(s);
  }
  // Buffers: what the call-time part reads. Then, backwards, the locals of
  // __init__ a needed statement reads.
  std::set<std::string> read_at_call;
  for (const ast::stmt* s : call_time_statements)
    for (const std::string& n : names_in(s, ast::expr_context::Load)) read_at_call.insert(n);
  std::set<std::string> needed;
  for (auto i = found.rbegin(); i != found.rend(); ++i) {
    i->buffer = read_at_call.count(i->name) > 0;
    if (!i->buffer && !needed.count(i->name)) continue;
    needed.insert(i->name);
    for (const std::string& n : names_in(i->value, ast::expr_context::Load)) needed.insert(n);
  }
  for (InitStatement& i : found)
    if (needed.count(i.name)) out.statements.push_back(std::move(i));
    else out.call_time.emplace(i.name, "needed by no value built once");
  return out;
}

// The class that holds a module-level function's values built once: HF's
// `eager_attention_forward(module, ...)`, which the attention class calls
// with itself (`attention_interface(self, ...)`, through a name bound to the
// function or to an entry of a module-level dict holding it). `param` is the
// function's parameter that receives the instance; `why_not` says why there
// is none (no class calls it so, or several do).
struct Holder {
  ClassAt at;
  std::string param;
  std::string why_not;
};

Holder module_holder(const FunctionAt& fn, const model::SourceSet& sources) {
  Holder out;
  const std::string name(fn.fn->name);
  std::set<std::string> classes;  // "Class (param)" for the message
  const std::set<std::string> tables = tables_holding(sources, name);
  for (const auto& f : sources.files()) {
    for (const ast::stmt* s : f->parsed->module->body) {
      auto* cls = ast::as<ast::ClassDef>(s);
      if (!cls) continue;
      for (const ast::stmt* m : cls->body) {
        auto* method = ast::as<ast::FunctionDef>(m);
        if (!method || method->args->args.size == 0) continue;
        const std::string self = first_param(*method);
        const std::set<std::string> callees = names_holding(method, name, tables);
        model::walk(method, [&](const ast::Node* x) {
          auto* call = ast::as<ast::Call>(x);
          auto* callee = call ? ast::as<ast::Name>(call->func) : nullptr;
          if (!callee || !callees.count(std::string(callee->id))) return true;
          std::string param;
          for (size_t i = 0; i < call->args.size && i < fn.fn->args->args.size; ++i)
            if (is_name(call->args[i], self)) param = std::string(fn.fn->args->args[i]->arg);
          for (const ast::keyword* k : call->keywords)
            if (ast::present(k->arg) && is_name(k->value, self)) param = std::string(k->arg);
          if (param.empty()) return true;
          if (out.at.cls != cls || out.param != param) classes.insert(fmt::format("{} ({})", cls->name, param));
          out.at = ClassAt{f.get(), cls, method_named(*cls, "__init__"), std::string(cls->name)};
          out.param = param;
          return true;
        });
      }
    }
  }
  if (classes.size() > 1)
    out.why_not = fmt::format("{} is handed its module by several classes ({})", fn.qualified, fmt::join(classes, ", "));
  else if (!out.at.cls)
    out.why_not = fmt::format("{} is not a method, and no class calls it with itself", fn.qualified);
  return out;
}

// Constants of the replacement (no call-time input: the 2048 x 2048 causal
// mask) for a module-level function no one class hands itself (a varlen
// `causal_attention(q, k, v, scale)`): each becomes a module-level getter
// that builds the value once per device, placed before the file's first
// top-level def or class, and the replacement reads
// `getter(<first tensor argument>.device)`. Refused (why set) when no
// argument of the call names a tensor to take the device from.
ModuleBuffers module_level_constants(const FunctionAt& fn, const rules::Rule& rule, const InitSplit& constants,
                                     const std::map<std::string, std::string>& arguments, const std::string& candidate) {
  ModuleBuffers out;
  // The device comes from the replacement's first parameter spelt as a plain name.
  std::string tensor;
  for (const ast::arg* a : rule.replace->args->args)
    if (auto it = arguments.find(std::string(a->arg)); it != arguments.end() && is_identifier(it->second)) {
      tensor = it->second;
      break;
    }
  if (tensor.empty()) {
    out.refusal = "no argument of the call is a plain name to take the device from";
    return out;
  }
  const model::ModelFile& file = *fn.file;
  std::set<std::string> taken = names_in_file(file);
  const ast::stmt* anchor = nullptr;
  for (const ast::stmt* st : file.parsed->module->body)
    if (ast::as<ast::FunctionDef>(st) || ast::as<ast::AsyncFunctionDef>(st) || ast::as<ast::ClassDef>(st)) {
      anchor = st;
      break;
    }
  if (!anchor) {
    out.refusal = "the file has no top-level def or class to put the getter before";
    return out;
  }
  std::string_view rule_text = rule.file->parsed->source.text();
  std::string text;
  std::map<std::string, std::string> names;  // earlier constants, read through their getters
  for (const InitStatement& s : constants.statements) {
    std::string getter = fresh("npu_" + s.name, taken);
    taken.insert(getter);
    std::string cache = fresh("_" + getter, taken);
    taken.insert(cache);
    std::string value = substituted(rule_text, s.value, names);
    text += fmt::format(
        "{} = {{}}\n\n\n"
        "def {}(device):\n"
        "    # {}, built once per device (the replacement's constant).\n"
        "    if device not in {}:\n"
        "        {}[device] = ({}).to(device)\n"
        "    return {}[device]\n\n\n",
        cache, getter, s.name, cache, cache, value, cache);
    names[s.name] = getter + "(device)";
    out.reads[s.name] = fmt::format("{}({}.device)", getter, tensor);
  }
  // Before its decorators and the comment lines right above it.
  uint32_t at = anchor->begin;
  if (auto* d = ast::as<ast::FunctionDef>(anchor); d && d->decorator_list.size) at = std::min(at, d->decorator_list[0]->begin);
  if (auto* c = ast::as<ast::ClassDef>(anchor); c && c->decorator_list.size) at = std::min(at, c->decorator_list[0]->begin);
  const frontend::SourceFile& source = file.parsed->source;
  int line = source.line_col(at).line;
  for (; line > 1; --line) {
    std::string_view above = source.text().substr(source.line_start(line - 1), source.line_start(line) - source.line_start(line - 1));
    size_t lead = above.find_first_not_of(" \t");
    if (lead == std::string_view::npos || above[lead] != '#') break;
  }
  uint32_t begin = source.line_start(line);
  out.edits.push_back(Edit{file.path, begin, begin, text, candidate});
  return out;
}

ModuleBuffers module_buffers(const FunctionAt& fn, const model::SourceSet& sources, const rules::Rule& rule,
                             const std::map<std::string, std::string>& arguments, const std::string& candidate,
                             const model::ModelConfig* config) {
  ModuleBuffers out;
  const ast::FunctionDef& replace = *rule.replace;
  std::string_view rule_text = rule.file->parsed->source.text();
  InitSplit constants = split_init_time(replace, {}, {});
  if (constants.statements.empty() && rule.built_once.empty()) return out;
  const std::string first = !constants.statements.empty() ? constants.statements.front().name : rule.built_once.front();
  // The class whose __init__ builds them, and the name fn reads it by.
  ClassAt at;
  std::string module_param = first_param(*fn.fn);
  if (fn.is_method) {
    at.name = fn.qualified.substr(0, fn.qualified.rfind('.'));
    at.file = fn.file;
    at.cls = class_named(*fn.file, at.name);
    at.init = at.cls ? method_named(*at.cls, "__init__") : nullptr;
  } else {
    Holder holder = module_holder(fn, sources);
    if (!holder.why_not.empty() && rule.built_once.empty()) {
      // Only constants: a module-level getter holds them.
      ModuleBuffers getters = module_level_constants(fn, rule, constants, arguments, candidate);
      if (getters.refusal.empty()) return getters;
      out.refusal = fmt::format("there is no one module to hold {} once ({}), and {}", first, holder.why_not, getters.refusal);
      return out;
    }
    if (!holder.why_not.empty()) {
      out.refusal = fmt::format("there is no one module to hold {} once: {}", first, holder.why_not);
      return out;
    }
    at = holder.at;
    module_param = holder.param;
  }
  if (!at.init || at.init->body.size == 0) {
    out.refusal = fmt::format("{} has no __init__ to build {} in", at.name, first);
    return out;
  }

  // Which parameters have a value in __init__, and how it is spelt there.
  std::map<std::string, std::string> init_spelling, why_not;
  if (!rule.built_once.empty()) {
    const std::string prefix = module_param + ".";
    for (const auto& [param, text] : arguments) {
      std::string attr = text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : "";
      bool plain = !attr.empty() && std::all_of(attr.begin(), attr.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; });
      if (!plain) {
        why_not[param] = fmt::format("{} = {}, which is not an attribute {} sets once", param, text, at.name);
        continue;
      }
      if (std::string why = not_fixed_at_init(at, sources, config, attr); !why.empty()) {
        why_not[param] = why;
        continue;
      }
      init_spelling[param] = first_param(*at.init) + "." + attr;
    }
    for (const auto& [param, spellings] : rule.init_bindings) {
      if (init_spelling.count(param)) continue;
      std::vector<std::string> unusable;  // spellings that exist but do not hold a fixed value
      for (const std::string& s : spellings) {
        std::string why = spelling_unusable(at, sources, config, s);
        if (why.empty()) {
          init_spelling[param] = s;
          break;
        }
        if (why.find(" has no parameter ") == std::string::npos && why.find(" does not set ") == std::string::npos)
          unusable.push_back(why);
      }
      if (init_spelling.count(param)) continue;
      std::vector<std::string> own;
      for (const ast::arg* a : at.init->args->args) own.emplace_back(a->arg);
      if (!own.empty()) own.erase(own.begin());
      why_not[param] = fmt::format("{}.__init__ knows no {}: it has none of {} (its parameters: {}){}", at.name, param,
                                   fmt::join(spellings, ", "), own.empty() ? "none" : fmt::format("{}", fmt::join(own, ", ")),
                                   unusable.empty() ? "" : fmt::format("; {}", fmt::join(unusable, "; ")));
    }
  }
  std::set<std::string> init_params;
  for (const auto& [param, _] : init_spelling) init_params.insert(param);
  // Without built_once locals only the constants move.
  InitSplit split = rule.built_once.empty() ? std::move(constants) : split_init_time(replace, init_params, why_not);
  for (const std::string& local : rule.built_once)
    if (auto it = split.call_time.find(local); it != split.call_time.end()) {
      out.refusal = fmt::format("{} cannot be built once in {}.__init__: {}", local, at.name, it->second);
      return out;
    }
  bool reads_init_values = std::any_of(split.statements.begin(), split.statements.end(), [&](const InitStatement& s) {
    std::set<std::string> reads = names_in(s.value, ast::expr_context::Load);
    return std::any_of(reads.begin(), reads.end(), [&](const std::string& r) { return init_params.count(r) > 0; });
  });
  if (reads_init_values)
    for (const ast::expr* d : fn.fn->decorator_list) {
      if (harmless_decorator(*fn.file, d)) continue;
      std::string why = stale_by_decorator(rule, decorator_name(d), config);
      if (!why.empty()) {
        out.refusal = fmt::format("{} is decorated with @{}, {}: values built once in __init__ could go stale",
                                  fn.qualified, text_of(*fn.file, d), why);
        return out;
      }
    }

  // The statements, in __init__'s terms: parameters as spelt there, locals
  // renamed where __init__ uses the name, buffers named apart from the
  // class's own attributes.
  std::set<std::string> init_names = names_in_function(*at.init);
  std::set<std::string> attributes = attributes_of(*at.cls);
  std::map<std::string, std::string> names = init_spelling;
  std::string self = first_param(*at.init);
  const ast::stmt* last = at.init->body[at.init->body.size - 1];
  const frontend::SourceFile& source = at.file->parsed->source;
  uint32_t line_start = source.line_start(last->lineno);
  std::string indent(source.text().substr(line_start, last->begin - line_start));
  indent = indent.substr(0, indent.find_first_not_of(" \t"));  // `a = 1; b = 2`: the line's own indentation
  std::string text;
  for (const InitStatement& s : split.statements) {
    std::string value = substituted(rule_text, s.value, names);
    if (s.buffer) {
      std::string buffer = fresh(s.name, attributes);
      attributes.insert(buffer);
      // Built once; not saved with the weights.
      text += fmt::format("{}{}.register_buffer(\"{}\", {}, persistent=False)\n", indent, self, buffer, value);
      names[s.name] = self + "." + buffer;
      out.reads[s.name] = module_param + "." + buffer;
    } else {
      std::string local = fresh(s.name, init_names);
      init_names.insert(local);
      text += fmt::format("{}{} = {}\n", indent, local, value);
      names[s.name] = local;
      out.left_out.insert(s.name);
    }
  }
  // On lines of their own after the last statement's line, so that a comment
  // ending that line stays on it and the diff only adds lines (a CRLF file's
  // line ends are apply_edits' business).
  if (!text.empty()) {
    std::string_view all = source.text();
    size_t newline = all.find('\n', last->end);
    uint32_t at_offset = newline == std::string_view::npos ? static_cast<uint32_t>(all.size()) : static_cast<uint32_t>(newline + 1);
    if (newline == std::string_view::npos) text = "\n" + text.substr(0, text.size() - 1);
    out.edits.push_back(Edit{at.file->path, at_offset, at_offset, text, candidate});
  }
  return out;
}

}  // namespace npufuse::apply

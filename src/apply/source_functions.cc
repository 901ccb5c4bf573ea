#include "apply/source_functions.h"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "frontend/parser.h"
#include "model/ast_walk.h"
#include "model/function_index.h"

namespace npufuse::apply {
namespace {

// The file's functions that apply can rewrite: an `async def` (no FunctionDef
// node) is never one.
std::vector<model::FunctionRange> rewritable_functions(const model::ModelFile& file) {
  std::vector<model::FunctionRange> out = model::functions_of(file);
  out.erase(std::remove_if(out.begin(), out.end(), [](const model::FunctionRange& f) { return f.fn == nullptr; }), out.end());
  return out;
}

FunctionAt at(const model::ModelFile& file, const model::FunctionRange& f) {
  return FunctionAt{&file, f.fn, f.qualified, f.is_method};
}

}  // namespace

const model::ModelFile* file_named(const model::SourceSet& sources, const std::string& path) {
  for (const auto& f : sources.files())
    if (f->path == path) return f.get();
  return nullptr;
}

std::optional<FunctionAt> function_around(const model::ModelFile& file, uint32_t begin, uint32_t end) {
  std::vector<model::FunctionRange> functions = rewritable_functions(file);
  const model::FunctionRange* f = model::function_around(functions, begin, end);
  if (!f) return std::nullopt;
  return at(file, *f);
}

std::optional<FunctionAt> function_named(const model::SourceSet& sources, const std::string& qualified) {
  for (const auto& file : sources.files())
    for (const model::FunctionRange& f : rewritable_functions(*file))
      if (f.qualified == qualified) return at(*file, f);
  return std::nullopt;
}

namespace ast = frontend::ast;

const ast::ClassDef* class_named(const model::ModelFile& file, std::string_view name) {
  for (const ast::stmt* s : file.parsed->module->body)
    if (auto* cls = ast::as<ast::ClassDef>(s); cls && cls->name == name) return cls;
  return nullptr;
}

const ast::FunctionDef* method_named(const ast::ClassDef& cls, std::string_view name) {
  for (const ast::stmt* s : cls.body)
    if (auto* fn = ast::as<ast::FunctionDef>(s); fn && fn->name == name) return fn;
  return nullptr;
}

const ast::Assign* self_assignment(const ast::FunctionDef& fn, std::string_view attribute) {
  for (const ast::stmt* s : fn.body) {
    auto* assign = ast::as<ast::Assign>(s);
    if (!assign || assign->targets.size != 1) continue;
    auto* target = ast::as<ast::Attribute>(assign->targets[0]);
    auto* owner = target ? ast::as<ast::Name>(target->value) : nullptr;
    if (owner && owner->id == "self" && target->attr == attribute) return assign;
  }
  return nullptr;
}

bool is_name(const ast::expr* e, std::string_view id) {
  auto* name = ast::as<ast::Name>(e);
  return name && name->id == id;
}

std::string first_param(const ast::FunctionDef& fn) {
  return fn.args->args.size ? std::string(fn.args->args[0]->arg) : std::string();
}

bool is_self_attribute(const ast::expr* e, const std::string& self, std::string_view attr) {
  auto* a = ast::as<ast::Attribute>(e);
  return a && a->attr == attr && is_name(a->value, self);
}

const ast::Call* registration(const ast::Node* n, const std::string& self, std::string_view attr) {
  auto is_string = [](const ast::expr* e, std::string_view text) {
    auto* c = ast::as<ast::Constant>(e);
    return c && c->value.kind == ast::ConstantKind::Str && ast::constant_string(c->value) == text;
  };
  auto* call = ast::as<ast::Call>(n);
  if (!call) return nullptr;
  if (auto* f = ast::as<ast::Attribute>(call->func);
      f && is_name(f->value, self) && (f->attr == "register_buffer" || f->attr == "register_parameter"))
    return call->args.size && is_string(call->args[0], attr) ? call : nullptr;
  if (is_name(call->func, "setattr") && call->args.size >= 2 && is_name(call->args[0], self) && is_string(call->args[1], attr))
    return call;
  return nullptr;
}

int changes_attribute(const ast::FunctionDef& method, std::string_view attr, const ast::Node* except) {
  int line = 0;
  std::string self = first_param(method);
  model::walk(&method, [&](const ast::Node* x) {
    if (line) return false;
    if (auto* a = ast::as<ast::Attribute>(x); a && a->ctx != ast::expr_context::Load && is_self_attribute(a, self, attr))
      line = static_cast<int>(a->lineno);
    if (auto* s = ast::as<ast::Subscript>(x); s && s->ctx != ast::expr_context::Load && is_self_attribute(s->value, self, attr))
      line = static_cast<int>(s->lineno);
    if (x != except && registration(x, self, attr)) line = static_cast<int>(x->lineno);
    if (auto* call = ast::as<ast::Call>(x))
      if (auto* f = ast::as<ast::Attribute>(call->func); f && !f->attr.empty() && f->attr.back() == '_' &&
                                                         is_self_attribute(f->value, self, attr))
        line = static_cast<int>(call->lineno);
    return true;
  });
  return line;
}

std::string text_of(const model::ModelFile& file, const ast::Node* n) {
  return std::string(file.parsed->source.text().substr(n->begin, n->end - n->begin));
}

std::optional<std::string> own_line_indent(const model::ModelFile& file, const ast::Node* n) {
  const frontend::SourceFile& src = file.parsed->source;
  uint32_t start = src.line_start(src.line_col(n->begin).line);
  std::string lead(src.text().substr(start, n->begin - start));
  if (lead.find_first_not_of(" \t") != std::string::npos) return std::nullopt;
  return lead;
}

std::set<std::string> names_in_file(const model::ModelFile& file) {
  std::set<std::string> out;
  model::walk(file.parsed->module, [&](const ast::Node* x) {
    if (auto* name = ast::as<ast::Name>(x)) out.insert(std::string(name->id));
    if (auto* def = ast::as<ast::FunctionDef>(x)) out.insert(std::string(def->name));
    if (auto* cls = ast::as<ast::ClassDef>(x)) out.insert(std::string(cls->name));
    return true;
  });
  return out;
}

std::string last_name(const ast::expr* e) {
  if (auto* name = ast::as<ast::Name>(e)) return std::string(name->id);
  if (auto* attr = ast::as<ast::Attribute>(e)) return std::string(attr->attr);
  return "";
}

bool is_docstring(const ast::stmt* s) {
  auto* e = ast::as<ast::Expr>(s);
  return e && ast::as<ast::Constant>(e->value);
}

std::set<std::string> names_in(const ast::Node* n, ast::expr_context ctx, const std::function<bool(const ast::Node*)>& skip) {
  std::set<std::string> out;
  model::walk(n, [&](const ast::Node* x) {
    if (skip && skip(x)) return false;
    if (auto* name = ast::as<ast::Name>(x); name && name->ctx == ctx) out.insert(std::string(name->id));
    return true;
  });
  return out;
}

namespace {

// `NAME = value` or `NAME: T = value`: the name and the value; nulls otherwise.
std::pair<const ast::Name*, const ast::expr*> bound_value(const ast::Node* x) {
  if (auto* a = ast::as<ast::Assign>(x); a && a->targets.size == 1) return {ast::as<ast::Name>(a->targets[0]), a->value};
  if (auto* a = ast::as<ast::AnnAssign>(x); a && a->value) return {ast::as<ast::Name>(a->target), a->value};
  return {nullptr, nullptr};
}

bool names(const ast::expr* e, const std::string& name) {
  auto* n = e ? ast::as<ast::Name>(e) : nullptr;
  return n && n->id == name;
}

}  // namespace

std::set<std::string> tables_holding(const model::SourceSet& sources, const std::string& name) {
  std::set<std::string> out;
  for (const auto& f : sources.files())
    for (const ast::stmt* s : f->parsed->module->body) {
      auto [table, value] = bound_value(s);
      auto* dict = table ? ast::as<ast::Dict>(value) : nullptr;
      if (!dict) continue;
      for (const ast::expr* v : dict->values)
        if (names(v, name)) out.insert(std::string(table->id));
    }
  return out;
}

std::set<std::string> names_holding(const ast::Node* scope, const std::string& name, const std::set<std::string>& tables) {
  std::set<std::string> out{name};
  model::walk(scope, [&](const ast::Node* x) {
    auto [bound, value] = bound_value(x);
    if (!bound) return true;
    auto* entry = ast::as<ast::Subscript>(value);
    auto* table = entry ? ast::as<ast::Name>(entry->value) : nullptr;
    if (names(value, name) || (table && tables.count(std::string(table->id)))) out.insert(std::string(bound->id));
    return true;
  });
  return out;
}

std::vector<FunctionAt> every_function(const model::SourceSet& sources) {
  std::vector<FunctionAt> out;
  for (const auto& file : sources.files())
    for (const model::FunctionRange& f : rewritable_functions(*file))
      if (f.qualified.find(".<locals>.") == std::string::npos) out.push_back(at(*file, f));  // nested: walked with its holder
  return out;
}

std::vector<OtherBinding> other_bindings(const FunctionAt& caller, const std::string& name,
                                         const std::set<std::string>& tables) {
  std::set<std::string> holders = names_holding(caller.fn, name, tables);
  holders.erase(name);
  std::vector<OtherBinding> out;
  model::walk(caller.fn, [&](const ast::Node* x) {
    auto* branch = ast::as<ast::If>(x);
    if (!branch) return !ast::as<ast::Lambda>(x);
    auto look = [&](const frontend::Span<ast::stmt*>& arm) {
      for (const ast::stmt* s : arm) {
        auto [bound, value] = bound_value(s);
        if (!bound || !holders.count(std::string(bound->id)) || names(value, name)) continue;
        auto* entry = ast::as<ast::Subscript>(value);
        auto* table = entry ? ast::as<ast::Name>(entry->value) : nullptr;
        if (table && tables.count(std::string(table->id))) continue;
        out.push_back(OtherBinding{static_cast<int>(branch->lineno), text_of(*caller.file, branch->test),
                                   std::string(bound->id), text_of(*caller.file, value)});
      }
    };
    look(branch->body);
    look(branch->orelse);
    return true;
  });
  return out;
}

std::optional<bool> primary_expression(const std::string& text, bool constants) {
  try {
    auto parsed = frontend::parse_expression(text, "<binding>");
    switch (parsed->expr->kind) {
      case ast::NodeKind::Name:
      case ast::NodeKind::Attribute:
      case ast::NodeKind::Call:
      case ast::NodeKind::Subscript:
        return true;
      case ast::NodeKind::Constant:
        return constants;
      default:
        return false;
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::set<std::string> parameter_names(const ast::FunctionDef& fn) {
  std::set<std::string> out;
  for (const ast::arg* a : fn.args->args) out.insert(std::string(a->arg));
  for (const ast::arg* a : fn.args->kwonlyargs) out.insert(std::string(a->arg));
  return out;
}

// class_constant: an expression of another method of fn's class that reads nothing but the
// module's attributes which only __init__ sets, through builtins such as
// len (DeepSeek-V3's `num_classes=len(self.experts)` in the `moe` method the
// forward calls): it has the same value anywhere in the class's methods, so
// it is spelt as written in fn. Empty when it is not one.
std::string class_constant(const FunctionAt& fn, uint32_t begin, uint32_t end) {
  if (!fn.is_method) return "";
  std::optional<FunctionAt> holder = function_around(*fn.file, begin, end);
  if (!holder || !holder->is_method || holder->fn == fn.fn) return "";
  std::string cls = fn.qualified.substr(0, fn.qualified.find('.'));
  if (holder->qualified.substr(0, holder->qualified.find('.')) != cls) return "";
  const ast::ClassDef* owner = class_named(*fn.file, cls);
  std::string self = first_param(*fn.fn);
  if (!owner || self.empty() || first_param(*holder->fn) != self) return "";
  static const std::set<std::string> builtins = {"len", "int", "float", "min", "max", "abs"};
  std::string_view source = fn.file->parsed->source.text();
  std::string text(source.substr(begin, end - begin));
  bool plain = true;
  std::set<std::string> attributes;
  try {
    auto parsed = frontend::parse_expression(text, "<binding>");
    model::walk(parsed->expr, [&](const ast::Node* x) {
      if (auto* call = ast::as<ast::Call>(x)) {
        auto* f = ast::as<ast::Name>(call->func);
        if (!f || !builtins.count(std::string(f->id)) || call->keywords.size) plain = false;
      } else if (auto* at = ast::as<ast::Attribute>(x)) {
        // Only `self.<attr>`: a deeper chain reads something the attribute holds.
        if (is_name(at->value, self)) attributes.insert(std::string(at->attr));
        else plain = false;
        return false;
      } else if (auto* n = ast::as<ast::Name>(x)) {
        if (n->id != self && !builtins.count(std::string(n->id))) plain = false;
      } else if (!ast::as<ast::Constant>(x) && !ast::as<ast::BinOp>(x)) {
        plain = false;
      }
      return plain;
    });
  } catch (const std::exception&) {
    return "";
  }
  if (!plain || attributes.empty()) return "";
  for (const ast::stmt* s : owner->body) {
    auto* method = ast::as<ast::FunctionDef>(s);
    if (!method || method->name == "__init__") continue;
    for (const std::string& attr : attributes)
      if (changes_attribute(*method, attr)) return "";
  }
  return text;
}

}  // namespace npufuse::apply

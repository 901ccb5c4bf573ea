#include "apply/binding_spelling.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <optional>
#include <set>

#include "frontend/parser.h"
#include "model/ast_walk.h"
#include "util/identifier.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;
using Origin = plan::Candidate::BindingOrigin;

// Code that runs in a scope of its own: its names are not fn's.
bool own_scope(const ast::Node* n) {
  return ast::as<ast::FunctionDef>(n) || ast::as<ast::AsyncFunctionDef>(n) || ast::as<ast::ClassDef>(n) ||
         ast::as<ast::Lambda>(n) || ast::as<ast::ListComp>(n) || ast::as<ast::SetComp>(n) || ast::as<ast::DictComp>(n) ||
         ast::as<ast::GeneratorExp>(n);
}

// Where fn's own code binds (or deletes) `name` in bytes [from, to).
std::vector<const ast::Name*> stores_of(const ast::FunctionDef& fn, const std::string& name, uint32_t from, uint32_t to) {
  std::vector<const ast::Name*> out;
  for (const ast::stmt* s : fn.body)
    model::walk(s, [&](const ast::Node* n) {
      if (own_scope(n) || n->begin >= to || n->end <= from) return false;
      if (auto* x = ast::as<ast::Name>(n); x && x->ctx != ast::expr_context::Load && x->id == name && x->begin >= from)
        out.push_back(x);
      return true;
    });
  return out;
}

bool is_parameter(const ast::FunctionDef& fn, const std::string& name) {
  const ast::arguments* a = fn.args;
  auto named = [&](const ast::arg* p) { return p && p->arg == name; };
  for (const ast::arg* p : a->posonlyargs)
    if (named(p)) return true;
  for (const ast::arg* p : a->args)
    if (named(p)) return true;
  for (const ast::arg* p : a->kwonlyargs)
    if (named(p)) return true;
  return named(a->vararg) || named(a->kwarg);
}

// Statement kinds come first in NodeKind, from FunctionDef to TypeAlias.
bool is_statement(const ast::Node* n) {
  return n->kind >= ast::NodeKind::FunctionDef && n->kind <= ast::NodeKind::TypeAlias;
}

bool holds(const ast::Node* n, uint32_t at) { return n->begin <= at && at < n->end; }

// The statements of fn that hold byte `at`, outermost first.
std::vector<const ast::stmt*> statements_around(const ast::FunctionDef& fn, uint32_t at) {
  std::vector<const ast::stmt*> out;
  for (const ast::stmt* s : fn.body)
    model::walk(s, [&](const ast::Node* n) {
      if (!holds(n, at) || (own_scope(n) && n != s)) return false;
      if (is_statement(n)) out.push_back(static_cast<const ast::stmt*>(n));
      return true;
    });
  return out;
}

bool same_range(const Origin& o, const std::string& file, const ast::Node* n) {
  return o.range.file == file && o.range.begin == n->begin && o.range.end == n->end;
}

// Whether `name`, read at byte `point` of fn, holds the value `origin` produced.
bool name_holds(const FunctionAt& fn, const std::string& name, const Origin& origin, uint32_t point) {
  const std::string& file = fn.file->path;
  std::vector<const ast::Name*> stores = stores_of(*fn.fn, name, fn.fn->body[0]->begin, point);
  if (stores.empty())
    return origin.kind == Origin::Kind::Parameter && is_parameter(*fn.fn, name) && same_range(origin, file, fn.fn);
  const ast::Name* last = *std::max_element(stores.begin(), stores.end(),
                                            [](const ast::Name* a, const ast::Name* b) { return a->begin < b->begin; });
  if (last->ctx == ast::expr_context::Del) return false;

  // A store inside an if or a loop that does not hold the edit point reaches
  // it through the names merged after that statement (a `with` body always runs).
  std::vector<const ast::stmt*> around = statements_around(*fn.fn, last->begin);
  for (const ast::stmt* s : around) {
    if (holds(s, point) || ast::as<ast::With>(s) || ast::as<ast::AsyncWith>(s)) continue;
    bool merges = ast::as<ast::If>(s) || ast::as<ast::For>(s) || ast::as<ast::AsyncFor>(s) || ast::as<ast::While>(s);
    if (!merges) {
      if (s == around.back()) break;  // the simple statement that binds the name
      return false;                  // try/match: which clause ran is not known
    }
    return origin.kind == Origin::Kind::Merge && same_range(origin, file, s);
  }
  if (around.empty()) return false;
  const ast::stmt* binder = around.back();
  if (origin.kind == Origin::Kind::Unpacked) {
    // `a, b = call(...)`: the name is one element of the assignment's target.
    auto* a = ast::as<ast::Assign>(binder);
    if (!a || a->targets.size != 1 || !same_range(origin, file, binder)) return false;
    const frontend::Span<ast::expr*>* elts = nullptr;
    if (auto* t = ast::as<ast::Tuple>(a->targets[0])) elts = &t->elts;
    if (auto* l = ast::as<ast::List>(a->targets[0])) elts = &l->elts;
    return elts && std::find(elts->begin(), elts->end(), last) != elts->end();
  }
  if (origin.kind != Origin::Kind::Expression && origin.kind != Origin::Kind::Merge) return false;
  const ast::expr* value = nullptr;
  if (auto* a = ast::as<ast::Assign>(binder); a && a->targets.size == 1 && a->targets[0] == last) value = a->value;
  if (auto* a = ast::as<ast::AnnAssign>(binder); a && a->target == last) value = a->value;
  // `scores = linear(x, w)`, a helper whose several returns merge at its call.
  if (origin.kind == Origin::Kind::Merge) return value && ast::as<ast::Call>(value) && same_range(origin, file, value);
  if (auto* a = ast::as<ast::AugAssign>(binder); a && a->target == last) return same_range(origin, file, binder);
  if (!value) return false;
  if (same_range(origin, file, value)) return true;
  // `name = self.norm(x)`: the value is computed inside the called helper.
  bool from_helper = origin.range.file != file || origin.range.end <= fn.fn->body[0]->begin || origin.range.begin >= fn.fn->end;
  return from_helper && ast::as<ast::Call>(value);
}

// Another name for the value: `alias = name` in fn before byte `point`,
// where `name` still held the value, and nothing assigned `alias` again
// before `point` (HF's `residual = hidden_states` before hidden_states is
// reassigned). Empty when there is none.
std::string alias_holding(const FunctionAt& fn, const std::string& name, const Origin& origin, uint32_t point) {
  std::string found;
  for (const ast::stmt* s : fn.fn->body)
    model::walk(s, [&](const ast::Node* n) {
      if (own_scope(n) || n->begin >= point) return false;
      auto* a = ast::as<ast::Assign>(n);
      if (!a || a->targets.size != 1) return true;
      auto* target = ast::as<ast::Name>(a->targets[0]);
      auto* source = ast::as<ast::Name>(a->value);
      if (!target || !source || source->id != name || target->id == name) return true;
      if (!name_holds(fn, name, origin, a->begin)) return true;
      // The alias's last store before the point must be this assignment.
      std::vector<const ast::Name*> stores = stores_of(*fn.fn, std::string(target->id), a->end, point);
      if (stores.empty()) found = std::string(target->id);
      return true;
    });
  return found;
}

int reads_of(const ast::FunctionDef& replace, const std::string& param) {
  int n = 0;
  for (const ast::stmt* s : replace.body)
    model::walk(s, [&](const ast::Node* x) {
      if (auto* name = ast::as<ast::Name>(x); name && name->ctx == ast::expr_context::Load && name->id == param) ++n;
      return true;
    });
  return n;
}

std::string line_at(const FunctionAt& fn, uint32_t at) {
  return fmt::format("{}:{}", fn.file->path, fn.file->parsed->source.line_col(at).line);
}

// The source of the expression that computed the bound value, when the edit
// removes that expression anyway (so moving it into the replacement computes
// it once, where it was computed before) and what it reads is not
// reassigned by an earlier replaced statement.
std::optional<std::string> moved_expression(const Origin& origin, const SpellingRequest& r, std::string& why) {
  const FunctionAt& fn = *r.fn;
  if (origin.kind != Origin::Kind::Expression || origin.range.file != fn.file->path) return std::nullopt;
  auto removed = std::find_if(r.removed.begin(), r.removed.end(), [&](const auto& range) {
    return range.first <= origin.range.begin && origin.range.end <= range.second;
  });
  if (removed == r.removed.end()) return std::nullopt;
  std::string_view source = fn.file->parsed->source.text();
  std::string text(source.substr(origin.range.begin, origin.range.end - origin.range.begin));
  std::set<std::string> reads;
  try {
    auto parsed = frontend::parse_expression(text, "<binding>");
    model::walk(parsed->expr, [&](const ast::Node* x) {
      if (auto* name = ast::as<ast::Name>(x); name && name->ctx == ast::expr_context::Load) reads.insert(std::string(name->id));
      return true;
    });
  } catch (const std::exception&) {
    return std::nullopt;
  }
  for (const std::string& name : reads)
    if (!stores_of(*fn.fn, name, r.edit_point, removed->first).empty()) {
      why = fmt::format("'{}' is assigned again between {} and {}", name, line_at(fn, r.edit_point),
                        line_at(fn, origin.range.begin));
      return std::nullopt;
    }
  return text;
}

// The rank a `x.reshape(a, b, ...)` / `x.view((a, b, ...))` gives, when the
// expression is one; 0 otherwise.
size_t view_rank(const std::string& text) {
  try {
    auto parsed = frontend::parse_expression(text, "<binding>");
    auto* call = ast::as<ast::Call>(parsed->expr);
    auto* f = call ? ast::as<ast::Attribute>(call->func) : nullptr;
    if (!f || (f->attr != "reshape" && f->attr != "view") || call->keywords.size != 0 || call->args.size == 0) return 0;
    for (const ast::expr* a : call->args)
      if (ast::as<ast::Starred>(a)) return 0;
    if (call->args.size == 1) {
      if (auto* t = ast::as<ast::Tuple>(call->args[0])) return t->elts.size;
      if (ast::as<ast::List>(call->args[0])) return ast::as<ast::List>(call->args[0])->elts.size;
      return ast::as<ast::Constant>(call->args[0]) ? 1 : 0;  // a dtype or a size tuple held in a name: not evident
    }
    return call->args.size;
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

SpelledBindings spell_bindings(const plan::Candidate& c, const SpellingRequest& r) {
  SpelledBindings out;
  std::map<std::pair<uint32_t, uint32_t>, int> moved_uses;  // a moved expression must be computed once
  for (size_t i = 0; i < c.apply_bindings.size(); ++i) {
    const auto& [param, text] = c.apply_bindings[i];
    Origin origin = i < c.apply_binding_origins.size() ? c.apply_binding_origins[i] : Origin{};
    // "1 / x": a parameter the model divides by.
    std::string prefix = text.rfind("1 / ", 0) == 0 ? "1 / " : "";
    std::string name = text.substr(prefix.size());
    // "view(...)": the analysis' own description of an unnamed value, not code.
    bool described = name.find("(...)") != std::string::npos;
    uint32_t point = r.edit_point;
    if (!described && is_identifier(name))
      for (const auto& [begin, end] : r.hoisted)
        if (!stores_of(*r.fn->fn, name, begin, end).empty()) point = end;
    if (origin.kind == Origin::Kind::Other ||
        (!described && (!is_identifier(name) || name_holds(*r.fn, name, origin, point)))) {
      out.arguments[param] = text;
      continue;
    }
    if (!described && prefix.empty()) {
      if (std::string alias = alias_holding(*r.fn, name, origin, r.edit_point); !alias.empty()) {
        out.arguments[param] = alias;
        continue;
      }
    }
    std::string why;
    if (std::optional<std::string> moved = moved_expression(origin, r, why)) {
      if (auto d = r.declared_rank.find(param); d != r.declared_rank.end())
        if (size_t rank = view_rank(*moved); rank && rank != d->second.first) {
          out.refusal = fmt::format(
              "{} is bound to `{}` ({}), a {}-D view, where the fused call takes {} as {}: the model reshapes it for its "
              "own formulation (heads grouped per KV head, say); the call needs the tensor before that view; edit it by "
              "hand",
              param, *moved, line_at(*r.fn, origin.range.begin), rank, param, d->second.second);
          return out;
        }
      int& uses = moved_uses[{origin.range.begin, origin.range.end}];
      uses += r.replace ? reads_of(*r.replace, param) : 1;
      if (uses > 1) {
        out.refusal = fmt::format("{} is `{}` ({}), which the replacement would compute more than once; edit it by hand",
                                  param, *moved, line_at(*r.fn, origin.range.begin));
        return out;
      }
      out.arguments[param] = prefix.empty() ? *moved : prefix + "(" + *moved + ")";
      continue;
    }
    // The name the chain's op reads after casts outside the chain, where it
    // holds that value (the caller's `q_pe` for a rotary helper's unnamed or
    // local result).
    if (i < c.apply_binding_cast_reads.size() && prefix.empty()) {
      const plan::Candidate::ReaderSide& cast = c.apply_binding_cast_reads[i];
      if (is_identifier(cast.text) && name_holds(*r.fn, cast.text, cast.origin, point)) {
        out.arguments[param] = cast.text;
        continue;
      }
    }
    std::string where = origin.range.file == r.fn->file->path && origin.range.end > origin.range.begin
                            ? line_at(*r.fn, origin.range.begin)
                            : origin.range.file;
    std::string at = line_at(*r.fn, r.edit_point);
    std::string problem =
        described ? fmt::format("the unnamed value {} made at {}, which the rewrite cannot move to {}", name, where, at)
                  : fmt::format("the value made at {}, but '{}' does not hold that value at {}", where, name, at);
    out.refusal = fmt::format("{} is bound to {}{}; edit it by hand", param, problem, why.empty() ? "" : " (" + why + ")");
    return out;
  }
  return out;
}

}  // namespace npufuse::apply

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

// A view the model put on a bound tensor, read from the expression that
// made it: `x.reshape(a, b, ...)` / `x.view((a, b, ...))` (rank: how many
// sizes) or `x.unsqueeze(n)` / `x[:, :, None]` (unit_axis: the new axis).
struct ViewOf {
  size_t rank = 0;      // 0: no reshape with evident sizes
  std::optional<int> unit_axis;  // the new unit axis as written (negative: from the back)
  std::string receiver; // the viewed tensor, when it is a plain name
};

ViewOf view_of(const std::string& text) {
  ViewOf out;
  try {
    auto parsed = frontend::parse_expression(text, "<binding>");
    std::string_view src = text;
    auto name_of = [&](const ast::expr* e) {
      auto* n = ast::as<ast::Name>(e);
      return n ? std::string(n->id) : std::string();
    };
    if (auto* sub = ast::as<ast::Subscript>(parsed->expr)) {
      // x[:, :, None]: full slices, then one None.
      auto* index = ast::as<ast::Tuple>(sub->slice);
      if (!index) return out;
      std::optional<int> axis;
      for (size_t i = 0; i < index->elts.size; ++i) {
        const ast::expr* e = index->elts[i];
        auto* full = ast::as<ast::Slice>(e);
        bool is_full = full && !full->lower && !full->upper && !full->step;
        auto* none = ast::as<ast::Constant>(e);
        bool is_none = none && src.substr(none->begin, none->end - none->begin) == "None";
        if (is_none && i + 1 == index->elts.size) axis = static_cast<int>(i);
        else if (!is_full) return out;
      }
      out.unit_axis = axis;
      out.receiver = name_of(sub->value);
      return out;
    }
    auto* call = ast::as<ast::Call>(parsed->expr);
    auto* f = call ? ast::as<ast::Attribute>(call->func) : nullptr;
    if (!f || call->keywords.size != 0 || call->args.size == 0) return out;
    for (const ast::expr* a : call->args)
      if (ast::as<ast::Starred>(a)) return out;
    out.receiver = name_of(f->value);
    if (f->attr == "unsqueeze") {
      auto* c = call->args.size == 1 ? ast::as<ast::Constant>(call->args[0]) : nullptr;
      auto* neg = call->args.size == 1 ? ast::as<ast::UnaryOp>(call->args[0]) : nullptr;
      if (neg && neg->op == ast::unaryop::USub) c = ast::as<ast::Constant>(neg->operand);
      std::string digits = c ? std::string(src.substr(c->begin, c->end - c->begin)) : "";
      if (!digits.empty() && digits.size() < 3 &&
          std::all_of(digits.begin(), digits.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }))
        out.unit_axis = neg ? -std::stoi(digits) : std::stoi(digits);
      return out;
    }
    if (f->attr != "reshape" && f->attr != "view") return out;
    if (call->args.size == 1) {
      if (auto* t = ast::as<ast::Tuple>(call->args[0])) out.rank = t->elts.size;
      else if (auto* l = ast::as<ast::List>(call->args[0])) out.rank = l->elts.size;
      else if (ast::as<ast::Constant>(call->args[0])) out.rank = 1;  // a dtype or a size tuple held in a name: not evident
      return out;
    }
    out.rank = call->args.size;
  } catch (const std::exception&) {
  }
  return out;
}

// The grouped-query form of GQA among a chain's bindings: queries with heads
// regrouped to [b, kv, group, s, d], keys and values given a unit group axis.
struct GroupedForm {
  std::vector<std::string> regrouped;  // parameters declared (B, N, S, D) bound to a 5-D regroup
  std::vector<std::string> unit_axis;  // parameters declared (B, KVN, S, D) bound to x.unsqueeze(2)
  std::string first_refusal;           // what the refusal says when the form is not complete
};

// Squeezing the axes `views` added, last first: `.squeeze(1)` after
// `x.unsqueeze(1)`, exactly the value before them (each axis has size 1).
std::string undo_views(const std::vector<int>& axes) {
  std::string out;
  for (auto a = axes.rbegin(); a != axes.rend(); ++a) out += fmt::format(".squeeze({})", *a);
  return out;
}

// `text` as the receiver of a method call.
std::string receiver_text(const std::string& text) {
  return primary_expression(text, false).value_or(false) ? text : "(" + text + ")";
}

}  // namespace

std::string viewed_spelling(const std::string& after_views, const std::vector<int>& axes) {
  return receiver_text(after_views) + undo_views(axes);
}

namespace {

// The parameter's spelling, the bound value made from the value after the
// chain's own unit-axis views, when the binding has no spelling of its own:
// the views were left in the caller (ViewedSide::left_in_place), or the
// expression that made the bound value goes on to make the value after them
// (`cos = cos[None, None]`: the chain bound the table after the first None,
// and that text spells the table after both). The value after the views is
// what the chain reads, with the rank the model gives it, whatever form
// the rule's replace assumes.
const plan::Candidate::ViewedSide* spelt_after_views(const plan::Candidate& c, size_t i, const Origin& origin) {
  if (i >= c.apply_binding_viewed.size()) return nullptr;
  const plan::Candidate::ViewedSide& side = c.apply_binding_viewed[i];
  if (side.views.empty()) return nullptr;
  if (side.left_in_place) return &side;
  if (origin.kind != Origin::Kind::Expression) return nullptr;
  bool text_goes_on = std::any_of(side.views.begin(), side.views.end(), [&](const plan::Candidate::SourceRange& v) {
    return v.file == origin.range.file && v.begin == origin.range.begin && v.end == origin.range.end;
  });
  return text_goes_on ? &side : nullptr;
}

}  // namespace

SpelledBindings spell_bindings(const plan::Candidate& c, const SpellingRequest& r) {
  SpelledBindings out;
  std::map<std::pair<uint32_t, uint32_t>, int> moved_uses;  // a moved expression must be computed once
  GroupedForm grouped;
  for (size_t i = 0; i < c.apply_bindings.size(); ++i) {
    const std::string& param = c.apply_bindings[i].first;
    std::string text = c.apply_bindings[i].second;
    Origin origin = i < c.apply_binding_origins.size() ? c.apply_binding_origins[i] : Origin{};
    // The chain adds unit axes to the bound value itself (a RoPE table's
    // unsqueeze): the model hands it over at the rank the rule declares, so
    // no rank is assumed from how it was made.
    const bool viewed_by_chain = i < c.apply_binding_viewed.size() && !c.apply_binding_viewed[i].views.empty();
    const plan::Candidate::ViewedSide* after = spelt_after_views(c, i, origin);
    if (after && !after->left_in_place) text = after->text, origin = after->origin;
    // Every spelling below, with those views undone.
    auto bind = [&](const std::string& spelt) { out.arguments[param] = after ? viewed_spelling(spelt, after->axes) : spelt; };
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
      bind(text);
      continue;
    }
    if (!described && prefix.empty()) {
      if (std::string alias = alias_holding(*r.fn, name, origin, r.edit_point); !alias.empty()) {
        bind(alias);
        continue;
      }
    }
    std::string why;
    if (std::optional<std::string> moved = moved_expression(origin, r, why)) {
      if (auto d = r.declared_shape.find(param); d != r.declared_shape.end() && !viewed_by_chain) {
        const std::vector<std::string>& axes = d->second;
        ViewOf view = view_of(*moved);
        size_t rank = view.unit_axis ? axes.size() + 1 : view.rank;
        // The new axis counted from the front of the viewed result.
        int unit_axis = !view.unit_axis ? -1 : *view.unit_axis < 0 ? *view.unit_axis + static_cast<int>(rank) : *view.unit_axis;
        if (rank && rank != axes.size()) {
          std::string refusal = fmt::format(
              "{} is bound to `{}` ({}), a {}-D view, where the fused call takes {} as ({}): the model reshapes it for "
              "its own formulation; the call needs the tensor before that view; edit it by hand",
              param, *moved, line_at(*r.fn, origin.range.begin), rank, param, fmt::join(axes, ", "));
          bool gqa_axes = axes.size() == 4 && axes[0] == "B" && axes[2] == "S" && axes[3] == "D";
          bool regroup = gqa_axes && axes[1] == "N" && view.rank == 5 && !view.receiver.empty();
          bool unit = gqa_axes && axes[1] == "KVN" && unit_axis == 2 && !view.receiver.empty();
          if (!regroup && !unit) {
            out.refusal = refusal;
            return out;
          }
          (regroup ? grouped.regrouped : grouped.unit_axis).push_back(param);
          if (grouped.first_refusal.empty()) grouped.first_refusal = refusal;
          bind(view.receiver);
          continue;
        }
      }
      int& uses = moved_uses[{origin.range.begin, origin.range.end}];
      uses += r.replace ? reads_of(*r.replace, param) : 1;
      if (uses > 1) {
        out.refusal = fmt::format("{} is `{}` ({}), which the replacement would compute more than once; edit it by hand",
                                  param, *moved, line_at(*r.fn, origin.range.begin));
        return out;
      }
      bind(prefix.empty() ? *moved : prefix + "(" + *moved + ")");
      continue;
    }
    if (std::string constant = origin.kind == Origin::Kind::Expression && origin.range.file == r.fn->file->path
                                   ? class_constant(*r.fn, origin.range.begin, origin.range.end)
                                   : "";
        !constant.empty()) {
      bind(prefix.empty() ? constant : prefix + "(" + constant + ")");
      continue;
    }
    // The name the chain's op reads after casts outside the chain, where it
    // holds that value (the caller's `q_pe` for a rotary helper's unnamed or
    // local result).
    if (i < c.apply_binding_cast_reads.size() && prefix.empty()) {
      const plan::Candidate::ReaderSide& cast = c.apply_binding_cast_reads[i];
      if (is_identifier(cast.text) && name_holds(*r.fn, cast.text, cast.origin, point)) {
        bind(cast.text);
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
  // The grouped views are read as GQA only together: regrouped queries
  // against keys and values that each carry the unit group axis.
  if (!grouped.regrouped.empty() || !grouped.unit_axis.empty()) {
    size_t kv_declared = 0;
    for (const auto& [param, axes] : r.declared_shape) kv_declared += axes.size() == 4 && axes[1] == "KVN" && out.arguments.count(param);
    if (grouped.regrouped.empty() || grouped.unit_axis.size() != kv_declared) {
      out.refusal = grouped.first_refusal;
      out.arguments.clear();
    }
  }
  return out;
}

}  // namespace npufuse::apply

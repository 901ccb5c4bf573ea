#include "apply/replacement.h"

#include <fmt/format.h>

#include <algorithm>

#include "apply/apply_error.h"
#include "apply/source_functions.h"
#include "frontend/parser.h"
#include "model/ast_walk.h"
#include "util/text_lines.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;

struct TextEdit {
  uint32_t begin, end;
  std::string text;
};

// An argument text that is not a primary expression is parenthesised, so
// `a + b` substituted into `x * w` keeps its meaning.
std::string as_operand(const std::string& text) {
  std::optional<bool> primary = primary_expression(text, true);
  if (!primary) throw ApplyError(fmt::format("the bound expression '{}' is not a Python expression", text));
  return *primary ? text : "(" + text + ")";
}

std::string fresh_name(const std::string& name, const std::set<std::string>& taken) {
  std::string candidate = name + "_npu";
  for (int n = 2; taken.count(candidate); ++n) candidate = fmt::format("{}_npu{}", name, n);
  return candidate;
}

std::set<std::string> assigned_names(const ast::FunctionDef& fn) {
  std::set<std::string> out;
  for (const ast::stmt* s : fn.body)
    model::walk(s, [&](const ast::Node* n) {
      if (auto* name = ast::as<ast::Name>(n); name && name->ctx == ast::expr_context::Store) out.insert(std::string(name->id));
      return true;
    });
  return out;
}

// `node`'s source text with the collected substitutions applied.
std::string substituted(std::string_view source, const ast::Node* node, const std::vector<TextEdit>& edits) {
  std::string out;
  uint32_t at = node->begin;
  for (const TextEdit& e : edits) {
    if (e.begin < node->begin || e.end > node->end) continue;
    out.append(source.substr(at, e.begin - at));
    out += e.text;
    at = e.end;
  }
  out.append(source.substr(at, node->end - at));
  return out;
}

// Continuation lines keep their depth relative to the statement.
std::string reindented(const std::string& text, const std::string& from, const std::string& to) {
  std::string out;
  std::vector<std::string_view> lines = split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (i > 0) {
      out += '\n';
      out += to;
      if (line.substr(0, from.size()) == from) line.remove_prefix(from.size());
    }
    out += line;
  }
  return out;
}

// The brackets still open after the lines scanned so far, by column.
// Quotes and comments hold no brackets.
class BracketScan {
 public:
  // One line whose first byte sits at column `col`.
  void line(std::string_view text, int col) {
    for (size_t i = 0; i < text.size(); ++i, ++col) {
      char ch = text[i];
      if (quote_) {
        if (ch == '\\') {
          ++i;
          ++col;
        } else if (ch == quote_) {
          quote_ = 0;
        }
      } else if (ch == '#') {
        return;
      } else if (ch == '\'' || ch == '"') {
        quote_ = ch;
      } else if (ch == '(' || ch == '[' || ch == '{') {
        open_.push_back(col);
      } else if ((ch == ')' || ch == ']' || ch == '}') && !open_.empty()) {
        open_.pop_back();
      }
    }
  }
  // The column of the innermost open bracket, -1 when none is open.
  int innermost() const { return open_.empty() ? -1 : open_.back(); }

 private:
  std::vector<int> open_;
  char quote_ = 0;
};

size_t indent_of(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && line[n] == ' ') ++n;
  return n;
}

// A continuation line the rule aligned with its open bracket (a hanging
// indent under `op(`) stays aligned in the patch, where a rename or an
// argument moved that bracket: `orig` is the rule's text starting at column
// `orig_col`, `out` the patch's text of the same lines starting at `out_col`.
std::string realigned(const std::string& out, int out_col, const std::string& orig, int orig_col) {
  std::vector<std::string_view> orig_lines = split_lines(orig), out_lines = split_lines(out);
  // The line counts differ (an argument spanning lines): leave it as it is.
  if (orig_lines.size() != out_lines.size()) return out;
  BracketScan in_rule, in_patch;
  std::string result;
  for (size_t i = 0; i < out_lines.size(); ++i) {
    std::string text(out_lines[i]);
    if (i > 0 && in_rule.innermost() >= 0 && in_patch.innermost() >= 0 &&
        static_cast<int>(indent_of(orig_lines[i])) == in_rule.innermost() + 1)
      text = std::string(static_cast<size_t>(in_patch.innermost() + 1), ' ') + text.substr(indent_of(text));
    in_rule.line(orig_lines[i], i == 0 ? orig_col : 0);
    in_patch.line(text, i == 0 ? out_col : 0);
    result += (i > 0 ? "\n" : "") + text;
  }
  return result;
}

}  // namespace

std::string replacement_text(const ReplacementRequest& r) {
  const ast::FunctionDef& fn = *r.replace;
  std::string_view source = r.rule_source->text();
  std::vector<const ast::stmt*> body(fn.body.begin(), fn.body.end());
  // A docstring is documentation of the rule, not code to insert.
  if (!body.empty())
    if (auto* e = ast::as<ast::Expr>(body.front()); e && ast::as<ast::Constant>(e->value)) body.erase(body.begin());
  const ast::Return* ret = body.empty() ? nullptr : ast::as<ast::Return>(body.back());
  if (!ret || !ret->value) throw ApplyError(fmt::format("{}: replace does not end in `return VALUE`", r.rule_source->path()));

  const std::set<std::string> params = parameter_names(fn);
  std::map<std::string, std::string> renamed;
  for (const std::string& local : assigned_names(fn))
    if (r.taken_names.count(local) && !params.count(local)) renamed[local] = fresh_name(local, r.taken_names);
  // A parameter the body assigns (`normed, _, residual = op(residual, ...)`)
  // is a local of the replacement from that statement on: stores and later
  // reads get a name of their own, never the model expression it was bound
  // to (which may be a model variable, or no assignable name at all).
  std::map<std::string, std::string> param_locals;
  std::set<std::string> stored;
  auto local_of = [&](const std::string& id) -> const std::string& {
    auto [it, fresh] = param_locals.try_emplace(id, id);
    if (fresh && r.taken_names.count(id)) it->second = fresh_name(id, r.taken_names);
    return it->second;
  };

  // The returned tuple's elements that stay (all unless kept_returns says).
  std::vector<const ast::expr*> returned;
  auto* returned_tuple = ast::as<ast::Tuple>(ret->value);
  bool all_kept = r.kept_returns.empty() || !returned_tuple || r.kept_returns.size() == returned_tuple->elts.size;
  for (size_t i = 0; all_kept && i < r.kept_returns.size(); ++i) all_kept = r.kept_returns[i] == i;
  if (!all_kept) {
    const ast::Tuple* t = returned_tuple;
    for (size_t i : r.kept_returns) {
      if (i >= t->elts.size)
        throw ApplyError(fmt::format("{}: replace returns {} values, the chain has a result {}", r.rule_source->path(),
                                     t->elts.size, i + 1));
      returned.push_back(t->elts[i]);
    }
  } else {
    returned.push_back(ret->value);
  }

  // Statements that run in __init__ instead (module_buffer.h).
  auto left_out = [&](const ast::stmt* s) {
    auto* a = ast::as<ast::Assign>(s);
    auto* target = a && a->targets.size == 1 ? ast::as<ast::Name>(a->targets[0]) : nullptr;
    return target && (r.module_reads.count(std::string(target->id)) || r.left_out.count(std::string(target->id)));
  };
  body.erase(std::remove_if(body.begin(), body.end(), [&](const ast::stmt* s) { return s != ret && left_out(s); }), body.end());
  // A per-tensor match keeps some returned values only: the assignments
  // that feed only the others (k's tables when the match was on q) are left
  // out with them, so they read no parameter the match left unbound.
  if (!all_kept) {
    std::set<std::string> needed;
    auto add_reads = [&](const ast::Node* n) {
      model::walk(n, [&](const ast::Node* x) {
        if (auto* name = ast::as<ast::Name>(x); name && name->ctx == ast::expr_context::Load) needed.insert(std::string(name->id));
        return true;
      });
    };
    for (const ast::expr* v : returned) add_reads(v);
    std::set<const ast::stmt*> dead;
    for (auto it = body.rbegin(); it != body.rend(); ++it) {
      const ast::stmt* s = *it;
      if (s == ret) continue;
      auto* a = ast::as<ast::Assign>(s);
      // A statement of another kind, or an assignment to anything but names
      // (`buf[i] = x`, `self.t = x`), may act by itself: kept.
      bool feeds = !a;
      if (a)
        for (const ast::expr* t : a->targets)
          model::walk(t, [&](const ast::Node* x) {
            feeds |= ast::as<ast::Subscript>(x) != nullptr || ast::as<ast::Attribute>(x) != nullptr ||
                     ast::as<ast::Starred>(x) != nullptr;
            return true;
          });
      if (a && !feeds)
        model::walk(s, [&](const ast::Node* x) {
          if (auto* name = ast::as<ast::Name>(x); name && name->ctx == ast::expr_context::Store)
            feeds |= needed.count(std::string(name->id)) > 0;
          return true;
        });
      if (feeds)
        add_reads(s);
      else
        dead.insert(s);
    }
    body.erase(std::remove_if(body.begin(), body.end(), [&](const ast::stmt* s) { return dead.count(s) > 0; }), body.end());
  }

  std::vector<TextEdit> edits;
  for (const ast::stmt* s : body) {
    std::vector<std::string> stored_here;
    if (auto* aug = ast::as<ast::AugAssign>(s))
      if (auto* t = ast::as<ast::Name>(aug->target); t && params.count(std::string(t->id)) && !stored.count(std::string(t->id)))
        throw ApplyError(fmt::format("{}: replace updates its parameter '{}' in place; assign it to a local first",
                                     r.rule_source->path(), std::string(t->id)));
    auto substitute = [&](const ast::Node* n) {
      // `cos.unsqueeze(1)` with cos bound to `t.squeeze(1)` (the table the
      // model had already given that axis, apply/binding_spelling.h): `t`.
      if (auto* call = ast::as<ast::Call>(n); call && call->args.size == 1 && call->keywords.size == 0) {
        auto* method = ast::as<ast::Attribute>(call->func);
        auto* receiver = method ? ast::as<ast::Name>(method->value) : nullptr;
        std::string id = receiver ? std::string(receiver->id) : "";
        auto bound = receiver && method->attr == "unsqueeze" && receiver->ctx == ast::expr_context::Load &&
                             params.count(id) && !stored.count(id)
                         ? r.arguments.find(id)
                         : r.arguments.end();
        if (bound != r.arguments.end()) {
          std::string squeeze =
              ".squeeze(" + std::string(source.substr(call->args[0]->begin, call->args[0]->end - call->args[0]->begin)) + ")";
          const std::string& text = bound->second;
          if (text.size() > squeeze.size() && text.ends_with(squeeze)) {
            edits.push_back(TextEdit{call->begin, call->end, as_operand(text.substr(0, text.size() - squeeze.size()))});
            return false;
          }
        }
      }
      auto* name = ast::as<ast::Name>(n);
      if (!name) return true;
      std::string id(name->id);
      if (params.count(id) && (name->ctx != ast::expr_context::Load || stored.count(id))) {
        if (name->ctx != ast::expr_context::Load) stored_here.push_back(id);
        edits.push_back(TextEdit{name->begin, name->end, local_of(id)});
      } else if (params.count(id)) {
        auto it = r.arguments.find(id);
        if (it == r.arguments.end() && !all_kept)
          throw ApplyError(fmt::format("{}: replace needs '{}' for the result the match covers, but the match covers "
                                       "only some of the rule's results (the model computes them apart, one tensor per "
                                       "call) and binds nothing to '{}'",
                                       r.rule_source->path(), id, id));
        if (it == r.arguments.end())
          throw ApplyError(fmt::format("{}: replace parameter '{}' is bound to nothing in the model", r.rule_source->path(), id));
        edits.push_back(TextEdit{name->begin, name->end, as_operand(it->second)});
      } else if (auto it = r.module_reads.find(id); it != r.module_reads.end()) {
        edits.push_back(TextEdit{name->begin, name->end, it->second});
      } else if (auto it = renamed.find(id); it != renamed.end()) {
        edits.push_back(TextEdit{name->begin, name->end, it->second});
      }
      return true;
    };
    if (s == ret)
      for (const ast::expr* value : returned) model::walk(value, substitute);
    else
      model::walk(s, substitute);
    stored.insert(stored_here.begin(), stored_here.end());
  }
  std::sort(edits.begin(), edits.end(), [](const TextEdit& a, const TextEdit& b) { return a.begin < b.begin; });

  const std::string rule_indent(static_cast<size_t>(body.front()->col_offset), ' ');
  const int out_col = static_cast<int>(r.indent.size());
  auto original_text = [&](const ast::Node* n) { return std::string(source.substr(n->begin, n->end - n->begin)); };
  std::vector<std::string> statements;
  for (const ast::stmt* s : body) {
    if (s == ret) break;
    statements.push_back(realigned(reindented(substituted(source, s, edits), rule_indent, r.indent), out_col,
                                   original_text(s), s->col_offset));
  }
  std::vector<std::string> values;
  for (const ast::expr* v : returned) values.push_back(reindented(substituted(source, v, edits), rule_indent, r.indent));
  std::string value = fmt::format("{}", fmt::join(values, ", "));
  // The returned value is written after `targets = ` (or `return `): its
  // continuation lines follow its brackets there.
  auto placed = [&](const std::string& prefix) {
    std::string text = prefix + value;
    if (returned.size() != 1) return text;
    return realigned(text, out_col, std::string(prefix.size(), ' ') + original_text(returned.front()),
                     returned.front()->col_offset - static_cast<int>(prefix.size()));
  };
  if (r.discard_result) {
    // Nothing reads the results: returning the written tensors by name says
    // nothing; a returned call still has to run.
    bool names_only = std::all_of(returned.begin(), returned.end(), [](const ast::expr* e) {
      if (auto* t = ast::as<ast::Tuple>(e))
        return std::all_of(t->elts.begin(), t->elts.end(), [](const ast::expr* x) { return ast::as<ast::Name>(x) != nullptr; });
      return ast::as<ast::Name>(e) != nullptr;
    });
    if (!names_only || statements.empty()) statements.push_back(placed(""));
  } else if (r.targets.empty()) statements.push_back(placed("return "));
  else statements.push_back(placed(fmt::format("{} = ", fmt::join(r.targets, ", "))));
  return fmt::format("{}", fmt::join(statements, "\n" + r.indent));
}

}  // namespace npufuse::apply

#include "apply/replacement.h"

#include <fmt/format.h>

#include <algorithm>

#include "apply/apply_error.h"
#include "apply/source_functions.h"
#include "frontend/parser.h"
#include "model/ast_walk.h"

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
  try {
    auto parsed = frontend::parse_expression(text, "<binding>");
    switch (parsed->expr->kind) {
      case ast::NodeKind::Name:
      case ast::NodeKind::Attribute:
      case ast::NodeKind::Call:
      case ast::NodeKind::Subscript:
      case ast::NodeKind::Constant:
        return text;
      default:
        return "(" + text + ")";
    }
  } catch (const std::exception&) {
    throw ApplyError(fmt::format("the bound expression '{}' is not a Python expression", text));
  }
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
  size_t at = 0;
  while (true) {
    size_t nl = text.find('\n', at);
    std::string line = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    if (at > 0 && line.rfind(from, 0) == 0) line = to + line.substr(from.size());
    else if (at > 0) line = to + line;
    out += line;
    if (nl == std::string::npos) break;
    out += '\n';
    at = nl + 1;
  }
  return out;
}

// For each line after the first: the column of the innermost bracket still
// open where the line starts (-1 when none), `first_col` being the column
// the text's first byte sits at. Quotes and comments hold no brackets.
std::vector<int> open_bracket_columns(const std::string& text, int first_col) {
  std::vector<int> out;
  std::vector<int> stack;
  int col = first_col;
  char quote = 0;
  bool comment = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (ch == '\n') {
      out.push_back(stack.empty() ? -1 : stack.back());
      col = 0;
      comment = false;
      continue;
    }
    if (comment) {
    } else if (quote) {
      if (ch == '\\') {
        ++i;
        ++col;
      } else if (ch == quote) {
        quote = 0;
      }
    } else if (ch == '#') {
      comment = true;
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
    } else if (ch == '(' || ch == '[' || ch == '{') {
      stack.push_back(col);
    } else if ((ch == ')' || ch == ']' || ch == '}') && !stack.empty()) {
      stack.pop_back();
    }
    ++col;
  }
  return out;
}

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
  std::vector<int> want = open_bracket_columns(orig, orig_col);
  std::vector<std::string_view> orig_lines;
  for (size_t at = 0;;) {
    size_t nl = orig.find('\n', at);
    orig_lines.emplace_back(std::string_view(orig).substr(at, nl == std::string::npos ? std::string::npos : nl - at));
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  std::string result;
  size_t at = 0;
  for (size_t line = 0;; ++line) {
    size_t nl = out.find('\n', at);
    std::string text = out.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    if (line > 0 && line < orig_lines.size() && want[line - 1] >= 0 &&
        static_cast<int>(indent_of(orig_lines[line])) == want[line - 1] + 1) {
      // where the patch's bracket is, given the lines before
      std::vector<int> now = open_bracket_columns(result + "\n", out_col);
      int bracket = now.empty() ? -1 : now.back();
      if (bracket >= 0) text = std::string(static_cast<size_t>(bracket + 1), ' ') + text.substr(indent_of(text));
    }
    result += (line > 0 ? "\n" : "") + text;
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  // The line counts differ (an argument spanning lines): leave it as it is.
  return orig_lines.size() == static_cast<size_t>(std::count(out.begin(), out.end(), '\n')) + 1 ? result : out;
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

  std::vector<TextEdit> edits;
  for (const ast::stmt* s : body) {
    std::vector<std::string> stored_here;
    if (auto* aug = ast::as<ast::AugAssign>(s))
      if (auto* t = ast::as<ast::Name>(aug->target); t && params.count(std::string(t->id)) && !stored.count(std::string(t->id)))
        throw ApplyError(fmt::format("{}: replace updates its parameter '{}' in place; assign it to a local first",
                                     r.rule_source->path(), std::string(t->id)));
    auto substitute = [&](const ast::Node* n) {
      auto* name = ast::as<ast::Name>(n);
      if (!name) return true;
      std::string id(name->id);
      if (params.count(id) && (name->ctx != ast::expr_context::Load || stored.count(id))) {
        if (name->ctx != ast::expr_context::Load) stored_here.push_back(id);
        edits.push_back(TextEdit{name->begin, name->end, local_of(id)});
      } else if (params.count(id)) {
        auto it = r.arguments.find(id);
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

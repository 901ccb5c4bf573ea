#include "apply/chain_rewrite.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <variant>

#include "apply/replacement.h"
#include "apply/source_functions.h"
#include "model/ast_walk.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;
using Range = plan::Candidate::SourceRange;

bool holds(const ast::Node* n, const Range& r) { return n->begin <= r.begin && r.end <= n->end; }

std::string text_of(const model::ModelFile& file, const ast::Node* n) {
  return std::string(file.parsed->source.text().substr(n->begin, n->end - n->begin));
}

int line_of(const model::ModelFile& file, uint32_t offset) { return file.parsed->source.line_col(offset).line; }

struct Refused {
  std::string reason;
  std::string where;
};

bool is_compound(const ast::stmt* s) {
  return !(ast::as<ast::Assign>(s) || ast::as<ast::AnnAssign>(s) || ast::as<ast::AugAssign>(s) || ast::as<ast::Return>(s) ||
           ast::as<ast::Expr>(s));
}

// Names a run of statements binds, and names some code reads.
std::set<std::string> names_in(const ast::Node* n, ast::expr_context ctx) {
  std::set<std::string> out;
  model::walk(n, [&](const ast::Node* x) {
    if (auto* name = ast::as<ast::Name>(x); name && name->ctx == ctx) out.insert(std::string(name->id));
    return true;
  });
  return out;
}

bool calls(const ast::Node* n, std::string_view callee) {
  bool found = false;
  model::walk(n, [&](const ast::Node* x) {
    if (auto* call = ast::as<ast::Call>(x)) {
      if (auto* name = ast::as<ast::Name>(call->func); name && name->id == callee) found = true;
      if (auto* attr = ast::as<ast::Attribute>(call->func); attr && attr->attr == callee) found = true;
    }
    return !found;
  });
  return found;
}

}  // namespace

std::map<std::string, std::string> arguments_in(const FunctionAt& fn, const plan::Candidate& c,
                                                const model::SourceSet& sources, std::string& missing) {
  std::map<std::string, std::string> out;
  if (fn.qualified == c.apply_function) {
    for (const auto& [param, text] : c.apply_bindings) out[param] = text;
    return out;
  }
  std::optional<FunctionAt> caller = function_named(sources, c.apply_function);
  std::map<std::string, std::string> caller_text_to_param;
  if (caller) {
    model::walk(caller->fn, [&](const ast::Node* x) {
      auto* call = ast::as<ast::Call>(x);
      if (!call) return true;
      bool via_self = false;
      if (auto* attr = ast::as<ast::Attribute>(call->func)) {
        if (attr->attr != fn.fn->name) return true;
        via_self = fn.is_method;
      } else if (auto* name = ast::as<ast::Name>(call->func); !name || name->id != fn.fn->name) {
        return true;
      }
      size_t skip = via_self ? 1 : 0;
      for (size_t i = 0; i < call->args.size && i + skip < fn.fn->args->args.size; ++i)
        caller_text_to_param.emplace(text_of(*caller->file, call->args[i]), std::string(fn.fn->args->args[i + skip]->arg));
      for (const ast::keyword* k : call->keywords)
        if (ast::present(k->arg)) caller_text_to_param.emplace(text_of(*caller->file, k->value), std::string(k->arg));
      return true;
    });
  }
  for (const auto& [param, text] : c.apply_bindings) {
    auto it = caller_text_to_param.find(text);
    if (it == caller_text_to_param.end()) {
      missing = fmt::format("{} = {} (bound in {}) has no name inside {}", param, text, c.apply_function, fn.qualified);
      return {};
    }
    out[param] = it->second;
  }
  return out;
}

namespace {

std::variant<Edit, Refused> rewrite(const plan::Candidate& c, const model::SourceSet& sources, const rules::Rule& rule) {
  std::string here = fmt::format("{}:{}", c.location.file, c.location.start_line);
  if (!rule.replace || !rule.file) return Refused{fmt::format("rule {} has no replace function", rule.id), here};
  if (c.apply_outputs.empty() || c.apply_outputs.front().file.empty())
    return Refused{"the chain's results were not located in the source", here};
  if (!c.escapes.empty())
    return Refused{fmt::format("an intermediate escapes the chain: {}", fmt::join(c.escapes, "; ")), here};

  const model::ModelFile* file = file_named(sources, c.apply_outputs.front().file);
  if (!file) return Refused{"the chain's file is not among the loaded sources", here};
  const Range& first_out = c.apply_outputs.front();
  std::optional<FunctionAt> fn = function_around(*file, first_out.begin, first_out.end);
  if (!fn) return Refused{"the chain's result is computed outside any function", here};
  here = fmt::format("{}:{}", file->path, line_of(*file, first_out.begin));
  for (const Range& out : c.apply_outputs)
    if (out.file != file->path || !holds(fn->fn, out))
      return Refused{fmt::format("the chain's results are computed in different functions ({} and elsewhere)", fn->qualified),
                     here};

  // The statements of fn's body that hold the chain's ops; ops elsewhere
  // must sit in helpers those statements call.
  const auto& body = fn->fn->body;
  size_t first = body.size, last = 0;
  std::set<std::string> helpers;
  std::vector<bool> touched(body.size, false);
  for (const Range& op : c.apply_ops) {
    bool inside = op.file == file->path && holds(fn->fn, op) && op.begin >= body[0]->begin;
    if (!inside) {
      const model::ModelFile* other = file_named(sources, op.file);
      std::optional<FunctionAt> helper = other ? function_around(*other, op.begin, op.end) : std::nullopt;
      if (!helper) return Refused{fmt::format("an op of the chain lies outside any function ({}:{})", op.file,
                                              other ? line_of(*other, op.begin) : 0), here};
      helpers.insert(std::string(helper->fn->name));
      continue;
    }
    for (size_t i = 0; i < body.size; ++i) {
      if (!holds(body[i], op)) continue;
      if (is_compound(body[i]))
        return Refused{fmt::format("the chain sits inside a compound statement ({}:{}); edit it by hand", file->path,
                                   body[i]->lineno), here};
      touched[i] = true;
      first = std::min(first, i);
      last = std::max(last, i);
    }
  }
  if (first == body.size) return Refused{fmt::format("no op of the chain lies in {}", fn->qualified), here};
  for (size_t i = first; i <= last; ++i)
    if (!touched[i])
      return Refused{fmt::format("{}:{} sits between the chain's statements and is not part of the chain", file->path,
                                 body[i]->lineno), here};
  for (const std::string& h : helpers) {
    bool called = false;
    for (size_t i = first; i <= last; ++i) called = called || calls(body[i], h);
    if (!called) return Refused{fmt::format("the chain spans {} and {}, which those statements do not call", fn->qualified, h), here};
  }

  // Where the result goes: returned by the last statement, or bound to
  // names the later code reads.
  ReplacementRequest request;
  request.replace = rule.replace;
  request.rule_source = &rule.file->parsed->source;
  const ast::Return* ret = ast::as<ast::Return>(body[last]);
  bool returned = false;
  if (ret && ret->value) {
    std::vector<const ast::expr*> values;
    if (auto* t = ast::as<ast::Tuple>(ret->value)) values.assign(t->elts.begin(), t->elts.end());
    else values.push_back(ret->value);
    returned = values.size() == c.apply_outputs.size();
    for (size_t i = 0; returned && i < values.size(); ++i)
      returned = values[i]->begin == c.apply_outputs[i].begin && values[i]->end == c.apply_outputs[i].end;
    if (!returned) return Refused{fmt::format("{}:{} returns more than the chain's result", file->path, ret->lineno), here};
  }
  std::set<std::string> bound;
  for (size_t i = first; i <= last; ++i) {
    std::set<std::string> s = names_in(body[i], ast::expr_context::Store);
    bound.insert(s.begin(), s.end());
  }
  if (!returned) {
    for (const std::string& name : c.apply_output_names) {
      if (name.empty() || !bound.count(name))
        return Refused{"a result of the chain is not bound to a name the rewrite could assign", here};
      request.targets.push_back(name);
    }
    for (size_t i = last + 1; i < body.size; ++i)
      for (const std::string& read : names_in(body[i], ast::expr_context::Load))
        if (bound.count(read) && std::find(request.targets.begin(), request.targets.end(), read) == request.targets.end())
          return Refused{fmt::format("the intermediate '{}' is read again at {}:{}", read, file->path, body[i]->lineno), here};
  }

  std::string missing;
  request.arguments = arguments_in(*fn, c, sources, missing);
  if (!missing.empty()) return Refused{missing, here};
  request.taken_names = names_in(fn->fn, ast::expr_context::Load);
  for (const std::string& s : names_in(fn->fn, ast::expr_context::Store)) request.taken_names.insert(s);
  for (const ast::arg* a : fn->fn->args->args) request.taken_names.insert(std::string(a->arg));
  std::string_view text = file->parsed->source.text();
  uint32_t line_start = file->parsed->source.line_start(body[first]->lineno);
  request.indent = std::string(text.substr(line_start, body[first]->begin - line_start));
  if (request.indent.find_first_not_of(" \t") != std::string::npos)
    return Refused{fmt::format("{}:{} shares its line with other code", file->path, body[first]->lineno), here};

  return Edit{file->path, body[first]->begin, body[last]->end, replacement_text(request), c.id};
}

}  // namespace

ChainRewrite rewrite_chain(const plan::Candidate& c, const model::SourceSet& sources, const rules::Rule& rule) {
  auto result = rewrite(c, sources, rule);
  if (auto* edit = std::get_if<Edit>(&result)) return ChainRewrite{*edit, "", ""};
  const Refused& r = std::get<Refused>(result);
  return ChainRewrite{std::nullopt, r.reason, r.where};
}

}  // namespace npufuse::apply

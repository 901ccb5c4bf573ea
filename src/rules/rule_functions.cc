#include "rules/rule_functions.h"

#include <algorithm>
#include <set>

namespace npufuse::rules {

namespace ast = frontend::ast;

namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Names and kinds of every parameter: two functions agree when these do.
std::vector<std::string> parameter_list(const ast::FunctionDef& fn) {
  std::vector<std::string> out;
  const ast::arguments* a = fn.args;
  if (!a) return out;
  for (const ast::arg* p : a->posonlyargs) out.push_back(std::string(p->arg));
  if (!a->posonlyargs.empty()) out.push_back("/");
  for (const ast::arg* p : a->args) out.push_back(std::string(p->arg));
  if (a->vararg) out.push_back("*" + std::string(a->vararg->arg));
  else if (!a->kwonlyargs.empty()) out.push_back("*");
  for (const ast::arg* p : a->kwonlyargs) out.push_back(std::string(p->arg));
  if (a->kwarg) out.push_back("**" + std::string(a->kwarg->arg));
  return out;
}

}  // namespace

std::string parameter_text(const ast::FunctionDef& fn) {
  std::string out;
  for (const auto& p : parameter_list(fn)) out += (out.empty() ? "" : ", ") + p;
  return out;
}

void read_rule_functions(const model::ModelFile& file, Rule& rule, LoadErrors& errors) {
  std::set<std::string, std::less<>> seen;
  for (const ast::stmt* s : file.parsed->module->body) {
    const auto* fn = ast::as<ast::FunctionDef>(s);
    if (!fn) continue;
    bool used = fn->name == "replace" || starts_with(fn->name, "search") || starts_with(fn->name, "naive") ||
                starts_with(fn->name, "lookalike");
    if (!used) continue;
    if (!seen.insert(std::string(fn->name)).second) {
      // Python keeps the last definition; the pattern compiler would see both.
      errors.at(file, fn, "'" + std::string(fn->name) + "' is defined twice");
      continue;
    }
    if (fn->name == "replace") rule.replace = fn;
    else if (starts_with(fn->name, "search")) rule.searches.push_back(fn);
    else if (starts_with(fn->name, "lookalike")) rule.lookalikes.push_back(fn);
    else rule.naives.push_back(fn);
  }
  if (rule.searches.empty()) errors.at_line(file.path, 1, 1, "no `search` function: a rule needs at least one pattern");
  if (!rule.replace) {
    errors.at_line(file.path, 1, 1, "no `replace` function: a rule needs its fused replacement");
    return;
  }
  std::vector<std::string> wanted = parameter_list(*rule.replace);
  for (const ast::FunctionDef* lookalike : rule.lookalikes) {
    // A look-alike may take more: trailing parameters with defaults (a clamp
    // limit) that stand for any model value and give the numbers theirs.
    std::vector<std::string> own = parameter_list(*lookalike);
    size_t extra = own.size() >= wanted.size() ? own.size() - wanted.size() : 0;
    bool prefix = own.size() >= wanted.size() && std::equal(wanted.begin(), wanted.end(), own.begin());
    bool defaulted = lookalike->args && lookalike->args->kwonlyargs.empty() && !lookalike->args->vararg &&
                     !lookalike->args->kwarg && static_cast<size_t>(lookalike->args->defaults.size) >= extra;
    if (!prefix || !defaulted)
      errors.at(file, lookalike, std::string(lookalike->name) + "(" + parameter_text(*lookalike) + ") must take replace(" +
                                     parameter_text(*rule.replace) + ")'s parameters, then only ones with defaults");
  }
  for (const ast::FunctionDef* search : rule.searches)
    if (parameter_list(*search) != wanted)
      errors.at(file, search, std::string(search->name) + "(" + parameter_text(*search) +
                                  ") and replace(" + parameter_text(*rule.replace) +
                                  ") must take the same parameters");
}

}  // namespace npufuse::rules

#include "catalog/catalog_validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "check/evaluate.h"
#include "check/expr.h"

namespace npufuse::catalog {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string value_list(const std::vector<check::Value>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ", ") + v.repr();
  return out;
}

// Literals compared with a fact that lists its values must be one of them
// (a typo like chip == 'A2 ' would otherwise never match).
void check_literal_values(const check::Expr& e, const FactVocabulary& facts, const std::string& where,
                          const std::string& id, Diagnostics& diags) {
  if (e.kind == check::ExprKind::Compare) {
    for (size_t i = 0; i < e.compare_ops.size(); ++i) {
      const check::Expr* a = e.operands[i].get();
      const check::Expr* b = e.operands[i + 1].get();
      for (int side = 0; side < 2; ++side, std::swap(a, b)) {
        if (a->kind != check::ExprKind::Name) continue;
        const FactInfo* info = facts.find(a->name);
        if (!info || info->values.empty()) continue;
        std::vector<const check::Expr*> literals;
        if (b->kind == check::ExprKind::Literal) literals.push_back(b);
        if (b->kind == check::ExprKind::List)
          for (const auto& item : b->operands) literals.push_back(item.get());
        for (const check::Expr* lit : literals) {
          if (lit->kind != check::ExprKind::Literal || lit->literal.is_list() || lit->literal.is_none()) continue;
          bool allowed = std::any_of(info->values.begin(), info->values.end(),
                                     [&](const check::Value& v) { return check::python_equal(v, lit->literal); });
          if (!allowed)
            diags.errors.push_back(fmt::format("{}: constraint '{}': {} is not a value of fact '{}' ({})", where, id,
                                               lit->literal.repr(), a->name, value_list(info->values)));
        }
      }
    }
  }
  for (const auto& child : e.operands) check_literal_values(*child, facts, where, id, diags);
}

// One plausible value per fact, of its declared type (the first listed value
// when the fact lists them), so that evaluating a constraint once finds
// operations that can never work, such as comparing a str fact with a number.
check::FactSet sample_facts(const FactVocabulary& facts) {
  check::FactSet out;
  for (const auto& [name, info] : facts.all()) {
    check::Value v;
    if (!info.values.empty()) v = info.values.front();
    else if (info.type == "int") v = check::Value(int64_t{64});
    else if (info.type == "float") v = check::Value(1.5);
    else if (info.type == "str") v = check::Value("sample");
    else if (info.type == "bool") v = check::Value(true);
    else v = check::Value(check::Value::List{check::Value(int64_t{64})});
    out.set(name, std::move(v), "sample");
  }
  return out;
}

// Type errors only: a division by zero or a bad align() multiple may come from
// the sample values rather than from the constraint.
void check_types(const Constraint& c, const check::FactSet& sample, Diagnostics& diags) {
  for (const auto* part : {c.when.get(), c.require.get()}) {
    if (!part) continue;
    try {
      check::evaluate(*part, sample);
    } catch (const check::EvalError& e) {
      std::string what = e.what();
      if (what.find("division by zero") != std::string::npos || what.find("align() needs") != std::string::npos)
        continue;
      diags.errors.push_back(fmt::format("{}: constraint '{}': `{}` cannot be evaluated with facts of their declared "
                                         "types: {}",
                                         c.origin, c.id, part == c.when.get() ? c.when_text : c.require_text, what));
    }
  }
}

void validate_one(const Operator& op, const std::string& relative_path, const FactVocabulary& facts,
                  const check::FactSet& sample, Diagnostics& diags) {
  const std::string& file = op.path;
  auto error = [&](const std::string& msg) { diags.errors.push_back(fmt::format("{}:1:1: {}", file, msg)); };

  std::string folder = relative_path.find('/') == std::string::npos ? "" : relative_path.substr(0, relative_path.find('/'));
  std::string stem = relative_path.substr(relative_path.rfind('/') + 1);
  stem = stem.substr(0, stem.size() - 5);  // ".toml"
  if (stem != op.name) error(fmt::format("name \"{}\" differs from the file name \"{}.toml\"", op.name, stem));
  if (folder != op.family)
    error(fmt::format("family \"{}\" differs from the folder \"{}\"", op.family, folder));
  if (!contains(known_families(), op.family))
    error(fmt::format("unknown family \"{}\" (one of: {})", op.family, joined(known_families())));
  if (!contains(known_statuses(), op.status))
    error(fmt::format("unknown status \"{}\" (one of: {})", op.status, joined(known_statuses())));
  for (const auto& p : op.products)
    if (!contains(known_products(), p))
      error(fmt::format("unknown product \"{}\" (one of: {})", p, joined(known_products())));

  std::set<std::string> param_names;
  for (const auto& p : op.params)
    if (!param_names.insert(p.name).second) error(fmt::format("parameter '{}' appears twice", p.name));

  std::set<std::string> ids;
  for (const auto& c : op.constraints) {
    if (!ids.insert(c.id).second)
      diags.errors.push_back(fmt::format("{}: constraint id '{}' appears twice", c.origin, c.id));
    for (const auto* expr : {c.when.get(), c.require.get()}) {
      if (!expr) continue;
      for (const auto& name : check::fact_names(*expr))
        if (!facts.find(name))
          diags.errors.push_back(fmt::format(
              "{}: constraint '{}' uses '{}', which is not a fact in facts.toml", c.origin, c.id, name));
      check_literal_values(*expr, facts, c.origin, c.id, diags);
    }
    check_types(c, sample, diags);
  }
}

}  // namespace

void validate_catalog(const std::vector<Operator>& operators, const std::vector<std::string>& relative_paths,
                      const FactVocabulary& facts, Diagnostics& diags) {
  std::map<std::string, std::string> first_file;
  check::FactSet sample = sample_facts(facts);
  for (size_t i = 0; i < operators.size(); ++i) {
    const Operator& op = operators[i];
    auto [it, fresh] = first_file.emplace(op.name, op.path);
    if (!fresh)
      diags.errors.push_back(fmt::format("{}:1:1: operator '{}' is already defined in {}", op.path, op.name, it->second));
    validate_one(op, relative_paths[i], facts, sample, diags);
  }
  for (const Operator& op : operators)
    for (const auto& r : op.related)
      if (!first_file.count(r))
        diags.warnings.push_back(fmt::format("{}: related operator '{}' is not in the catalog", op.path, r));
}

}  // namespace npufuse::catalog

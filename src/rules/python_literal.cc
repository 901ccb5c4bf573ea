// Python literal -> JSON, following what ast.literal_eval accepts for rule
// metadata (sets and bytes are left out: no rule needs them and JSON has none).
#include "rules/python_literal.h"

#include <charconv>

#include "frontend/literal.h"

namespace npufuse::rules {

namespace ast = frontend::ast;
using nlohmann::ordered_json;

namespace {

std::optional<ordered_json> number_value(const model::ModelFile& file, const ast::Constant* c, bool negate,
                                         LoadErrors& errors) {
  if (c->value.kind == ast::ConstantKind::Int) {
    std::string digits = frontend::int_literal_to_decimal(c->value.number);
    if (negate) digits.insert(digits.begin(), '-');
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc() || ptr != digits.data() + digits.size()) {
      errors.at(file, c, "integer " + digits + " does not fit in 64 bits");
      return std::nullopt;
    }
    return ordered_json(v);
  }
  if (c->value.kind == ast::ConstantKind::Float) {
    double v = frontend::float_literal_value(c->value.number);
    return ordered_json(negate ? -v : v);
  }
  errors.at(file, c, "complex numbers are not allowed in RULE");
  return std::nullopt;
}

std::optional<ordered_json> constant_value(const model::ModelFile& file, const ast::Constant* c, LoadErrors& errors) {
  switch (c->value.kind) {
    case ast::ConstantKind::None: return ordered_json(nullptr);
    case ast::ConstantKind::True: return ordered_json(true);
    case ast::ConstantKind::False: return ordered_json(false);
    case ast::ConstantKind::Str: return ordered_json(ast::constant_string(c->value));
    case ast::ConstantKind::Int:
    case ast::ConstantKind::Float:
    case ast::ConstantKind::Complex: return number_value(file, c, false, errors);
    case ast::ConstantKind::Bytes:
    case ast::ConstantKind::Ellipsis: break;
  }
  errors.at(file, c, std::string("a ") + literal_kind(c) + " is not allowed in RULE (strings, numbers, booleans, "
                     "None, lists and dicts only)");
  return std::nullopt;
}

std::optional<ordered_json> sequence_value(const model::ModelFile& file, frontend::Span<ast::expr*> elts,
                                           LoadErrors& errors) {
  ordered_json out = ordered_json::array();
  bool ok = true;
  for (const ast::expr* item : elts) {
    auto v = literal_to_json(file, item, errors);
    if (v) out.push_back(std::move(*v));
    else ok = false;
  }
  return ok ? std::optional<ordered_json>(std::move(out)) : std::nullopt;
}

std::optional<ordered_json> dict_value(const model::ModelFile& file, const ast::Dict* d, LoadErrors& errors) {
  ordered_json out = ordered_json::object();
  bool ok = true;
  for (size_t i = 0; i < d->keys.size; ++i) {
    const ast::expr* key = d->keys[i];
    const auto* str = ast::as<ast::Constant>(key);
    if (!str || str->value.kind != ast::ConstantKind::Str) {
      // A null key is `**other`: a name, so not a literal either.
      errors.at(file, key ? key : d->values[i], "RULE dict keys must be strings");
      ok = false;
      continue;
    }
    std::string name = ast::constant_string(str->value);
    if (out.contains(name)) {
      errors.at(file, key, "duplicate key '" + name + "'");
      ok = false;
    }
    auto v = literal_to_json(file, d->values[i], errors);
    if (v) out[name] = std::move(*v);
    else ok = false;
  }
  return ok ? std::optional<ordered_json>(std::move(out)) : std::nullopt;
}

}  // namespace

const char* literal_kind(const ast::expr* e) {
  if (const auto* c = ast::as<ast::Constant>(e)) {
    switch (c->value.kind) {
      case ast::ConstantKind::None: return "None";
      case ast::ConstantKind::True:
      case ast::ConstantKind::False: return "bool";
      case ast::ConstantKind::Str: return "str";
      case ast::ConstantKind::Int: return "int";
      case ast::ConstantKind::Float: return "float";
      case ast::ConstantKind::Complex: return "complex";
      case ast::ConstantKind::Bytes: return "bytes";
      case ast::ConstantKind::Ellipsis: return "Ellipsis";
    }
  }
  if (ast::as<ast::List>(e)) return "list";
  if (ast::as<ast::Tuple>(e)) return "tuple";
  if (ast::as<ast::Dict>(e)) return "dict";
  if (const auto* u = ast::as<ast::UnaryOp>(e); u && u->op == ast::unaryop::USub && ast::as<ast::Constant>(u->operand))
    return literal_kind(u->operand);
  return e ? ast::kind_name(e->kind) : "nothing";
}

std::optional<ordered_json> literal_to_json(const model::ModelFile& file, const ast::expr* e, LoadErrors& errors) {
  if (const auto* c = ast::as<ast::Constant>(e)) return constant_value(file, c, errors);
  if (const auto* l = ast::as<ast::List>(e)) return sequence_value(file, l->elts, errors);
  if (const auto* t = ast::as<ast::Tuple>(e)) return sequence_value(file, t->elts, errors);
  if (const auto* d = ast::as<ast::Dict>(e)) return dict_value(file, d, errors);
  if (const auto* u = ast::as<ast::UnaryOp>(e); u && u->op == ast::unaryop::USub) {
    const auto* c = ast::as<ast::Constant>(u->operand);
    if (c && (c->value.kind == ast::ConstantKind::Int || c->value.kind == ast::ConstantKind::Float))
      return number_value(file, c, true, errors);
  }
  errors.at(file, e, std::string("RULE must be a plain literal; found ") + (e ? ast::kind_name(e->kind) : "nothing") +
                         " (names, calls and arithmetic are not evaluated)");
  return std::nullopt;
}

}  // namespace npufuse::rules

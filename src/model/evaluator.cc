#include "model/evaluator.h"

#include <set>

#include "model/ast_walk.h"

#include <cmath>
#include <fmt/format.h>

namespace npufuse::model {

namespace {

using json = nlohmann::json;

constexpr int kMaxDepth = 64;

SymValue constant_value(const ast::Constant* c) {
  const ast::ConstantValue& v = c->value;
  switch (v.kind) {
    case ast::ConstantKind::None: return SymValue::known(nullptr);
    case ast::ConstantKind::True: return SymValue::known(true);
    case ast::ConstantKind::False: return SymValue::known(false);
    case ast::ConstantKind::Str: return SymValue::known(ast::constant_string(v));
    case ast::ConstantKind::Int: {
      std::string digits;
      for (char ch : v.number)
        if (ch != '_') digits += ch;
      try {
        return SymValue::known(std::stoll(digits, nullptr, 0));
      } catch (...) {
        return SymValue::unknown(std::string(v.number));
      }
    }
    case ast::ConstantKind::Float: {
      std::string digits;
      for (char ch : v.number)
        if (ch != '_') digits += ch;
      try {
        return SymValue::known(std::stod(digits));
      } catch (...) {
        return SymValue::unknown(std::string(v.number));
      }
    }
    default: return SymValue::unknown("<constant>");
  }
}

const char* op_symbol(ast::operator_ op) {
  switch (op) {
    case ast::operator_::Add: return "+";
    case ast::operator_::Sub: return "-";
    case ast::operator_::Mult: return "*";
    case ast::operator_::MatMult: return "@";
    case ast::operator_::Div: return "/";
    case ast::operator_::Mod: return "%";
    case ast::operator_::Pow: return "**";
    case ast::operator_::LShift: return "<<";
    case ast::operator_::RShift: return ">>";
    case ast::operator_::BitOr: return "|";
    case ast::operator_::BitXor: return "^";
    case ast::operator_::BitAnd: return "&";
    case ast::operator_::FloorDiv: return "//";
  }
  return "?";
}

int op_precedence(ast::operator_ op) {
  switch (op) {
    case ast::operator_::Add:
    case ast::operator_::Sub: return kPrecAdd;
    case ast::operator_::Pow: return kPrecPower;
    case ast::operator_::BitOr:
    case ast::operator_::BitXor:
    case ast::operator_::BitAnd:
    case ast::operator_::LShift:
    case ast::operator_::RShift: return kPrecCompare + 5;
    default: return kPrecMul;
  }
}

std::optional<json> arithmetic(ast::operator_ op, const json& a, const json& b) {
  if (a.is_string() && b.is_string() && op == ast::operator_::Add) return a.get<std::string>() + b.get<std::string>();
  bool ints = (a.is_number_integer() || a.is_boolean()) && (b.is_number_integer() || b.is_boolean());
  if (!(a.is_number() || a.is_boolean()) || !(b.is_number() || b.is_boolean())) return std::nullopt;
  auto as_ll = [](const json& j) { return j.is_boolean() ? (j.get<bool>() ? 1LL : 0LL) : j.get<long long>(); };
  auto as_d = [](const json& j) { return j.is_boolean() ? (j.get<bool>() ? 1.0 : 0.0) : j.get<double>(); };
  if (ints) {
    long long x = as_ll(a), y = as_ll(b);
    switch (op) {
      case ast::operator_::Add: return x + y;
      case ast::operator_::Sub: return x - y;
      case ast::operator_::Mult: return x * y;
      case ast::operator_::Div:
        if (y == 0) return std::nullopt;
        return static_cast<double>(x) / static_cast<double>(y);
      case ast::operator_::FloorDiv: {
        if (y == 0) return std::nullopt;
        long long q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
        return q;
      }
      case ast::operator_::Mod: {
        if (y == 0) return std::nullopt;
        long long m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return m;
      }
      case ast::operator_::Pow:
        if (y < 0) return std::pow(static_cast<double>(x), static_cast<double>(y));
        return static_cast<long long>(std::llround(std::pow(static_cast<double>(x), static_cast<double>(y))));
      default: return std::nullopt;
    }
  }
  double x = as_d(a), y = as_d(b);
  switch (op) {
    case ast::operator_::Add: return x + y;
    case ast::operator_::Sub: return x - y;
    case ast::operator_::Mult: return x * y;
    case ast::operator_::Div:
      if (y == 0) return std::nullopt;
      return x / y;
    case ast::operator_::FloorDiv:
      if (y == 0) return std::nullopt;
      return std::floor(x / y);
    case ast::operator_::Pow: return std::pow(x, y);
    default: return std::nullopt;
  }
}

std::optional<bool> compare_values(ast::cmpop op, const json& a, const json& b) {
  switch (op) {
    case ast::cmpop::Is:
    case ast::cmpop::Eq: return a == b;
    case ast::cmpop::IsNot:
    case ast::cmpop::NotEq: return a != b;
    default: break;
  }
  // `in` first: between two strings (`"dynamic" in rope_type`) it is a substring test.
  if ((op == ast::cmpop::In || op == ast::cmpop::NotIn) && (b.is_array() || b.is_object() || b.is_string())) {
    if (b.is_string() && !a.is_string()) return std::nullopt;  // a TypeError in Python
    bool found = false;
    if (b.is_array()) {
      for (const auto& x : b) found = found || x == a;
    } else if (b.is_object() && a.is_string()) {
      found = b.contains(a.get<std::string>());
    } else if (b.is_string()) {
      found = b.get<std::string>().find(a.get<std::string>()) != std::string::npos;
    }
    return op == ast::cmpop::In ? found : !found;
  }
  if (!(a.is_number() && b.is_number()) && !(a.is_string() && b.is_string())) return std::nullopt;
  switch (op) {
    case ast::cmpop::Lt: return a < b;
    case ast::cmpop::LtE: return a <= b;
    case ast::cmpop::Gt: return a > b;
    case ast::cmpop::GtE: return a >= b;
    default: return std::nullopt;
  }
}

const char* cmp_symbol(ast::cmpop op) {
  switch (op) {
    case ast::cmpop::Eq: return "==";
    case ast::cmpop::NotEq: return "!=";
    case ast::cmpop::Lt: return "<";
    case ast::cmpop::LtE: return "<=";
    case ast::cmpop::Gt: return ">";
    case ast::cmpop::GtE: return ">=";
    case ast::cmpop::Is: return "is";
    case ast::cmpop::IsNot: return "is not";
    case ast::cmpop::In: return "in";
    case ast::cmpop::NotIn: return "not in";
  }
  return "?";
}

}  // namespace

std::optional<bool> python_truth(const SymValue& v) {
  if (v.kind == SymValue::Kind::Config) return true;
  if (!v.is_known()) return std::nullopt;
  const json& j = v.value;
  if (j.is_null()) return false;
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number()) return j.get<double>() != 0.0;
  if (j.is_string() || j.is_array() || j.is_object()) return !j.empty();
  return std::nullopt;
}

std::optional<bool> Evaluator::truth(const ast::expr* e, EvalScope& scope) { return python_truth(eval(e, scope)); }

SymValue Evaluator::eval(const ast::expr* e, EvalScope& scope) {
  if (!e) return SymValue::known(nullptr);
  if (depth_ > kMaxDepth) return SymValue::unknown(std::string(scope.file ? scope.file->text_of(e) : ""));
  struct DepthGuard {
    int& d;
    explicit DepthGuard(int& x) : d(x) { ++d; }
    ~DepthGuard() { --d; }
  } guard(depth_);

  if (auto* c = ast::as<ast::Constant>(e)) return constant_value(c);
  if (auto* n = ast::as<ast::Name>(e)) return eval_name(n, scope);
  if (auto* a = ast::as<ast::Attribute>(e)) return eval_attribute(a, scope);
  if (auto* c = ast::as<ast::Call>(e)) return eval_call(c, scope);
  if (auto* b = ast::as<ast::BinOp>(e)) return eval_binop(b, scope);
  if (auto* c = ast::as<ast::Compare>(e)) return eval_compare(c, scope);
  if (auto* s = ast::as<ast::Subscript>(e)) return eval_subscript(s, scope);
  if (auto* u = ast::as<ast::UnaryOp>(e)) {
    SymValue v = eval(u->operand, scope);
    if (u->op == ast::unaryop::Not) {
      auto t = python_truth(v);
      if (t) return SymValue::known(!*t, "not " + v.text_at(kPrecNot));
      return SymValue::unknown("not " + v.text_at(kPrecNot), kPrecNot);
    }
    std::string sign = u->op == ast::unaryop::USub ? "-" : u->op == ast::unaryop::UAdd ? "+" : "~";
    std::string text = sign + v.text_at(kPrecUnary);
    if (v.is_known() && v.value.is_number() && u->op == ast::unaryop::USub) {
      json r = v.value.is_number_integer() ? json(-v.value.get<long long>()) : json(-v.value.get<double>());
      return SymValue::known(r, text);
    }
    if (v.is_known() && u->op == ast::unaryop::UAdd) return SymValue::known(v.value, text);
    return SymValue::unknown(text, kPrecUnary);
  }
  if (auto* i = ast::as<ast::IfExp>(e)) {
    auto t = truth(i->test, scope);
    if (t) return eval(*t ? i->body : i->orelse, scope);
    SymValue body = eval(i->body, scope), orelse = eval(i->orelse, scope);
    SymValue test = eval(i->test, scope);
    SymValue r = SymValue::unknown(body.text_at(kPrecIfExp + 1) + " if " + test.text_at(kPrecIfExp + 1) + " else " +
                                       orelse.text_at(kPrecIfExp),
                                   kPrecIfExp);
    r.maybe_none = body.maybe_none || orelse.maybe_none || (body.is_known() && body.value.is_null()) ||
                   (orelse.is_known() && orelse.value.is_null());
    return r;
  }
  if (auto* b = ast::as<ast::BoolOp>(e)) {
    bool is_and = b->op == ast::boolop::And;
    std::string text;
    for (size_t k = 0; k < b->values.size; ++k) {
      SymValue v = eval(b->values[k], scope);
      auto t = python_truth(v);
      // Python returns the deciding operand.
      if (t && *t != is_and) return v;
      if (!t) {
        std::string rest;
        for (size_t m = k; m < b->values.size; ++m) {
          SymValue w = m == k ? v : eval(b->values[m], scope);
          rest += (m == k ? "" : (is_and ? " and " : " or ")) + w.text_at(is_and ? kPrecAnd + 1 : kPrecOr + 1);
        }
        return SymValue::unknown(rest, is_and ? kPrecAnd : kPrecOr);
      }
      if (k + 1 == b->values.size) return v;
    }
    return SymValue::unknown(text);
  }
  // Tuples and lists evaluate element-wise; known only when every element is.
  auto sequence = [&](const auto& elts, const char* open, const char* close) {
    json arr = json::array();
    std::string text = open;
    bool all_known = true;
    for (size_t k = 0; k < elts.size; ++k) {
      SymValue v = eval(elts[k], scope);
      all_known = all_known && v.is_known();
      if (v.is_known()) arr.push_back(v.value);
      text += (k ? ", " : "") + v.text;
    }
    text += close;
    return all_known ? SymValue::known(arr, text) : SymValue::unknown(text);
  };
  if (auto* t = ast::as<ast::Tuple>(e)) return sequence(t->elts, "(", t->elts.size == 1 ? ",)" : ")");
  if (auto* l = ast::as<ast::List>(e)) return sequence(l->elts, "[", "]");
  if (auto* d = ast::as<ast::Dict>(e); d && d->keys.empty()) return SymValue::known(json::object(), "{}");
  return SymValue::unknown(std::string(scope.file ? scope.file->text_of(e) : ""));
}

SymValue Evaluator::eval_name(const ast::Name* n, EvalScope& scope) {
  std::string id(n->id);
  if (auto it = scope.bound.find(id); it != scope.bound.end()) return it->second;
  if (auto it = scope.cache.find("local:" + id); it != scope.cache.end()) return it->second;
  if (auto it = scope.locals.find(id); it != scope.locals.end()) {
    scope.cache["local:" + id] = SymValue::unknown(id);  // cycle guard
    SymValue v = eval(it->second, scope);
    scope.cache["local:" + id] = v;
    return v;
  }
  if (const ConstantDecl* c = sources_.find_constant(id)) {
    SymValue v = eval_module_constant(*c);
    if (v.is_known()) return SymValue::known(v.value, id);
    return v;
  }
  return SymValue::unknown(id);
}

SymValue Evaluator::eval_module_constant(const ConstantDecl& c) {
  EvalScope s;
  s.file = c.file;
  return eval(c.value, s);
}

SymValue Evaluator::config_field(const SymValue& config_obj, const std::string& attr, const ast::expr* fallback,
                                 EvalScope& scope, const ast::Node* at) {
  ConfigField field = schema_.field(config_obj.config_class, attr);
  ConfigRead read;
  read.key = field.key;
  if (scope.file) read.where = scope.file->span_of(at);
  const json* j = config_.find(field.key);
  if (!j && config_.loaded()) {
    // A standalone script's own name for an HF field (`dim` for hidden_size).
    std::string hf = hf_key_for_alias(field.key);
    if (!hf.empty() && (j = config_.find(hf))) {
      read.key = field.key = hf;
    }
  }
  read.found = j != nullptr;
  if (!j) {
    // Computed by the config class itself (HF `qk_head_dim`): evaluate its
    // expression with the class's fields bound from config.json.
    if (const DerivedConfigField* d = schema_.derived(config_obj.config_class, attr); d && depth_ < 32) {
      EvalScope s;
      s.file = d->file;
      // Bind only the fields the formula reads, so the config-field list
      // does not claim the others are read here.
      std::set<std::string> used;
      walk(d->value, [&](const ast::Node* n) {
        if (auto* name = ast::as<ast::Name>(n)) used.insert(std::string(name->id));
        return true;
      });
      // A formula may read its own field (`self.conv_dim = list(conv_dim)`):
      // count the nesting so such a field ends at the depth limit, not in a stack overflow.
      ++depth_;
      for (const ast::arg* p : d->init->args->args) {
        std::string name(p->arg);
        if (name != "self" && used.count(name)) s.bound[name] = config_field(config_obj, name, nullptr, scope, at);
      }
      --depth_;
      SymValue v = eval(d->value, s);
      read.found = v.is_known();
      reads_.push_back(read);
      if (v.is_known()) return SymValue::known(v.value, field.key);
      v.text = field.key;
      return v;
    }
  }
  reads_.push_back(read);
  if (j) return SymValue::known(*j, field.key);
  if (config_.loaded()) {
    // The key is absent: Python would take the explicit default, else the
    // config class's own default. Either way the text says it is a default.
    if (fallback) {
      SymValue d = eval(fallback, scope);
      if (d.is_known()) return SymValue::known(d.value, field.key + " (default)");
      return d;
    }
    if (field.default_value) {
      EvalScope s;
      s.file = field.file;
      SymValue d = eval(field.default_value, s);
      if (d.is_known()) return SymValue::known(d.value, field.key + " (default)");
    }
  }
  SymValue v = SymValue::unknown(field.key);
  v.maybe_none = true;
  return v;
}

SymValue Evaluator::eval_attribute(const ast::Attribute* a, EvalScope& scope) {
  std::string attr(a->attr);
  if (auto* base = ast::as<ast::Name>(a->value); base && base->id == "self") {
    std::string key = "self:" + attr;
    if (auto it = scope.cache.find(key); it != scope.cache.end()) return it->second;
    auto def = scope.self_attrs.find(attr);
    if (def == scope.self_attrs.end()) return SymValue::unknown("self." + attr);
    scope.cache[key] = SymValue::unknown(attr);  // cycle guard
    SymValue v = eval(def->second, scope);
    scope.cache[key] = v;
    return v;
  }
  SymValue base = eval(a->value, scope);
  if (base.is_config()) return config_field(base, attr, nullptr, scope, a);
  std::string dotted = dotted_name(a);
  if (dotted == "math.pi") return SymValue::known(M_PI, "math.pi");
  if (dotted == "math.e") return SymValue::known(M_E, "math.e");
  if (!base.text.empty() && !dotted.empty() && base.kind == SymValue::Kind::Unknown) return SymValue::unknown(base.text + "." + attr);
  return SymValue::unknown(dotted.empty() ? std::string(scope.file ? scope.file->text_of(a) : "") : dotted);
}

SymValue Evaluator::eval_subscript(const ast::Subscript* s, EvalScope& scope) {
  SymValue base = eval(s->value, scope);
  SymValue key = eval(s->slice, scope);
  if (base.is_config() && key.is_known() && key.value.is_string())
    return config_field(base, key.value.get<std::string>(), nullptr, scope, s);
  if (base.is_known() && key.is_known()) {
    if (base.value.is_object() && key.value.is_string()) {
      auto it = base.value.find(key.value.get<std::string>());
      std::string text = base.text + "." + key.value.get<std::string>();
      if (it != base.value.end()) return SymValue::known(*it, text);
      return SymValue::unknown(text);
    }
    if (base.value.is_array() && key.value.is_number_integer()) {
      long long i = key.value.get<long long>();
      long long n = static_cast<long long>(base.value.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return SymValue::known(base.value[static_cast<size_t>(i)], base.text_at(kPrecAtom) + "[" + key.text + "]");
    }
  }
  if (key.is_known() && key.value.is_string() && base.kind == SymValue::Kind::Unknown)
    return SymValue::unknown(base.text + "." + key.value.get<std::string>());
  return SymValue::unknown(base.text_at(kPrecAtom) + "[" + key.text + "]");
}

SymValue Evaluator::eval_binop(const ast::BinOp* b, EvalScope& scope) {
  SymValue l = eval(b->left, scope), r = eval(b->right, scope);
  int p = op_precedence(b->op);
  bool right_assoc = b->op == ast::operator_::Pow;
  std::string text = l.text_at(right_assoc ? p + 1 : p) + " " + op_symbol(b->op) + " " + r.text_at(right_assoc ? p : p + 1);
  if (l.is_known() && r.is_known()) {
    if (auto v = arithmetic(b->op, l.value, r.value)) {
      SymValue out = SymValue::known(*v, text);
      out.prec = p;
      return out;
    }
  }
  return SymValue::unknown(text, p);
}

SymValue Evaluator::eval_compare(const ast::Compare* c, EvalScope& scope) {
  SymValue left = eval(c->left, scope);
  std::string text = left.text_at(kPrecCompare + 1);
  std::optional<bool> result = true;
  SymValue cur = left;
  for (size_t i = 0; i < c->ops.size; ++i) {
    SymValue right = eval(c->comparators[i], scope);
    text += std::string(" ") + cmp_symbol(c->ops[i]) + " " + right.text_at(kPrecCompare + 1);
    std::optional<bool> r;
    if (cur.is_known() && right.is_known()) {
      r = compare_values(c->ops[i], cur.value, right.value);
    } else if ((c->ops[i] == ast::cmpop::Is || c->ops[i] == ast::cmpop::IsNot) && right.is_known() &&
               right.value.is_null() && (cur.is_config() || (!cur.is_known() && !cur.maybe_none))) {
      // A value computed from non-optional parts is not None.
      r = c->ops[i] == ast::cmpop::IsNot;
    }
    if (!r) result = std::nullopt;
    else if (result) result = *result && *r;
    cur = right;
  }
  if (result) return SymValue::known(*result, text);
  return SymValue::unknown(text, kPrecCompare);
}

SymValue Evaluator::eval_call(const ast::Call* c, EvalScope& scope) {
  std::string fname = dotted_name(c->func);
  std::vector<SymValue> args;
  for (const ast::expr* a : c->args) args.push_back(eval(a, scope));
  auto call_text = [&] {
    std::string t = fname.empty() ? std::string(scope.file ? scope.file->text_of(c->func) : "") : fname;
    t += "(";
    for (size_t i = 0; i < args.size(); ++i) t += (i ? ", " : "") + args[i].text;
    for (const ast::keyword* kw : c->keywords) {
      if (!ast::present(kw->arg)) continue;
      t += (t.back() == '(' ? "" : ", ") + std::string(kw->arg) + "=" + std::string(scope.file->text_of(kw->value));
    }
    return t + ")";
  };

  // getattr(config, "name", default)
  if (fname == "getattr" && args.size() >= 2 && args[1].is_known() && args[1].value.is_string()) {
    std::string attr = args[1].value.get<std::string>();
    if (args[0].is_config()) return config_field(args[0], attr, c->args.size > 2 ? c->args[2] : nullptr, scope, c);
    return SymValue::unknown(args[0].text + "." + attr);
  }
  if (fname == "hasattr" && args.size() == 2 && args[0].is_config() && args[1].is_known() && args[1].value.is_string()) {
    if (!config_.loaded()) return SymValue::unknown(call_text(), kPrecAtom);
    bool has = config_.find(schema_.field(args[0].config_class, args[1].value.get<std::string>()).key) != nullptr;
    return SymValue::known(has, call_text());
  }
  // obj.get("key", default) on the config or on a dict read from it.
  if (auto* attr = ast::as<ast::Attribute>(c->func); attr && attr->attr == "get" && !args.empty() && args[0].is_known() &&
                                                      args[0].value.is_string()) {
    SymValue base = eval(attr->value, scope);
    std::string key = args[0].value.get<std::string>();
    if (base.is_config()) return config_field(base, key, c->args.size > 1 ? c->args[1] : nullptr, scope, c);
    if (base.is_known() && base.value.is_object()) {
      auto it = base.value.find(key);
      if (it != base.value.end()) return SymValue::known(*it, base.text + "." + key);
      if (args.size() > 1) return args[1];
      return SymValue::known(nullptr, base.text + "." + key);
    }
    return SymValue::unknown(base.text + "." + key);
  }
  bool all_known = true;
  for (const SymValue& a : args) all_known = all_known && a.is_known() && (a.value.is_number() || a.value.is_boolean());
  if (all_known && !args.empty()) {
    double x = args[0].value.is_boolean() ? (args[0].value.get<bool>() ? 1 : 0) : args[0].value.get<double>();
    if (fname == "int") return SymValue::known(static_cast<long long>(x), call_text());
    if (fname == "float") return SymValue::known(x, call_text());
    if (fname == "abs") return SymValue::known(args[0].value.is_number_integer() ? json(std::llabs(static_cast<long long>(x))) : json(std::fabs(x)), call_text());
    if (fname == "math.log" && args.size() == 1 && x > 0) return SymValue::known(std::log(x), call_text());
    if (fname == "math.sqrt" && x >= 0) return SymValue::known(std::sqrt(x), call_text());
    if (fname == "math.ceil") return SymValue::known(static_cast<long long>(std::ceil(x)), call_text());
    if (fname == "math.floor") return SymValue::known(static_cast<long long>(std::floor(x)), call_text());
    if ((fname == "max" || fname == "min") && args.size() >= 2) {
      size_t best = 0;
      for (size_t i = 1; i < args.size(); ++i) {
        double y = args[i].value.get<double>(), b = args[best].value.get<double>();
        if (fname == "max" ? y > b : y < b) best = i;
      }
      return SymValue::known(args[best].value, call_text());
    }
  }
  if (fname == "len" && args.size() == 1 && args[0].is_known() && (args[0].value.is_array() || args[0].value.is_object()))
    return SymValue::known(static_cast<long long>(args[0].value.size()), call_text());
  if (fname == "sum" && args.size() == 1 && args[0].is_known() && args[0].value.is_array()) {
    json total = 0;
    for (const auto& x : args[0].value) {
      auto r = arithmetic(ast::operator_::Add, total, x);
      if (!r) return SymValue::unknown(call_text());
      total = *r;
    }
    return SymValue::known(total, call_text());
  }
  if (fname == "sum" && args.size() == 1) {
    // sum([a, b, c]) over symbolic sizes reads best as a + b + c.
    if (auto* l = ast::as<ast::List>(c->args[0])) {
      std::string t;
      for (size_t i = 0; i < l->elts.size; ++i) t += (i ? " + " : "") + eval(l->elts[i], scope).text_at(kPrecAdd);
      return SymValue::unknown(t, kPrecAdd);
    }
  }
  return SymValue::unknown(call_text());
}

}  // namespace npufuse::model

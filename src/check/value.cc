#include "check/value.h"

#include <fmt/format.h>

#include <cmath>

namespace npufuse::check {

double Value::as_number() const {
  if (is_int()) return static_cast<double>(as_int());
  if (is_bool()) return as_bool() ? 1.0 : 0.0;
  return std::get<double>(data);
}

bool Value::truthy() const {
  if (is_none()) return false;
  if (is_bool()) return as_bool();
  if (is_int()) return as_int() != 0;
  if (is_float()) return std::get<double>(data) != 0.0;
  if (is_str()) return !as_str().empty();
  return !as_list().empty();
}

const char* Value::type_name() const {
  if (is_none()) return "NoneType";
  if (is_bool()) return "bool";
  if (is_int()) return "int";
  if (is_float()) return "float";
  if (is_str()) return "str";
  return "list";
}

std::string Value::repr() const {
  if (is_none()) return "None";
  if (is_bool()) return as_bool() ? "True" : "False";
  if (is_int()) return std::to_string(as_int());
  if (is_float()) {
    double d = std::get<double>(data);
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e16) return fmt::format("{:.1f}", d);
    return fmt::format("{}", d);
  }
  if (is_str()) return "'" + as_str() + "'";
  std::string out = "[";
  const auto& items = as_list();
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += items[i].repr();
  }
  return out + "]";
}

bool python_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_number() == b.as_number();
    auto as_i = [](const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); };
    return as_i(a) == as_i(b);
  }
  if (a.is_none() || b.is_none()) return a.is_none() && b.is_none();
  if (a.is_str() && b.is_str()) return a.as_str() == b.as_str();
  if (a.is_list() && b.is_list()) {
    const auto& x = a.as_list();
    const auto& y = b.as_list();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!python_equal(x[i], y[i])) return false;
    return true;
  }
  return false;
}

}  // namespace npufuse::check

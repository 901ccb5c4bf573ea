#pragma once
// A value a constraint expression computes with: the Python subset of
// docs/catalog-format.md (None, bool, int, float, str, list).
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace npufuse::check {

struct Value {
  using List = std::vector<Value>;
  std::variant<std::monostate, bool, int64_t, double, std::string, List> data;

  Value() = default;
  Value(bool b) : data(b) {}
  Value(int v) : data(static_cast<int64_t>(v)) {}
  Value(int64_t v) : data(v) {}
  Value(double v) : data(v) {}
  Value(const char* s) : data(std::string(s)) {}
  Value(std::string s) : data(std::move(s)) {}
  Value(List l) : data(std::move(l)) {}

  bool is_none() const { return std::holds_alternative<std::monostate>(data); }
  bool is_bool() const { return std::holds_alternative<bool>(data); }
  bool is_int() const { return std::holds_alternative<int64_t>(data); }
  bool is_float() const { return std::holds_alternative<double>(data); }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_str() const { return std::holds_alternative<std::string>(data); }
  bool is_list() const { return std::holds_alternative<List>(data); }

  bool as_bool() const { return std::get<bool>(data); }
  int64_t as_int() const { return std::get<int64_t>(data); }
  const std::string& as_str() const { return std::get<std::string>(data); }
  const List& as_list() const { return std::get<List>(data); }
  // int, float or bool as a double (bool is an int in Python).
  double as_number() const;

  // Python's bool(x).
  bool truthy() const;
  // Python's type name: "NoneType", "bool", "int", "float", "str", "list".
  const char* type_name() const;
  // Python's repr(x): 'text', [1, 2], True, 1.5.
  std::string repr() const;
};

// Python's ==, across int/float/bool and element-wise for lists.
bool python_equal(const Value& a, const Value& b);

}  // namespace npufuse::check

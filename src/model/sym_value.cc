#include "model/sym_value.h"

#include <cmath>
#include <fmt/format.h>

namespace npufuse::model {

SymValue SymValue::known(nlohmann::json v, std::string text) {
  SymValue s;
  s.kind = Kind::Known;
  s.text = text.empty() ? python_repr(v) : std::move(text);
  s.value = std::move(v);
  return s;
}

SymValue SymValue::unknown(std::string text, int prec) {
  SymValue s;
  s.text = std::move(text);
  s.prec = prec;
  return s;
}

SymValue SymValue::config_object(std::string class_name) {
  SymValue s;
  s.kind = Kind::Config;
  s.text = "config";
  s.config_class = std::move(class_name);
  return s;
}

std::optional<double> SymValue::number() const {
  if (kind != Kind::Known) return std::nullopt;
  if (value.is_number()) return value.get<double>();
  if (value.is_boolean()) return value.get<bool>() ? 1.0 : 0.0;
  return std::nullopt;
}

std::optional<long long> SymValue::integer() const {
  if (kind != Kind::Known) return std::nullopt;
  if (value.is_number_integer()) return value.get<long long>();
  if (value.is_number_float()) {
    double d = value.get<double>();
    if (std::floor(d) == d && std::abs(d) < 1e15) return static_cast<long long>(d);
  }
  return std::nullopt;
}

std::string SymValue::display() const {
  if (kind != Kind::Known) return text;
  std::string v = python_repr(value);
  if (text.empty() || text == v) return v;
  return text + " = " + v;
}

std::string SymValue::text_at(int outer) const { return prec < outer ? "(" + text + ")" : text; }

std::string python_repr(const nlohmann::json& v) {
  if (v.is_null()) return "None";
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number_float()) {
    double d = v.get<double>();
    std::string s = fmt::format("{}", d);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s;
  }
  if (v.is_string()) return "'" + v.get<std::string>() + "'";
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + python_repr(v[i]);
    return out + "]";
  }
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      out += (first ? "" : ", ") + std::string("'") + it.key() + "': " + python_repr(it.value());
      first = false;
    }
    return out + "}";
  }
  return v.dump();
}

}  // namespace npufuse::model

#pragma once
// A value computed from model source without running it: either known (a
// number, string, bool, None, list or dict, held as JSON) or unknown, and in
// both cases a symbolic text in the model's own terms
// ("num_key_value_heads * head_dim"), so a size reads the same with or
// without a config and the config only adds the number.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace npufuse::model {

// Python operator precedences, used to parenthesise symbolic text.
enum Precedence : int {
  kPrecIfExp = 5,
  kPrecOr = 10,
  kPrecAnd = 20,
  kPrecNot = 30,
  kPrecCompare = 40,
  kPrecAdd = 60,
  kPrecMul = 70,
  kPrecUnary = 80,
  kPrecPower = 90,
  kPrecAtom = 100,
};

struct SymValue {
  enum class Kind : uint8_t {
    Unknown,  // value not known; `text` says what it stands for
    Known,    // `value` holds it
    Config,   // the config object itself (attribute reads give config fields)
  };
  Kind kind = Kind::Unknown;
  nlohmann::json value;
  std::string text;
  int prec = kPrecAtom;
  bool maybe_none = false;  // an unknown that could be None (an unbound optional)
  std::string config_class;  // for Kind::Config: the config class name, if local

  static SymValue known(nlohmann::json v, std::string text = {});
  static SymValue unknown(std::string text, int prec = kPrecAtom);
  static SymValue config_object(std::string class_name);

  bool is_known() const { return kind == Kind::Known; }
  bool is_config() const { return kind == Kind::Config; }
  std::optional<double> number() const;
  std::optional<long long> integer() const;
  // `text`, and " = value" when the value is known and differs from the text.
  std::string display() const;
  // `text` wrapped in parentheses when it binds looser than `outer`.
  std::string text_at(int outer) const;
};

// Python's repr of a JSON-held value (True/False/None, quoted strings).
std::string python_repr(const nlohmann::json& v);

}  // namespace npufuse::model

// Values of number literals and Python's repr() of them.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

#include "frontend/literal.h"

namespace npufuse::frontend {

namespace {

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

// A non-negative big integer in base 10^9 limbs, least significant first.
class BigDecimal {
 public:
  void multiply_add(uint32_t factor, uint32_t addend) {
    uint64_t carry = addend;
    for (uint32_t& limb : limbs_) {
      uint64_t v = uint64_t(limb) * factor + carry;
      limb = static_cast<uint32_t>(v % kBase);
      carry = v / kBase;
    }
    while (carry) {
      limbs_.push_back(static_cast<uint32_t>(carry % kBase));
      carry /= kBase;
    }
  }
  std::string str() const {
    if (limbs_.empty()) return "0";
    std::string out = std::to_string(limbs_.back());
    for (size_t k = limbs_.size() - 1; k-- > 0;) {
      std::string part = std::to_string(limbs_[k]);
      out.append(9 - part.size(), '0');
      out += part;
    }
    return out;
  }

 private:
  static constexpr uint64_t kBase = 1000000000;
  std::vector<uint32_t> limbs_;
};

}  // namespace

NumberKind number_kind(std::string_view literal) {
  if (literal.empty()) return NumberKind::Int;
  char last = literal.back();
  if (last == 'j' || last == 'J') return NumberKind::Imaginary;
  if (literal.size() > 1 && literal[0] == '0' && std::string_view("xXoObB").find(literal[1]) != std::string_view::npos) {
    return NumberKind::Int;
  }
  if (literal.find_first_of(".eE") != std::string_view::npos) return NumberKind::Float;
  return NumberKind::Int;
}

std::string int_literal_to_decimal(std::string_view literal) {
  uint32_t base = 10;
  if (literal.size() > 1 && literal[0] == '0') {
    switch (literal[1] | 0x20) {
      case 'x': base = 16; literal.remove_prefix(2); break;
      case 'o': base = 8; literal.remove_prefix(2); break;
      case 'b': base = 2; literal.remove_prefix(2); break;
      default: break;
    }
  }
  BigDecimal value;
  for (char c : literal) {
    if (c == '_') continue;
    int d = digit_value(c);
    if (d >= static_cast<int>(base)) continue;  // the lexer admits no such digit
    value.multiply_add(base, static_cast<uint32_t>(d));
  }
  return value.str();
}

double float_literal_value(std::string_view literal) {
  std::string digits;
  digits.reserve(literal.size());
  for (char c : literal) {
    if (c != '_' && c != 'j' && c != 'J') digits.push_back(c);
  }
  // strtod rounds correctly and gives inf on overflow, like CPython.
  return std::strtod(digits.c_str(), nullptr);
}

std::string repr_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Shortest digits that round-trip, in scientific form: "d.ddde+XX".
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string sign;
  if (!sci.empty() && sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  size_t e_pos = sci.find('e');
  int exponent = std::atoi(sci.c_str() + e_pos + 1);
  std::string mantissa = sci.substr(0, e_pos);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  // CPython's repr switches to exponent form outside 1e-4 <= |x| < 1e16.
  if (exponent < -4 || exponent >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp_buf;
  }
  std::string out;
  if (exponent < 0) {
    out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
    out = digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
  } else {
    out = digits.substr(0, static_cast<size_t>(exponent) + 1) + "." + digits.substr(static_cast<size_t>(exponent) + 1);
  }
  return sign + out;
}

std::string repr_imaginary(double value) {
  // complex.__repr__ prints the imaginary part with repr's digits but
  // without the ".0" that marks a float.
  std::string r = repr_float(value);
  if (r.size() > 2 && r.compare(r.size() - 2, 2, ".0") == 0) r.resize(r.size() - 2);
  return r + "j";
}

std::string repr_number_literal(std::string_view literal) {
  switch (number_kind(literal)) {
    case NumberKind::Int: return int_literal_to_decimal(literal);
    case NumberKind::Float: return repr_float(float_literal_value(literal));
    case NumberKind::Imaginary: return repr_imaginary(float_literal_value(literal));
  }
  return std::string(literal);
}

}  // namespace npufuse::frontend

#include "catalog/signature.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "util/identifier.h"

namespace npufuse::catalog {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits at `sep` where no bracket is open and no quote is pending.
std::vector<std::string_view> split_top_level(std::string_view s, char sep, size_t max_parts = SIZE_MAX) {
  std::vector<std::string_view> parts;
  int depth = 0;
  char quote = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') quote = c;
    else if (c == '(' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == ']' || c == '}') --depth;
    else if (c == sep && depth == 0 && parts.size() + 1 < max_parts) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(s.substr(start));
  return parts;
}

// Index of the ')' closing the '(' at `open`, or npos.
size_t matching_paren(std::string_view s, size_t open) {
  int depth = 0;
  char quote = 0;
  for (size_t i = open; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') quote = c;
    else if (c == '(' || c == '[') ++depth;
    else if (c == ')' || c == ']') {
      if (--depth == 0) return c == ')' ? i : std::string_view::npos;
    }
  }
  return std::string_view::npos;
}

// `2^63-1`, `2**63-1`, `2^31 - 1`: powers of two minus a constant.
std::optional<std::string> power_expression(std::string_view s) {
  std::string compact;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) compact += c;
  size_t op = compact.find("**");
  size_t op_len = 2;
  if (op == std::string::npos) {
    op = compact.find('^');
    op_len = 1;
  }
  if (op == std::string::npos) return std::nullopt;
  unsigned base = 0, exponent = 0;
  long long minus = 0;
  const char* p = compact.c_str();
  const char* end = p + compact.size();
  auto r1 = std::from_chars(p, p + op, base);
  if (r1.ec != std::errc() || r1.ptr != p + op) return std::nullopt;
  const char* q = p + op + op_len;
  auto r2 = std::from_chars(q, end, exponent);
  if (r2.ec != std::errc()) return std::nullopt;
  if (r2.ptr != end) {
    if (*r2.ptr != '-') return std::nullopt;
    auto r3 = std::from_chars(r2.ptr + 1, end, minus);
    if (r3.ec != std::errc() || r3.ptr != end) return std::nullopt;
  }
  __int128 value = 1;
  for (unsigned i = 0; i < exponent && value < (static_cast<__int128>(1) << 100); ++i) value *= base;
  value -= minus;
  if (value > INT64_MAX || value < INT64_MIN) return std::nullopt;
  return std::to_string(static_cast<long long>(value));
}

std::optional<std::string> number_text(std::string_view s) {
  std::string text;
  for (char c : s)
    if (c != '_') text += c;
  if (text.empty()) return std::nullopt;
  long long i = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
  if (ec == std::errc() && p == text.data() + text.size()) return std::to_string(i);
  char* end = nullptr;
  double d = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(d)) return std::nullopt;
  if (d == std::floor(d) && std::fabs(d) < 9007199254740992.0) return std::to_string(static_cast<long long>(d));
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.15g", d);
  return std::string(buf);
}

}  // namespace

std::string normalize_default(std::string_view text) {
  std::string_view s = trim(text);
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front())
    return "\"" + std::string(s.substr(1, s.size() - 2)) + "\"";
  if (auto n = number_text(s)) return *n;
  if (auto p = power_expression(s)) return *p;
  if (!s.empty() && (s.front() == '[' || s.front() == '(')) {
    std::string out(1, '[');
    auto inner = s.substr(1, s.size() >= 2 ? s.size() - 2 : 0);
    bool first = true;
    if (!trim(inner).empty()) {
      for (auto item : split_top_level(inner, ',')) {
        if (trim(item).empty()) continue;  // trailing comma of a one-tuple
        out += (first ? "" : ",") + normalize_default(item);
        first = false;
      }
    }
    return out + "]";
  }
  if (s == "true") return "True";
  if (s == "false") return "False";
  return std::string(s);
}

std::optional<Signature> parse_signature(std::string_view text, std::string* error) {
  auto fail = [&](const char* why) -> std::optional<Signature> {
    if (error) *error = why;
    return std::nullopt;
  };
  std::string_view s = trim(text);
  size_t open = s.find('(');
  if (open == std::string_view::npos) return fail("no '(' in the prototype");
  std::string_view head = trim(s.substr(0, open));
  if (head.substr(0, 10) == "torch_npu.") head.remove_prefix(10);
  Signature sig;
  size_t dot = head.find('.');
  sig.name = std::string(head.substr(0, dot));
  if (dot != std::string_view::npos) sig.overload = std::string(head.substr(dot + 1));
  if (!is_identifier(sig.name)) return fail("the prototype does not start with an operator name");
  size_t close = matching_paren(s, open);
  if (close == std::string_view::npos) return fail("unbalanced parentheses in the prototype");
  std::string_view rest = trim(s.substr(close + 1));
  if (rest.substr(0, 2) == "->") sig.returns = std::string(trim(rest.substr(2)));

  std::string_view args = trim(s.substr(open + 1, close - open - 1));
  if (args.empty()) return sig;
  bool kw_only = false;
  for (std::string_view raw : split_top_level(args, ',')) {
    std::string_view arg = trim(raw);
    if (arg.empty()) continue;  // trailing comma
    if (arg == "*") {
      kw_only = true;
      continue;
    }
    auto parts = split_top_level(arg, '=', 2);
    SigParam p;
    p.kw_only = kw_only;
    std::string_view lhs = trim(parts[0]);
    if (parts.size() == 2) p.default_value = std::string(trim(parts[1]));
    if (size_t colon = lhs.find(':'); colon != std::string_view::npos) {  // Python annotation `x: Tensor`
      p.name = std::string(trim(lhs.substr(0, colon)));
      p.type = std::string(trim(lhs.substr(colon + 1)));
    } else {
      size_t space = lhs.find_last_of(" \t");
      p.name = std::string(space == std::string_view::npos ? lhs : lhs.substr(space + 1));
      if (space != std::string_view::npos) p.type = std::string(trim(lhs.substr(0, space)));
    }
    if (!p.name.empty() && p.name[0] == '*') return fail("*args parameters are not supported");
    if (!is_identifier(p.name)) return fail("a parameter has no valid name");
    sig.params.push_back(std::move(p));
  }
  return sig;
}

}  // namespace npufuse::catalog

#include "plan/fact_literal.h"

#include <charconv>
#include <string>

namespace npufuse::plan {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<check::Value> scalar(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front())
    return check::Value(std::string(s.substr(1, s.size() - 2)));
  if (s == "True") return check::Value(true);
  if (s == "False") return check::Value(false);
  int64_t i = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
  if (ec == std::errc() && end == s.data() + s.size()) return check::Value(i);
  try {
    size_t used = 0;
    double d = std::stod(std::string(s), &used);
    if (used == s.size()) return check::Value(d);
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace

std::optional<check::Value> parse_fact_literal(std::string_view text) {
  std::string_view s = trim(text);
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') {
    check::Value::List items;
    std::string_view body = trim(s.substr(1, s.size() - 2));
    while (!body.empty()) {
      size_t comma = body.find(',');
      std::optional<check::Value> item = scalar(trim(body.substr(0, comma)));
      if (!item) return std::nullopt;
      items.push_back(std::move(*item));
      if (comma == std::string_view::npos) break;
      body = trim(body.substr(comma + 1));
    }
    return check::Value(std::move(items));
  }
  return scalar(s);
}

}  // namespace npufuse::plan

#include "match/match_options.h"

#include <fmt/format.h>

#include "rules/ruleset.h"

namespace npufuse::match {

namespace {

[[noreturn]] void fail(const rules::Rule& rule, const std::string& what) {
  throw rules::RuleError(fmt::format("{}: RULE[\"match\"]: {}", rule.path, what));
}

std::set<std::string> string_set(const rules::Rule& rule, const nlohmann::json& j, const std::string& where) {
  if (!j.is_array()) fail(rule, where + " must be a list of op names");
  std::set<std::string> out;
  for (const auto& e : j) {
    if (!e.is_string()) fail(rule, where + " must be a list of op names");
    out.insert(e.get<std::string>());
  }
  return out;
}

}  // namespace

RuleMatchOptions parse_match_options(const rules::Rule& rule) {
  RuleMatchOptions o;
  const nlohmann::json& m = rule.match;
  if (m.is_null()) return o;
  if (!m.is_object()) fail(rule, "must be a dict");
  for (const auto& [key, value] : m.items()) {
    if (key == "optional") {
      o.optional = string_set(rule, value, "\"optional\"");
    } else if (key == "anchor_uses") {
      if (!value.is_array()) fail(rule, "\"anchor_uses\" must be a list of {\"anchor\": N, \"allow\": [...]}");
      for (const auto& u : value) {
        if (!u.is_object()) fail(rule, "\"anchor_uses\" entries must be dicts");
        AnchorUse use;
        for (const auto& [k, v] : u.items()) {
          if (k == "anchor") {
            if (!v.is_number_unsigned()) fail(rule, "\"anchor_uses\": \"anchor\" must be a returned value's index (0, 1, ...)");
            use.anchor = v.get<size_t>();
          } else if (k == "allow") {
            use.allow = string_set(rule, v, "\"anchor_uses\": \"allow\"");
          } else {
            fail(rule, fmt::format("\"anchor_uses\": unknown key \"{}\" (known: anchor, allow)", k));
          }
        }
        o.anchor_uses.push_back(std::move(use));
      }
    } else if (key == "not_from") {
      if (!value.is_object()) fail(rule, "\"not_from\" must be a dict {parameter: [op names]}");
      for (const auto& [param, ops] : value.items()) o.not_from[param] = string_set(rule, ops, "\"not_from\" values");
    } else if (key == "only_from") {
      if (!value.is_object()) fail(rule, "\"only_from\" must be a dict {parameter: [op names]}");
      for (const auto& [param, ops] : value.items()) o.only_from[param] = string_set(rule, ops, "\"only_from\" values");
    } else {
      fail(rule, fmt::format("unknown key \"{}\" (known: optional, anchor_uses, not_from, only_from)", key));
    }
  }
  return o;
}

}  // namespace npufuse::match

#include "match/match_options.h"

#include <fmt/format.h>

#include <algorithm>

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

// [{"when": text, "near_miss": "fixtures/<file>"}]: the reason is the one
// RULE["near_misses"] gives that fixture, so it is written once.
std::vector<NearMissExplanation> read_explanations(const rules::Rule& rule, const nlohmann::json& j) {
  const char* shape = "\"explain\" must be a list of {\"when\": text, \"near_miss\": fixture}";
  if (!j.is_array()) fail(rule, shape);
  std::vector<NearMissExplanation> out;
  for (const auto& e : j) {
    if (!e.is_object() || !e.contains("when") || !e.contains("near_miss") || e.size() != 2 || !e["when"].is_string() ||
        !e["near_miss"].is_string() || e["when"].get<std::string>().empty())
      fail(rule, shape);
    std::string file = e["near_miss"].get<std::string>();
    auto it = std::find_if(rule.near_misses.begin(), rule.near_misses.end(), [&](const rules::NearMiss& n) { return n.file == file; });
    if (it == rule.near_misses.end())
      fail(rule, fmt::format("\"explain\" names \"{}\", which RULE[\"near_misses\"] does not list", file));
    out.push_back({e["when"].get<std::string>(), it->reason});
  }
  return out;
}

// {"lookalike_<case>": "fixtures/<file>"}: a look-alike function and the
// near-miss fixture whose reason users read where it matches.
std::map<std::string, std::string> read_lookalikes(const rules::Rule& rule, const nlohmann::json& j) {
  const char* shape =
      "\"lookalikes\" must be a dict {\"lookalike_<case>\": fixture or {\"near_miss\": fixture, \"inputs\": {...}}}";
  if (!j.is_object()) fail(rule, shape);
  std::map<std::string, std::string> out;
  for (const auto& [function, entry] : j.items()) {
    // The dict form also gives input specs for the look-alike's own
    // parameters; only the numeric test reads them.
    bool dict = entry.is_object() && entry.contains("near_miss") &&
                std::all_of(entry.items().begin(), entry.items().end(),
                            [](const auto& kv) { return kv.key() == "near_miss" || kv.key() == "inputs"; });
    const nlohmann::json& fixture = dict ? entry["near_miss"] : entry;
    if (!fixture.is_string() || (dict && entry.contains("inputs") && !entry["inputs"].is_object())) fail(rule, shape);
    auto it = std::find_if(rule.near_misses.begin(), rule.near_misses.end(),
                           [&](const rules::NearMiss& n) { return n.file == fixture.get<std::string>(); });
    if (it == rule.near_misses.end())
      fail(rule, fmt::format("\"lookalikes\" names \"{}\", which RULE[\"near_misses\"] does not list", fixture.get<std::string>()));
    bool defined = std::any_of(rule.lookalikes.begin(), rule.lookalikes.end(),
                               [&](const frontend::ast::FunctionDef* fn) { return fn->name == function; });
    if (!defined) fail(rule, fmt::format("\"lookalikes\" names \"{}\", which is no lookalike* function of the file", function));
    out[function] = it->reason;
  }
  return out;
}

// Every lookalike* function of the file is listed, whether RULE["match"]
// has a "lookalikes" key, has none, or is absent.
void require_listed_lookalikes(const rules::Rule& rule, const RuleMatchOptions& o) {
  for (const frontend::ast::FunctionDef* fn : rule.lookalikes)
    if (!o.lookalikes.count(std::string(fn->name)))
      fail(rule, fmt::format("{} is not in \"lookalikes\": a look-alike needs the near-miss fixture whose reason it tells",
                             std::string(fn->name)));
}

}  // namespace

RuleMatchOptions parse_match_options(const rules::Rule& rule) {
  RuleMatchOptions o;
  const nlohmann::json& m = rule.match;
  if (m.is_null()) {
    require_listed_lookalikes(rule, o);
    return o;
  }
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
    } else if (key == "layouts") {
      const char* shape = "\"layouts\" must be a dict {parameter: \"BSND\" or \"BNSD\"}";
      if (!value.is_object()) fail(rule, shape);
      for (const auto& [param, layout] : value.items()) {
        if (!layout.is_string() || (layout != "BSND" && layout != "BNSD")) fail(rule, shape);
        o.layouts[param] = layout.get<std::string>();
      }
    } else if (key == "explain") {
      o.explain = read_explanations(rule, value);
    } else if (key == "quiet") {
      // [{"when": text, "why": text}]: the why is for the reader of the rule.
      const char* shape = "\"quiet\" must be a list of {\"when\": text, \"why\": text}";
      if (!value.is_array()) fail(rule, shape);
      for (const auto& e : value) {
        if (!e.is_object() || e.size() != 2 || !e.contains("when") || !e.contains("why") || !e["when"].is_string() ||
            !e["why"].is_string() || e["when"].get<std::string>().empty() || e["why"].get<std::string>().empty())
          fail(rule, shape);
        o.quiet.push_back(e["when"].get<std::string>());
      }
    } else if (key == "partial_returns") {
      if (!value.is_boolean()) fail(rule, "\"partial_returns\" must be True or False");
      o.partial_returns = value.get<bool>();
    } else if (key == "already_fused") {
      o.already_fused = string_set(rule, value, "\"already_fused\"");
    } else if (key == "independent_returns") {
      if (!value.is_boolean()) fail(rule, "\"independent_returns\" must be True or False");
      o.independent_returns = value.get<bool>();
    } else if (key == "opaque_calls") {
      if (!value.is_boolean()) fail(rule, "\"opaque_calls\" must be True or False");
      o.opaque_calls = value.get<bool>();
    } else if (key == "across_layers") {
      if (!value.is_boolean()) fail(rule, "\"across_layers\" must be True or False");
      o.across_layers = value.get<bool>();
    } else if (key == "optional_inputs") {
      if (!value.is_array()) fail(rule, "\"optional_inputs\" must be a list of parameter names");
      for (const auto& e : value) {
        if (!e.is_string()) fail(rule, "\"optional_inputs\" must be a list of parameter names");
        o.optional_inputs.insert(e.get<std::string>());
      }
    } else if (key == "near_miss_share") {
      if (!value.is_number() || value.get<double>() <= 0 || value.get<double>() > 1)
        fail(rule, "\"near_miss_share\" must be a number above 0 and at most 1");
      o.near_miss_share = value.get<double>();
    } else if (key == "contains") {
      o.contains = string_set(rule, value, "\"contains\"");
    } else if (key == "lookalikes") {
      o.lookalikes = read_lookalikes(rule, value);
    } else if (key == "also_outputs") {
      const char* shape = "\"also_outputs\" must be a dict {value name: {\"en\": text, \"zh\": text}}";
      if (!value.is_object()) fail(rule, shape);
      for (const auto& [name, how] : value.items()) {
        if (!how.is_object() || how.size() != 2 || !how.contains("en") || !how.contains("zh") || !how["en"].is_string() ||
            !how["zh"].is_string())
          fail(rule, shape);
        o.also_outputs[name] = AlsoOutput{how["en"].get<std::string>(), how["zh"].get<std::string>()};
      }
    } else {
      fail(rule, fmt::format("unknown key \"{}\" (known: optional, anchor_uses, not_from, only_from, layouts, explain, quiet, already_fused, "
                             "partial_returns, independent_returns, contains, opaque_calls, across_layers, optional_inputs, near_miss_share, lookalikes, also_outputs)",
                             key));
    }
  }
  require_listed_lookalikes(rule, o);
  return o;
}

}  // namespace npufuse::match

#pragma once
// How `npufuse rules list|show` presents rules: JSON (stable, documented in
// docs/cli.md) and text for people in English or Chinese.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rules/rule.h"

namespace npufuse::rules {

enum class RuleLang { En, Zh };

// One row per rule: id, module, safety, stages, apis, title.
std::string render_list_text(const std::vector<const Rule*>& rules, RuleLang lang);
nlohmann::ordered_json list_json(const std::vector<const Rule*>& rules, const std::string& source);

// Everything about one rule; the JSON carries both languages' documentation.
std::string render_show_text(const Rule& rule, RuleLang lang);
nlohmann::ordered_json show_json(const Rule& rule, const std::string& source);

// Rule ids that look like `wanted` (same stem, containment, small edit distance), best first.
std::vector<std::string> similar_rule_ids(const std::vector<Rule>& rules, std::string_view wanted, size_t max);

}  // namespace npufuse::rules

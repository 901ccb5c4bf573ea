#pragma once
// `npufuse explain`: one candidate's full reasoning, for people (Markdown,
// en/zh) and for tools (JSON): the rule and its documentation, the matched
// lines, each constraint check with its answer, evidence and doc, the
// prerequisites, the verification cut, and the fix preview.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "report/plan_markdown.h"
#include "rules/rule.h"

namespace npufuse::report {

// One edit the fix would make: the lines it replaces and what replaces them.
struct FixHunk {
  std::string file;
  int first_line = 0, last_line = 0;
  std::string original;
  std::string replacement;
};

struct Explanation {
  const plan::Candidate* candidate = nullptr;
  std::string preferred_id;         // set when the candidate is an alternative of another chain's entry
  const rules::Rule* rule = nullptr;  // null for no_fused_op or a rule the rule set lacks
  std::vector<std::string> snippets;  // matched lines as text, one per place ("file:12-15" header included)
  std::vector<FixHunk> fix;
  std::vector<std::string> fix_notes;  // why there is no preview, or what stays manual
  std::vector<std::string> warnings;   // a stale plan, a rule not found
};

std::string explanation_markdown(const Explanation& e, Lang lang);
nlohmann::json explanation_json(const Explanation& e);

}  // namespace npufuse::report

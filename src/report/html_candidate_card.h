#pragma once
// One candidate as a card of the HTML report: status, where, rule, APIs,
// evidence, each constraint check with its answer and doc, prerequisites,
// verification cut, the matched source lines, and its alternatives.
#include <string>
#include <vector>

#include "plan/plan.h"
#include "report/html_snippet.h"
#include "report/plan_markdown.h"

namespace npufuse::report {

struct CardContext {
  Lang lang = Lang::En;
  SourceTexts* sources = nullptr;             // for the snippets
  std::vector<std::string> shown_in_blocks;   // classes whose picture holds this chain
};

// `anchor` is the card's element id, `number` its position in the list.
std::string candidate_card_html(const plan::Candidate& c, const std::string& anchor, int number, const CardContext& ctx);

// The card's element id for the i-th candidate of the plan.
std::string candidate_anchor(size_t index);

// "file:12" or "file:12-15".
std::string location_label(const plan::Location& l);

}  // namespace npufuse::report

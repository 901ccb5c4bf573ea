#pragma once
// RULE["match"]: what a rule tells the matcher beyond its search functions.
// rules/README.md documents the keys; anything else is an error.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rules/rule.h"

namespace npufuse::match {

// Limits on who may read one of the values the pattern returns.
struct AnchorUse {
  size_t anchor = 0;                 // index into the pattern's returned values
  std::set<std::string> allow;       // op names outside the match that may read it; "return" for a return
};

struct RuleMatchOptions {
  // Pattern steps with these op names may be absent in the model: the
  // matcher then continues with the step's first input.
  std::set<std::string> optional;
  std::vector<AnchorUse> anchor_uses;
  // Parameter -> op names whose results the parameter may not be bound to
  // (a residual that is really `x * alpha` is no plain residual).
  std::map<std::string, std::set<std::string>> not_from;
  // Parameter -> op names one of which must compute the parameter's value
  // (seen through casts only): QK-norm's input is the per-head view of a
  // projection, never the hidden state itself.
  std::map<std::string, std::set<std::string>> only_from;
};

// Reads rule.match; throws rules::RuleError ("<rule path>: RULE["match"]: ...")
// on an unknown key or a value of the wrong shape.
RuleMatchOptions parse_match_options(const rules::Rule& rule);

}  // namespace npufuse::match

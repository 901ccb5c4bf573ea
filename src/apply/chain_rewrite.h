#pragma once
// One candidate's chain turned into one edit: the smallest run of
// statements of one function that holds the chain's ops is replaced by the
// rule's `replace` body, bound to the model's expressions. Anything this
// cannot do safely is refused with the reason and the place, so it can be
// listed as a manual step instead.
#include <optional>
#include <string>

#include "apply/edits.h"
#include "model/source_set.h"
#include "plan/plan.h"
#include "rules/rule.h"

namespace npufuse::apply {

struct ChainRewrite {
  std::optional<Edit> edit;
  std::string refusal;  // why there is no edit
  std::string where;    // file:line the refusal is about
};

ChainRewrite rewrite_chain(const plan::Candidate& candidate, const model::SourceSet& sources, const rules::Rule& rule);

}  // namespace npufuse::apply

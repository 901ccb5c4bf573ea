#pragma once
// A rule's `search*` function compiled into a dataflow pattern: the same SSA
// graph the model code gets (model/dataflow.h), read backwards from what the
// function returns. Parameters are the pattern's free inputs; a parameter
// used twice ties both uses to one value of the model.
#include <string>
#include <vector>

#include "model/dataflow.h"
#include "rules/rule.h"

namespace npufuse::match {

struct Pattern {
  const rules::Rule* rule = nullptr;
  std::string alternative;              // the search function's name ("search_div_sqrt")
  model::FunctionDataflow graph;        // the search function's dataflow
  std::vector<std::string> parameters;  // in order; the names `replace` takes too
  std::vector<int> anchors;             // value ids returned (several for a tuple return)
};

// One pattern per `search*` function of the rule, in file order.
std::vector<Pattern> compile_rule(const rules::Rule& rule);

}  // namespace npufuse::match

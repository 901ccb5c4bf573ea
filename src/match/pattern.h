#pragma once
// A rule's `search*` function compiled into a dataflow pattern: the same SSA
// graph the model code gets (model/dataflow.h), read backwards from what the
// function returns. Parameters are the pattern's free inputs; a parameter
// used twice ties both uses to one value of the model.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "match/match_options.h"
#include "match/op_arguments.h"
#include "match/pattern_needs.h"
#include "match/value_view.h"
#include "model/dataflow.h"
#include "rules/rule.h"

namespace npufuse::match {

struct Pattern {
  const rules::Rule* rule = nullptr;
  std::string alternative;              // the search function's name ("search_div_sqrt")
  // Non-empty for a `lookalike*` function: a form that must not match the
  // rule. Its match is told as the rule's near-miss with this reason.
  std::string lookalike_reason;
  model::FunctionDataflow graph;        // the search function's dataflow
  std::vector<std::string> parameters;  // in order; the names `replace` takes too
  std::vector<int> anchors;             // value ids returned (several for a tuple return)
  RuleMatchOptions options;             // from RULE["match"]
  // By op id: for the step that combines an optional input
  // (RULE["match"]["optional_inputs"]) with another value, that other value,
  // which the match goes on with where the model lacks the step; else -1.
  std::vector<int> optional_input_rest;
  int steps = 0;                        // ops a match must cover (casts, inputs and constants not counted)
  // The share a near-miss is measured against: `steps`, or with
  // partial_returns the steps of the first returned value alone (q's RoPE
  // failing on its own is as far as a one-tensor model can get).
  int near_miss_steps = 0;
  // compared_arguments of each op of `graph`, by op id (filled by compile_rule).
  std::vector<OpArguments> compared_arguments;
  // By value id: the literal a value is (through casts), and whether it is a
  // size read from a tensor's shape (filled by compile_rule).
  std::vector<std::optional<ConstantValue>> constants;
  std::vector<char> size_expressions;
  std::vector<std::vector<int>> readers;  // by value id: the ops reading it (graph.consumers)
  // The model op names a match needs (filled by compile_rule when `needs_known`).
  PatternNeeds needs;
  bool needs_known = false;
  // start_op's answer, worked out once (filled by compile_rule when `start_known`).
  int start = -1;
  bool start_known = false;
  // Shared by the patterns compiled together (compile_rules); null otherwise.
  std::shared_ptr<const NameVocabulary> vocabulary;
};

// For the step `op_id` of `p` that combines an optional input with another
// value, that other value; -1 for every other step.
inline int optional_input_rest(const Pattern& p, int op_id) {
  return static_cast<size_t>(op_id) < p.optional_input_rest.size() ? p.optional_input_rest[static_cast<size_t>(op_id)] : -1;
}

// One pattern per `search*` function of the rule, in file order, then one
// per `lookalike*` function (lookalike_reason set). Throws
// rules::RuleError when RULE["match"] is malformed or names a parameter or a
// returned value the search functions do not have.
std::vector<Pattern> compile_rule(const rules::Rule& rule);
// Every rule's patterns, rule after rule, compiled on `threads` workers
// (0: one per core).
std::vector<Pattern> compile_rules(const std::vector<rules::Rule>& rules, unsigned threads = 0);

}  // namespace npufuse::match

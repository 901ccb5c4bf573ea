// A rule's search functions as dataflow patterns.
#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <set>

#include "match/graph_matcher.h"
#include "match/pattern.h"
#include "match/size_expression.h"
#include "match/value_view.h"
#include "rules/ruleset.h"
#include "util/work_queue.h"

namespace npufuse::match {

namespace {

// Ops a match must cover, walking back from the anchors the way the matcher
// does: casts are passed through (their dtype argument is not part of the
// computation), inputs and literals are where the walk stops.
int count_steps(const model::FunctionDataflow& g, const std::vector<int>& anchors) {
  std::set<int> seen;
  std::vector<int> todo(anchors.begin(), anchors.end());
  while (!todo.empty()) {
    int v = through_casts(g, todo.back());
    todo.pop_back();
    if (!is_pattern_step(g, v)) continue;
    const model::DataflowOp& op = g.producer_of(v);
    if (!seen.insert(op.id).second) continue;
    for (int in : op.inputs) todo.push_back(in);
  }
  return static_cast<int>(seen.size());
}

}  // namespace

std::vector<Pattern> compile_rule(const rules::Rule& rule) {
  std::vector<Pattern> out;
  if (!rule.sources || !rule.file) return out;
  RuleMatchOptions options = parse_match_options(rule);
  std::vector<const frontend::ast::FunctionDef*> functions = rule.searches;
  functions.insert(functions.end(), rule.lookalikes.begin(), rule.lookalikes.end());
  for (const frontend::ast::FunctionDef* fn : functions) {
    Pattern p;
    p.rule = &rule;
    p.alternative = std::string(fn->name);
    p.graph = model::build_dataflow(*rule.sources, *rule.file, *fn);
    for (const model::DataflowOp& op : p.graph.ops)
      if (op.cls == model::OpClass::Input && !op.attrs.empty()) p.parameters.push_back(op.attrs[0]);
    p.anchors = p.graph.returns;
    for (const model::DataflowOp& op : p.graph.ops) p.compared_arguments.push_back(compared_arguments(p.graph, op, false));
    p.readers = p.graph.consumers_by_value();
    for (size_t v = 0; v < p.graph.values.size(); ++v) {
      p.constants.push_back(constant_of(p.graph, static_cast<int>(v)));
      p.size_expressions.push_back(is_size_expression(p.graph, static_cast<int>(v)) ? 1 : 0);
    }
    p.options = options;
    if (auto reason = options.lookalikes.find(p.alternative); reason != options.lookalikes.end()) {
      p.lookalike_reason = reason->second;
      // The rule's limits on its own chain say nothing about a look-alike's.
      p.options.anchor_uses.clear();
      p.options.not_from.clear();
      p.options.only_from.clear();
      p.options.layouts.clear();
      p.options.explain.clear();
      p.options.already_fused.clear();
      p.options.contains.clear();
      // Each returned value is a look-alike by itself (q's RoPE alone), and a
      // view of a parameter (`cos.unsqueeze(1)`, spelt so the numbers run) is
      // layout the model may have done elsewhere.
      p.options.partial_returns = true;
      // Only views that add or drop unit axes or regroup the same elements;
      // a broadcast (expand) or an axis swap is part of the form.
      static const std::set<std::string> layout_only = {"unsqueeze", "squeeze", "view", "reshape", "contiguous"};
      for (const model::DataflowOp& op : p.graph.ops)
        if (op.cls == model::OpClass::View && layout_only.count(op.name) && !op.inputs.empty() &&
            p.graph.producer_of(through_casts(p.graph, op.inputs[0])).cls == model::OpClass::Input)
          p.options.optional.insert(op.name);
    }
    p.steps = count_steps(p.graph, p.anchors);
    p.near_miss_steps = options.partial_returns && !p.anchors.empty() ? count_steps(p.graph, {p.anchors.front()}) : p.steps;
    for (const AnchorUse& use : p.options.anchor_uses)
      if (use.anchor >= p.anchors.size())
        throw rules::RuleError(fmt::format("{}: RULE[\"match\"]: anchor_uses names returned value {} but {} returns {}",
                                           rule.path, use.anchor, p.alternative, p.anchors.size()));
    for (const auto& [param, _] : p.options.not_from)
      if (std::find(p.parameters.begin(), p.parameters.end(), param) == p.parameters.end())
        throw rules::RuleError(fmt::format("{}: RULE[\"match\"]: not_from names \"{}\", which is no parameter of {}",
                                           rule.path, param, p.alternative));
    p.optional_input_rest.assign(p.graph.ops.size(), -1);
    for (const std::string& param : p.options.optional_inputs) {
      const model::DataflowOp* input = nullptr;
      for (const model::DataflowOp& op : p.graph.ops)
        if (op.cls == model::OpClass::Input && !op.attrs.empty() && op.attrs[0] == param) input = &op;
      if (!input)
        throw rules::RuleError(fmt::format("{}: RULE[\"match\"]: optional_inputs names \"{}\", which is no parameter of {}",
                                           rule.path, param, p.alternative));
      // The one step reading it must combine it with one other value.
      int readers = 0;
      for (const model::DataflowOp& op : p.graph.ops) {
        if (op.cls == model::OpClass::Input || op.cls == model::OpClass::Cast) continue;
        for (size_t i = 0; i < op.inputs.size(); ++i) {
          if (through_casts(p.graph, op.inputs[i]) != input->outputs.front()) continue;
          ++readers;
          if (op.inputs.size() != 2)
            throw rules::RuleError(fmt::format("{}: RULE[\"match\"]: optional input \"{}\" of {} must be combined with one other value by a two-input step",
                                               rule.path, param, p.alternative));
          p.optional_input_rest[static_cast<size_t>(op.id)] = op.inputs[1 - i];
        }
      }
      if (readers != 1)
        throw rules::RuleError(fmt::format("{}: RULE[\"match\"]: optional input \"{}\" of {} must be read by exactly one step",
                                           rule.path, param, p.alternative));
    }
    for (const auto& [param, _] : p.options.only_from)
      if (std::find(p.parameters.begin(), p.parameters.end(), param) == p.parameters.end())
        throw rules::RuleError(fmt::format("{}: RULE[\"match\"]: only_from names \"{}\", which is no parameter of {}",
                                           rule.path, param, p.alternative));
    for (const auto& [param, _] : p.options.layouts)
      if (std::find(p.parameters.begin(), p.parameters.end(), param) == p.parameters.end())
        throw rules::RuleError(fmt::format("{}: RULE[\"match\"]: layouts names \"{}\", which is no parameter of {}",
                                           rule.path, param, p.alternative));
    // A returned value made by the step adding an optional input
    // (`return routed + shared`): the walk starts at that step, so a model
    // without the input is met by a second pattern returning the other value
    // itself. Where both match, the wider match is kept (matcher.cc).
    std::vector<Pattern> variants;
    for (size_t k = 0; k < p.anchors.size(); ++k) {
      int rest = optional_input_rest(p, p.graph.producer_of(through_casts(p.graph, p.anchors[k])).id);
      if (rest < 0) continue;
      Pattern without = p;
      without.anchors[k] = rest;
      without.steps = count_steps(without.graph, without.anchors);
      without.near_miss_steps = without.options.partial_returns && !without.anchors.empty()
                                    ? count_steps(without.graph, {without.anchors.front()})
                                    : without.steps;
      variants.push_back(std::move(without));
    }
    out.push_back(std::move(p));
    for (Pattern& v : variants) out.push_back(std::move(v));
  }
  for (Pattern& p : out) {
    p.needs = needs_of(p);
    p.needs_known = true;
    p.start = start_op(p);
    p.start_known = true;
  }
  return out;
}

std::vector<Pattern> compile_rules(const std::vector<rules::Rule>& rules, unsigned threads) {
  // Each rule compiles on its own; the patterns keep the rules' order.
  std::vector<std::vector<Pattern>> per_rule(rules.size());
  std::vector<std::exception_ptr> failures(rules.size());
  util::run_parallel(rules.size(), threads, [&](size_t i) {
    try {
      per_rule[i] = compile_rule(rules[i]);
    } catch (...) {
      failures[i] = std::current_exception();
    }
  });
  std::vector<Pattern> out;
  for (size_t i = 0; i < rules.size(); ++i) {
    if (failures[i]) std::rethrow_exception(failures[i]);
    for (Pattern& p : per_rule[i]) out.push_back(std::move(p));
  }
  share_name_vocabulary(out);
  return out;
}

}  // namespace npufuse::match

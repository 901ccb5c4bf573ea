#pragma once
// A rule-like `replace` function written by a refactor itself (the forward
// after merging gate/up, the expert loop on stacked weights), parsed once so
// the chain rewrite can bind it like a rule's.
#include <string>

#include "model/source_set.h"
#include "rules/rule.h"

namespace npufuse::apply {

struct TextRule {
  model::SourceSet source;
  rules::Rule rule;

  // `text` holds one function; `label` names it in messages ("<merge_gate_up>").
  TextRule(const std::string& id, const std::string& label, const std::string& text)
      : source(model::SourceSet::from_texts({{label, text}})) {
    rule.id = id;
    rule.file = source.files().front().get();
    rule.replace = frontend::ast::as<frontend::ast::FunctionDef>(rule.file->parsed->module->body[0]);
  }
  TextRule(const TextRule&) = delete;
  TextRule& operator=(const TextRule&) = delete;
};

}  // namespace npufuse::apply

#pragma once
// Shared by the matcher tests: every rule in rules/ compiled once, and the
// graphs a Python file offers to the matcher (each module-level function's
// dataflow and each class's inlined forward).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "match/matcher.h"
#include "match/pattern.h"
#include "model/dataflow.h"
#include "model/evaluator.h"
#include "model/module_roles.h"
#include "model/source_set.h"
#include "rules/ruleset.h"

namespace npufuse::match::testing {

struct CompiledRules {
  rules::RuleSet set;
  std::vector<Pattern> patterns;
};

inline const CompiledRules& compiled_rules() {
  static const CompiledRules* rules = [] {
    auto* r = new CompiledRules{
        rules::RuleSet::load(rules::directory_rule_files(std::string(NPUFUSE_SOURCE_DIR) + "/rules"), "rules"), {}};
    r->patterns = compile_rules(r->set.rules());
    return r;
  }();
  return *rules;
}

inline std::vector<Pattern> patterns_of(const std::string& rule_id) {
  std::vector<Pattern> out;
  for (const Pattern& p : compiled_rules().patterns)
    if (p.rule->id == rule_id) out.push_back(p);
  return out;
}

struct Graphs {
  model::SourceSet sources;
  model::ModelConfig config;
  model::ConfigSchema schema;
  std::vector<model::FunctionDataflow> graphs;
};

// A module-level function's graph with its helpers inlined: the file gets a
// one-line module class whose forward calls the function, and that class's
// inlined forward is built (appended text leaves every byte offset of the
// original file as it was).
inline std::string wrapper_class_text(const frontend::ast::FunctionDef& fn) {
  std::vector<std::string> params;
  const frontend::ast::arguments* a = fn.args;
  for (const frontend::ast::arg* p : a->posonlyargs) params.emplace_back(p->arg);
  for (const frontend::ast::arg* p : a->args) params.emplace_back(p->arg);
  // Parameters with defaults keep them (`unsqueeze_dim=1` stays the literal 1).
  params.resize(params.size() - std::min(params.size(), static_cast<size_t>(a->defaults.size)));
  std::string list;
  for (const std::string& p : params) list += ", " + p;
  std::string call;
  for (const std::string& p : params) call += (call.empty() ? "" : ", ") + p;
  return "\n\nclass Wrap_" + std::string(fn.name) + "(nn.Module):\n    def forward(self" + list + "):\n        return " +
         std::string(fn.name) + "(" + call + ")\n";
}

// Module-level functions (helpers inlined) and, when `classes` is empty,
// every class with a forward; otherwise only the classes named.
inline std::unique_ptr<Graphs> load_graphs(const std::string& path, const std::vector<std::string>& classes = {}) {
  std::string text;
  std::vector<std::string> wrappers;
  if (classes.empty()) {
    model::SourceSet plain = model::SourceSet::load({path});
    const model::ModelFile& file = *plain.files().front();
    text = std::string(file.parsed->source.text());
    text += "\nfrom torch import nn as nn\n";
    for (const frontend::ast::stmt* s : file.parsed->module->body)
      if (auto* fn = frontend::ast::as<frontend::ast::FunctionDef>(s)) {
        text += wrapper_class_text(*fn);
        wrappers.push_back("Wrap_" + std::string(fn->name));
      }
  }
  auto r = std::make_unique<Graphs>(Graphs{classes.empty() ? model::SourceSet::from_texts({{path, text}}) : model::SourceSet::load({path}),
                                           model::ModelConfig(), {}, {}});
  r->schema = model::ConfigSchema::discover(r->sources);
  model::Evaluator ev(r->sources, r->config, r->schema);
  model::RoleTable roles = model::RoleTable::infer(r->sources, ev);
  model::RoleTableSubmodules lookup(roles);
  if (classes.empty()) {
    for (const model::ClassDecl& cls : r->sources.classes()) {
      // A forward looping over decoder layers is built unrolled, as
      // analyze does, so a chain across two layers is one dataflow.
      model::FunctionDataflow g = model::build_inlined_forward(r->sources, cls, lookup, 8, true);
      if (!g.ops.empty()) r->graphs.push_back(std::move(g));
      // Cache writes live in methods other than forward (`update`, `append`, `__call__`).
      for (const frontend::ast::stmt* s : cls.node->body)
        if (auto* fn = frontend::ast::as<frontend::ast::FunctionDef>(s); fn && fn->name != "forward" && fn->name != "__init__")
          r->graphs.push_back(model::build_dataflow(r->sources, *cls.file, *fn));
    }
  } else {
    for (const std::string& name : classes)
      if (const model::ClassDecl* cls = r->sources.find_class(name))
        r->graphs.push_back(model::build_inlined_forward(r->sources, *cls, lookup));
  }
  return r;
}

}  // namespace npufuse::match::testing

#pragma once
// Small in-memory models, rules and hand-made matches for the plan tests:
// the plan stage is tested on matches it is given, independently of the
// matcher's own tests.
#include <memory>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "match/matcher.h"
#include "model/dataflow.h"
#include "model/source_set.h"
#include "plan/model_matches.h"
#include "rules/rule.h"

namespace npufuse::plan::testing {

inline const catalog::Catalog& embedded_catalog() {
  static const catalog::Catalog c = catalog::Catalog::load(catalog::embedded_catalog_files(), "catalog");
  return c;
}

// A model file in memory and the dataflow of each function in it.
struct Source {
  explicit Source(std::string text, std::string path = "model.py")
      : set(model::SourceSet::from_texts({{path, std::move(text)}})) {}

  const model::FunctionDataflow& dataflow(const std::string& function) {
    const model::FunctionDecl* fn = set.find_function(function);
    graphs.push_back(std::make_unique<model::FunctionDataflow>(model::build_dataflow(set, *fn->file, *fn->node)));
    return *graphs.back();
  }

  model::SourceSet set;
  std::vector<std::unique_ptr<model::FunctionDataflow>> graphs;
};

inline rules::Rule make_rule(const std::string& id, const std::string& module, std::vector<std::string> apis,
                             std::vector<std::string> checks, std::string safety = "safe",
                             std::vector<std::string> stages = {"prefill", "decode"}) {
  rules::Rule r;
  r.id = id;
  r.family = id.substr(0, id.find('.'));
  r.module = module;
  r.title = id + " test rule";
  r.apis = std::move(apis);
  r.checks = std::move(checks);
  r.safety = std::move(safety);
  r.stages = std::move(stages);
  return r;
}

inline std::unique_ptr<match::Pattern> make_pattern(const rules::Rule& rule) {
  auto p = std::make_unique<match::Pattern>();
  p->rule = &rule;
  p->alternative = "search";
  return p;
}

// A match covering every compute op of `graph` whose line lies in [first, last].
inline MatchSite make_match(const match::Pattern& pattern, const model::FunctionDataflow& graph, int first, int last,
                            const std::string& function, const std::string& owner = "") {
  MatchSite s;
  s.match.pattern = &pattern;
  s.match.target = &graph;
  s.function = function;
  s.owner_class = owner;
  for (const model::DataflowOp& op : graph.ops)
    if (op.line >= first && op.line <= last && op.cls == model::OpClass::Compute) s.match.ops.push_back(op.id);
  s.match.spans.push_back(model::SourceSpan{graph.file ? graph.file->path : "model.py", first, last});
  return s;
}

}  // namespace npufuse::plan::testing

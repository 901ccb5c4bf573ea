// Matching the whole model: every module class's forward, and the backbone's
// layer loop unrolled for chains that run across two decoder layers.
#include "plan/model_matches.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "model/evaluator.h"
#include "model/module_roles.h"
#include "rules/ruleset.h"

namespace npufuse::plan {
namespace {

struct Matched {
  model::SourceSet sources;
  model::ModelConfig config;
  model::ConfigSchema schema;
  rules::RuleSet rules;
  std::unique_ptr<model::RoleTable> roles;
  ModelMatches matches;
};

std::unique_ptr<Matched> match_test_model(const std::string& name) {
  auto m = std::make_unique<Matched>();
  m->sources = model::SourceSet::load({std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/" + name + "/model.py"});
  m->schema = model::ConfigSchema::discover(m->sources);
  model::Evaluator ev(m->sources, m->config, m->schema);
  m->roles = std::make_unique<model::RoleTable>(model::RoleTable::infer(m->sources, ev));
  m->rules = rules::RuleSet::load(rules::embedded_rule_files(), "rules");
  m->matches = match_model(m->sources, *m->roles, m->rules);
  return m;
}

int copies_of(const match::Match& m) {
  int mask = 0;
  for (int id : m.ops) {
    int copy = m.target->ops[static_cast<size_t>(id)].unrolled;
    mask |= copy == 0 ? 4 : copy;  // 1, 2, or 4 for code around the loop
  }
  return mask;
}

// llama_like: the MLP residual add at the end of one layer and the next
// layer's input norm are one add+RMSNorm chain of the backbone's forward,
// and so are the last layer's add and the final norm after the loop.
TEST(ModelMatches, AddRmsNormIsFoundAcrossTwoLayersOfTheUnrolledLoop) {
  auto m = match_test_model("llama_like");
  int across = 0, into_final_norm = 0;
  for (const MatchSite& s : m->matches.matches) {
    if (s.function != "LlamaModel.forward") continue;
    // Nothing the backbone's graph keeps lies inside one copy of the layer:
    // those chains are the layer's own, found in its forward.
    int mask = copies_of(s.match);
    EXPECT_NE(mask, 1) << s.match.pattern->rule->id;
    EXPECT_NE(mask, 2) << s.match.pattern->rule->id;
    if (s.match.pattern->rule->id != "norm.add_rms_norm") continue;
    EXPECT_TRUE(s.match.pattern->options.across_layers);
    if (mask == 3) ++across;
    if (mask == 6) ++into_final_norm;
  }
  EXPECT_EQ(across, 1);
  EXPECT_EQ(into_final_norm, 1);
  // The layer's own chains are still found once, in the layer's forward.
  size_t in_layer = std::count_if(m->matches.matches.begin(), m->matches.matches.end(), [](const MatchSite& s) {
    return s.function == "LlamaDecoderLayer.forward" && s.match.pattern->rule->id == "norm.add_rms_norm";
  });
  EXPECT_EQ(in_layer, 1u);
}

// A layer that returns a tuple (`hidden_states, present, router_logits`)
// unpacked by the loop: the sum is handed on to the next layer alone; the
// cache entry packed beside it is no other read of the sum.
TEST(ModelMatches, ASeamIsFoundThroughALayerReturningATuple) {
  auto m = match_test_model("qwen3_moe_like");
  bool across = std::any_of(m->matches.matches.begin(), m->matches.matches.end(), [](const MatchSite& s) {
    return s.match.pattern->rule->id == "norm.add_rms_norm" && copies_of(s.match) == 3;
  });
  EXPECT_TRUE(across);
}

}  // namespace
}  // namespace npufuse::plan

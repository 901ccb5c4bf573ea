#pragma once
// Facts of one matched chain that neither the config nor the flags state
// directly, derived from the modules the chain's bindings read.
//
// The rule declares the shapes of its inputs with size symbols
// (RULE["inputs"]["weight"]["shape"] = ["H"]). Each binding to a module's
// weight (`self.input_layernorm.weight`, `self.gate_proj.weight`) is looked
// up in the model's instance tree, whose sizes come from the config
// (nn.Linear weight [out, in], a norm's weight [dim]); solving the symbols
// against those sizes gives `last_dim`, the length of the operator's main
// input's last axis:
//   - the rule's first input with a declared shape is the main input; its
//     last axis ("H", "2 * I") is evaluated with the solved symbols;
//   - a chain whose gate and up projections are separate (RULE["facts"]
//     glu_order = "separate") runs the operator on the merged [gate, up]
//     projection: last_dim = 2 * I, I being the gate projection's width;
//   - an input bound to a call of a linear layer (`self.gate_up_proj(x)`)
//     has that layer's output width as its last axis.
// Instances that disagree (one norm class used for the hidden states and
// for q_norm) leave the fact unknown, with the values per instance said.
#include <string>
#include <vector>

#include "check/facts.h"
#include "model/module_tree.h"
#include "plan/model_matches.h"
#include "rules/rule.h"

namespace npufuse::plan {

struct ChainFacts {
  check::FactSet facts;              // derived facts, each with its derivation as provenance
  std::vector<std::string> notes;    // what could not be derived, and why
};

ChainFacts derive_chain_facts(const rules::Rule& rule, const std::vector<const MatchSite*>& sites,
                              const model::ModelStructure* structure);

}  // namespace npufuse::plan

#pragma once
// The expert reference chains (chains/*.toml, one file each, embedded in the
// binary): which fused operators the Ascend ports chain for one module, stage
// and parallel mode. After the candidates are built, the plan names the
// chains that apply to the model in each analysed stage and says, step by
// step, what covers it, what blocks it and what is left open.
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "check/expr.h"
#include "check/facts.h"
#include "plan/plan.h"

namespace npufuse::plan {

struct ReferenceChainStep {
  std::string name;
  std::string title_en, title_zh;
  std::vector<std::string> rules;   // rules whose candidates cover the step
  std::vector<std::string> covers;  // sub-chain step kinds it takes in
  bool fused = true;                // false: the reference keeps a plain torch op
  std::string note_en, note_zh;
  // Sub-chain kinds that compute the step another way (MLA's per-head K/V
  // expansion, `kv_up`, instead of attention over the latent): found while
  // no rule of the step matched, they are named with `naive_note`.
  std::vector<std::string> naive_form;
  std::string naive_note_en, naive_note_zh;
};

struct ReferenceChain {
  std::string path;  // as loaded ("mla_absorb_decode.toml")
  std::string id;
  std::string title_en, title_zh;
  std::string source;
  std::vector<std::string> stages;
  std::vector<std::string> requires_modules;  // each "a" or "a|b"
  std::string when;                           // a constraint expression over facts, or ""
  std::shared_ptr<const check::Expr> condition;  // `when` parsed by the loader; null when there is none
  std::vector<ReferenceChainStep> steps;
};

// Parses the chain files (path, text). Every mistake of every file is
// reported as `file:line:col: message`, one per line, in the exception.
std::vector<ReferenceChain> load_reference_chains(const std::vector<std::pair<std::string, std::string>>& files);

// The chain files compiled into the binary (path, text), and those parsed
// once.
std::vector<std::pair<std::string, std::string>> embedded_reference_chain_files();
const std::vector<ReferenceChain>& embedded_reference_chains();

// The chains that apply to `plan` in each stage it analyses, with each step's
// state read from the plan's candidates; chains whose `when` cannot be
// decided are added to `notes`. `modules` are the module kinds the model's
// blocks hold (attention, mla, indexer, moe, ffn: model/subchains.h); a
// module is also present where a candidate of it is.
std::vector<ChainReport> reference_chain_coverage(const std::vector<ReferenceChain>& chains, const Plan& plan,
                                                  const check::FactSet& facts, const std::set<std::string>& modules,
                                                  std::vector<std::string>& notes);

}  // namespace npufuse::plan

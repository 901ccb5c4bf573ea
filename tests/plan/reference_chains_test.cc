// The reference chains (chains/*.toml): the files load and name real rules,
// mistakes are told with file:line:col, and a plan names the chains that
// apply to its modules, stage and parallel setup with each step's state.
#include <gtest/gtest.h>

#include <set>

#include "plan/reference_chains.h"
#include "rules/ruleset.h"

namespace npufuse::plan {
namespace {

std::string load_error(const std::string& text, const std::string& path = "chains/demo.toml") {
  try {
    load_reference_chains({{path, text}});
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

const char* kDemo = R"(id = "demo"
title = "demo"
title_zh = "示例"
source = "doc"
stages = ["decode"]
requires = ["mla"]

[[steps]]
name = "core"
title = "core"
title_zh = "核心"
rules = ["mla.fia_absorb"]
covers = ["attention_core"]
)";

TEST(ReferenceChains, EmbeddedChainsNameRulesThatExist) {
  rules::RuleSet rules = rules::RuleSet::load(rules::embedded_rule_files(), "rules");
  const std::vector<ReferenceChain>& chains = embedded_reference_chains();
  std::set<std::string> ids;
  for (const ReferenceChain& c : chains) ids.insert(c.id);
  for (const char* id : {"gqa_prefill", "gqa_decode", "mla_absorb_prefill", "mla_absorb_decode", "mla_indexer", "moe_tp",
                         "moe_ep_prefill", "moe_ep_decode"})
    EXPECT_TRUE(ids.count(id)) << id;
  for (const ReferenceChain& c : chains)
    for (const ReferenceChainStep& s : c.steps) {
      EXPECT_FALSE(s.covers.empty()) << c.id << "." << s.name;
      for (const std::string& r : s.rules) EXPECT_NE(rules.find(r), nullptr) << c.id << "." << s.name << ": " << r;
    }
}

TEST(ReferenceChains, MistakesNameFileLineAndColumn) {
  EXPECT_EQ(load_error(kDemo), "");
  std::string text = kDemo;
  EXPECT_EQ(load_error(text + "colour = \"red\"\n"), "chains/demo.toml:14:1: unknown key 'colour' in a step");
  EXPECT_EQ(load_error(kDemo, "chains/other.toml"), "chains/other.toml:1:6: id 'demo' differs from the file name 'other'");
  std::string bad_stage = text;
  bad_stage.replace(bad_stage.find("[\"decode\"]"), 10, "[\"train\"]");
  EXPECT_EQ(load_error(bad_stage), "chains/demo.toml:5:10: stage 'train' is not prefill or decode");
  std::string bad_when = text;
  bad_when.insert(bad_when.find("[[steps]]"), "when = \"ep >\"\n");
  EXPECT_EQ(load_error(bad_when).rfind("chains/demo.toml:8:8: 'when', column ", 0), 0u) << load_error(bad_when);
  std::string plain_with_rules = text;
  plain_with_rules.insert(plain_with_rules.find("covers"), "fused = false\n");
  EXPECT_EQ(load_error(plain_with_rules), "chains/demo.toml:12:9: a step kept as a plain op (fused = false) names no rules");
  EXPECT_EQ(load_error("id = \n").rfind("chains/demo.toml:1:", 0), 0u) << load_error("id = \n");
  EXPECT_NE(load_error("id = \"demo\"\n").find("missing key 'title'"), std::string::npos);
}

Candidate candidate(const std::string& rule, const std::string& module, Status status, std::vector<std::string> stages) {
  Candidate c;
  c.rule = rule;
  c.module = module;
  c.status = status;
  c.stages = std::move(stages);
  c.id = rule + "@m.py:1";
  return c;
}

Candidate open_step(const std::string& module, const std::string& step, std::vector<std::string> stages) {
  Candidate c;
  c.module = module;
  c.status = Status::NoFusedOp;
  c.stages = std::move(stages);
  c.id = module + "." + step + "@m.py:9";
  c.requirement.why_nothing_fits = "no rule's pattern matched the ops of this step";
  return c;
}

const ChainReport* find(const std::vector<ChainReport>& reports, const std::string& id, const std::string& stage) {
  for (const ChainReport& r : reports)
    if (r.id == id && r.stage == stage) return &r;
  return nullptr;
}

const ChainStepReport& step(const ChainReport& r, const std::string& name) {
  for (const ChainStepReport& s : r.steps)
    if (s.name == name) return s;
  throw std::out_of_range(name);
}

TEST(ReferenceChains, TheMostSpecificChainPerModuleStageAndParallelModeIsNamed) {
  Plan plan;
  plan.options.stage = "decode";
  plan.candidates = {candidate("mla.sparse_flash_attention", "mla", Status::CandidateWithPrerequisites, {"decode"}),
                     candidate("indexer.lightning_indexer", "indexer", Status::NotApplicable, {"decode"}),
                     candidate("moe.experts_grouped_matmul", "moe_experts", Status::Candidate, {"prefill", "decode"}),
                     open_step("mla", "q_down", {"decode"})};
  plan.candidates[1].blocking = {"npu_lightning_indexer:products: not on A2"};
  check::FactSet facts;
  std::vector<std::string> notes;
  std::vector<ChainReport> reports = reference_chain_coverage(embedded_reference_chains(), plan, facts, {}, notes);
  // MLA with an indexer replaces plain MLA; the decode stage only.
  ASSERT_NE(find(reports, "mla_indexer", "decode"), nullptr);
  EXPECT_EQ(find(reports, "mla_absorb_decode", "decode"), nullptr);
  EXPECT_EQ(find(reports, "mla_indexer", "prefill"), nullptr);
  const ChainReport& mla = *find(reports, "mla_indexer", "decode");
  EXPECT_EQ(step(mla, "sparse_attention").status, "covered");
  EXPECT_EQ(step(mla, "indexer").status, "blocked");
  EXPECT_EQ(step(mla, "indexer").detail, "npu_lightning_indexer:products: not on A2");
  EXPECT_EQ(step(mla, "prolog").status, "open");
  EXPECT_EQ(step(mla, "prolog").candidates, std::vector<std::string>{"mla.q_down@m.py:9"});
  EXPECT_EQ(step(mla, "o_projection").status, "torch");
  // Without --ep the tensor-parallel MoE chain, and the EP chain's condition is said.
  ASSERT_NE(find(reports, "moe_tp", "decode"), nullptr);
  EXPECT_EQ(step(*find(reports, "moe_tp", "decode"), "experts").status, "covered");
  EXPECT_EQ(step(*find(reports, "moe_tp", "decode"), "gate").status, "not_found");
  EXPECT_EQ(step(*find(reports, "moe_tp", "decode"), "shared_expert").status, "not_mapped");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "reference chain moe_ep_decode applies only when ep > 1, and ep is not known");
  // With EP the decode chain is the MC2 one, whose experts rule did not match.
  facts.set("ep", int64_t{16}, "--ep");
  notes.clear();
  reports = reference_chain_coverage(embedded_reference_chains(), plan, facts, {}, notes);
  EXPECT_EQ(find(reports, "moe_tp", "decode"), nullptr);
  ASSERT_NE(find(reports, "moe_ep_decode", "decode"), nullptr);
  EXPECT_EQ(step(*find(reports, "moe_ep_decode", "decode"), "experts").status, "not_found");
  EXPECT_TRUE(notes.empty());
  // An EP of one is tensor-parallel again.
  facts.set("ep", int64_t{1}, "--ep");
  reports = reference_chain_coverage(embedded_reference_chains(), plan, facts, {}, notes);
  EXPECT_NE(find(reports, "moe_tp", "decode"), nullptr);
  EXPECT_EQ(find(reports, "moe_ep_decode", "decode"), nullptr);
}

TEST(ReferenceChains, AModelWithoutTheModulesGetsNoChain) {
  Plan plan;
  plan.candidates = {candidate("norm.rms_norm", "norm", Status::Candidate, {})};
  check::FactSet facts;
  std::vector<std::string> notes;
  EXPECT_TRUE(reference_chain_coverage(embedded_reference_chains(), plan, facts, {}, notes).empty());
}

TEST(ReferenceChains, TheBlocksModulesCountWhereNoCandidateOfTheStageShowsThem) {
  // A decode plan whose indexer steps are all prefill-only: the block still has an indexer.
  Plan plan;
  plan.options.stage = "decode";
  plan.candidates = {candidate("mla.sparse_flash_attention", "mla", Status::CandidateWithPrerequisites, {"decode"})};
  check::FactSet facts;
  std::vector<std::string> notes;
  std::vector<ChainReport> reports =
      reference_chain_coverage(embedded_reference_chains(), plan, facts, {"mla", "indexer"}, notes);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].id, "mla_indexer");
  EXPECT_EQ(step(reports[0], "indexer").status, "not_found");
  reports = reference_chain_coverage(embedded_reference_chains(), plan, facts, {"mla"}, notes);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].id, "mla_absorb_decode");
}

}  // namespace
// HF DeepSeek-V3 style MLA expands the latent into per-head K/V and attends
// over them: the absorbed decode chain's attention and V-absorb steps are
// not found, and the plan says where the naive form is and what it needs.
TEST(ReferenceChains, ANaiveMlaFormIsNamedWhereTheAbsorbedStepIsNotFound) {
  Plan plan;
  plan.options.stage = "decode";
  plan.candidates = {candidate("attention.fia_decode", "attention", Status::CandidateWithPrerequisites, {"decode"}),
                     open_step("mla", "q_down", {"decode"}), open_step("mla", "kv_up", {"decode"})};
  check::FactSet facts;
  std::vector<std::string> notes;
  std::vector<ChainReport> reports = reference_chain_coverage(embedded_reference_chains(), plan, facts, {}, notes);
  ASSERT_NE(find(reports, "mla_absorb_decode", "decode"), nullptr);
  const ChainReport& mla = *find(reports, "mla_absorb_decode", "decode");
  EXPECT_EQ(step(mla, "attention").status, "not_found");
  EXPECT_EQ(step(mla, "attention").candidates, std::vector<std::string>{"mla.kv_up@m.py:9"});
  EXPECT_NE(step(mla, "attention").detail.find("absorb rewrite first"), std::string::npos) << step(mla, "attention").detail;
  EXPECT_FALSE(step(mla, "attention").detail_zh.empty());
  EXPECT_EQ(step(mla, "v_absorb").candidates, std::vector<std::string>{"mla.kv_up@m.py:9"});
  // Without the expansion the step is simply not found.
  plan.candidates.pop_back();
  reports = reference_chain_coverage(embedded_reference_chains(), plan, facts, {}, notes);
  EXPECT_TRUE(step(*find(reports, "mla_absorb_decode", "decode"), "attention").candidates.empty());
  EXPECT_TRUE(step(*find(reports, "mla_absorb_decode", "decode"), "attention").detail.empty());
}

TEST(ReferenceChains, ANaiveFormComesWithItsNote) {
  std::string text = kDemo;
  EXPECT_EQ(load_error(text + "naive_form = [\"kv_up\"]\n"),
            "chains/demo.toml:8:1: 'naive_form', 'naive_note' and 'naive_note_zh' come together");
  EXPECT_EQ(load_error(text + "naive_form = [\"kv_up\"]\nnaive_note = \"n\"\nnaive_note_zh = \"n\"\n"), "");
}

}  // namespace npufuse::plan

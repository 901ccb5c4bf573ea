#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "model/config_schema.h"
#include "model/evaluator.h"
#include "model/inventory.h"
#include "model/module_roles.h"
#include "plan/alternatives.h"
#include "plan/longer_chains.h"
#include "plan/analyze.h"
#include "plan/candidate_builder.h"
#include "plan/deployment.h"
#include "plan/deployment_facts.h"
#include "plan/model_matches.h"
#include "plan/moe_fact.h"
#include "plan/opaque_cache.h"
#include "plan/reference_chains.h"
#include "plan/review.h"
#include "plan/rule_gate.h"
#include "plan/stage_timer.h"
#include "plan/uncovered_steps.h"
#include "util/sha256.h"

namespace npufuse::plan {
namespace {

// The inventory's sub-chain decomposition, when this build of the model
// stage computes it (Inventory::chains); null otherwise, and the review says so.
template <class Inv>
const std::vector<model::BlockChains>* block_chains(const Inv& inventory) {
  if constexpr (requires { { inventory.chains } -> std::convertible_to<const std::vector<model::BlockChains>&>; })
    return &inventory.chains;
  else
    return nullptr;
}

// What the code says about the KV cache, as the facts constraints use.
void add_cache_facts(const model::CacheOrganisation& cache, check::FactSet& facts) {
  std::string where = cache.accesses.empty() ? "" : " at " + cache.accesses.front().where.str();
  if (!facts.find("paged")) {  // else the deployment file said it
    if (cache.organisation == "paged") facts.set("paged", true, "code: paged KV cache" + where);
    else if (cache.organisation == "contiguous") facts.set("paged", false, "code: contiguous KV cache" + where);
  }
  // Whether attention is given a preallocated cache buffer whole, unwritten
  // slots included. Known from the code only where the cache's own code is
  // in the analysed files; an opaque Cache.update leaves it to the user.
  if (facts.find("kv_read_whole_buffer") || cache.organisation != "contiguous") return;
  if (const model::CacheAccess* whole = cache.whole_read()) {
    facts.set("kv_read_whole_buffer", true,
              fmt::format("code: {} hands on the cache buffer whole (`{}` at {})", whole->function, whole->text, whole->where.str()));
  } else if (cache.write_index == "append") {
    facts.set("kv_read_whole_buffer", false, "code: the cache grows by the new keys" + where);
  } else if (cache.write_index == "position") {
    facts.set("kv_read_whole_buffer", false, "code: the cache is written by position and read through slices" + where);
  }
}

// Whether a batch may carry padding the attention mask has to hide. A model
// whose entry forward (the top-level class, and the model classes it wraps
// directly) takes no mask at all builds its masks from positions only: no
// padding reaches attention. One that takes a mask (HF's attention_mask) may
// be given a padded one; only the deployment can say.
void add_padding_fact(const model::ModelStructure& structure, const model::SourceSet& sources, check::FactSet& facts) {
  if (facts.find("padded_batches") || !structure.root) return;
  std::vector<std::string> classes{structure.root->class_name};
  // The model a causal-LM wrapper holds (`self.model = LlamaModel(...)`), not
  // the decoder layers: a layer taking the mask the model built is no entry.
  for (const model::ModuleNode& child : structure.root->children)
    if (child.local && child.path.find("[*]") == std::string::npos) classes.push_back(child.class_name);
  bool root_forward = false;
  for (const std::string& name : classes)
    for (const model::ClassDecl& c : sources.classes()) {
      if (c.node->name != name) continue;
      for (const frontend::ast::stmt* s : c.node->body) {
        auto* fn = frontend::ast::as<frontend::ast::FunctionDef>(s);
        if (!fn || fn->name != "forward") continue;
        root_forward = root_forward || name == classes.front();
        std::vector<const frontend::ast::arg*> params(fn->args->args.begin(), fn->args->args.end());
        params.insert(params.end(), fn->args->kwonlyargs.begin(), fn->args->kwonlyargs.end());
        for (const frontend::ast::arg* p : params)
          if (p->arg.find("mask") != std::string_view::npos || p->arg.find("padding") != std::string_view::npos) return;
      }
    }
  if (!root_forward) return;
  facts.set("padded_batches", false,
            fmt::format("code: {}.forward takes no attention mask, so masks come from positions only", classes.front()));
}

// No ALiBi where neither the config (model/facts) nor any analysed file names
// one: a bias builder (`build_alibi_tensor`) or an `alibi` argument would.
void add_alibi_fact(const model::SourceSet& sources, check::FactSet& facts) {
  if (facts.find("alibi")) return;
  constexpr std::string_view name = "alibi";
  auto same = [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; };
  for (const auto& f : sources.files()) {
    std::string_view text = f->parsed->source.text();
    if (std::search(text.begin(), text.end(), name.begin(), name.end(), same) != text.end()) return;
  }
  facts.set("alibi", false, "code: no ALiBi named in the analysed files, and the config has no alibi key");
}

// The layout at the first attention core the sub-chains read, if any.
model::CoreLayout attention_layout(const std::vector<model::BlockChains>* blocks) {
  if (!blocks) return {};
  for (const model::BlockChains& b : *blocks)
    for (const model::ModuleChain& m : b.modules)
      if ((m.module == "attention" || m.module == "mla") && m.layout.layout != "unknown") return m.layout;
  return {};
}

void list_unknown_facts(Plan& plan, const std::map<std::string, std::string>& hints) {
  std::set<std::string> unknown;
  for (const Candidate& c : plan.candidates) unknown.insert(c.missing_facts.begin(), c.missing_facts.end());
  plan.unknown_facts.assign(unknown.begin(), unknown.end());
  for (const std::string& f : plan.unknown_facts) {
    auto it = hints.find(f);
    if (it != hints.end()) plan.notes.push_back(fmt::format("{} is unknown: {}", f, it->second));
  }
}

}  // namespace

Plan build_plan(const AnalysisInputs& in, StageTimes* times) {
  StageTimer timer(times);
  Plan plan;
  plan.options = in.options;
  for (const auto& f : in.sources->files()) {
    plan.files.push_back(f->path);
    plan.file_hashes[f->path] = util::sha256_hex(f->parsed->source.text());
  }

  model::ModelConfig no_config;
  const model::ModelConfig& config = in.config ? *in.config : no_config;
  model::Inventory inventory = model::build_inventory(*in.sources, config);
  const model::RoleTable& roles = *inventory.roles;
  const std::vector<model::BlockChains>* blocks = block_chains(inventory);

  std::vector<DeploymentSetting> deployment;
  if (!in.options.deploy.empty()) deployment = load_deployment(in.options.deploy, in.catalog->facts());
  DeploymentFacts deployed = deployment_facts(inventory.facts, deployment, in.options, in.catalog->facts());
  add_cache_facts(inventory.kv_cache, deployed.facts);
  add_padding_fact(inventory.structure, *in.sources, deployed.facts);
  add_alibi_fact(*in.sources, deployed.facts);
  add_moe_fact(roles, blocks, deployed.facts);
  plan.options.stage = deployed.stage;
  timer.lap("model");

  // The block forward the inventory read its sub-chains from is the one the matcher walks.
  std::map<std::string, model::FunctionDataflow> block_forwards;
  for (model::BlockChains& b : inventory.chains)
    if (b.forward) {
      block_forwards.emplace(b.block_class, std::move(*b.forward));
      b.forward.reset();
    }
  ModelMatches matches =
      match_model(*in.sources, roles, *in.rules, &config, in.patterns, in.memo.get(), std::move(block_forwards),
                  in.match_threads);
  // A rule the deployment rules out (a quantised chain on a bf16 model) has
  // nothing to tell about where it almost matched.
  std::erase_if(matches.near_misses, [&](const NearMissSite& n) {
    return n.trace.pattern && n.trace.pattern->rule && rule_withheld(*n.trace.pattern->rule, deployed.facts);
  });
  timer.lap("match");

  CandidateContext context;
  context.catalog = in.catalog;
  context.facts = &deployed.facts;
  context.requested_stage = deployed.stage;
  context.branches = &inventory.branches;
  context.attention_layout = attention_layout(blocks);
  context.structure = &inventory.structure;
  model::FunctionIndex functions(*in.sources);
  context.functions = &functions;
  CandidateSet built = build_candidates(matches.matches, context);
  plan.candidates = std::move(built.candidates);
  plan.notes = std::move(built.notes);
  plan.rules_awaiting_facts = std::move(built.rules_awaiting_facts);
  attach_near_misses(matches.near_misses, plan.candidates, plan.notes, &functions);
  group_alternatives(plan.candidates);
  link_longer_chains(plan.candidates);
  if (blocks) {
    UncoveredSteps uncovered = find_uncovered_steps(*blocks, plan.candidates, matches.graphs, matches.near_misses,
                                                    deployed.facts, deployed.stage, &functions);
    resolve_opaque_cache_steps(uncovered.no_fused_op, plan.candidates, inventory.kv_cache,
                               in.rules->find("kv_cache.static_cache_prerequisite"), context, plan.notes);
    for (Candidate& c : uncovered.no_fused_op) plan.candidates.push_back(std::move(c));
    for (std::string& d : uncovered.dismissed) plan.notes.push_back(std::move(d));
    std::stable_sort(plan.candidates.begin(), plan.candidates.end(), [](const Candidate& a, const Candidate& b) {
      return module_rank(a.module) < module_rank(b.module);
    });
  }
  plan.facts = deployed.facts;
  plan.assumed_facts = deployed.assumed;
  list_unknown_facts(plan, deployed.hints);
  std::set<std::string> modules;
  if (blocks)
    for (const model::BlockChains& b : *blocks)
      for (const model::ModuleChain& m : b.modules) modules.insert(m.module);
  plan.reference_chains = reference_chain_coverage(embedded_reference_chains(), plan, plan.facts, modules, plan.notes);
  timer.lap("check");

  plan.review = run_review(plan, blocks, *in.catalog);
  timer.lap("review");
  return plan;
}

}  // namespace npufuse::plan

#include "plan/review.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <map>
#include <set>

#include "plan/candidate_builder.h"

namespace npufuse::plan {
namespace {

ReviewItem item(const char* id, const char* en, const char* zh, std::vector<std::string> failing) {
  ReviewItem r;
  r.id = id;
  r.title_en = en;
  r.title_zh = zh;
  r.passed = failing.empty();
  r.failing = std::move(failing);
  return r;
}

std::string chain_name(const model::BlockChains& block, const model::ModuleChain& chain) {
  std::string where = chain.instance.empty() ? chain.class_name : chain.instance;
  return fmt::format("{} ({} in {})", where, chain.module, block.block_class);
}

std::vector<std::string> decomposition_failures(const std::vector<model::BlockChains>* blocks) {
  if (!blocks) return {"sub-chain decomposition: not available, the blocks were not split into replaceable steps"};
  std::vector<std::string> out;
  if (blocks->empty()) out.push_back("no decoder block was found to decompose");
  for (const model::BlockChains& block : *blocks) {
    if (block.modules.empty()) out.push_back(fmt::format("{}: no attention, MoE or FFN module found", block.block_class));
    for (const model::ModuleChain& chain : block.modules)
      for (const std::string& missing : chain.missing)
        out.push_back(fmt::format("{}: step {} not found", chain_name(block, chain), missing));
  }
  return out;
}

// The step that makes a module what it is; a module whose key step no rule
// matched has no reference chain mapped.
const char* key_step(const std::string& module) {
  if (module == "attention" || module == "mla") return "attention_core";
  if (module == "moe") return "experts";
  if (module == "ffn") return "activation";
  if (module == "indexer") return "index_score";
  return "";
}

std::vector<std::string> reference_failures(const Plan& plan, const std::vector<model::BlockChains>* blocks) {
  std::vector<std::string> out;
  if (!blocks) out.push_back("modules could not be listed without the sub-chain decomposition; only rule matches were checked");
  std::set<std::string> told;
  if (blocks) {
    for (const model::BlockChains& block : *blocks)
      for (const model::ModuleChain& chain : block.modules) {
        const char* key = key_step(chain.module);
        for (const model::SubChainStep& step : chain.steps) {
          if (step.kind != key || step.spans.empty()) continue;
          Location where{step.spans.front().file, step.spans.front().line, step.spans.front().end_line};
          bool matched = std::any_of(plan.candidates.begin(), plan.candidates.end(), [&](const Candidate& c) {
            return c.status != Status::NoFusedOp &&
                   std::any_of(c.parts.begin(), c.parts.end(), [&](const Location& p) { return overlaps(p, where); });
          });
          std::string text = fmt::format("{}: key step {} at {}:{} matched no rule", chain_name(block, chain), key,
                                         where.file, where.start_line);
          if (!matched && told.insert(text).second) out.push_back(text);
        }
      }
  }
  for (const Candidate& c : plan.candidates)
    if (c.status == Status::NoFusedOp && c.requirement.why_nothing_fits.empty())
      out.push_back(c.id + ": recorded without evidence that nothing fits");
  return out;
}

std::vector<std::string> constraint_failures(const Plan& plan, const catalog::Catalog& catalog) {
  std::vector<std::string> out;
  for (const Candidate& c : plan.candidates) {
    for (const std::string& api : c.apis)
      if (!catalog.find(api)) out.push_back(fmt::format("{}: API {} is not in the catalog", c.id, api));
    if (c.status != Status::NoFusedOp && !c.apis.empty() && c.checks.empty())
      out.push_back(fmt::format("{}: no constraint of {} was checked", c.id, c.apis.front()));
    for (const CheckResult& r : c.checks) {
      if (r.answer != check::Answer::Unknown) continue;
      out.push_back(fmt::format("{}: {}:{}{} unknown{}", c.id, r.api, r.constraint_id,
                                r.stage.empty() ? "" : " (" + r.stage + ")",
                                r.missing.empty() ? ": " + r.message_en : fmt::format(", needs {}", fmt::join(r.missing, ", "))));
    }
  }
  return out;
}

// A refusal must rest on a hard limit: a catalog constraint ("api:id: ..."),
// a rule that says its chain must never get that operator, or a display-only
// rule. The size of the refactor is never a reason (seed workflow step 3).
bool effort_wording(const std::string& text) {
  static const char* const words[] = {"too much change", "too many changes", "large refactor", "too complex",
                                      "too much work", "改动较大", "改动过大", "工作量"};
  std::string lower;
  for (char ch : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return std::any_of(std::begin(words), std::end(words), [&](const char* w) { return lower.find(w) != std::string::npos; });
}

std::vector<std::string> refusal_failures(const Candidate& c) {
  std::vector<std::string> out;
  if (c.status != Status::NotApplicable) return out;
  if (c.blocking.empty()) out.push_back(c.id + ": not applicable without a cited constraint");
  for (const std::string& b : c.blocking)
    if (effort_wording(b)) out.push_back(fmt::format("{}: refused for the size of the change, not a hard constraint: {}", c.id, b));
  return out;
}

std::vector<std::string> listing_failures(const Plan& plan) {
  std::vector<std::string> out;
  for (const Candidate& c : plan.candidates) {
    if (c.stages.empty()) out.push_back(c.id + ": no stage");
    if (c.location.file.empty() || c.location.start_line <= 0) out.push_back(c.id + ": no source location");
    if (c.verification_cut.empty()) out.push_back(c.id + ": no verification cut");
    for (std::string& f : refusal_failures(c)) out.push_back(std::move(f));
    if (c.status == Status::CandidateWithPrerequisites && c.prerequisites.empty())
      out.push_back(c.id + ": prerequisites announced but none named");
    for (const PrerequisiteItem& p : c.prerequisites)
      if (p.where.file.empty()) out.push_back(fmt::format("{}: prerequisite {} has no location", c.id, p.id));
    if (c.status == Status::NoFusedOp && (c.requirement.subgraph.empty() || c.requirement.dtype.empty()))
      out.push_back(c.id + ": new-operator requirement incomplete");
  }
  return out;
}

}  // namespace

std::vector<ReviewItem> run_review(const Plan& plan, const std::vector<model::BlockChains>* blocks,
                                   const catalog::Catalog& catalog) {
  return {
      item("decomposition_complete", "Modules decomposed into replaceable chains (prefill/decode included)",
           "模块拆解完整（含Prefill/Decode分支差异）", decomposition_failures(blocks)),
      item("reference_matched", "Each module matched to a reference chain; the rest analysed",
           "参考匹配完整，未覆盖子链路已补充分析", reference_failures(plan, blocks)),
      item("constraints_confirmed", "Every candidate API's documented constraints checked",
           "每个候选API的文档约束均已确认", constraint_failures(plan, catalog)),
      item("candidates_listed", "Candidate list complete: status, stages, location, verification cut, evidence",
           "候选清单已形成：状态、阶段、位置、最小验证切口与证据", listing_failures(plan)),
  };
}

}  // namespace npufuse::plan

#include "apply/patch_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "apply/apply_error.h"
#include "apply/chain_rewrite.h"
#include "apply/merge_gate_up.h"
#include "apply/plan_file.h"
#include "apply/torch_npu_import.h"
#include "catalog/catalog.h"
#include "model/model_config.h"
#include "plan/analyze.h"
#include "rules/ruleset.h"
#include "util/edit_distance.h"
#include "util/file_io.h"

namespace npufuse::apply {

Reanalysis reanalyse(const plan::AnalyzeOptions& options) {
  model::SourceSet sources = model::SourceSet::load(options.paths);
  model::ModelConfig config;
  if (!options.config.empty()) config = model::ModelConfig::load(options.config);
  rules::RuleSet rules = options.rules_dir.empty()
                             ? rules::RuleSet::load(rules::embedded_rule_files(), "rules")
                             : rules::RuleSet::load(rules::directory_rule_files(options.rules_dir), options.rules_dir);
  catalog::Catalog catalog = options.catalog_dir.empty()
                                 ? catalog::Catalog::load(catalog::embedded_catalog_files(), "catalog")
                                 : catalog::Catalog::load(catalog::directory_catalog_files(options.catalog_dir),
                                                          options.catalog_dir);
  plan::AnalysisInputs in;
  in.sources = &sources;
  in.config = &config;
  in.rules = &rules;
  in.catalog = &catalog;
  in.options = options;
  plan::Plan fresh = plan::build_plan(in);
  return Reanalysis{std::move(sources), std::move(rules), std::move(fresh)};
}

namespace {

std::string closest_id(const std::string& id, const plan::Plan& plan) {
  std::string best;
  size_t best_distance = std::string::npos;
  for (const plan::Candidate& c : plan.candidates) {
    size_t d = edit_distance(id, c.id);
    if (d < best_distance) best_distance = d, best = c.id;
  }
  return best;
}

bool applicable(const plan::Candidate& c) {
  return c.status == plan::Status::Candidate || c.status == plan::Status::CandidateWithPrerequisites;
}

std::string where_of(const plan::Location& l) { return fmt::format("{}:{}", l.file, l.start_line); }

// The candidates to try, in plan order. An id given with --only that the
// plan does not hold is an input error.
std::vector<const plan::Candidate*> chosen(const plan::Plan& recorded, const plan::Plan& fresh,
                                           const PatchRequest& request, PatchSet& out) {
  std::set<std::string> wanted(request.only.begin(), request.only.end());
  for (const std::string& id : request.only) {
    bool known = std::any_of(recorded.candidates.begin(), recorded.candidates.end(),
                             [&](const plan::Candidate& c) { return c.id == id; });
    if (!known)
      throw ApplyError(fmt::format("{}: no candidate '{}' in the plan (did you mean '{}'?)", request.plan_path, id,
                                   closest_id(id, recorded)));
  }
  std::vector<const plan::Candidate*> picked;
  for (const plan::Candidate& c : recorded.candidates) {
    if (!wanted.empty() && !wanted.count(c.id)) continue;
    auto it = std::find_if(fresh.candidates.begin(), fresh.candidates.end(),
                           [&](const plan::Candidate& f) { return f.id == c.id; });
    if (it == fresh.candidates.end())
      throw ApplyError(fmt::format("{}: candidate '{}' is not found when the plan's analysis is run again "
                                   "(was the plan written by another npufuse version?)",
                                   request.plan_path, c.id));
    if (!applicable(*it)) {
      if (!wanted.empty()) out.skipped.push_back(fmt::format("{}: {}", c.id, plan::status_name(it->status)));
      continue;
    }
    picked.push_back(&*it);
  }
  return picked;
}

bool overlaps(const Edit& a, const Edit& b) { return a.file == b.file && a.begin < b.end && b.begin < a.end; }

}  // namespace

PatchSet make_patches(const PatchRequest& request) {
  plan::Plan recorded = read_plan_file(request.plan_path);
  check_plan_is_current(recorded, request.plan_path);
  plan::AnalyzeOptions options = recorded.options;
  if (!request.paths.empty()) options.paths = request.paths;
  Reanalysis again = reanalyse(options);
  if (again.plan.files != recorded.files)
    throw ApplyError(fmt::format("{}: the plan was made for {}, but the paths given load {}", request.plan_path,
                                 fmt::join(recorded.files, ", "), fmt::join(again.plan.files, ", ")));

  PatchSet out;
  std::vector<Edit> chain_edits;
  std::vector<Edit> helpers;  // module-level code a rewrite needs, once per file
  for (const plan::Candidate* c : chosen(recorded, again.plan, request, out)) {
    // merge_gate_up is the one prerequisite apply performs; any other keeps
    // the fusion out of the patch and becomes a manual step.
    bool only_merge = !c->prerequisites.empty() &&
                      std::all_of(c->prerequisites.begin(), c->prerequisites.end(),
                                  [](const plan::PrerequisiteItem& p) { return p.id == "merge_gate_up"; });
    if (only_merge) {
      MergeGateUp merge = merge_gate_up(*c, again.sources);
      bool clash = std::any_of(chain_edits.begin(), chain_edits.end(), [&](const Edit& e) {
        return std::any_of(merge.edits.begin(), merge.edits.end(), [&](const Edit& m) { return overlaps(e, m); });
      });
      if (!merge.refusal.empty() || clash) {
        std::string why = clash ? "its edits overlap another candidate's" : merge.refusal;
        out.manual.push_back(ManualStep{c->id, merge.where, "prerequisite merge_gate_up not done: " + why});
        out.skipped.push_back(c->id + ": prerequisites first (see the manual steps)");
        continue;
      }
      chain_edits.insert(chain_edits.end(), merge.edits.begin(), merge.edits.end());
      bool have_helper = std::any_of(helpers.begin(), helpers.end(), [&](const Edit& h) { return h.file == merge.helper.file; });
      if (!have_helper) helpers.push_back(merge.helper);
      out.applied.push_back(c->id);
      continue;
    }
    bool blocked = false;
    for (const plan::PrerequisiteItem& p : c->prerequisites) {
      std::string how = p.mechanical ? "mechanical, not automated by apply yet: " : "";
      out.manual.push_back(ManualStep{c->id, where_of(p.where.file.empty() ? c->location : p.where),
                                      fmt::format("prerequisite {}: {}{}", p.id, how, p.en)});
      blocked = true;
    }
    if (blocked) {
      out.skipped.push_back(c->id + ": prerequisites first (see the manual steps)");
      continue;
    }
    const rules::Rule* rule = again.rules.find(c->rule);
    if (!rule) {
      out.manual.push_back(ManualStep{c->id, where_of(c->location), "rule " + c->rule + " is not loaded"});
      continue;
    }
    ChainRewrite rewrite = rewrite_chain(*c, again.sources, *rule);
    if (!rewrite.edit) {
      out.manual.push_back(ManualStep{c->id, rewrite.where, "not rewritten: " + rewrite.refusal});
      continue;
    }
    auto clash = std::find_if(chain_edits.begin(), chain_edits.end(),
                              [&](const Edit& e) { return overlaps(e, *rewrite.edit); });
    if (clash != chain_edits.end()) {
      out.skipped.push_back(fmt::format("{}: the same chain as {}, already rewritten", c->id, clash->candidate));
      continue;
    }
    chain_edits.push_back(*rewrite.edit);
    out.applied.push_back(c->id);
  }

  for (const auto& file : again.sources.files()) {
    PatchedFile patched;
    patched.path = file->path;
    patched.original = read_file(file->path);
    std::vector<Edit> edits;
    for (const Edit& e : chain_edits)
      if (e.file == file->path) edits.push_back(e);
    for (const Edit& e : helpers)
      if (e.file == file->path) edits.push_back(e);
    if (!edits.empty())
      if (std::optional<Edit> import = torch_npu_import(*file)) edits.push_back(*import);
    patched.edits = sorted_edits(std::move(edits));
    // Edits count from the BOM-stripped text; the file keeps its BOM.
    std::vector<Edit> shifted = patched.edits;
    uint32_t bom = file->parsed->source.bom_length();
    for (Edit& e : shifted) e.begin += bom, e.end += bom;
    patched.patched = apply_edits(patched.original, shifted);
    patched.edits = std::move(shifted);
    out.files.push_back(std::move(patched));
  }
  return out;
}

}  // namespace npufuse::apply

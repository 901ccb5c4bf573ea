#include "apply/patch_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "apply/apply_error.h"
#include "apply/causal_buffer.h"
#include "apply/chain_rewrite.h"
#include "apply/merge_gate_up.h"
#include "apply/plan_file.h"
#include "apply/plan_paths.h"
#include "apply/prerequisite_steps.h"
#include "apply/source_functions.h"
#include "apply/stack_expert_weights.h"
#include "apply/thread_residual.h"
#include "apply/torch_npu_import.h"
#include "catalog/catalog.h"
#include "model/model_config.h"
#include "plan/analyze.h"
#include "rules/ruleset.h"
#include "util/edit_distance.h"
#include "util/file_io.h"
#include "util/identifier.h"

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
  return Reanalysis{std::move(sources), std::move(rules), std::move(fresh), std::move(config)};
}

Reanalysis reanalyse_plan(plan::Plan& recorded, const std::string& plan_path, const std::vector<std::string>& paths) {
  PlanFiles files(recorded, paths);
  files.check_current(plan_path);
  // The config (and deployment file, rules and catalog folders) the plan
  // names, where the model's paths given now put them (beside the model).
  for (std::string* path : {&recorded.options.config, &recorded.options.deploy, &recorded.options.rules_dir,
                            &recorded.options.catalog_dir})
    if (!path->empty()) *path = files.now(*path);
  plan::AnalyzeOptions options = recorded.options;
  if (!paths.empty()) options.paths = paths;
  Reanalysis again = reanalyse(options);
  files.align(again.plan, plan_path);
  return again;
}

namespace {

// Every id --only may name: the candidates and their alternatives.
std::vector<const plan::Candidate*> choosable(const plan::Plan& plan) {
  std::vector<const plan::Candidate*> out;
  for (const plan::Candidate& c : plan.candidates) {
    out.push_back(&c);
    for (const plan::Candidate& a : c.alternatives) out.push_back(&a);
  }
  return out;
}

const plan::Candidate* find_id(const plan::Plan& plan, const std::string& id) {
  for (const plan::Candidate* c : choosable(plan))
    if (c->id == id) return c;
  return nullptr;
}

std::string closest_id(const std::string& id, const plan::Plan& plan) {
  std::string best;
  size_t best_distance = std::string::npos;
  for (const plan::Candidate* c : choosable(plan)) {
    size_t d = edit_distance(id, c->id);
    if (d < best_distance) best_distance = d, best = c->id;
  }
  return best;
}

bool applicable(const plan::Candidate& c) {
  return c.status == plan::Status::Candidate || c.status == plan::Status::CandidateWithPrerequisites;
}

std::string where_of(const plan::Location& l) { return fmt::format("{}:{}", l.file, l.start_line); }

// The candidates to try, in plan order, each with the ones to fall back on
// when it yields no edit: without --only, a candidate's applicable
// alternatives. An id given with --only that the plan does not hold is an
// input error. --only may name an alternative: it is tried in its preferred
// candidate's place (and the preferred one is not, unless it is named too).
std::vector<std::vector<const plan::Candidate*>> chosen(const plan::Plan& recorded, const plan::Plan& fresh,
                                                        const PatchRequest& request, PatchSet& out) {
  std::vector<std::string> only = plan_ids(recorded, request.plan_path, request.paths, request.only);
  std::set<std::string> wanted(only.begin(), only.end());
  auto located = [&](const plan::Candidate& c) {
    const plan::Candidate* again = find_id(fresh, c.id);
    if (!again)
      throw ApplyError(fmt::format("{}: candidate '{}' is not found when the plan's analysis is run again "
                                   "(was the plan written by another npufuse version?)",
                                   request.plan_path, c.id));
    return again;
  };
  std::vector<std::vector<const plan::Candidate*>> picked;
  for (const plan::Candidate& preferred : recorded.candidates) {
    std::vector<const plan::Candidate*> tried;
    if (wanted.empty() || wanted.count(preferred.id)) tried.push_back(&preferred);
    for (const plan::Candidate& a : preferred.alternatives)
      if (wanted.count(a.id)) tried.push_back(&a);
    for (const plan::Candidate* c : tried) {
      const plan::Candidate* again = located(*c);
      if (!applicable(*again)) {
        if (!wanted.empty()) out.skipped.push_back(fmt::format("{}: {}", c->id, plan::status_name(again->status)));
        continue;
      }
      std::vector<const plan::Candidate*> group{again};
      if (wanted.empty())
        for (const plan::Candidate& a : again->alternatives)
          if (applicable(a)) group.push_back(&a);
      picked.push_back(std::move(group));
    }
  }
  return picked;
}

}  // namespace

std::vector<std::string> plan_ids(const plan::Plan& recorded, const std::string& plan_path,
                                  const std::vector<std::string>& paths, const std::vector<std::string>& ids) {
  const PlanFiles files(recorded, paths);
  std::vector<std::string> out;
  for (const std::string& id : ids) {
    std::string known = files.recorded_id(id);
    if (known.empty())
      throw ApplyError(
          fmt::format("{}: no candidate '{}' in the plan (did you mean '{}'?)", plan_path, id, closest_id(id, recorded)));
    out.push_back(known);
  }
  return out;
}

namespace {

bool overlaps(const Edit& a, const Edit& b) { return a.file == b.file && a.begin < b.end && b.begin < a.end; }

// `held` made inside `holder`, when holder's range holds held's and holder's
// text carries held's original bytes once, as written: code the holder kept
// or moved (the input norm call inside the attention call a chain moved into
// its replacement; the norm call inside the residual add a refactor rewrote).
// A bare name is too common a text to be found so.
std::optional<Edit> made_inside(const Edit& holder, const Edit& held, std::string_view source) {
  if (holder.file != held.file || held.begin < holder.begin || held.end > holder.end || held.end <= held.begin ||
      (held.begin == holder.begin && held.end == holder.end))
    return std::nullopt;
  std::string original(source.substr(held.begin, held.end - held.begin));
  if (is_identifier(original)) return std::nullopt;
  size_t at = holder.text.find(original);
  if (at == std::string::npos || holder.text.find(original, at + 1) != std::string::npos) return std::nullopt;
  Edit merged = holder;
  merged.text.replace(at, original.size(), held.text);
  return merged;
}

// The refactor's edits made against the chain edits: each either clear of
// them, or made inside one, or taking one inside it (made_inside). On
// success the chain edits are updated (a chain edit taken in leaves the list)
// and the refactor's edits to add are returned; nullopt, with `clash` set to
// the first edit no way fits, leaves everything as it was.
std::optional<std::vector<Edit>> fitted(const std::vector<Edit>& refactor, std::vector<Edit>& chain_edits,
                                        const model::SourceSet& sources, Edit& clash) {
  std::vector<Edit> chain = chain_edits;
  std::vector<Edit> out;
  for (Edit t : refactor) {
    bool absorbed = false;
    for (size_t i = 0; i < chain.size() && !absorbed;) {
      if (!overlaps(chain[i], t)) {
        ++i;
        continue;
      }
      const model::ModelFile* file = file_named(sources, t.file);
      std::string_view source = file ? file->parsed->source.text() : std::string_view();
      if (std::optional<Edit> into_chain = file ? made_inside(chain[i], t, source) : std::nullopt) {
        chain[i] = *into_chain;
        absorbed = true;
      } else if (std::optional<Edit> into_refactor = file ? made_inside(t, chain[i], source) : std::nullopt) {
        t = *into_refactor;
        chain.erase(chain.begin() + static_cast<long>(i));
      } else {
        clash = chain[i];
        return std::nullopt;
      }
    }
    if (!absorbed) out.push_back(std::move(t));
  }
  chain_edits = std::move(chain);
  return out;
}

// The applied candidate whose edits already make `c`'s fusion: it calls
// every operator c would, and the ops of c's chain inside the function it
// edited all lie in its edits (HF Qwen3's q_norm/k_norm chain, whose norm
// module's forward norm.rms_norm rewrote: every call runs the fused norm).
// Null when there is none.
const plan::Candidate* done_by(const plan::Candidate& c, const std::vector<const plan::Candidate*>& applied,
                               const std::vector<Edit>& edits, const model::SourceSet& sources) {
  for (const plan::Candidate* a : applied) {
    if (a->id == c.id || c.apis.empty() ||
        !std::all_of(c.apis.begin(), c.apis.end(), [&](const std::string& api) {
          return std::find(a->apis.begin(), a->apis.end(), api) != a->apis.end();
        }))
      continue;
    bool inside_one = false, all_inside = true;
    for (const Edit& e : edits) {
      if (e.candidate != a->id) continue;
      const model::ModelFile* file = file_named(sources, e.file);
      std::optional<FunctionAt> fn = file ? function_around(*file, e.begin, e.end) : std::nullopt;
      if (!fn) continue;
      for (const plan::Candidate::SourceRange& op : c.apply_ops) {
        if (op.file != e.file || op.begin < fn->fn->begin || op.end > fn->fn->end) continue;
        bool in_edit = std::any_of(edits.begin(), edits.end(), [&](const Edit& x) {
          return x.candidate == a->id && x.file == op.file && x.begin <= op.begin && op.end <= x.end;
        });
        inside_one = inside_one || in_edit;
        all_inside = all_inside && in_edit;
      }
    }
    if (inside_one && all_inside) return a;
  }
  return nullptr;
}

}  // namespace

PatchSet make_patches(const PatchRequest& request) {
  plan::Plan recorded = read_plan_file(request.plan_path);
  Reanalysis again = reanalyse_plan(recorded, request.plan_path, request.paths);

  PatchSet out;
  std::vector<Edit> chain_edits;
  std::vector<Edit> helpers;  // code a rewrite needs elsewhere (the merge hook factory, registered buffers), once
  std::vector<const plan::Candidate*> seams;  // add+norm chains across the layer loop, done together at the end
  std::map<std::string, std::string> stacked_by;  // expert class -> the candidate that stacked its weights
  auto clashing = [&](const Edit& edit) {
    return std::find_if(chain_edits.begin(), chain_edits.end(), [&](const Edit& e) { return overlaps(e, edit); });
  };
  // A mechanical prerequisite done by a refactor (its edits, plus a helper
  // needed once per file): taken unless refused or overlapping an earlier
  // edit, which makes it a manual step.
  auto take_refactor = [&](const plan::Candidate& c, const std::string& prerequisite, const std::vector<Edit>& edits,
                           const Edit& helper, const std::string& refusal, const std::string& where) {
    bool clash = std::any_of(edits.begin(), edits.end(), [&](const Edit& m) { return clashing(m) != chain_edits.end(); });
    if (!refusal.empty() || clash) {
      std::string why = clash ? "its edits overlap another candidate's" : refusal;
      out.manual.push_back(ManualStep{c.id, where, "prerequisite " + prerequisite + " not done: " + why});
      out.skipped.push_back(c.id + ": prerequisites first (see the manual steps)");
      return false;
    }
    chain_edits.insert(chain_edits.end(), edits.begin(), edits.end());
    bool have_helper = std::any_of(helpers.begin(), helpers.end(),
                                   [&](const Edit& h) { return h.file == helper.file && h.text == helper.text; });
    if (!have_helper) helpers.push_back(helper);
    out.applied.push_back(c.id);
    return true;
  };
  // One candidate: true when it became edits; otherwise the manual steps
  // and skipped lines say why.
  auto attempt = [&](const plan::Candidate* c) -> bool {
    // Which prerequisites apply performs; any other keeps the fusion out of
    // the patch and becomes a manual step.
    bool merge = false, stack = false, manual = false;
    for (const plan::PrerequisiteItem& p : c->prerequisites) {
      PrerequisiteHandling how = handling_of(p);
      merge = merge || how.way == PrerequisiteWay::MergeGateUp;
      stack = stack || how.way == PrerequisiteWay::StackExperts;
      if (how.way != PrerequisiteWay::Manual) continue;
      // One the code itself can show met (apply/causal_buffer.h).
      if (p.id == "bool_buffer_is_causal") {
        CausalBuffer shown = causal_buffer(*c, "causal_mask", again.sources);
        if (shown.met) {
          out.checked.push_back(ManualStep{c->id, shown.where, fmt::format("prerequisite {} met: {}", p.id, shown.why)});
          continue;
        }
        how.why = "not shown by the code: " + shown.why + " (" + shown.where + ")";
      }
      out.manual.push_back(ManualStep{c->id, where_of(p.where.file.empty() ? c->location : p.where),
                                      fmt::format("prerequisite {}: {}: {}", p.id, how.why, p.en)});
      manual = true;
    }
    if (manual) {
      out.skipped.push_back(c->id + ": prerequisites first (see the manual steps)");
      return false;
    }
    if (stack) {
      StackedExperts stacked = stack_expert_weights(*c, again.sources);
      if (!take_refactor(*c, "stack_expert_weights", stacked.edits, stacked.helper, stacked.refusal, stacked.where))
        return false;
      stacked_by[stacked.expert_class] = c->id;
      return true;
    }
    if (merge) {
      // Stacked experts are made of this class and no longer call it; their
      // stacking reads its separate projections.
      std::string owner = c->apply_function.substr(0, c->apply_function.find('.'));
      if (auto by = stacked_by.find(owner); by != stacked_by.end()) {
        out.skipped.push_back(fmt::format("{}: taken in by {}, which stacks the {} experts' weights", c->id, by->second, owner));
        return false;
      }
      MergeGateUp merged = merge_gate_up(*c, again.sources);
      return take_refactor(*c, "merge_gate_up", merged.edits, merged.helper, merged.refusal, merged.where);
    }
    if (threads_residual(*c)) {
      seams.push_back(c);
      return true;
    }
    const rules::Rule* rule = again.rules.find(c->rule);
    if (!rule) {
      out.manual.push_back(ManualStep{c->id, where_of(c->location), "rule " + c->rule + " is not loaded"});
      return false;
    }
    ChainRewrite rewrite = rewrite_chain(*c, again.sources, *rule, &again.config, /*kept_in_place=*/true);
    if (!rewrite.edit) {
      out.manual.push_back(ManualStep{c->id, rewrite.where, "not rewritten: " + rewrite.refusal});
      return false;
    }
    rewrite.kept.insert(rewrite.kept.begin(), *rewrite.edit);
    for (const Edit& e : rewrite.kept)
      if (auto clash = clashing(e); clash != chain_edits.end()) {
        out.skipped.push_back(fmt::format("{}: the same chain as {}, already rewritten", c->id, clash->candidate));
        return false;
      }
    chain_edits.insert(chain_edits.end(), rewrite.kept.begin(), rewrite.kept.end());
    for (const auto& [where, what] : rewrite.folded) out.refactored.push_back(ManualStep{c->id, where, what});
    // One buffer per class, however many of its chains read it.
    for (const Edit& b : rewrite.buffers) {
      bool have = std::any_of(helpers.begin(), helpers.end(), [&](const Edit& h) {
        return h.file == b.file && h.begin == b.begin && h.text == b.text;
      });
      if (!have) helpers.push_back(b);
    }
    out.applied.push_back(c->id);
    return true;
  };
  // Expert loops whose weights get stacked go first: the experts' own
  // SwiGLU candidates then know their class is taken in.
  std::vector<std::vector<const plan::Candidate*>> groups = chosen(recorded, again.plan, request, out);
  auto stacks = [](const std::vector<const plan::Candidate*>& g) {
    return std::any_of(g.front()->prerequisites.begin(), g.front()->prerequisites.end(), [](const plan::PrerequisiteItem& p) {
      return handling_of(p).way == PrerequisiteWay::StackExperts;
    });
  };
  std::stable_partition(groups.begin(), groups.end(), stacks);
  for (const std::vector<const plan::Candidate*>& group : groups) {
    // A preferred candidate that cannot be rewritten leaves the chain to
    // its alternatives, in the plan's order. When one of them is applied,
    // why the ones before it were not rewritten is no step left to the user:
    // it is said with the skip. (A prerequisite they wait for stays listed:
    // doing it would give the preferred fusion.)
    const size_t manual_before = out.manual.size();
    size_t applied_at = group.size();
    for (size_t i = 0; i < group.size(); ++i)
      if (attempt(group[i])) {
        applied_at = i;
        break;
      }
    for (size_t i = 0; i + 1 < group.size() && i < applied_at; ++i) {
      std::string line = fmt::format("{}: trying its alternative {}", group[i]->id, group[i + 1]->id);
      auto refusal = std::find_if(out.manual.begin() + static_cast<long>(manual_before), out.manual.end(), [&](const ManualStep& m) {
        return m.candidate == group[i]->id && m.what.rfind("not rewritten: ", 0) == 0;
      });
      if (applied_at < group.size() && refusal != out.manual.end()) {
        std::string why = refusal->what;
        if (const std::string by_hand = "; edit it by hand"; why.ends_with(by_hand)) why.resize(why.size() - by_hand.size());
        line += fmt::format(" ({}: {})", refusal->where, why);
        out.manual.erase(refusal);
      }
      out.skipped.push_back(std::move(line));
    }
  }
  // A chain left manual whose fusion an applied candidate already makes
  // where its ops run is said to be done, not left to the user.
  {
    std::vector<const plan::Candidate*> applied;
    for (const std::string& id : out.applied)
      if (const plan::Candidate* a = find_id(again.plan, id)) applied.push_back(a);
    std::set<std::string> done;
    for (const ManualStep& m : out.manual) {
      if (m.what.rfind("not rewritten: ", 0) != 0 || done.count(m.candidate)) continue;
      const plan::Candidate* c = find_id(again.plan, m.candidate);
      const plan::Candidate* a = c ? done_by(*c, applied, chain_edits, again.sources) : nullptr;
      if (!a) continue;
      done.insert(m.candidate);
      out.skipped.push_back(fmt::format("{}: already fused: {} rewrote the code its ops run in", m.candidate, a->id));
    }
    std::erase_if(out.manual, [&](const ManualStep& m) { return done.count(m.candidate) > 0; });
  }
  // One refactor per layer class serves every chosen chain across its loop:
  // they need the same new parameter and return, so they are done last,
  // together, against the edits already made.
  // Its edits may hold a chain's edit, or lie inside one, where the other's
  // text carries the code as written (fitted).
  for (const ThreadedResidual& threaded : thread_residual(seams, again.sources)) {
    std::string why = threaded.refusal;
    std::string where = threaded.where;
    std::vector<Edit> edits;
    if (why.empty()) {
      Edit clash;
      if (std::optional<std::vector<Edit>> fit = fitted(threaded.edits, chain_edits, again.sources, clash)) {
        edits = std::move(*fit);
      } else {
        why = fmt::format("its edits overlap {}'s", clash.candidate);
        const model::ModelFile* f = file_named(again.sources, clash.file);
        where = fmt::format("{}:{}", clash.file, f ? f->parsed->source.line_col(clash.begin).line : 0);
      }
    }
    for (const std::string& id : threaded.candidates) {
      if (why.empty()) {
        out.applied.push_back(id);
        continue;
      }
      out.manual.push_back(ManualStep{id, where, "prerequisite thread_residual not done: " + why});
      out.skipped.push_back(id + ": prerequisites first (see the manual steps)");
    }
    if (why.empty()) chain_edits.insert(chain_edits.end(), edits.begin(), edits.end());
  }

  // What each applied candidate still rests on: error constraints whose facts
  // were not given (analyze lists them under "Asked for").
  for (const std::string& id : out.applied) {
    const plan::Candidate* c = find_id(again.plan, id);
    if (!c) continue;
    // A chain rewritten inside a module-level function its caller may swap
    // for another one at run time: the patch runs only on this function's path.
    auto edit = std::find_if(chain_edits.begin(), chain_edits.end(), [&](const Edit& e) { return e.candidate == id; });
    const model::ModelFile* edited = edit == chain_edits.end() ? nullptr : file_named(again.sources, edit->file);
    std::optional<FunctionAt> inside = edited ? function_around(*edited, edit->begin, edit->end) : std::nullopt;
    if (inside && !inside->is_method) {
      std::string fn_name(inside->fn->name);
      std::set<std::string> tables = tables_holding(again.sources, fn_name);
      for (const FunctionAt& caller : every_function(again.sources)) {
        if (caller.fn == inside->fn) continue;
        for (const OtherBinding& b : other_bindings(caller, fn_name, tables)) {
          bool hf = b.test.find("_attn_implementation") != std::string::npos;
          out.assumed.push_back(ManualStep{
              id, fmt::format("{}:{}", caller.file->path, b.line),
              fmt::format("the fused call is in {}, which {} calls through `{}`; where `{}` holds, `{}` = `{}` runs "
                          "instead and the patch does not{}",
                          fn_name, caller.qualified, b.holder, b.test, b.holder, b.value,
                          hf ? " (load the model with attn_implementation=\"eager\")" : "")});
        }
      }
    }
    std::set<std::string> facts;
    std::vector<std::string> constraints;
    for (const plan::CheckResult& r : c->checks) {
      if (r.answer != check::Answer::Unknown || r.severity != "error") continue;
      std::string name = r.api + ":" + r.constraint_id;
      if (std::find(constraints.begin(), constraints.end(), name) == constraints.end()) constraints.push_back(name);
      facts.insert(r.missing.begin(), r.missing.end());
    }
    if (constraints.empty()) continue;
    out.assumed.push_back(ManualStep{
        id, where_of(c->location),
        fmt::format("{} answer{} unknown until {} {} given (`npufuse explain {}` names {})",
                    constraints.size() == 1 ? "one of its error constraints" : fmt::format("{} of its error constraints", constraints.size()),
                    constraints.size() == 1 ? "s" : "", fmt::join(facts, ", "), facts.size() == 1 ? "is" : "are", id,
                    constraints.size() == 1 ? "it" : "them")});
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

// npufuse explain ID --plan plan.json [--lang en|zh] [--format md|json]
// One candidate's full reasoning: the rule and its documentation, the
// matched lines, each constraint with its answer and evidence, the
// prerequisites, the verification cut and the fix preview. The fix preview
// is what `npufuse apply --only ID` would write, so it needs the analysed
// files unchanged; a stale plan is still explained, with a warning and no
// preview. Exit 2 for an unknown id (with the closest ids) or a bad plan.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "apply/apply_error.h"
#include "apply/patch_plan.h"
#include "apply/plan_file.h"
#include "apply/plan_paths.h"
#include "cli/command.h"
#include "report/candidate_explanation.h"
#include "report/html_candidate_card.h"
#include "report/html_snippet.h"
#include "rules/ruleset.h"
#include "util/edit_distance.h"
#include "util/file_io.h"

namespace npufuse::cli {
namespace {

struct ExplainOptions {
  std::string id;
  std::string plan;
  std::string lang = "en";
  std::string format = "md";
};

struct Found {
  const plan::Candidate* candidate = nullptr;
  std::string preferred_id;
};

Found find_candidate(const plan::Plan& plan, const std::string& id) {
  for (const plan::Candidate& c : plan.candidates) {
    if (c.id == id) return {&c, ""};
    for (const plan::Candidate& a : c.alternatives)
      if (a.id == id) return {&a, c.id};
  }
  return {};
}

// Up to five ids nearest to `id`, nearest first.
std::vector<std::string> closest_ids(const plan::Plan& plan, const std::string& id) {
  std::vector<std::pair<size_t, std::string>> scored;
  for (const plan::Candidate& c : plan.candidates) {
    scored.emplace_back(edit_distance(id, c.id), c.id);
    for (const plan::Candidate& a : c.alternatives) scored.emplace_back(edit_distance(id, a.id), a.id);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < 5; ++i) out.push_back(scored[i].second);
  return out;
}

std::vector<std::string> snippets_of(const plan::Candidate& c) {
  report::SourceTexts texts;
  std::vector<plan::Location> places{c.location};
  for (const auto& p : c.parts)
    if (!(p.file == c.location.file && p.start_line == c.location.start_line && p.end_line == c.location.end_line))
      places.push_back(p);
  std::vector<std::string> out;
  for (const auto& place : places) {
    if (place.file.empty()) continue;
    std::string head = report::location_label(place) + "\n";
    auto text = texts.get(place.file);
    out.push_back(head + (text ? report::snippet_text(*text, {{place.start_line, place.end_line}})
                               : std::string("(the file cannot be read)\n")));
  }
  return out;
}

int line_of(const std::string& text, uint32_t offset) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + std::min<size_t>(offset, text.size()), '\n'));
}

// What `apply --only ID` would do for this candidate: its edits, or why not.
void add_fix_preview(report::Explanation& e, const std::string& plan_path, const std::string& id) {
  apply::PatchRequest request;
  request.plan_path = plan_path;
  request.only = {id};
  apply::PatchSet patches;
  try {
    patches = apply::make_patches(request);
  } catch (const std::exception& err) {
    e.fix_notes.push_back(fmt::format("the fix could not be previewed: {}", err.what()));
    return;
  }
  for (const apply::PatchedFile& f : patches.files)
    for (const apply::Edit& edit : f.edits) {
      if (edit.candidate != id) continue;
      report::FixHunk h;
      h.file = edit.file;
      h.first_line = line_of(f.original, edit.begin);
      h.last_line = line_of(f.original, edit.end > edit.begin ? edit.end - 1 : edit.begin);
      // An edit starts after the first line's indentation; put it back so
      // the preview's lines line up.
      size_t line_start = f.original.rfind('\n', edit.begin == 0 ? 0 : edit.begin - 1);
      line_start = line_start == std::string::npos || edit.begin == 0 ? 0 : line_start + 1;
      std::string indent = f.original.substr(line_start, edit.begin - line_start);
      if (indent.find_first_not_of(" \t") != std::string::npos) indent.clear();
      h.original = indent + f.original.substr(edit.begin, edit.end - edit.begin);
      h.replacement = indent + edit.text;
      e.fix.push_back(std::move(h));
    }
  for (const apply::ManualStep& r : patches.refactored)
    if (r.candidate == id) e.fix_notes.push_back(fmt::format("{}: {}", r.where, r.what));
  for (const apply::ManualStep& r : patches.checked)
    if (r.candidate == id) e.fix_notes.push_back(fmt::format("{}: {}", r.where, r.what));
  for (const apply::ManualStep& m : patches.manual)
    if (m.candidate == id) e.fix_notes.push_back(fmt::format("{}: {}", m.where, m.what));
  for (const std::string& s : patches.skipped)
    if (s.rfind(id + ":", 0) == 0) e.fix_notes.push_back(s);
}

int run_explain(const ExplainOptions& o) {
  plan::Plan plan;
  try {
    plan = apply::read_plan_file(o.plan);
  } catch (const apply::ApplyError& err) {
    fmt::print(stderr, "npufuse explain: {}\n", err.what());
    return kUsage;
  }
  // The id may spell its file another way than the plan (relative,
  // absolute, through a symlink): the plan's spelling from here on.
  std::string id = apply::PlanFiles(plan, {}).recorded_id(o.id);
  if (id.empty()) id = o.id;
  Found found = find_candidate(plan, id);
  if (!found.candidate) {
    std::vector<std::string> close = closest_ids(plan, o.id);
    fmt::print(stderr, "npufuse explain: {}: no candidate '{}' in the plan\n", o.plan, o.id);
    if (!close.empty()) {
      fmt::print(stderr, "closest ids:\n");
      for (const auto& c : close) fmt::print(stderr, "  {}\n", c);
    }
    return kUsage;
  }

  report::Explanation e;
  e.candidate = found.candidate;
  e.preferred_id = found.preferred_id;
  rules::RuleSet rules;
  const std::string& dir = plan.options.rules_dir;
  try {
    rules = dir.empty() ? rules::RuleSet::load(rules::embedded_rule_files(), "rules")
                        : rules::RuleSet::load(rules::directory_rule_files(dir), dir);
    if (!found.candidate->rule.empty()) {
      e.rule = rules.find(found.candidate->rule);
      if (!e.rule) e.warnings.push_back(fmt::format("rule '{}' is not in the rule set the plan names", found.candidate->rule));
    }
  } catch (const std::exception& err) {
    e.warnings.push_back(fmt::format("the rules could not be read: {}", err.what()));
  }
  e.snippets = snippets_of(*found.candidate);

  bool current = true;
  try {
    apply::check_plan_is_current(plan, o.plan);
  } catch (const apply::ApplyError& err) {
    current = false;
    std::string warning = fmt::format("stale plan: {}", err.what());
    e.warnings.push_back(warning);
    fmt::print(stderr, "npufuse explain: warning: {}\n", warning);
    e.fix_notes.push_back("no fix preview: the plan no longer describes the files");
  }
  if (current) add_fix_preview(e, o.plan, id);

  std::string text = o.format == "json" ? report::explanation_json(e).dump(2) + "\n"
                                        : report::explanation_markdown(e, o.lang == "zh" ? report::Lang::Zh : report::Lang::En);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kOk;
}

}  // namespace

Registered register_explain(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("explain", "One candidate's full reasoning: rule, matched lines, checks, fix preview");
  static ExplainOptions o;
  cmd->add_option("id", o.id, "Candidate id, as the plan writes it")->required();
  cmd->add_option("--plan", o.plan, "Plan written by `npufuse analyze --format json`")->required();
  cmd->add_option("--lang", o.lang, "en or zh")->check(CLI::IsMember({"en", "zh"}));
  cmd->add_option("--format", o.format, "md or json")->check(CLI::IsMember({"md", "json"}));
  return {cmd, [] { return run_explain(o); }};
}

}  // namespace npufuse::cli

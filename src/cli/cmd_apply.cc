// npufuse apply PATH... --plan plan.json [--only ID,...] [--out DIR] [--diff FILE|-] [--in-place]
// Workflow step 5: patch the model with the plan's candidates. Each chain
// becomes one byte-range edit; what cannot be rewritten safely is listed as
// a manual step with its place. Exit 0 when the patches were written (manual
// steps or not), 2 for input errors (stale or malformed plan, unknown id,
// an output over an input), nothing written then.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "apply/apply_error.h"
#include "apply/edits.h"
#include "apply/patch_output.h"
#include "apply/patch_plan.h"
#include "catalog/diagnostics.h"
#include "cli/command.h"
#include "frontend/diagnostic.h"
#include "rules/ruleset.h"
#include "util/file_io.h"
#include "verify/apply_manifest.h"
#include "verify/apply_run.h"

namespace npufuse::cli {
namespace {

struct ApplyCliOptions {
  apply::PatchRequest patch;
  apply::OutputRequest output;
  bool verify = false;  // the step-5 loop (src/verify/optimise_loop.h)
  std::string python, entry;  // its interpreter and model entry (--python, --entry)
  bool no_run = false;        // --no-run: write without running the changed functions first
};

void print_summary(const apply::PatchSet& set, const std::vector<verify::RunOutcome>& runs,
                   const apply::Written& written, std::FILE* to) {
  for (const std::string& id : set.applied) fmt::print(to, "applied: {}\n", id);
  for (const std::string& s : set.skipped) fmt::print(to, "skipped: {}\n", s);
  for (const apply::ManualStep& m : set.refactored) fmt::print(to, "refactored: {}: {} ({})\n", m.where, m.what, m.candidate);
  for (const apply::ManualStep& m : set.checked) fmt::print(to, "checked: {}: {} ({})\n", m.where, m.what, m.candidate);
  for (const apply::ManualStep& m : set.assumed) fmt::print(to, "assumed: {}: {} ({})\n", m.where, m.what, m.candidate);
  for (const apply::ManualStep& m : set.manual) fmt::print(to, "manual: {}: {} ({})\n", m.where, m.what, m.candidate);
  for (const verify::RunOutcome& r : runs)
    if (r.kind != verify::RunOutcome::Kind::broken)
      fmt::print(to, "{}: {}: {}\n", r.kind == verify::RunOutcome::Kind::ran ? "ran" : "not run", r.candidate, r.words);
  for (const std::string& f : written.files) fmt::print(to, "wrote: {}\n", f);
  if (set.applied.empty()) fmt::print(to, "nothing applied\n");
}

int run_apply(const ApplyCliOptions& o) {
  if (o.verify)
    return run_apply_verify(o.patch.plan_path, o.patch.paths, o.patch.only, o.output.out_dir, o.python, o.entry);
  if (o.output.out_dir.empty() && o.output.diff_file.empty() && !o.output.in_place) {
    fmt::print(stderr, "npufuse apply: say where the result goes: --out DIR, --diff FILE or --in-place\n");
    return kUsage;
  }
  try {
    apply::PatchSet set = apply::make_patches(o.patch);
    // Nothing is written that is known to be broken: each applied candidate's
    // function runs inside the whole patched file first (verify/apply_run.h);
    // one that fails is taken out and the rest patched again without it.
    std::vector<verify::RunOutcome> runs;
    std::vector<apply::ManualStep> refused;
    for (int round = 0; !o.no_run && round < 3 && !set.applied.empty(); ++round) {
      runs = verify::run_applied({o.patch, o.python, "", 300}, set);
      std::vector<std::string> keep;
      for (const verify::RunOutcome& r : runs) {
        if (r.kind != verify::RunOutcome::Kind::broken) {
          keep.push_back(r.candidate);
          continue;
        }
        std::string where = r.candidate.substr(r.candidate.find('@') + 1);
        refused.push_back({r.candidate, where, "not applied: " + r.words});
      }
      if (keep.size() == set.applied.size()) break;
      runs.clear();
      if (keep.empty()) {  // every rewrite failed: the files stay as they are
        for (apply::PatchedFile& f : set.files) f.patched = f.original, f.edits.clear();
        set.applied.clear();
        break;
      }
      // Again without the broken ones; the candidates it skipped stay named,
      // so their skip lines (an alternative tried in a preferred one's place) stay.
      apply::PatchRequest again = o.patch;
      again.only = keep;
      for (const std::string& s : set.skipped) {
        std::string id = s.substr(0, s.find(": "));
        if (std::find(again.only.begin(), again.only.end(), id) == again.only.end()) again.only.push_back(id);
      }
      set = apply::make_patches(again);
    }
    set.manual.insert(set.manual.end(), refused.begin(), refused.end());
    apply::Written written = apply::write_patches(set, o.output);
    if (!o.output.out_dir.empty())  // what `npufuse verify DIR` reads
      written.files.push_back(verify::write_apply_manifest(o.output.out_dir, {o.patch.plan_path, o.patch.paths, set.applied}));
    std::fflush(stdout);
    print_summary(set, runs, written, o.output.diff_file == "-" ? stderr : stdout);
    return kOk;
  } catch (const apply::ApplyError& e) {
    fmt::print(stderr, "npufuse apply: {}\n", e.what());
  } catch (const apply::EditConflict& e) {
    fmt::print(stderr, "npufuse apply: {}\n", e.what());
  } catch (const frontend::SyntaxError& e) {
    fmt::print(stderr, "{}\n", e.diagnostic().format());
  } catch (const rules::RuleError& e) {
    fmt::print(stderr, "{}\n", e.what());
  } catch (const catalog::CatalogError& e) {
    fmt::print(stderr, "{}\n", e.what());
  } catch (const FileError& e) {
    fmt::print(stderr, "npufuse apply: {}\n", e.what());
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "npufuse apply: {}\n", e.what());
  }
  return kUsage;
}

}  // namespace

Registered register_apply(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("apply", "Workflow step 5: patch the model with the plan's candidates");
  static ApplyCliOptions o;
  cmd->add_option("paths", o.patch.paths, "Model files or directories (default: the ones the plan names)");
  cmd->add_option("--plan", o.patch.plan_path, "plan.json written by `npufuse analyze --format json`")->required();
  cmd->add_option("--only", o.patch.only, "Apply only these candidate ids")->delimiter(',');
  auto* out = cmd->add_option("--out", o.output.out_dir, "Write patched copies of the model files under DIR");
  cmd->add_option("--diff", o.output.diff_file, "Write unified diffs to FILE ('-': stdout)");
  cmd->add_flag("--in-place", o.output.in_place, "Patch the files themselves (atomically; FILE.orig keeps the original)")
      ->excludes(out);
  cmd->add_flag("--verify", o.verify,
                "Apply candidates one at a time, verify each, keep those that pass, roll back the rest (needs --out)");
  cmd->add_option("--python", o.python, "With --verify: the Python interpreter that runs the checks (see verify --help)");
  cmd->add_flag("--no-run", o.no_run,
                "Write without first running each changed function with the stand-in torch_npu (docs/apply.md)");
  cmd->add_option("--entry", o.entry, "With --verify: module:callable building and running the model (docs/verify.md)");
  return {cmd, [] { return run_apply(o); }};
}

}  // namespace npufuse::cli

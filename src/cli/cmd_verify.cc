// npufuse verify PLAN.json|DIR [--out DIR] [--device cpu|npu|auto] [--batch B --seq S] [--format md|json]
// and the `apply --verify` loop's front end. Workflow step 5, checking half:
// a generated harness per candidate (original chain vs replacement, precision
// and a performance observation), the patched model against the original,
// and a report. Exit 0 when everything checked passed, 1 when something
// failed (the report says what), 2 for input errors.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "apply/apply_error.h"
#include "apply/edits.h"
#include "apply/patch_plan.h"
#include "apply/plan_file.h"
#include "catalog/diagnostics.h"
#include "cli/command.h"
#include "frontend/diagnostic.h"
#include "rules/ruleset.h"
#include "util/file_io.h"
#include "verify/apply_manifest.h"
#include "verify/cost_model.h"
#include "verify/optimise_loop.h"
#include "verify/verify_plan.h"
#include "verify/verify_report.h"

namespace npufuse::cli {
namespace {

namespace fs = std::filesystem;

struct VerifyCliOptions {
  std::string input;
  verify::VerifyOptions run;
  std::string format = "md";
};

// Both reports are written under --out (made when missing); the one asked
// for is also printed.
void write_reports(const verify::VerifyReport& report, const std::string& out_dir, const std::string& format) {
  std::string md = verify::report_markdown(report);
  std::string js = verify::report_json(report).dump(2) + "\n";
  make_directories(out_dir);
  write_file_atomic((fs::path(out_dir) / "report.md").string(), md);
  write_file_atomic((fs::path(out_dir) / "report.json").string(), js);
  std::string shown = format == "json" ? js : md;
  std::fwrite(shown.data(), 1, shown.size(), stdout);
  fmt::print(stderr, "wrote: {}/report.md and report.json\n", out_dir);
}

template <typename Run>
int guarded(const char* name, Run run) {
  try {
    return run();
  } catch (const apply::ApplyError& e) {
    fmt::print(stderr, "npufuse {}: {}\n", name, e.what());
  } catch (const apply::EditConflict& e) {
    fmt::print(stderr, "npufuse {}: {}\n", name, e.what());
  } catch (const frontend::SyntaxError& e) {
    fmt::print(stderr, "{}\n", e.diagnostic().format());
  } catch (const rules::RuleError& e) {
    fmt::print(stderr, "{}\n", e.what());
  } catch (const catalog::CatalogError& e) {
    fmt::print(stderr, "{}\n", e.what());
  } catch (const verify::CostModelError& e) {
    fmt::print(stderr, "{}\n", e.what());
  } catch (const FileError& e) {
    fmt::print(stderr, "npufuse {}: {}\n", name, e.what());
  } catch (const std::runtime_error& e) {
    fmt::print(stderr, "npufuse {}: {}\n", name, e.what());
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "npufuse {}: {}\n", name, e.what());
  }
  return kUsage;
}

int run_verify(VerifyCliOptions o) {
  return guarded("verify", [&] {
    if (fs::is_directory(o.input)) {
      // An `apply --out` directory: its manifest names the plan and the candidates applied.
      verify::ApplyManifest m = verify::read_apply_manifest(o.input);
      o.run.plan_path = m.plan;
      o.run.paths = m.paths;
      o.run.only = m.applied;
      if (m.applied.empty()) {
        fmt::print(stderr, "npufuse verify: {}: apply applied no candidate there; nothing to verify\n", o.input);
        return static_cast<int>(kOk);
      }
      if (o.run.out_dir.empty()) o.run.out_dir = (fs::path(o.input) / "verify").string();
      // The model paths as apply was given them, read from where it ran: the
      // candidate ids spell files that way. The folders given here keep
      // meaning what they meant where verify was started.
      std::error_code ec;
      if (!m.cwd.empty() && !fs::equivalent(m.cwd, fs::current_path(), ec)) {
        if (!fs::is_directory(m.cwd, ec))
          throw FileError(fmt::format("{}: apply ran in {}, which is gone; run apply again", o.input, m.cwd));
        o.run.out_dir = fs::absolute(o.run.out_dir).string();
        if (!o.run.python_dir.empty()) o.run.python_dir = fs::absolute(o.run.python_dir).string();
        fs::current_path(m.cwd);
      }
    } else {
      o.run.plan_path = o.input;
      if (o.run.out_dir.empty()) o.run.out_dir = "npufuse-verify";
    }
    // --only (or the manifest's ids) as the plan spells them; an id the
    // plan lacks is an input error.
    o.run.only = apply::plan_ids(apply::read_plan_file(o.run.plan_path), o.run.plan_path, o.run.paths, o.run.only);
    verify::VerifyReport report = verify::verify_plan(o.run);
    write_reports(report, o.run.out_dir, o.format);
    return report.all_passed() ? static_cast<int>(kOk) : static_cast<int>(kFindings);
  });
}

}  // namespace

int run_apply_verify(const std::string& plan, const std::vector<std::string>& paths,
                     const std::vector<std::string>& only, const std::string& out_dir, const std::string& python,
                     const std::string& entry) {
  return guarded("apply", [&] {
    if (out_dir.empty()) {
      fmt::print(stderr, "npufuse apply: --verify needs --out DIR (the kept patches and the report go there)\n");
      return static_cast<int>(kUsage);
    }
    verify::VerifyOptions run;
    run.plan_path = plan;
    run.paths = paths;
    run.only = apply::plan_ids(apply::read_plan_file(plan), plan, paths, only);
    run.out_dir = out_dir;
    run.python = python;
    run.entry = entry;
    verify::VerifyReport report = verify::optimise(run);
    write_reports(report, out_dir, "md");
    return report.all_passed() ? static_cast<int>(kOk) : static_cast<int>(kFindings);
  });
}

Registered register_verify(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("verify", "Workflow step 5: check each candidate's precision (and speed on an NPU)");
  static VerifyCliOptions o;
  cmd->add_option("input", o.input, "plan.json from `npufuse analyze --format json`, or an `npufuse apply --out` directory")
      ->required();
  cmd->add_option("--out", o.run.out_dir, "Folder for the harnesses, patched copies and reports "
                                          "(default: npufuse-verify, or DIR/verify for an apply output)");
  cmd->add_option("--device", o.run.device, "cpu (stand-in torch_npu), npu (real torch_npu, timed) or auto")
      ->check(CLI::IsMember({"cpu", "npu", "auto"}));
  cmd->add_option("--batch", o.run.batch, "Batch size of the random inputs (default 1)")->check(CLI::PositiveNumber);
  cmd->add_option("--seq", o.run.seq, "Sequence length of the random inputs (default 16)")->check(CLI::PositiveNumber);
  cmd->add_option("--dtype", o.run.dtype, "Activation dtype (default: the plan's dtype fact)")
      ->check(CLI::IsMember({"float32", "bfloat16", "float16"}));
  cmd->add_option("--only", o.run.only, "Verify only these candidate ids")->delimiter(',');
  cmd->add_option("--timeout", o.run.timeout_seconds, "Seconds each Python run may take (default 600)");
  cmd->add_option("--python-dir", o.run.python_dir, "Folder holding npufuse_verify (default: found next to npufuse)");
  cmd->add_option("--python", o.run.python,
                  "Python interpreter with your torch (and transformers, or the real torch_npu on an NPU host); "
                  "default $NPUFUSE_PYTHON, else /usr/bin/python3");
  cmd->add_option("--entry", o.run.entry,
                  "module:callable that builds and runs the model for the model check (docs/verify.md)");
  cmd->add_option("--format", o.format, "Report printed on stdout: md or json")->check(CLI::IsMember({"md", "json"}));
  return {cmd, [] { return run_verify(o); }};
}

}  // namespace npufuse::cli

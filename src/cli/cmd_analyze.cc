// npufuse analyze PATH... [--config F] [--deploy F] [--chip C] [--tp N --ep N --dp N]
//   [--quant Q] [--stage S] [--torch-npu-version V] [--rules DIR] [--catalog DIR]
//   [--format md|json|sarif|html] [--lang en|zh] [-o FILE] [--timings]
//   [--jobs N] [--out DIR] [--cache DIR] [--no-cache] [--no-progress]   (tree scans)
// Workflow steps 2-4: the fusion plan. Finding candidates is not an error
// (exit 0); unreadable or malformed input is (exit 2, file:line:col).
// At a terminal, with neither --format nor -o, it prints the one-screen
// summary (report/plan_summary) and writes the full reports (Markdown, HTML
// and the JSON plan) beside the input or under --out DIR; otherwise the plan
// goes to stdout or -o FILE in --format.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "catalog/diagnostics.h"
#include "cli/analyze_tree.h"
#include "cli/command.h"
#include "frontend/diagnostic.h"
#include "plan/analyze.h"
#include "report/html_report.h"
#include "report/plan_json.h"
#include "report/plan_markdown.h"
#include "report/plan_sarif.h"
#include "report/plan_summary.h"
#include "rules/ruleset.h"
#include "scan/model_folders.h"
#include "scan/progress_bar.h"
#include "util/file_io.h"

namespace npufuse::cli {

namespace {

struct AnalyzeCliOptions {
  plan::AnalyzeOptions analysis;
  std::string format = "md";
  std::string lang = "en";
  std::string out;
  bool timings = false;
  // Set when the command runs: the summary is for a person at a terminal
  // who asked for no particular output.
  bool summary = false;
  std::string report_dir;  // --out DIR when given: where the summary's full reports go
};

// SARIF describes each rule it reports; the plan holds only rule ids, so the
// rules are read again from the same place the analysis read them.
std::string render_sarif(const plan::Plan& plan, const AnalyzeCliOptions& o, report::Lang lang) {
  const std::string& dir = o.analysis.rules_dir;
  rules::RuleSet set = dir.empty() ? rules::RuleSet::load(rules::embedded_rule_files(), "rules")
                                   : rules::RuleSet::load(rules::directory_rule_files(dir), dir);
  report::RuleLookup lookup = [&set](const std::string& id) { return set.find(id); };
  return report::plan_to_sarif(plan, lookup, lang).dump(2) + "\n";
}

std::string render(const plan::Plan& plan, const AnalyzeCliOptions& o) {
  report::Lang lang = o.lang == "zh" ? report::Lang::Zh : report::Lang::En;
  if (o.format == "json") return report::plan_json_text(plan);
  if (o.format == "sarif") return render_sarif(plan, o, lang);
  if (o.format == "html") return report::render_html_report(plan, lang);
  return report::plan_to_markdown(plan, lang);
}

void print_timings(const plan::StageTimes& times) {
  double total = 0;
  for (const auto& [stage, ms] : times.ms) {
    fmt::print(stderr, "npufuse analyze: {:<8} {:8.2f} ms\n", stage, ms);
    total += ms;
  }
  fmt::print(stderr, "npufuse analyze: {:<8} {:8.2f} ms\n", "total", total);
  // Not a stage: the part of the stages after "load" that read catalog
  // operator files on demand (a one-time load, like "load" itself).
  fmt::print(stderr, "npufuse analyze: {:<8} {:8.2f} ms\n", "catalog-read", times.catalog_read_ms);
}

// Where the summary's full reports go, without the extension: beside the
// first input file (`dir/modeling_x.py` -> `dir/modeling_x.npufuse`), inside
// a model folder given as input (`dir/llama/` -> `dir/llama/llama.npufuse`),
// or under --out DIR with the same name.
std::filesystem::path report_stem(const AnalyzeCliOptions& o) {
  namespace fs = std::filesystem;
  fs::path input = fs::path(o.analysis.paths.at(0)).lexically_normal();
  if (!input.has_filename()) input = input.parent_path();  // a trailing slash
  bool folder = fs::is_directory(input);
  fs::path named = folder ? fs::absolute(input).lexically_normal() : input;  // `.` names the folder it is
  if (!named.has_filename()) named = named.parent_path();
  std::string name = folder ? named.filename().string() : input.stem().string();
  if (name.empty() || name == "." || name == "..") name = "model";
  name += ".npufuse";
  if (!o.report_dir.empty()) return fs::path(o.report_dir) / name;
  return folder ? input / name : input.parent_path() / name;
}

// The full reports of the summary, written atomically.
std::vector<report::ReportFile> write_reports(const plan::Plan& plan, const AnalyzeCliOptions& o) {
  namespace fs = std::filesystem;
  report::Lang lang = o.lang == "zh" ? report::Lang::Zh : report::Lang::En;
  fs::path stem = report_stem(o);
  if (!o.report_dir.empty()) {
    std::error_code ec;
    fs::create_directories(o.report_dir, ec);
    if (!fs::is_directory(o.report_dir)) throw FileError(o.report_dir + ": cannot create the folder for the reports");
  }
  std::vector<report::ReportFile> files = {
      {report::ReportFile::Kind::Markdown, stem.string() + ".md"},
      {report::ReportFile::Kind::Html, stem.string() + ".html"},
      {report::ReportFile::Kind::Json, stem.string() + ".json"},
  };
  write_file_atomic(files[0].path, report::plan_to_markdown(plan, lang));
  write_file_atomic(files[1].path, report::render_html_report(plan, lang));
  write_file_atomic(files[2].path, report::plan_json_text(plan));
  return files;
}

// The one-screen summary, after writing the full reports. When they cannot
// be written, the summary still prints, and the error follows on stderr.
int print_summary(const plan::Plan& plan, const AnalyzeCliOptions& o) {
  report::Lang lang = o.lang == "zh" ? report::Lang::Zh : report::Lang::En;
  std::vector<report::ReportFile> files;
  std::string error;
  try {
    files = write_reports(plan, o);
  } catch (const FileError& e) {
    error = e.what();
  }
  std::string text = report::plan_summary(plan, lang, files);
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (error.empty()) return kOk;
  std::fflush(stdout);
  fmt::print(stderr, "npufuse analyze: the full report was not written: {} (give --out DIR, or -o FILE)\n", error);
  return kUsage;
}

int run_analyze(const AnalyzeCliOptions& o) {
  try {
    plan::StageTimes times;
    plan::AnalyzeOptions analysis = o.analysis;
    if (analysis.config.empty()) analysis.config = scan::folder_config(analysis.paths);
    plan::Plan plan = plan::analyze(analysis, o.timings ? &times : nullptr);
    if (plan.tool_version.empty()) plan.tool_version = NPUFUSE_VERSION;
    if (o.summary) {
      int status = print_summary(plan, o);
      if (o.timings) print_timings(times);
      return status;
    }
    std::string text = render(plan, o);
    if (o.out.empty()) std::fwrite(text.data(), 1, text.size(), stdout);
    else {
      make_parent_directories(o.out);
      write_file_atomic(o.out, text);
    }
    if (o.timings) print_timings(times);
    return kOk;
  } catch (const frontend::SyntaxError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "{}\n", e.diagnostic().format());
  } catch (const rules::RuleError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "{}\n", e.what());
  } catch (const catalog::CatalogError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "{}\n", e.what());
  } catch (const FileError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "npufuse analyze: {}\n", e.what());
  } catch (const std::invalid_argument& e) {
    std::fflush(stdout);
    fmt::print(stderr, "npufuse analyze: {}\n", e.what());
  }
  return kUsage;
}

}  // namespace

Registered register_analyze(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("analyze", "Workflow steps 2-4: match, check and review fusion candidates");
  static AnalyzeCliOptions o;
  plan::AnalyzeOptions& a = o.analysis;
  cmd->add_option("paths", a.paths, "Model files or directories")->required();
  cmd->add_option("--config", a.config, "HF-style config.json binding the model's symbols");
  cmd->add_option("--deploy", a.deploy, "Deployment file (chip, parallel setup, quantisation, versions)");
  cmd->add_option("--chip", a.chip, "Target chip: A2, A3, ...");
  cmd->add_option("--tp", a.tp, "Tensor-parallel size")->check(CLI::PositiveNumber);
  cmd->add_option("--ep", a.ep, "Expert-parallel size")->check(CLI::PositiveNumber);
  cmd->add_option("--dp", a.dp, "Data-parallel size")->check(CLI::PositiveNumber);
  cmd->add_option("--quant", a.quant, "bf16, w8a8, w8a8c8 or w4a16")->check(CLI::IsMember({"bf16", "w8a8", "w8a8c8", "w4a16"}));
  cmd->add_option("--stage", a.stage, "prefill, decode or both")->check(CLI::IsMember({"prefill", "decode", "both"}));
  cmd->add_option("--torch-npu-version", a.torch_npu_version, "torch_npu version the plan targets");
  cmd->add_option("--rules", a.rules_dir, "Read the fusion rules from DIR instead of the built-in ones");
  cmd->add_option("--catalog", a.catalog_dir, "Read the operator catalog from DIR instead of the built-in one");
  CLI::Option* format = cmd->add_option("--format", o.format,
                                        "md, json, sarif, html, or summary: the one-screen summary, the full reports written "
                                        "to files (the default at a terminal)")
                            ->check(CLI::IsMember({"md", "json", "sarif", "html", "summary"}));
  cmd->add_option("--lang", o.lang, "en or zh")->check(CLI::IsMember({"en", "zh"}));
  CLI::Option* output = cmd->add_option("-o,--output", o.out, "Write the plan to FILE (atomically) instead of stdout");
  cmd->add_flag("--timings", o.timings, "Print the time of each analysis stage to stderr");
  // A directory holding several model folders is a tree scan (docs/scan.md).
  static TreeCliOptions tree;
  cmd->add_option("--jobs", tree.jobs, "Tree scan: models analysed in parallel (default: one per core)");
  CLI::Option* out_dir =
      cmd->add_option("--out", tree.out_dir,
                      "Tree scan: folder for the per-model plans and the summary; one model at a terminal: folder for "
                      "the full reports (default: beside the input)")
          ->capture_default_str();
  cmd->add_option("--cache", tree.cache_dir, "Tree scan: cache folder (default: OUT/.npufuse-cache)");
  cmd->add_flag("--no-cache", tree.no_cache, "Tree scan: analyse every model, reading and writing no cache");
  cmd->add_flag("--no-progress", tree.no_progress, "Tree scan: no progress bar, even on a terminal");
  return {cmd, [format, output, out_dir] {
            if (scan::is_tree(o.analysis.paths)) return run_analyze_tree(o.analysis, o.format, o.lang, o.out, tree);
            // The tty decision: a person at a terminal who asked for no
            // particular output gets one screen and the reports in files;
            // pipes, --format and -o get the plan exactly as before.
            // `--format summary` asks for that screen anywhere (a script, a log).
            if (o.format == "summary") {
              if (output->count() > 0) {
                fmt::print(stderr, "npufuse analyze: --format summary prints to stdout and writes the full reports under "
                                   "--out DIR (or beside the input); -o is for one plan format\n");
                return static_cast<int>(kUsage);
              }
              o.summary = true;
            } else {
              o.summary = format->count() == 0 && output->count() == 0 && scan::is_terminal(stdout);
            }
            if (out_dir->count() > 0) o.report_dir = tree.out_dir;
            return run_analyze(o);
          }};
}

}  // namespace npufuse::cli

#include "cli/analyze_tree.h"

#include <fmt/format.h>

#include <cstdio>
#include <stdexcept>

#include "catalog/diagnostics.h"
#include "cli/command.h"
#include "rules/ruleset.h"
#include "scan/progress_bar.h"
#include "scan/tree_scan.h"
#include "util/file_io.h"

namespace npufuse::cli {

namespace {

void print_failures(const nlohmann::json& summary) {
  for (const auto& f : summary["failures"])
    fmt::print(stderr, "{}\n", f["error"].get<std::string>());
}

void print_totals(const scan::ScanReport& r) {
  const scan::ScanCounts& n = r.counts;
  double rate = r.seconds > 0 ? static_cast<double>(n.models) / r.seconds : 0.0;
  fmt::print(stderr, "npufuse analyze: {} model folders: {} analysed, {} from the cache, {} failed ({:.2f} s, {:.1f} models/s)\n",
             n.models, n.analysed, n.cached, n.failed, r.seconds, rate);
}

}  // namespace

int run_analyze_tree(const plan::AnalyzeOptions& analysis, const std::string& format, const std::string& lang,
                     const std::string& summary_file, const TreeCliOptions& tree) {
  if (format != "md" && format != "json") {
    fmt::print(stderr, "npufuse analyze: a tree scan writes md and json plans; --format {} takes one model\n", format);
    return kUsage;
  }
  scan::ScanOptions o;
  o.root = analysis.paths.at(0);
  o.analysis = analysis;
  o.lang = lang;
  o.out_dir = tree.out_dir;
  o.cache_dir = tree.cache_dir;
  o.use_cache = !tree.no_cache;
  o.jobs = tree.jobs;
  o.tool_version = NPUFUSE_VERSION;
  o.progress = !tree.no_progress && scan::is_terminal(stderr);
  try {
    scan::ScanReport report = scan::run_tree_scan(o);
    std::string text = format == "json" ? report.summary.dump(2) + "\n" : scan::summary_markdown(report.summary, lang);
    if (summary_file.empty()) std::fwrite(text.data(), 1, text.size(), stdout);
    else {
      make_parent_directories(summary_file);
      write_file_atomic(summary_file, text);
    }
    std::fflush(stdout);
    print_failures(report.summary);
    print_totals(report);
    return report.counts.failed > 0 ? kFindings : kOk;
  } catch (const rules::RuleError& e) {
    fmt::print(stderr, "{}\n", e.what());
  } catch (const catalog::CatalogError& e) {
    fmt::print(stderr, "{}\n", e.what());
  } catch (const FileError& e) {
    fmt::print(stderr, "npufuse analyze: {}\n", e.what());
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "npufuse analyze: {}\n", e.what());
  }
  return kUsage;
}

}  // namespace npufuse::cli

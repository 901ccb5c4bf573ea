#pragma once
// The plan on one screen, for `npufuse analyze` at a terminal (the CLI
// decides when): one line per candidate with its module, fused operator,
// status and id; the facts still asked for, grouped by the flag or --deploy
// line that gives each; the chains a hard constraint blocks, each with a
// one-line reason; and where the full reports were written. English or
// Chinese, like the reports.
#include <string>
#include <vector>

#include "plan/plan.h"
#include "report/plan_markdown.h"

namespace npufuse::report {

struct ReportFile {
  enum class Kind { Markdown, Html, Json };
  Kind kind;
  std::string path;
};

std::string plan_summary(const plan::Plan& plan, Lang lang, const std::vector<ReportFile>& reports);

}  // namespace npufuse::report

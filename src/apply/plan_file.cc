#include "apply/plan_file.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "apply/apply_error.h"
#include "apply/plan_paths.h"
#include "report/plan_json.h"
#include "util/file_io.h"

namespace npufuse::apply {
namespace {

// nlohmann reports a byte position; people want a line and a column.
std::string line_col(const std::string& text, size_t byte) {
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < byte && i < text.size(); ++i)
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  size_t col = byte > line_start ? byte - line_start : 0;
  return fmt::format("{}:{}", line, col + 1);
}

}  // namespace

plan::Plan read_plan_file(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const FileError& e) {
    throw ApplyError(e.what());
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is one past the offending character; the library's own text
    // starts with its position, which line_col() says better.
    std::string what = e.what();
    size_t after_position = what.find(": ");
    std::string reason = after_position == std::string::npos ? what : what.substr(after_position + 2);
    throw ApplyError(fmt::format("{}:{}: not a JSON plan: {}", path, line_col(text, e.byte > 0 ? e.byte - 1 : 0), reason));
  }
  try {
    return report::plan_from_json(j);
  } catch (const report::PlanFormatError& e) {
    throw ApplyError(fmt::format("{}: {}", path, e.what()));
  }
}

void check_plan_is_current(const plan::Plan& plan, const std::string& plan_path) {
  PlanFiles(plan, {}).check_current(plan_path);
}

}  // namespace npufuse::apply

#pragma once
// Small text helpers for Markdown output: the plan's strings come from model
// code and rule files, so they may hold pipes and line breaks that would
// break a table row or a list item.
#include <string>
#include <vector>

namespace npufuse::report {

// Text for one table cell: '|' escaped, line breaks as spaces.
std::string cell(const std::string& s);
// Text for one list item: line breaks as spaces.
std::string one_line(const std::string& s);
std::string join(const std::vector<std::string>& parts, const std::string& sep);

}  // namespace npufuse::report

// Sections are recognised by their heading alone on an unindented line (an
// optional trailing ':' is accepted); body lines are indented. This is the
// format rules/README.md describes and python/tests/test_rules.py checks.
#include "rules/rule_docs.h"

#include <algorithm>

namespace npufuse::rules {

namespace ast = frontend::ast;

const std::vector<std::string>& doc_headings_en() {
  static const std::vector<std::string> v{"What it does", "Why", "Example", "Use instead", "Fix safety", "References"};
  return v;
}
const std::vector<std::string>& doc_headings_zh() {
  static const std::vector<std::string> v{"功能", "原因", "示例", "替代写法", "修复安全性", "参考"};
  return v;
}

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (true) {
    size_t nl = text.find('\n', start);
    lines.push_back(text.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return lines;
}

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\f\v") == std::string::npos; }
size_t indent_of(const std::string& s) { return s.find_first_not_of(" \t"); }
std::string rstrip(const std::string& s) {
  size_t end = s.find_last_not_of(" \t\r\f\v");
  return end == std::string::npos ? "" : s.substr(0, end + 1);
}
std::string strip(const std::string& s) {
  std::string r = rstrip(s);
  size_t begin = r.find_first_not_of(" \t");
  return begin == std::string::npos ? "" : r.substr(begin);
}

// Dedented, trailing whitespace gone, no blank lines at either end.
std::string section_body(const std::vector<std::string>& lines) {
  size_t margin = std::string::npos;
  for (const auto& l : lines)
    if (!blank(l)) margin = std::min(margin, indent_of(l));
  std::vector<std::string> body;
  for (const auto& l : lines) body.push_back(blank(l) ? "" : rstrip(l.substr(margin)));
  while (!body.empty() && body.back().empty()) body.pop_back();
  size_t first = 0;
  while (first < body.size() && body[first].empty()) ++first;
  std::string out;
  for (size_t i = first; i < body.size(); ++i) out += (i == first ? "" : "\n") + body[i];
  return out;
}

std::string heading_list(const std::vector<std::string>& headings) {
  std::string list;
  for (const auto& h : headings) list += (list.empty() ? "" : ", ") + h;
  return list;
}

}  // namespace

std::vector<std::string> clean_doc_lines(const std::string& text, size_t* first_line_index) {
  std::vector<std::string> lines = split_lines(text);
  size_t margin = std::string::npos;
  for (size_t i = 1; i < lines.size(); ++i)
    if (!blank(lines[i])) margin = std::min(margin, indent_of(lines[i]));
  if (!lines.empty()) lines[0] = lines[0].substr(std::min(lines[0].size(), indent_of(lines[0])));
  for (size_t i = 1; i < lines.size(); ++i)
    if (margin != std::string::npos) lines[i] = lines[i].size() > margin ? lines[i].substr(margin) : strip(lines[i]);
  size_t first = 0;
  while (first < lines.size() && blank(lines[first])) ++first;
  while (lines.size() > first && blank(lines.back())) lines.pop_back();
  if (first_line_index) *first_line_index = first;
  return {lines.begin() + static_cast<long>(first), lines.end()};
}

RuleDoc read_rule_doc(const model::ModelFile& file, const ast::Constant* text_node,
                      const std::vector<std::string>& headings, const std::string& what, LoadErrors& errors) {
  RuleDoc doc;
  size_t skipped = 0;
  std::vector<std::string> lines = clean_doc_lines(ast::constant_string(text_node->value), &skipped);
  // Line numbers hold for triple-quoted text without backslash line joins, which is how rules are written.
  auto line_at = [&](size_t i) { return text_node->lineno + static_cast<int>(skipped + i); };
  auto error_at = [&](size_t i, const std::string& message) { errors.at_line(file.path, line_at(i), 1, message); };
  if (lines.empty()) {
    errors.at(file, text_node, what + " is empty");
    return doc;
  }
  doc.summary = strip(lines[0]);

  std::vector<std::string> body;
  bool in_section = false;
  auto close_section = [&] {
    if (in_section) doc.sections.back().body = section_body(body);
    body.clear();
  };
  std::vector<size_t> heading_lines;
  bool unknown_heading = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (blank(line) || indent_of(line) > 0) {
      if (in_section) body.push_back(line);
      else if (!blank(line)) error_at(i, what + ": text before the first section heading '" + headings[0] + "'");
      continue;
    }
    std::string heading = strip(line);
    if (!heading.empty() && heading.back() == ':') heading.pop_back();
    if (std::find(headings.begin(), headings.end(), heading) == headings.end()) {
      error_at(i, what + ": '" + heading + "' is not a section heading (" + heading_list(headings) + "); indent body text");
      unknown_heading = true;
      if (in_section) body.push_back("    " + line);
      continue;
    }
    close_section();
    doc.sections.push_back({heading, ""});
    heading_lines.push_back(i);
    in_section = true;
  }
  close_section();

  // Exactly the headings, in order. After an unknown heading the order is
  // not judged again: the one message says what is wrong.
  if (unknown_heading) return doc;
  size_t next = 0;  // index in `headings` expected next
  for (size_t i = 0; i < doc.sections.size(); ++i) {
    const std::string& found = doc.sections[i].heading;
    auto at = std::find(headings.begin() + static_cast<long>(next), headings.end(), found);
    if (at == headings.end()) {
      error_at(heading_lines[i], what + ": section '" + found + "' is repeated or out of order; the sections are, in order: " +
                                     heading_list(headings));
      return doc;
    }
    for (auto missing = headings.begin() + static_cast<long>(next); missing != at; ++missing)
      error_at(heading_lines[i], what + ": missing section '" + *missing + "' before '" + found + "'");
    next = static_cast<size_t>(at - headings.begin()) + 1;
  }
  if (next < headings.size()) {
    std::string missing;
    for (size_t i = next; i < headings.size(); ++i) missing += (missing.empty() ? "'" : ", '") + headings[i] + "'";
    errors.at(file, text_node, what + ": missing section" + (headings.size() - next > 1 ? "s " : " ") + missing);
  }
  return doc;
}

}  // namespace npufuse::rules

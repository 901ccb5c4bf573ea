#pragma once
// A rule's documentation text (the module docstring in English, RULE["doc_zh"]
// in Chinese) split into its summary line and its fixed sections. The text is
// cleaned like Python's inspect.cleandoc, so both readers see the same lines.
#include <string>
#include <vector>

#include "model/source_set.h"
#include "rules/load_errors.h"
#include "rules/rule.h"

namespace npufuse::rules {

const std::vector<std::string>& doc_headings_en();  // What it does, Why, Example, Use instead, Fix safety, References
const std::vector<std::string>& doc_headings_zh();  // 功能, 原因, 示例, 替代写法, 修复安全性, 参考

struct RuleDoc {
  std::string summary;
  std::vector<DocSection> sections;
};

// `text_node` is the str constant holding the text; errors point at its lines.
// Every heading must appear once, in order, each on its own unindented line.
RuleDoc read_rule_doc(const model::ModelFile& file, const frontend::ast::Constant* text_node,
                      const std::vector<std::string>& headings, const std::string& what, LoadErrors& errors);

// The lines of a docstring as inspect.cleandoc leaves them.
std::vector<std::string> clean_doc_lines(const std::string& text, size_t* first_line_index = nullptr);

}  // namespace npufuse::rules

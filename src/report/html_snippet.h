#pragma once
// Source snippets for the report and `explain`: the lines around a matched
// chain, with the matched lines marked.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace npufuse::report {

struct LineRange {
  int first = 0, last = 0;  // 1-based, inclusive
};

// The lines of `text` covering `matched` plus `context` lines each side, as
// <pre> with line numbers; matched lines carry class "hit". A range longer
// than `max_lines` is cut in the middle (marked with an ellipsis line).
std::string snippet_html(std::string_view text, const std::string& path, const std::vector<LineRange>& matched,
                         int context = 2, int max_lines = 40);

// The same lines as plain text, matched lines prefixed with '>' (for
// Markdown and terminals).
std::string snippet_text(std::string_view text, const std::vector<LineRange>& matched, int context = 2,
                         int max_lines = 40);

// The files a report quotes, read once each; a file that cannot be read
// gives nothing, and the report says so instead of failing.
class SourceTexts {
 public:
  void add(const std::string& path, std::string text) { texts_[path] = std::move(text); }
  std::optional<std::string_view> get(const std::string& path);

 private:
  std::map<std::string, std::optional<std::string>> texts_;
};

}  // namespace npufuse::report

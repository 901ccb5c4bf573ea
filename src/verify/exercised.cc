#include "verify/exercised.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string_view>

#include "verify/path_identity.h"

namespace npufuse::verify {
namespace {

namespace fs = std::filesystem;

// True when the text holds something Python runs: a line that is neither
// blank nor a comment.
bool holds_code(const std::string& text) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    size_t i = text.find_first_not_of(" \t\r", start);
    if (i != std::string::npos && i < end && text[i] != '#') return true;
    start = end + 1;
  }
  return false;
}

int line_of(const std::string& text, size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

}  // namespace

std::vector<ChangedSpan> changed_spans(const apply::PatchSet& set, const std::map<std::string, std::string>& copies,
                                       const std::string& candidate) {
  std::vector<ChangedSpan> out;
  for (const apply::PatchedFile& f : set.files) {
    auto copy = copies.find(f.path);
    if (copy == copies.end()) continue;
    // Offsets of the edits are into the original; in the patched copy an
    // edit's first line moves by the lines the edits before it added (counted
    // in newlines, which a CRLF file's conversion leaves as they are).
    int shift = 0;
    for (const apply::Edit& e : f.edits) {
      auto newlines = [](std::string_view t) { return static_cast<int>(std::count(t.begin(), t.end(), '\n')); };
      int start = line_of(f.original, e.begin) + shift;
      shift += newlines(e.text) - newlines(std::string_view(f.original).substr(e.begin, e.end - e.begin));
      if (e.candidate != candidate || !holds_code(e.text)) continue;
      // Leading and trailing blank space of the replacement is not code.
      size_t lead = e.text.find_first_not_of(" \t\r\n");
      size_t trail = e.text.find_last_not_of(" \t\r\n");
      std::string_view text(e.text);
      out.push_back({copy->second, start + newlines(text.substr(0, lead)), start + newlines(text.substr(0, trail))});
    }
  }
  return out;
}

std::vector<ChangedSpan> spans_not_run(const std::vector<ChangedSpan>& spans, const CheckResult& r) {
  std::map<std::string, std::set<int>> ran;
  if (r.data.is_object() && r.data.contains("lines_run") && r.data["lines_run"].is_object())
    for (const auto& [path, lines] : r.data["lines_run"].items()) {
      std::set<int>& s = ran[absolute_path(path)];
      if (lines.is_array())
        for (const auto& n : lines)
          if (n.is_number_integer()) s.insert(n.get<int>());
    }
  std::vector<ChangedSpan> missing;
  for (const ChangedSpan& span : spans) {
    auto it = ran.find(absolute_path(span.copy));
    bool hit = false;
    if (it != ran.end()) {
      auto first = it->second.lower_bound(span.first);
      hit = first != it->second.end() && *first <= span.last;
    }
    if (!hit) missing.push_back(span);
  }
  return missing;
}

std::string spans_words(const std::vector<ChangedSpan>& spans) {
  std::vector<std::string> parts;
  for (const ChangedSpan& s : spans)
    parts.push_back(s.first == s.last ? fmt::format("{}:{}", fs::path(s.copy).filename().string(), s.first)
                                      : fmt::format("{}:{}-{}", fs::path(s.copy).filename().string(), s.first, s.last));
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace npufuse::verify

#include "apply/unified_diff.h"

#include <fmt/format.h>

#include <algorithm>

namespace npufuse::apply {
namespace {

constexpr int kContext = 3;

// Lines with their terminators; the last one may lack a newline.
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    size_t next = nl == std::string::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(at, next - at));
    at = next;
  }
  return lines;
}

// A run of whole original lines [first, last) and what replaces them.
struct Region {
  int first = 0, last = 0;
  std::vector<std::string> lines;
};

class LineIndex {
 public:
  explicit LineIndex(const std::string& text) {
    starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') starts_.push_back(static_cast<uint32_t>(i + 1));
    size_ = static_cast<uint32_t>(text.size());
  }
  int line_of(uint32_t offset) const {
    return static_cast<int>(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin()) - 1;
  }
  bool at_line_start(uint32_t offset) const { return std::binary_search(starts_.begin(), starts_.end(), offset); }
  uint32_t start(int line) const { return line < static_cast<int>(starts_.size()) ? starts_[static_cast<size_t>(line)] : size_; }

 private:
  std::vector<uint32_t> starts_;
  uint32_t size_ = 0;
};

// Each edit widened to the whole lines it touches; edits sharing a line
// become one region.
std::vector<Region> regions_of(const std::string& original, const std::vector<Edit>& sorted) {
  LineIndex index(original);
  std::vector<Region> out;
  size_t i = 0;
  while (i < sorted.size()) {
    int first = index.line_of(sorted[i].begin);
    std::string replaced;
    uint32_t at = index.start(first);
    int last = first;
    // An insertion at the start of a line touches no old line.
    auto end_line = [&](const Edit& e) {
      if (e.end == e.begin && index.at_line_start(e.begin)) return index.line_of(e.begin);
      if (e.end > e.begin && index.at_line_start(e.end)) return index.line_of(e.end);
      return index.line_of(e.end) + 1;
    };
    // Every edit that begins on a line the region already covers joins it.
    do {
      const Edit& e = sorted[i];
      replaced.append(original, at, e.begin - at);
      replaced += e.text;
      at = e.end;
      last = std::max(last, end_line(e));
      ++i;
    } while (i < sorted.size() && sorted[i].begin < index.start(last));
    uint32_t region_end = index.start(last);
    replaced.append(original, at, region_end - at);
    out.push_back(Region{first, last, split_lines(replaced)});
  }
  return out;
}

void append_line(std::string& out, char mark, const std::string& line) {
  out += mark;
  out += line;
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

std::string range_text(int start0, int count) {
  // An empty range is shown at the line before it, as diff(1) does.
  return count == 0 ? fmt::format("{},0", start0) : fmt::format("{},{}", start0 + 1, count);
}

}  // namespace

std::string unified_diff(const std::string& shown_path, const std::string& original, const std::vector<Edit>& sorted) {
  if (sorted.empty()) return "";
  std::vector<std::string> old_lines = split_lines(original);
  std::vector<Region> regions;
  // A region's first and last lines that the edits leave as they were (an
  // edit widened to whole lines often ends on one: an argument inserted
  // after `**kwargs,`) are context, not a removal and the same line added.
  for (Region& g : regions_of(original, sorted)) {
    while (g.first < g.last && !g.lines.empty() && old_lines[static_cast<size_t>(g.first)] == g.lines.front()) {
      ++g.first;
      g.lines.erase(g.lines.begin());
    }
    while (g.first < g.last && !g.lines.empty() && old_lines[static_cast<size_t>(g.last - 1)] == g.lines.back()) {
      --g.last;
      g.lines.pop_back();
    }
    if (g.first < g.last || !g.lines.empty()) regions.push_back(std::move(g));
  }
  if (regions.empty()) return "";
  const int n = static_cast<int>(old_lines.size());

  std::string out = fmt::format("diff --git a/{0} b/{0}\n--- a/{0}\n+++ b/{0}\n", shown_path);
  int delta = 0;  // new line number minus old line number before the current hunk
  size_t r = 0;
  while (r < regions.size()) {
    // Regions whose context windows touch form one hunk.
    size_t end = r + 1;
    while (end < regions.size() && regions[end].first - kContext <= regions[end - 1].last + kContext) ++end;
    int from = std::max(0, regions[r].first - kContext);
    int to = std::min(n, regions[end - 1].last + kContext);
    std::string body;
    int old_count = 0, new_count = 0;
    int line = from;
    for (size_t k = r; k < end; ++k) {
      for (; line < regions[k].first; ++line, ++old_count, ++new_count) append_line(body, ' ', old_lines[static_cast<size_t>(line)]);
      for (; line < regions[k].last; ++line, ++old_count) append_line(body, '-', old_lines[static_cast<size_t>(line)]);
      for (const std::string& l : regions[k].lines) {
        append_line(body, '+', l);
        ++new_count;
      }
    }
    for (; line < to; ++line, ++old_count, ++new_count) append_line(body, ' ', old_lines[static_cast<size_t>(line)]);
    out += fmt::format("@@ -{} +{} @@\n", range_text(from, old_count), range_text(from + delta, new_count));
    out += body;
    delta += new_count - old_count;
    r = end;
  }
  return out;
}

}  // namespace npufuse::apply

#include "report/html_snippet.h"

#include <fmt/format.h>

#include <algorithm>

#include "report/html_escape.h"
#include "util/file_io.h"

namespace npufuse::report {
namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      if (start < text.size()) lines.push_back(text.substr(start));
      break;
    }
    std::string_view line = text.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = nl + 1;
  }
  return lines;
}

bool is_matched(int line, const std::vector<LineRange>& matched) {
  return std::any_of(matched.begin(), matched.end(),
                     [line](const LineRange& r) { return line >= r.first && line <= std::max(r.first, r.last); });
}

// Line numbers to show, in order; 0 stands for the elided middle.
std::vector<int> shown_lines(int line_count, const std::vector<LineRange>& matched, int context, int max_lines) {
  if (matched.empty() || line_count == 0) return {};
  int first = line_count, last = 1;
  for (const LineRange& r : matched) {
    first = std::min(first, r.first);
    last = std::max(last, std::max(r.first, r.last));
  }
  first = std::max(1, first - context);
  last = std::min(line_count, last + context);
  std::vector<int> out;
  if (last - first + 1 <= max_lines) {
    for (int l = first; l <= last; ++l) out.push_back(l);
    return out;
  }
  int head = max_lines / 2, tail = max_lines - head - 1;
  for (int l = first; l < first + head; ++l) out.push_back(l);
  out.push_back(0);
  for (int l = last - tail + 1; l <= last; ++l) out.push_back(l);
  return out;
}

}  // namespace

std::string snippet_html(std::string_view text, const std::string& path, const std::vector<LineRange>& matched,
                         int context, int max_lines) {
  std::vector<std::string_view> lines = split_lines(text);
  std::string body;
  for (int l : shown_lines(static_cast<int>(lines.size()), matched, context, max_lines)) {
    if (l == 0) {
      body += "<span class=\"line gap\"><span class=\"ln\"></span>…</span>\n";
      continue;
    }
    body += fmt::format("<span class=\"line{}\"><span class=\"ln\">{}</span>{}</span>\n",
                        is_matched(l, matched) ? " hit" : "", l, escape_html(lines[static_cast<size_t>(l - 1)]));
  }
  return fmt::format("<figure class=\"snippet\"><figcaption>{}</figcaption><pre><code>{}</code></pre></figure>\n",
                     escape_html(path), body);
}

std::string snippet_text(std::string_view text, const std::vector<LineRange>& matched, int context, int max_lines) {
  std::vector<std::string_view> lines = split_lines(text);
  std::string out;
  for (int l : shown_lines(static_cast<int>(lines.size()), matched, context, max_lines)) {
    if (l == 0) {
      out += "   ...\n";
      continue;
    }
    out += fmt::format("{} {:>5} | {}\n", is_matched(l, matched) ? '>' : ' ', l, lines[static_cast<size_t>(l - 1)]);
  }
  return out;
}

std::optional<std::string_view> SourceTexts::get(const std::string& path) {
  auto it = texts_.find(path);
  if (it == texts_.end()) {
    std::optional<std::string> text;
    try {
      text = read_file(path);
    } catch (const FileError&) {
    }
    it = texts_.emplace(path, std::move(text)).first;
  }
  if (!it->second) return std::nullopt;
  return std::string_view(*it->second);
}

}  // namespace npufuse::report

#include "apply/edits.h"

#include <fmt/format.h>

#include <algorithm>

namespace npufuse::apply {

std::vector<Edit> sorted_edits(std::vector<Edit> edits) {
  std::stable_sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (size_t i = 1; i < edits.size(); ++i) {
    const Edit& prev = edits[i - 1];
    const Edit& cur = edits[i];
    // Two insertions at one point have no defined order, and a range that
    // starts inside another would rewrite bytes the first already replaced.
    bool both_insert = prev.begin == prev.end && cur.begin == cur.end && prev.begin == cur.begin;
    if (cur.begin < prev.end || both_insert)
      throw EditConflict(fmt::format("{}: the edits of {} and {} overlap (bytes {}-{} and {}-{})", cur.file,
                                     prev.candidate.empty() ? "the import" : prev.candidate,
                                     cur.candidate.empty() ? "the import" : cur.candidate, prev.begin, prev.end,
                                     cur.begin, cur.end));
  }
  return edits;
}

namespace {

// Whether most of the file's lines end in CRLF.
bool crlf_file(const std::string& text) {
  size_t crlf = 0, lf = 0;
  for (size_t i = text.find('\n'); i != std::string::npos; i = text.find('\n', i + 1)) (i > 0 && text[i - 1] == '\r' ? crlf : lf)++;
  return crlf > lf;
}

// `text` with each bare LF made a CRLF.
std::string with_crlf(const std::string& text) {
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' && (i == 0 || text[i - 1] != '\r')) out += '\r';
    out += text[i];
  }
  return out;
}

}  // namespace

std::string apply_edits(const std::string& original, const std::vector<Edit>& sorted) {
  std::string out;
  out.reserve(original.size());
  uint32_t at = 0;
  // New lines follow the file's own line ends.
  const bool crlf = crlf_file(original);
  for (const Edit& e : sorted) {
    out.append(original, at, e.begin - at);
    out += crlf ? with_crlf(e.text) : e.text;
    at = e.end;
  }
  out.append(original, at, std::string::npos);
  return out;
}

}  // namespace npufuse::apply

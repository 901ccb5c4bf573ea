#include "report/markdown_text.h"

#include <algorithm>

namespace npufuse::report {

std::string one_line(const std::string& s) {
  std::string out = s;
  std::replace_if(out.begin(), out.end(), [](char ch) { return ch == '\n' || ch == '\r'; }, ' ');
  return out;
}

std::string cell(const std::string& s) {
  // Most cells hold no newline and no bar: copied whole.
  bool plain = true;
  for (char ch : s) plain &= ch != '\n' && ch != '\r' && ch != '|';
  if (plain) return s;
  std::string out;
  out.reserve(s.size() + 8);
  for (char ch : s) {
    if (ch == '\n' || ch == '\r') ch = ' ';
    else if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

}  // namespace npufuse::report

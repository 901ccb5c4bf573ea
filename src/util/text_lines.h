#pragma once
// A text's lines as views, without their newlines: "a\nb" is {a, b}, "a\n"
// is {a, ""}, "" is {""}. Carriage returns stay in the line.
#include <string_view>
#include <vector>

namespace npufuse {

inline std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return lines;
}

}  // namespace npufuse

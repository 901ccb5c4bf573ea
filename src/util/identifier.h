#pragma once
// Whether a text is a plain ASCII Python identifier (letters, digits and
// underscores, not starting with a digit): a name the model's code can bind
// or the catalog can call.
#include <cctype>
#include <string_view>

namespace npufuse {

inline bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

}  // namespace npufuse

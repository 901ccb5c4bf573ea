#pragma once
// Levenshtein distance, for "did you mean" suggestions of unknown names.
#include <cstddef>
#include <string_view>

namespace npufuse {

size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace npufuse

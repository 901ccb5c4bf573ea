#include "frontend/unicode_tables.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace npufuse::frontend {

namespace {

struct CodePointRange {
  uint32_t first;
  uint32_t last;
};

struct AlgorithmicNameRange {
  const char* prefix;  // the name is prefix + code point in upper-case hex
  uint32_t first;
  uint32_t last;
};

#include "frontend/unicode_data.inc"

template <size_t N>
bool in_ranges(const CodePointRange (&ranges)[N], uint32_t cp) {
  auto it = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                             [](uint32_t value, const CodePointRange& r) { return value < r.first; });
  return it != std::begin(ranges) && cp <= std::prev(it)->last;
}

// Decodes the front-coded name list once into a map from name to code point.
const std::unordered_map<std::string, uint32_t>& name_map() {
  static const auto* map = [] {
    auto* m = new std::unordered_map<std::string, uint32_t>();
    m->reserve(33000);
    const std::string_view alphabet = kNamePrefixAlphabet;
    const std::string_view data = kNamesFrontCoded;
    std::string name;
    uint32_t cp = 0;
    size_t i = 0;
    while (i < data.size()) {
      if (data[i] == '~') {
        size_t end = data.find(';', i);
        cp = static_cast<uint32_t>(std::stoul(std::string(data.substr(i + 1, end - i - 1)), nullptr, 16));
        i = end + 1;
        continue;
      }
      size_t shared = alphabet.find(data[i]);
      size_t end = i + 1;
      while (end < data.size() && alphabet.find(data[end]) == std::string_view::npos && data[end] != '~') ++end;
      name.resize(shared);
      name.append(data.substr(i + 1, end - i - 1));
      m->emplace(name, cp++);
      i = end;
    }
    return m;
  }();
  return *map;
}

// Hangul syllable names are composed from the short names of their jamo.
constexpr std::string_view kJamoLeading[] = {"G", "GG", "N", "D", "DD", "R", "M", "B", "BB", "S",
                                             "SS", "", "J", "JJ", "C", "K", "T", "P", "H"};
constexpr std::string_view kJamoVowel[] = {"A", "AE", "YA", "YAE", "EO", "E",  "YEO", "YE", "O",  "WA", "WAE",
                                           "OE", "YO", "U", "WEO", "WE", "WI", "YU",  "EU", "YI", "I"};
constexpr std::string_view kJamoTrailing[] = {"",   "G",  "GG", "GS", "N",  "NJ", "NH", "D",  "L",  "LG",
                                              "LM", "LB", "LS", "LT", "LP", "LH", "M",  "B",  "BS", "S",
                                              "SS", "NG", "J",  "C",  "K",  "T",  "P",  "H"};

template <size_t N>
int longest_jamo(const std::string_view (&jamo)[N], std::string_view& rest) {
  int best = -1;
  size_t best_len = 0;
  for (size_t k = 0; k < N; ++k) {
    if (rest.substr(0, jamo[k].size()) == jamo[k] && (best < 0 || jamo[k].size() > best_len)) {
      best = static_cast<int>(k);
      best_len = jamo[k].size();
    }
  }
  if (best >= 0) rest.remove_prefix(best_len);
  return best;
}

std::optional<uint32_t> lookup_hangul(std::string_view rest) {
  int l = longest_jamo(kJamoLeading, rest);
  int v = longest_jamo(kJamoVowel, rest);
  int t = longest_jamo(kJamoTrailing, rest);
  if (l < 0 || v < 0 || t < 0 || !rest.empty()) return std::nullopt;
  return 0xAC00 + (l * 21 + v) * 28 + t;
}

}  // namespace

bool is_printable(uint32_t cp) { return in_ranges(kPrintableRanges, cp); }
bool is_identifier_start(uint32_t cp) { return in_ranges(kIdStartRanges, cp); }
bool is_identifier_continue(uint32_t cp) { return in_ranges(kIdContinueRanges, cp); }

std::optional<uint32_t> lookup_unicode_name(std::string_view raw_name) {
  std::string name(raw_name);
  for (char& c : name) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
  std::string_view view = name;

  constexpr std::string_view kHangul = "HANGUL SYLLABLE ";
  if (view.substr(0, kHangul.size()) == kHangul) return lookup_hangul(view.substr(kHangul.size()));
  for (const auto& range : kAlgorithmicNameRanges) {
    std::string_view prefix = range.prefix;
    if (view.substr(0, prefix.size()) != prefix) continue;
    std::string_view hex = view.substr(prefix.size());
    if (hex.size() < 4 || hex.size() > 5 ||
        hex.find_first_not_of("0123456789ABCDEF") != std::string_view::npos)
      continue;
    uint32_t cp = static_cast<uint32_t>(std::stoul(std::string(hex), nullptr, 16));
    if (cp >= range.first && cp <= range.last) return cp;
  }
  const auto& map = name_map();
  auto it = map.find(name);
  if (it == map.end()) return std::nullopt;
  return it->second;
}

}  // namespace npufuse::frontend

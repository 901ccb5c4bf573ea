#pragma once
// Text written in English and Chinese (catalog summaries, messages, pitfalls).
#include <string>

namespace npufuse::check {

enum class Lang { En, Zh };

struct LocalizedText {
  std::string en;
  std::string zh;

  bool empty() const { return en.empty() && zh.empty(); }
  // The text in `lang`, falling back to the other language when it is missing.
  const std::string& in(Lang lang) const {
    if (lang == Lang::Zh) return zh.empty() ? en : zh;
    return en.empty() ? zh : en;
  }
};

}  // namespace npufuse::check

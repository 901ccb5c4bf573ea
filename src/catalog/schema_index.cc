#include "catalog/schema_index.h"

namespace npufuse::catalog {

SchemaIndex SchemaIndex::parse(std::string_view text, std::vector<std::string>* errors) {
  SchemaIndex index;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    ++line_no;
    pos = end + 1;
    size_t key = line.find("- func:");
    if (key == std::string_view::npos || line.find_first_not_of(' ') != key) continue;
    std::string error;
    auto sig = parse_signature(line.substr(key + 7), &error);
    if (!sig) {
      if (errors) errors->push_back("line " + std::to_string(line_no) + ": " + error);
      continue;
    }
    ++index.count_;
    if (!sig->overload.empty()) continue;
    index.by_name_[sig->name].push_back({line_no, std::move(*sig)});
  }
  return index;
}

const SchemaEntry* SchemaIndex::find(const std::string& name, int preferred_line) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end() || it->second.empty()) return nullptr;
  for (const auto& e : it->second)
    if (e.line == preferred_line) return &e;
  return &it->second.front();
}

}  // namespace npufuse::catalog

#include "util/edit_distance.h"
#include "catalog/ops/ops_index.h"

#include <algorithm>
#include <map>

namespace npufuse::catalog {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool has(const std::string& haystack, const std::string& lowered_needle) {
  return lower(haystack).find(lowered_needle) != std::string::npos;
}

bool has_text(const LocalizedText& t, const std::string& needle) { return has(t.en, needle) || has(t.zh, needle); }

bool summary_matches(const OpsEntry& e, const std::string& needle) {
  if (e.alias && (has_text(e.alias->note, needle) || has(e.alias->use, needle))) return true;
  if (!e.op) return false;
  return has_text(e.op->summary, needle);
}

bool keyword_matches(const OpsEntry& e, const std::string& needle) {
  if (!e.op) return false;
  for (const auto* list : {&e.op->keywords_en, &e.op->keywords_zh})
    for (const auto& k : *list)
      if (has(k, needle)) return true;
  return false;
}

bool body_matches(const OpsEntry& e, const std::string& needle) {
  if (e.docstring && has(e.docstring->text, needle)) return true;
  if (!e.op) return false;
  const Operator& op = *e.op;
  if (has_text(op.description, needle)) return true;
  for (const auto& p : op.params)
    if (has(p.name, needle) || has_text(p.doc, needle)) return true;
  for (const auto& o : op.outputs)
    if (has_text(o.doc, needle)) return true;
  for (const auto& c : op.constraints)
    if (has_text(c.message, needle) || has(c.require_text, needle) || has(c.when_text, needle) || has(c.id, needle))
      return true;
  for (const auto& p : op.pitfalls)
    if (has_text(p.text, needle)) return true;
  return has(op.versions_torch_npu, needle) || has(op.versions_cann, needle);
}

}  // namespace

const char* match_tier_name(MatchTier t) {
  switch (t) {
    case MatchTier::ExactName: return "name";
    case MatchTier::NamePrefix: return "name_prefix";
    case MatchTier::NameSubstring: return "name_substring";
    case MatchTier::Summary: return "summary";
    case MatchTier::Keyword: return "keyword";
    case MatchTier::Body: return "text";
  }
  return "?";
}

OpsIndex::OpsIndex(const Catalog* catalog, const DocstringFile* docs) {
  std::map<std::string, OpsEntry> merged;
  if (catalog)
    for (const auto& op : catalog->operators()) merged[op.name] = {op.name, &op, nullptr};
  if (docs) {
    for (const auto& d : docs->entries) {
      auto& e = merged[d.name];
      e.name = d.name;
      e.docstring = docs->find(d.name);  // the last one of that name
    }
  }
  if (catalog)
    for (const auto& a : catalog->aliases()) {
      auto& e = merged[a.name];
      e.name = a.name;
      e.alias = &a;
    }
  for (auto& [name, e] : merged) entries_.push_back(std::move(e));
}

const OpsEntry* OpsIndex::find(std::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const OpsEntry& e, std::string_view n) { return e.name < n; });
  return it != entries_.end() && it->name == name ? &*it : nullptr;
}

std::vector<SearchHit> OpsIndex::search(std::string_view keyword) const {
  std::string needle = lower(keyword);
  std::vector<SearchHit> hits;
  if (needle.empty()) return hits;
  for (const auto& e : entries_) {
    std::string name = lower(e.name);
    if (name == needle) hits.push_back({&e, MatchTier::ExactName});
    else if (name.compare(0, needle.size(), needle) == 0) hits.push_back({&e, MatchTier::NamePrefix});
    else if (name.find(needle) != std::string::npos) hits.push_back({&e, MatchTier::NameSubstring});
    else if (summary_matches(e, needle)) hits.push_back({&e, MatchTier::Summary});
    else if (keyword_matches(e, needle)) hits.push_back({&e, MatchTier::Keyword});
    else if (body_matches(e, needle)) hits.push_back({&e, MatchTier::Body});
  }
  std::stable_sort(hits.begin(), hits.end(), [](const SearchHit& a, const SearchHit& b) { return a.tier < b.tier; });
  return hits;
}

std::vector<std::string> OpsIndex::similar_names(std::string_view name, size_t max) const {
  std::string wanted = lower(name);
  size_t limit = std::max<size_t>(2, wanted.size() / 4);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& e : entries_) {
    std::string candidate = lower(e.name);
    size_t d = edit_distance(wanted, candidate);
    // A name that contains the query (or the query without "npu_") is close too.
    bool contains = wanted.size() >= 3 && candidate.find(wanted) != std::string::npos;
    if (d <= limit || contains) scored.push_back({contains ? std::min(d, limit) : d, e.name});
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < max; ++i) out.push_back(scored[i].second);
  return out;
}

}  // namespace npufuse::catalog

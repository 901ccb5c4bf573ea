#include "match/match_memo.h"

#include <fmt/format.h>

namespace npufuse::match {

void MatchMemo::Walks::add(size_t pattern, int start) {
  if (by_pattern_.size() <= pattern) by_pattern_.resize(pattern + 1);
  by_pattern_[pattern].push_back(start);
}

const std::vector<int>& MatchMemo::Walks::starts_of(size_t pattern) const {
  static const std::vector<int> none;
  return pattern < by_pattern_.size() ? by_pattern_[pattern] : none;
}

namespace {

// Length-prefixed, so that no two different graphs give the same text.
void put(fmt::memory_buffer& out, std::string_view s) { fmt::format_to(std::back_inserter(out), "{}:{}", s.size(), s); }

void put(fmt::memory_buffer& out, const std::vector<int>& ids) {
  fmt::format_to(std::back_inserter(out), "[{}", ids.size());
  for (int id : ids) fmt::format_to(std::back_inserter(out), ",{}", id);
  out.push_back(']');
}

}  // namespace

std::string MatchMemo::key_of(const model::FunctionDataflow& g, const MatchOptions& options) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "share {} early {};", options.near_miss_min_share, options.rule_out_early ? 1 : 0);
  for (const model::DataflowValue& v : g.values) {
    put(out, v.name);
    fmt::format_to(std::back_inserter(out), "<{};", v.producer);
  }
  for (const model::DataflowOp& op : g.ops) {
    fmt::format_to(std::back_inserter(out), "{}|{}{}|", static_cast<int>(op.cls), op.in_place ? 'i' : '-', op.unresolved ? 'u' : '-');
    put(out, op.name);
    put(out, op.condition);
    put(out, op.scope);
    fmt::format_to(std::back_inserter(out), "a{}", op.attrs.size());
    for (const std::string& a : op.attrs) put(out, a);
    put(out, op.inputs);
    put(out, op.outputs);
    out.push_back(';');
  }
  put(out, g.returns);
  return fmt::to_string(out);
}

std::shared_ptr<const MatchMemo::Walks> MatchMemo::find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = walks_.find(key);
  if (it == walks_.end()) return nullptr;
  ++hits_;
  return it->second;
}

void MatchMemo::remember(std::string key, Walks walks) {
  std::lock_guard<std::mutex> lock(mutex_);
  walks_.emplace(std::move(key), std::make_shared<const Walks>(std::move(walks)));
}

size_t MatchMemo::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return walks_.size();
}

size_t MatchMemo::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

}  // namespace npufuse::match

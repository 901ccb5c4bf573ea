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

// The key is built for every graph of a scan, so it is appended by hand
// (format_int, raw bytes) rather than through format strings.
void put_int(fmt::memory_buffer& out, long long v) {
  fmt::format_int digits(v);
  out.append(digits.data(), digits.data() + digits.size());
}

// Length-prefixed, so that no two different graphs give the same text.
void put(fmt::memory_buffer& out, std::string_view s) {
  put_int(out, static_cast<long long>(s.size()));
  out.push_back(':');
  out.append(s.data(), s.data() + s.size());
}

void put(fmt::memory_buffer& out, const std::vector<int>& ids) {
  out.push_back('[');
  put_int(out, static_cast<long long>(ids.size()));
  for (int id : ids) {
    out.push_back(',');
    put_int(out, id);
  }
  out.push_back(']');
}

}  // namespace

std::string MatchMemo::key_of(const model::FunctionDataflow& g, const MatchOptions& options) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "share {} early {};", options.near_miss_min_share, options.rule_out_early ? 1 : 0);
  for (const model::DataflowValue& v : g.values) {
    put(out, v.name);
    out.push_back('<');
    put_int(out, v.producer);
    out.push_back(';');
  }
  for (const model::DataflowOp& op : g.ops) {
    put_int(out, static_cast<int>(op.cls));
    out.push_back('|');
    out.push_back(op.in_place ? 'i' : '-');
    out.push_back(op.unresolved ? 'u' : '-');
    out.push_back(static_cast<char>('0' + op.unrolled));
    out.push_back('|');
    put(out, op.name);
    put(out, op.condition);
    put(out, op.scope);
    out.push_back('a');
    put_int(out, static_cast<long long>(op.attrs.size()));
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

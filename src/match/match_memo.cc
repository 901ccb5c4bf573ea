#include "match/match_memo.h"

#include <fmt/format.h>

#include <cstdint>

namespace npufuse::match {

namespace {

// The key is built for every graph of a scan, so it is appended as raw
// bytes: numbers as their four bytes, texts and lists length-first. It is
// never shown.
void put_int(fmt::memory_buffer& out, long long v) {
  const auto n = static_cast<int32_t>(v);
  const char* bytes = reinterpret_cast<const char*>(&n);
  out.append(bytes, bytes + sizeof n);
}

// Length-prefixed, so that no two different graphs give the same text.
void put(fmt::memory_buffer& out, std::string_view s) {
  put_int(out, static_cast<long long>(s.size()));
  out.append(s.data(), s.data() + s.size());
}

void put(fmt::memory_buffer& out, const std::vector<int>& ids) {
  put_int(out, static_cast<long long>(ids.size()));
  const char* bytes = reinterpret_cast<const char*>(ids.data());
  static_assert(sizeof(int) == sizeof(int32_t));
  out.append(bytes, bytes + ids.size() * sizeof(int));
}

}  // namespace

std::string MatchMemo::key_of(const model::FunctionDataflow& g, const MatchOptions& options) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "share {} early {};", options.near_miss_min_share, options.rule_out_early ? 1 : 0);
  put_int(out, static_cast<long long>(g.values.size()));
  for (const model::DataflowValue& v : g.values) {
    put(out, v.name);
    put_int(out, v.producer);
  }
  put_int(out, static_cast<long long>(g.ops.size()));
  for (const model::DataflowOp& op : g.ops) {
    put_int(out, static_cast<int>(op.cls));
    out.push_back(op.in_place ? 'i' : '-');
    out.push_back(op.unresolved ? 'u' : '-');
    put_int(out, op.unrolled);
    put(out, op.name);
    put(out, op.condition);
    put(out, op.scope);
    put_int(out, static_cast<long long>(op.attrs.size()));
    for (const std::string& a : op.attrs) put(out, a);
    put(out, op.inputs);
    put(out, op.outputs);
  }
  put(out, g.returns);
  return fmt::to_string(out);
}

std::shared_ptr<const MatchMemo::Outcomes> MatchMemo::find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = outcomes_.find(key);
  if (it == outcomes_.end()) return nullptr;
  ++hits_;
  return it->second;
}

void MatchMemo::remember(std::string key, Outcomes outcomes) {
  auto kept = std::make_shared<const Outcomes>(std::move(outcomes));
  std::lock_guard<std::mutex> lock(mutex_);
  outcomes_.emplace(std::move(key), std::move(kept));
}

size_t MatchMemo::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return outcomes_.size();
}

size_t MatchMemo::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

}  // namespace npufuse::match

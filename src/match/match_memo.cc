#include "match/match_memo.h"

#include <xxhash.h>

#include <cstdint>
#include <string>

namespace npufuse::match {

namespace {

// The key's bytes are written for every graph of a scan, so they are
// appended raw: numbers as their four bytes, texts and lists length-first,
// so that no two different graphs give the same bytes. Only their digest is
// kept.
void put_int(std::string& out, long long v) {
  const auto n = static_cast<int32_t>(v);
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
}

void put(std::string& out, std::string_view s) {
  put_int(out, static_cast<long long>(s.size()));
  out.append(s.data(), s.size());
}

void put(std::string& out, const std::vector<int>& ids) {
  put_int(out, static_cast<long long>(ids.size()));
  static_assert(sizeof(int) == sizeof(int32_t));
  out.append(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int));
}

}  // namespace

MemoKey MatchMemo::key_of(const model::FunctionDataflow& g, const MatchOptions& options) {
  // One buffer per thread, kept between graphs: its capacity is reused.
  thread_local std::string out;
  out.clear();
  out.append(reinterpret_cast<const char*>(&options.near_miss_min_share), sizeof options.near_miss_min_share);
  out.push_back(options.rule_out_early ? 'e' : '-');
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
  const XXH128_hash_t digest = XXH3_128bits(out.data(), out.size());
  return MemoKey{digest.low64, digest.high64};
}

std::shared_ptr<const MatchMemo::Outcomes> MatchMemo::find(const MemoKey& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = outcomes_.find(key);
  if (it == outcomes_.end()) return nullptr;
  ++hits_;
  return it->second;
}

void MatchMemo::remember(const MemoKey& key, Outcomes outcomes) {
  auto kept = std::make_shared<const Outcomes>(std::move(outcomes));
  std::lock_guard<std::mutex> lock(mutex_);
  outcomes_.emplace(key, std::move(kept));
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

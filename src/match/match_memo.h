#pragma once
// What matching a graph found, kept for graphs of the same code elsewhere.
//
// A tree of model files repeats itself: helpers copied between models
// (rotate_half, repeat_kv, an RMSNorm forward), and, in generated or copied
// model files, whole attention and decoder-layer forwards. Matching walks
// every rule from every candidate start op, and nearly all walks fail
// without a word; the few that give a match or a near-miss are all that
// matter. The memo keeps, per graph, what each pattern gave, keyed by
// everything a walk reads (op names, kinds, arguments, wiring, branch
// conditions, value names) and nothing it only reports (files, lines). Its
// texts name places by op (value_view.h SymbolicPlaces) and its spans are
// the ops they cover, so a graph with the same key takes the results over
// and only writes its own files and lines into them. A pattern whose result
// also depends on the model file beyond the graph (RULE opaque_calls: does
// the file's own code define the call?) is walked again instead, from the
// starts that gave something.
//
// The key is a 128-bit XXH3 digest of those bytes (Debian libxxhash-dev):
// the bytes of a big graph run to a hundred kilobytes, and keeping,
// hashing and comparing them whole was a tenth of a scan's matching. Two
// different graphs share a digest with a chance of about 2^-128 per pair.
//
// One memo serves one compiled pattern set; it may be shared between
// threads.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "match/matcher.h"

namespace npufuse::match {

// A match as the memo keeps it: places as placeholders, and the ops its
// spans are drawn from.
struct KeptMatch {
  Match match;  // target unset; spans and hints are made per graph
  std::vector<int> span_ops;
};

struct KeptNearMiss {
  NearMissTrace trace;  // spans are made per graph
  std::vector<int> span_ops;
  // For a look-alike's match: the ops it covers (its text is made per graph).
  std::vector<int> lookalike_ops;
};

// What one pattern gave on one graph, in the order it gave it.
struct PatternOutcome {
  size_t pattern = 0;  // its index in the pattern set
  std::vector<KeptMatch> matches;
  std::vector<KeptNearMiss> near_misses;
  // Walked again on every graph of the key, from `starts` (the starts that
  // gave something): its result depends on more than the graph.
  bool rewalk = false;
  std::vector<int> starts;
};

// The digest of what a walk over a graph reads (MatchMemo::key_of).
struct MemoKey {
  uint64_t low = 0, high = 0;
  bool operator==(const MemoKey&) const = default;
};

struct MemoKeyHash {
  size_t operator()(const MemoKey& k) const { return static_cast<size_t>(k.low); }
};

class MatchMemo {
 public:
  // In pattern order, only the patterns that gave something or are walked
  // again: most give nothing on most graphs.
  using Outcomes = std::vector<PatternOutcome>;

  explicit MatchMemo(const std::vector<Pattern>& patterns) : patterns_(&patterns) {}

  bool serves(const std::vector<Pattern>& patterns) const { return &patterns == patterns_; }

  // What a walk over `g` reads, with the options that decide what is kept.
  static MemoKey key_of(const model::FunctionDataflow& g, const MatchOptions& options);

  // The outcomes recorded for `key`, or null.
  std::shared_ptr<const Outcomes> find(const MemoKey& key) const;
  void remember(const MemoKey& key, Outcomes outcomes);

  size_t size() const;  // graphs remembered
  size_t hits() const;  // finds answered

 private:
  const std::vector<Pattern>* patterns_;
  mutable std::mutex mutex_;
  std::unordered_map<MemoKey, std::shared_ptr<const Outcomes>, MemoKeyHash> outcomes_;
  mutable size_t hits_ = 0;
};

}  // namespace npufuse::match

#pragma once
// What matching a graph found, kept for graphs of the same code elsewhere.
//
// A tree of model files repeats itself: helpers copied between models
// (rotate_half, repeat_kv, an RMSNorm forward), and, in generated or copied
// model files, whole attention and decoder-layer forwards. Matching walks
// every rule from every candidate start op, and nearly all walks fail
// without a word; the few that give a match or a near-miss are all that
// matter. The memo records those walks per graph, keyed by everything a
// walk reads (op names, kinds, arguments, wiring, branch conditions, value
// names) and nothing it only reports (files, lines). A graph with the same
// key walks only the recorded starts again, so every text that names a
// place is made for the graph at hand, and the result is the one a full
// match would give.
//
// One memo serves one compiled pattern set; it may be shared between
// threads.
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "match/matcher.h"

namespace npufuse::match {

class MatchMemo {
 public:
  // The start ops worth walking, per pattern (its index in the pattern set).
  class Walks {
   public:
    void add(size_t pattern, int start);
    const std::vector<int>& starts_of(size_t pattern) const;

   private:
    std::vector<std::vector<int>> by_pattern_;
  };

  explicit MatchMemo(const std::vector<Pattern>& patterns) : patterns_(&patterns) {}

  bool serves(const std::vector<Pattern>& patterns) const { return &patterns == patterns_; }

  // What a walk over `g` reads, with the options that decide what is kept.
  static std::string key_of(const model::FunctionDataflow& g, const MatchOptions& options);

  // The walks recorded for `key`, or null.
  std::shared_ptr<const Walks> find(const std::string& key) const;
  void remember(std::string key, Walks walks);

  size_t size() const;  // graphs remembered
  size_t hits() const;  // finds answered

 private:
  const std::vector<Pattern>* patterns_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const Walks>> walks_;
  mutable size_t hits_ = 0;
};

}  // namespace npufuse::match

#pragma once
// Which model op names a pattern needs, worked out once per pattern so that
// a model function can be ruled out before any walk: most rules cannot
// match most functions (a RoPE rule in a loss helper), and walking every
// start op there only to fail is most of the matching time.
//
// Ruling out must not change what is reported, near-misses included. A
// walk counts a step for each pattern op it pairs with a model op, and a
// pattern op pairs only with a model op of one of its pairing names (its own
// name, or a spelling the walk accepts: `x * x` for `x ** 2`, `/ sqrt` for
// `* rsqrt`, `expand` for `repeat_interleave`, ...). So when one required
// op has no partner, no walk succeeds; and when fewer pattern ops than a
// near-miss needs have partners, no walk gets far enough to be told.
#include <string>
#include <unordered_map>
#include <vector>

#include "model/dataflow.h"

namespace npufuse::match {

struct Pattern;

struct PatternNeeds {
  // Per pattern op that a walk may pair: the model op names it may pair with.
  std::vector<std::vector<std::string>> pairing_names;
  // Indexes into pairing_names of the ops every successful walk pairs: the
  // cone of the start op, stopping at optional steps and branch merges.
  std::vector<size_t> required;
  // pairing_names as ids of a vocabulary shared by a set of patterns, so
  // that a model function is asked once per name, not once per pattern.
  std::vector<std::vector<int>> pairing_ids;
};

// Every name some pattern of a set may pair with, numbered.
struct NameVocabulary {
  std::vector<std::string> names;
  std::unordered_map<std::string, int> ids;
  int id(const std::string& name);
};

PatternNeeds needs_of(const Pattern& pattern);

// The model op names a pattern op called `name` may pair with: its own, then
// the other spellings the walk accepts for it.
std::vector<std::string> pairing_names_of(const std::string& name);

// Whether pattern value `v` (already past its casts) is computed by an op a
// walk must pair: not a literal, not shape metadata, not a parameter. Both
// the step count of a pattern and its required ops are counted this way.
bool is_pattern_step(const model::FunctionDataflow& g, int v);

// Numbers the pairing names of `patterns` in one vocabulary, which each
// pattern then points to.
void share_name_vocabulary(std::vector<Pattern>& patterns);

// Per vocabulary id: whether a model function with these op names has it.
std::vector<char> names_present(const NameVocabulary& vocabulary,
                                const std::unordered_map<std::string, std::vector<int>>& ops_by_name);

// Whether any walk of `pattern` over a model function whose op names are
// the keys of `ops_by_name` can match, or fail deep enough to be a
// near-miss (at least `near_miss_steps` steps; negative when the pattern
// reports no near-misses).
bool may_match_or_nearly(const PatternNeeds& needs, const std::unordered_map<std::string, std::vector<int>>& ops_by_name,
                         double near_miss_steps);
// The same with the vocabulary's ids (`present` from names_present).
bool may_match_or_nearly(const PatternNeeds& needs, const std::vector<char>& present, double near_miss_steps);

}  // namespace npufuse::match

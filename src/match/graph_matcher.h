#pragma once
// One attempt: does `pattern` occur in the model graph with its first
// returned value computed by target op `anchor_op`? The walk goes backwards
// from the anchors, pairing each pattern op with the model op that produces
// the corresponding value, and backtracks over operand orders of symmetric
// ops and over optional steps.
#include <string>
#include <vector>

#include "match/pattern.h"
#include "match/target_index.h"

namespace npufuse::match {

struct Attempt {
  bool ok = false;
  std::vector<int> op_map;          // pattern op id -> target op id (-1: not an op of the match)
  std::vector<int> anchors;         // target value per pattern anchor (-1 for an anchor that is a bare parameter)
  std::vector<int> binding;         // per pattern parameter: target value (-1 when unused)
  std::vector<char> binding_reciprocal;  // per pattern parameter: bound to a divisor (the model divides by it)
  std::vector<int> passed;          // target casts/views passed between matched ops
  std::vector<int> binding_passed;  // target casts/views passed on the way to a parameter's value
  int matched = 0;                  // pattern ops matched (on failure: at the deepest point reached)
  int optional_skipped = 0;
  std::vector<std::string> branches;  // branch conditions the match depends on
  // Branch merges (phi ops) entered through the arm that has an optional
  // step (`if mask is not None: s = s + mask`): the other arm is the same
  // chain without that step, so the match holds on either.
  std::vector<int> optional_merges;
  // On failure: why, where, and the steps that led there (outermost first).
  std::string reason;
  int failed_at = -1;               // target op the failure was found at
  std::vector<std::string> trace;
};

// The pattern op the walk starts from: its first returned value that an op
// computes (through casts); -1 when the pattern returns only parameters.
int start_op(const Pattern& pattern);

// `reported_from`: a failure that reaches fewer steps is never told, so its
// reason, trace and state are not kept (a.matched is still the depth).
Attempt attempt_match(const Pattern& pattern, const TargetIndex& target, int anchor_op, double reported_from = 0);

}  // namespace npufuse::match

#pragma once
// Module-level helpers that only serve training: auxiliary losses such as a
// router's load-balancing loss. Such a helper recomputes the router's
// softmax/top-k, but nothing an inference run executes reaches it, so a chain
// found in it is no inference chain.
//
// A helper is training-only when it has call sites and every one of them is
// a loss site: under an `if` that tests a training flag (`self.training`),
// its result stored into a loss (`aux_loss = f(...)`, `self.aux_loss = ...`),
// or inside another training-only helper. A helper nobody calls is left alone
// (a file of functions may be a library whose callers are elsewhere).
#include <set>
#include <string>

#include "model/source_set.h"

namespace npufuse::model {

std::set<std::string> training_only_helpers(const SourceSet& sources);

}  // namespace npufuse::model

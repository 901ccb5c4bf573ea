#pragma once
// Where a matched chain is, in the user's terms: one line range per function
// its ops come from (an add+RMSNorm chain runs through the decoder layer's
// forward and the norm's forward), and which of them is the primary location:
// the function the chain was matched in, where the replacement call goes.
#include <vector>

#include "model/function_index.h"
#include "plan/model_matches.h"
#include "plan/plan.h"

namespace npufuse::plan {

struct ChainParts {
  std::vector<Location> parts;  // in source order (file, then line)
  Location primary;             // one of `parts`
  // The lines the ops themselves are on (runs of adjacent lines merged): a
  // chain whose statements are interleaved with other code (MLA's key path
  // between the query's statements) covers only these.
  std::vector<Location> op_lines;
  std::vector<std::string> op_scopes;  // per op_lines entry: the module path whose code ran there ("self.q_a_proj")
};

// `functions`, when given, lists each file's functions once for all the
// chains of a model.
ChainParts chain_parts(const MatchSite& site, model::FunctionIndex* functions = nullptr);

}  // namespace npufuse::plan

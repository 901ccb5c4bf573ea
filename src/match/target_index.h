#pragma once
// A model function's dataflow indexed for matching: ops by name (a pattern's
// first step is looked up, not searched for), readers of every value, and
// which values the function returns.
#include <string>
#include <unordered_map>
#include <vector>

#include "model/dataflow.h"

namespace npufuse::match {

struct TargetIndex {
  explicit TargetIndex(const model::FunctionDataflow& graph);

  const model::FunctionDataflow& g;
  std::unordered_map<std::string, std::vector<int>> by_name;  // op ids, in graph order
  std::vector<std::vector<int>> readers;                     // value id -> op ids reading it
  std::vector<char> returned;                                // value id -> returned by the function

  const std::vector<int>& ops_named(const std::string& name) const;
};

// Reads that only look at metadata (`x.shape`, `x.dtype`, `x.device`): they
// neither keep a value alive for a fused replacement nor count as uses.
bool is_metadata_read(const model::DataflowOp& op);

}  // namespace npufuse::match

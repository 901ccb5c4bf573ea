#pragma once
// A model function's dataflow indexed for matching: ops by name (a pattern's
// first step is looked up, not searched for), readers of every value, and
// which values the function returns.
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "match/op_arguments.h"
#include "match/value_view.h"
#include "model/dataflow.h"

namespace npufuse::match {

struct TargetIndex {
  explicit TargetIndex(const model::FunctionDataflow& graph);

  const model::FunctionDataflow& g;
  std::unordered_map<std::string, std::vector<int>> by_name;  // op ids, in graph order
  std::vector<std::vector<int>> readers;                     // value id -> op ids reading it
  std::vector<char> returned;                                // value id -> returned by the function
  ComparedArguments arguments{g, true};                      // per op, built on first use

  const std::vector<int>& ops_named(const std::string& name) const;
  // constant_of(g, v), worked out once per value.
  const std::optional<ConstantValue>& constant(int v) const;

 private:
  mutable std::vector<std::optional<std::optional<ConstantValue>>> constants_;
};

// Reads that only look at metadata (`x.shape`, `x.dtype`, `x.device`): they
// neither keep a value alive for a fused replacement nor count as uses.
bool is_metadata_read(const model::DataflowOp& op);

}  // namespace npufuse::match

#pragma once
// An op's arguments as the matcher compares them: each under its key (the
// parameter name, "#<index>" or the keyword), without the ones that do not
// change the computation (an output dtype, `inplace=`, an argument given as
// None, and on the model side a dropout probability that is 0 at inference).
// Computing them builds strings, and a function's ops are compared against
// every pattern, so each graph keeps them once per op.
#include <optional>
#include <string>
#include <vector>

#include "model/dataflow.h"

namespace npufuse::match {

struct OpArgument {
  std::string key;
  int value = -1;
};
using OpArguments = std::vector<OpArgument>;

// Ops whose attrs are argument labels ("dim=") rather than a payload.
bool has_labels(const model::DataflowOp& op);

// Every argument of `op`, in call order.
OpArguments all_arguments(const model::DataflowOp& op);

// The arguments that take part in a comparison. `model_side` also drops
// an inference-off dropout probability (a pattern never has one).
OpArguments compared_arguments(const model::FunctionDataflow& g, const model::DataflowOp& op, bool model_side);

// compared_arguments for each op of one graph, computed on first use. Not
// safe to share between threads while it fills in.
class ComparedArguments {
 public:
  ComparedArguments(const model::FunctionDataflow& g, bool model_side) : g_(g), model_side_(model_side) {}
  const OpArguments& of(const model::DataflowOp& op) const;

 private:
  const model::FunctionDataflow& g_;
  bool model_side_;
  mutable std::vector<std::optional<OpArguments>> cache_;
};

// A constant None (an argument left at its default).
bool is_none_constant(const model::FunctionDataflow& g, int v);

}  // namespace npufuse::match

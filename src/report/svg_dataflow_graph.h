#pragma once
// A block's dataflow reduced to what a picture should show: the values the
// forward computes from its inputs. Literals, attribute reads (weights,
// shapes, dtypes) and shape arithmetic on them are left out; tuple packing,
// unpacking and phi merges are looked through, so an edge joins the op that
// made a tensor to the op that reads it.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "model/dataflow.h"

namespace npufuse::report {

struct PictureNode {
  std::string label;   // the op as people read it: "linear", "q_proj", "input hidden_states"
  std::string detail;  // file:line of the expression that made it
  int candidate = -1;  // index in the plan's candidate list of the chain that holds the op; -1: none
};

struct PictureGraph {
  std::vector<PictureNode> nodes;
  std::vector<std::pair<int, int>> edges;  // node indices, producer -> consumer
};

// Index of the plan candidate whose chain holds `op`, or -1.
using OpOwner = std::function<int(const model::DataflowOp& op)>;

PictureGraph dataflow_picture(const model::FunctionDataflow& graph, const OpOwner& owner);

}  // namespace npufuse::report

#include "report/svg_dataflow_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace npufuse::report {
namespace {

using model::OpClass;

bool drawn(OpClass c) {
  switch (c) {
    case OpClass::Input:
    case OpClass::Compute:
    case OpClass::Cast:
    case OpClass::View:
    case OpClass::Slice:
    case OpClass::Module:
    case OpClass::Call:
      return true;
    default:
      return false;
  }
}

std::string label_of(const model::FunctionDataflow& g, const model::DataflowOp& op) {
  if (op.cls == OpClass::Input) {
    std::string name = op.outputs.empty() ? std::string() : g.values[static_cast<size_t>(op.outputs[0])].name;
    return name.empty() ? "input" : "input " + name;
  }
  if (op.name.rfind("module:", 0) == 0) return op.name.substr(7);
  return op.name;
}

class Reducer {
 public:
  explicit Reducer(const model::FunctionDataflow& g) : g_(g), sources_(g.ops.size()), done_(g.ops.size(), false) {}

  // The drawn ops whose values reach `op`'s inputs, looking through
  // structure ops; attribute reads and literals contribute nothing.
  const std::set<int>& drawn_sources(int op) {
    size_t i = static_cast<size_t>(op);
    if (done_[i]) return sources_[i];
    done_[i] = true;  // set first: a phi inside a loop may reach itself
    std::set<int> found;
    for (int v : g_.ops[i].inputs) {
      if (v < 0 || static_cast<size_t>(v) >= g_.values.size()) continue;
      int p = g_.values[static_cast<size_t>(v)].producer;
      if (p < 0 || p == op) continue;
      const model::DataflowOp& producer = g_.ops[static_cast<size_t>(p)];
      if (drawn(producer.cls)) {
        found.insert(p);
      } else if (producer.cls == OpClass::Structure) {
        const std::set<int>& through = drawn_sources(p);
        found.insert(through.begin(), through.end());
      }
    }
    sources_[i] = std::move(found);
    return sources_[i];
  }

 private:
  const model::FunctionDataflow& g_;
  std::vector<std::set<int>> sources_;
  std::vector<bool> done_;
};

}  // namespace

PictureGraph dataflow_picture(const model::FunctionDataflow& g, const OpOwner& owner) {
  PictureGraph out;
  Reducer reducer(g);
  std::vector<int> node_of(g.ops.size(), -1);
  // Ops are in SSA order, so every producer is decided before its readers.
  // Only what depends on an input is kept: `neg(1)` or `shape(x)[0] // 2`
  // are bookkeeping, not the block's dataflow.
  for (const model::DataflowOp& op : g.ops) {
    if (!drawn(op.cls)) continue;
    std::vector<int> from;
    for (int p : reducer.drawn_sources(op.id))
      if (p >= 0 && static_cast<size_t>(p) < node_of.size() && node_of[static_cast<size_t>(p)] >= 0)
        from.push_back(node_of[static_cast<size_t>(p)]);
    if (op.cls != OpClass::Input && from.empty()) continue;
    int index = static_cast<int>(out.nodes.size());
    node_of[static_cast<size_t>(op.id)] = index;
    PictureNode node;
    node.label = label_of(g, op);
    std::string file = op.file ? op.file->path : (g.file ? g.file->path : std::string());
    node.detail = fmt::format("{}:{}", file, op.line);
    node.candidate = owner ? owner(op) : -1;
    out.nodes.push_back(std::move(node));
    std::sort(from.begin(), from.end());
    for (int f : from) out.edges.emplace_back(f, index);
  }
  return out;
}

}  // namespace npufuse::report

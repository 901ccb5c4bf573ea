#include "match/target_index.h"

namespace npufuse::match {

TargetIndex::TargetIndex(const model::FunctionDataflow& graph) : g(graph), readers(graph.consumers_by_value()) {
  returned.assign(g.values.size(), 0);
  for (const model::DataflowOp& op : g.ops) by_name[op.name].push_back(op.id);
  for (int v : g.returns) returned[static_cast<size_t>(v)] = 1;
}

const std::vector<int>& TargetIndex::ops_named(const std::string& name) const {
  static const std::vector<int> none;
  auto it = by_name.find(name);
  return it == by_name.end() ? none : it->second;
}

const std::optional<ConstantValue>& TargetIndex::constant(int v) const {
  if (constants_.size() != g.values.size()) constants_.resize(g.values.size());
  auto& slot = constants_[static_cast<size_t>(v)];
  if (!slot) slot = constant_of(g, v);
  return *slot;
}

bool is_metadata_read(const model::DataflowOp& op) {
  return op.cls == model::OpClass::Attribute && (op.name == "shape" || op.name == "dtype" || op.name == "device");
}

}  // namespace npufuse::match

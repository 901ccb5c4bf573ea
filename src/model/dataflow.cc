#include "model/dataflow.h"

#include <fmt/format.h>

namespace npufuse::model {

const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::Input: return "input";
    case OpClass::Constant: return "constant";
    case OpClass::Compute: return "compute";
    case OpClass::Cast: return "cast";
    case OpClass::View: return "view";
    case OpClass::Slice: return "slice";
    case OpClass::Module: return "module";
    case OpClass::Call: return "call";
    case OpClass::Attribute: return "attribute";
    case OpClass::Structure: return "structure";
  }
  return "?";
}

std::vector<int> FunctionDataflow::consumers(int v) const {
  std::vector<int> out;
  for (const DataflowOp& op : ops)
    for (int in : op.inputs)
      if (in == v) {
        out.push_back(op.id);
        break;
      }
  return out;
}

std::string FunctionDataflow::dump() const {
  std::string out;
  for (const DataflowOp& op : ops) {
    std::string outs;
    for (int v : op.outputs) outs += (outs.empty() ? "" : ", ") + fmt::format("v{}", v);
    std::string ins;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      std::string kw = i < op.attrs.size() ? op.attrs[i] : "";
      const DataflowOp& p = producer_of(op.inputs[i]);
      // Literals read better inline: pow(v1, 2) rather than pow(v1, v2).
      std::string arg = p.cls == OpClass::Constant && !p.attrs.empty() ? p.attrs[0] : fmt::format("v{}", op.inputs[i]);
      ins += (ins.empty() ? "" : ", ") + kw + arg;
    }
    for (size_t i = op.inputs.size(); i < op.attrs.size(); ++i) ins += (ins.empty() ? "" : ", ") + op.attrs[i];
    out += fmt::format("{} = {}({}) [{}{}] @{}{}\n", outs.empty() ? "_" : outs, op.name, ins, op_class_name(op.cls),
                       op.in_place ? ", in-place" : "", op.line, op.condition.empty() ? "" : " if " + op.condition);
  }
  std::string rets;
  for (int v : returns) rets += (rets.empty() ? "" : ", ") + fmt::format("v{}", v);
  if (!rets.empty()) out += "return " + rets + "\n";
  return out;
}

}  // namespace npufuse::model

#include "match/size_expression.h"

#include <string_view>

#include "match/op_signature.h"
#include "match/value_view.h"

namespace npufuse::match {

namespace {

using model::DataflowOp;
using model::FunctionDataflow;
using model::OpClass;

// Arithmetic that turns sizes into sizes.
bool is_size_arithmetic(std::string_view name) {
  return name == "floor_divide" || name == "div" || name == "mul" || name == "add" || name == "sub" || name == "neg";
}

bool size_expression(const FunctionDataflow& g, int v, int depth) {
  if (depth > 6) return false;
  if (is_shape_read(g, v)) return true;
  const DataflowOp& op = g.producer_of(through_casts(g, v));
  if (op.cls != OpClass::Compute || !is_size_arithmetic(op.name) || op.inputs.empty()) return false;
  bool has_size = false;
  for (int in : op.inputs) {
    if (constant_of(g, in)) continue;
    if (!size_expression(g, in, depth + 1)) return false;
    has_size = true;
  }
  return has_size;
}

// A size the model reads from somewhere the pattern cannot see into.
bool is_opaque_size(const FunctionDataflow& g, int v) {
  if (is_shape_read(g, v)) return true;
  const DataflowOp& op = g.producer_of(through_casts(g, v));
  return op.cls == OpClass::Attribute || op.cls == OpClass::Input;
}

bool operand_matches(const FunctionDataflow& pg, int pv, const FunctionDataflow& tg, int tv, int depth);

bool size_matches_at(const FunctionDataflow& pg, int pv, const FunctionDataflow& tg, int tv, int depth) {
  if (depth > 6) return false;
  if (is_shape_read(pg, pv)) return true;
  if (constant_of(tg, tv)) return false;
  if (is_opaque_size(tg, tv)) return true;
  const DataflowOp& P = pg.producer_of(through_casts(pg, pv));
  const DataflowOp& T = tg.producer_of(through_casts(tg, tv));
  if (P.name != T.name || P.inputs.size() != T.inputs.size()) return false;
  bool in_order = true;
  for (size_t i = 0; i < P.inputs.size() && in_order; ++i) in_order = operand_matches(pg, P.inputs[i], tg, T.inputs[i], depth + 1);
  if (in_order) return true;
  return is_commutative(P.name) && P.inputs.size() == 2 && operand_matches(pg, P.inputs[0], tg, T.inputs[1], depth + 1) &&
         operand_matches(pg, P.inputs[1], tg, T.inputs[0], depth + 1);
}

bool operand_matches(const FunctionDataflow& pg, int pv, const FunctionDataflow& tg, int tv, int depth) {
  if (auto pc = constant_of(pg, pv)) {
    auto tc = constant_of(tg, tv);
    return tc && *tc == *pc;
  }
  return size_matches_at(pg, pv, tg, tv, depth);
}

}  // namespace

bool is_shape_read(const FunctionDataflow& g, int v) {
  for (int depth = 0; depth < 4; ++depth) {
    const DataflowOp& op = g.producer_of(through_casts(g, v));
    if (op.cls == OpClass::Attribute && op.name == "shape") return true;
    if (op.name == "size" && (op.cls == OpClass::Compute || op.cls == OpClass::Call)) return true;
    if ((op.name == "unpack" || op.name == "getitem") && !op.inputs.empty()) {
      v = op.inputs[0];
      continue;
    }
    return false;
  }
  return false;
}

bool is_size_expression(const FunctionDataflow& g, int v) { return size_expression(g, v, 0); }

bool is_index_arithmetic(const FunctionDataflow& g, int v) {
  if (size_expression(g, v, 0)) return true;
  const DataflowOp& op = g.producer_of(through_casts(g, v));
  if (op.cls != OpClass::Compute || !is_size_arithmetic(op.name) || op.inputs.empty()) return false;
  bool has_size = false;
  for (int in : op.inputs) {
    if (constant_of(g, in)) continue;
    if (size_expression(g, in, 1)) {
      has_size = true;
      continue;
    }
    const DataflowOp& from = g.producer_of(through_casts(g, in));
    if (from.cls != OpClass::Input && from.cls != OpClass::Attribute) return false;
  }
  return has_size;
}

bool is_index_bookkeeping(const FunctionDataflow& g, const DataflowOp& op) {
  return !op.outputs.empty() && is_index_arithmetic(g, op.outputs.front());
}

bool size_matches(const FunctionDataflow& pattern, int pv, const FunctionDataflow& target, int tv) {
  return size_matches_at(pattern, pv, target, tv, 0);
}

}  // namespace npufuse::match

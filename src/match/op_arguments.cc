#include "match/op_arguments.h"

#include <algorithm>

#include "match/op_signature.h"
#include "match/value_view.h"

namespace npufuse::match {

using model::DataflowOp;
using model::FunctionDataflow;
using model::OpClass;

namespace {

// A dropout probability that is 0 at inference: a literal 0 or
// `p if self.training else 0.0` (either arm order). Fused inference
// kernels have no dropout, and eval mode never applies it.
bool inference_dropout_off(const FunctionDataflow& g, int tv) {
  auto zero = [&](int v) {
    auto c = constant_of(g, v);
    return c && c->numeric && c->number == 0;
  };
  if (zero(tv)) return true;
  const DataflowOp& op = g.producer_of(through_casts(g, tv));
  if (op.name != "select" || op.inputs.size() != 3) return false;
  // `self.training` is one attribute op; `module.training` reads attribute
  // "training" of a value (getattr).
  auto is_training = [](const DataflowOp& a) {
    if (a.cls != OpClass::Attribute) return false;
    if (a.name == "getattr") return !a.attrs.empty() && a.attrs[0] == "training";
    return a.name.size() >= 8 && a.name.compare(a.name.size() - 8, 8, "training") == 0;
  };
  const DataflowOp& cond = g.producer_of(through_casts(g, op.inputs[0]));
  if (is_training(cond)) return zero(op.inputs[2]);
  bool negated = cond.name == "not" && cond.inputs.size() == 1 && is_training(g.producer_of(cond.inputs[0]));
  return negated && zero(op.inputs[1]);
}

// `x.view(shape)` with `shape` a tuple or list the function builds
// (`query_shape = (b, s, -1, self.head_dim)`): its sizes, one argument each,
// as `x.view(b, s, -1, self.head_dim)` has them.
void spread_shape_tuple(const FunctionDataflow& g, const DataflowOp& op, OpArguments& args) {
  if (op.cls != OpClass::View || (op.name != "view" && op.name != "reshape") || args.size() != 2) return;
  if (args[1].key != positional_key(op.name, 1)) return;
  const DataflowOp& shape = g.producer_of(args[1].value);
  if (shape.cls != OpClass::Structure || (shape.name != "tuple" && shape.name != "list") || shape.inputs.size() < 2) return;
  args.pop_back();
  for (size_t i = 0; i < shape.inputs.size(); ++i) args.push_back({positional_key(op.name, i + 1), shape.inputs[i]});
}

}  // namespace

bool has_labels(const DataflowOp& op) {
  switch (op.cls) {
    case OpClass::Compute:
    case OpClass::Cast:
    case OpClass::View:
    case OpClass::Module:
    case OpClass::Call: return op.name != "opaque";
    case OpClass::Slice: return true;
    default: return false;
  }
}

OpArguments all_arguments(const DataflowOp& op) {
  OpArguments out;
  out.reserve(op.inputs.size());
  size_t positional = 0;
  bool labelled = has_labels(op);
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const std::string empty;
    const std::string& label = labelled && i < op.attrs.size() ? op.attrs[i] : empty;
    std::string key;
    if (label.empty()) key = positional_key(op.name, positional++);
    else if (label.back() == '=') key = keyword_key(label);
    else key = label + std::to_string(i);  // *args, **kwargs
    out.push_back({std::move(key), op.inputs[i]});
  }
  return out;
}

bool is_none_constant(const FunctionDataflow& g, int v) {
  auto c = constant_of(g, v);
  return c && !c->numeric && c->text == "None";
}

OpArguments compared_arguments(const FunctionDataflow& g, const DataflowOp& op, bool model_side) {
  OpArguments args = all_arguments(op);
  args.erase(std::remove_if(args.begin(), args.end(),
                            [&](const OpArgument& a) {
                              return is_ignorable_argument(a.key) || is_none_constant(g, a.value) ||
                                     (model_side && a.key == "dropout_p" && inference_dropout_off(g, a.value));
                            }),
             args.end());
  spread_shape_tuple(g, op, args);
  return args;
}

const OpArguments& ComparedArguments::of(const DataflowOp& op) const {
  if (cache_.size() != g_.ops.size()) cache_.resize(g_.ops.size());
  std::optional<OpArguments>& slot = cache_[static_cast<size_t>(op.id)];
  if (!slot) slot = compared_arguments(g_, op, model_side_);
  return *slot;
}

}  // namespace npufuse::match

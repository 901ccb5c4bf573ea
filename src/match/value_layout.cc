#include "match/value_layout.h"

#include <fmt/format.h>

#include <set>
#include <vector>

#include "match/value_view.h"
#include "model/op_names.h"

namespace npufuse::match {
namespace {

// The literal integers after the receiver ("1,2"); "?" for a computed one.
std::string literal_axes(const model::FunctionDataflow& g, const model::DataflowOp& op) {
  std::string out;
  for (size_t i = 1; i < op.inputs.size(); ++i) {
    std::optional<ConstantValue> c = constant_of(g, op.inputs[i]);
    out += (out.empty() ? "" : ",") + (c && c->numeric ? fmt::format("{}", c->number) : std::string("?"));
  }
  return out;
}

bool is_view_or_reshape(const model::DataflowOp& op) { return op.name == "view" || op.name == "reshape"; }

// Sizes a view/reshape spells one by one (`view(b, s, n, d)`: 4); -1 when
// the shape is one value or a starred one.
int spelt_rank(const model::DataflowOp& op) {
  for (const std::string& a : op.attrs)
    if (!a.empty() && a[0] == '*') return -1;
  return op.inputs.size() >= 3 ? static_cast<int>(op.inputs.size()) - 1 : -1;
}

struct Found {
  const model::DataflowOp* split = nullptr;
  std::vector<const model::DataflowOp*> swaps;  // from the value back to the split
};

}  // namespace

ValueLayout layout_of(const model::FunctionDataflow& g, int value) {
  // Each path upstream ends at a head split, at something that hides the
  // axes (another reshape, a transpose of other axes: `unknown`), or at the
  // function's inputs and attributes (nothing).
  std::vector<Found> found;
  const model::DataflowOp* hidden = nullptr;
  std::set<int> seen;
  constexpr size_t kMaxOps = 256;
  struct Step {
    int value;
    std::vector<const model::DataflowOp*> swaps;
  };
  std::vector<Step> stack{{value, {}}};
  while (!stack.empty() && seen.size() < kMaxOps && !hidden) {
    Step s = std::move(stack.back());
    stack.pop_back();
    if (s.value < 0) continue;
    const model::DataflowOp& op = g.producer_of(s.value);
    if (!seen.insert(op.id).second) continue;
    if (op.cls == model::OpClass::Input || op.cls == model::OpClass::Constant || op.cls == model::OpClass::Attribute)
      continue;
    if (is_view_or_reshape(op)) {
      if (spelt_rank(op) == 4) found.push_back(Found{&op, s.swaps});
      else hidden = &op;
      continue;
    }
    if (op.name == "transpose" || op.name == "permute") {
      if (!model::swaps_seq_and_heads(op.name, literal_axes(g, op))) {
        hidden = &op;
        continue;
      }
      s.swaps.push_back(&op);
      if (!op.inputs.empty()) stack.push_back(Step{op.inputs[0], std::move(s.swaps)});
      continue;
    }
    for (int in : op.inputs) stack.push_back(Step{in, s.swaps});
  }
  ValueLayout out;
  if (hidden) {
    out.evidence = fmt::format("{} at {} hides the axes", describe_op(*hidden), where(*hidden));
    return out;
  }
  if (found.empty()) {
    out.evidence = "no head split (a 4-D view or reshape) lies upstream";
    return out;
  }
  std::set<std::string> layouts;
  for (const Found& f : found) layouts.insert(f.swaps.size() % 2 == 0 ? "BSND" : "BNSD");
  const Found& first = found.front();
  std::string evidence = fmt::format("{} at {}", describe_op(*first.split), where(*first.split));
  for (auto it = first.swaps.rbegin(); it != first.swaps.rend(); ++it)
    evidence += fmt::format(", then {} at {}", describe_op(**it), where(**it));
  if (layouts.size() > 1) {
    out.evidence = fmt::format("its inputs disagree ({})", evidence);
    return out;
  }
  out.layout = *layouts.begin();
  out.evidence = evidence;
  return out;
}

}  // namespace npufuse::match

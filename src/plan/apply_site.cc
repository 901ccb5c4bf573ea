#include "plan/apply_site.h"

#include <algorithm>
#include <set>
#include <string>

#include "match/value_view.h"

namespace npufuse::plan {
namespace {

Candidate::SourceRange range_of(const model::DataflowOp& op) {
  return Candidate::SourceRange{op.file ? op.file->path : std::string(), op.begin, op.end};
}

Candidate::BindingOrigin origin_of(const model::DataflowOp& op) {
  using Kind = Candidate::BindingOrigin::Kind;
  if (op.cls == model::OpClass::Input) return {Kind::Parameter, range_of(op)};
  if (op.name == "phi") return {Kind::Merge, range_of(op)};
  if (computes(op)) return {Kind::Expression, range_of(op)};
  return {Kind::Other, range_of(op)};
}

// The reader's side of binding `b`: from the bound value forward through the
// casts and views the chain took over (one reader each), to the value an op
// of the chain reads.
Candidate::ReaderSide reader_side(const match::Match& m, const match::Binding& b) {
  Candidate::ReaderSide side;
  if (b.value < 0 || b.spelled >= 0 || m.binding_passed.empty()) return side;
  const model::FunctionDataflow& g = *m.target;
  int v = b.value;
  for (;;) {
    int next = -1;
    for (int r : g.consumers(v)) {
      if (std::find(m.binding_passed.begin(), m.binding_passed.end(), r) == m.binding_passed.end()) continue;
      if (next >= 0) return Candidate::ReaderSide{};  // two ways on: no one reader's side
      next = r;
    }
    if (next < 0) break;
    const model::DataflowOp& op = g.ops[static_cast<size_t>(next)];
    if (op.outputs.size() != 1) return Candidate::ReaderSide{};
    side.passed.push_back(range_of(op));
    v = op.outputs[0];
  }
  // Views the walk passed before the value it bound (`.flatten(3)` under the
  // `.type_as(x)` it bound through, or a `k_rot.view(...)` bound itself):
  // taken over too.
  for (int u = b.value;;) {
    const model::DataflowOp& op = g.producer_of(u);
    if (std::find(m.binding_passed.begin(), m.binding_passed.end(), op.id) == m.binding_passed.end() || op.inputs.empty())
      break;
    side.passed.push_back(range_of(op));
    u = op.inputs[0];
  }
  if (side.passed.empty()) return side;
  side.text = match::value_spelling(g, v);
  side.origin = origin_of(g.producer_of(v));
  return side;
}

// The unit-axis views the chain itself puts on the value bound by `b`
// before it computes with it: the chain's unsqueezes reading it, one after
// the other (`cos[None, None]` is unsqueeze(0) then unsqueeze(1)), and the
// value after them.
Candidate::ViewedSide viewed_side(const match::Match& m, const match::Binding& b) {
  Candidate::ViewedSide side;
  if (b.value < 0) return side;
  const model::FunctionDataflow& g = *m.target;
  const std::set<int> chain(m.ops.begin(), m.ops.end());
  int v = b.value;
  for (;;) {
    int next = -1;
    for (int r : g.consumers(v)) {
      if (!chain.count(r)) continue;
      if (next >= 0) {
        next = -1;  // read by several ops of the chain: not one view
        break;
      }
      next = r;
    }
    if (next < 0) break;
    const model::DataflowOp& op = g.ops[static_cast<size_t>(next)];
    if (op.name != "unsqueeze" || op.inputs.size() != 2 || op.inputs[0] != v || op.outputs.size() != 1 || !op.file) break;
    std::optional<match::ConstantValue> axis = match::constant_of(g, op.inputs[1]);
    if (!axis || !axis->numeric) break;
    side.views.push_back(range_of(op));
    side.axes.push_back(static_cast<int>(axis->number));
    v = op.outputs[0];
  }
  if (side.views.empty()) return side;
  side.text = match::value_spelling(g, v);
  side.origin = origin_of(g.producer_of(v));
  return side;
}

}  // namespace

bool computes(const model::DataflowOp& op) {
  switch (op.cls) {
    case model::OpClass::Compute:
    case model::OpClass::Cast:
    case model::OpClass::View:
    case model::OpClass::Slice:
    case model::OpClass::Module:
      return true;
    default:
      return false;
  }
}

void fill_apply_site(const MatchSite& site, Candidate& c) {
  const match::Match& m = site.match;
  const model::FunctionDataflow& g = *m.target;
  c.apply_function = site.function;
  for (int id : m.ops) {
    const model::DataflowOp& op = g.ops[static_cast<size_t>(id)];
    if (computes(op) && op.file) {
      c.apply_ops.push_back(range_of(op));
      c.apply_op_copies.push_back(op.unrolled);
    }
    c.apply_across_layers |= op.unrolled != 0;
    if (op.name == "phi" && op.file) c.apply_merges.push_back(range_of(op));
  }
  for (int id : m.optional_merges)
    if (const model::DataflowOp& op = g.ops[static_cast<size_t>(id)]; op.file) c.apply_optional_ifs.push_back(range_of(op));
  for (size_t i = 0; i < m.anchors.size(); ++i) {
    const int anchor = m.anchors[i];
    if (anchor < 0 || static_cast<size_t>(anchor) >= g.values.size()) continue;
    c.apply_output_anchors.push_back(i);
    const model::DataflowValue& v = g.values[static_cast<size_t>(anchor)];
    c.apply_outputs.push_back(v.producer >= 0 ? range_of(g.ops[static_cast<size_t>(v.producer)]) : Candidate::SourceRange{});
    c.apply_output_names.push_back(v.name);
  }
  for (const match::Binding& b : m.bindings) {
    c.apply_bindings.emplace_back(b.parameter, b.text);
    c.apply_binding_readers.push_back(reader_side(m, b));
    Candidate::ReaderSide cast_read;
    if (b.cast_read >= 0) {
      cast_read.text = g.values[static_cast<size_t>(b.cast_read)].name;
      cast_read.origin = origin_of(g.producer_of(b.cast_read));
    }
    c.apply_binding_cast_reads.push_back(cast_read);
    c.apply_binding_viewed.push_back(viewed_side(m, b));
    if (b.spelled >= 0) {
      // The name a tuple assignment (or an index into a tuple) gave the value.
      const model::DataflowOp& alias = g.producer_of(b.spelled);
      using Kind = Candidate::BindingOrigin::Kind;
      c.apply_binding_origins.push_back({alias.name == "unpack" ? Kind::Unpacked : Kind::Expression, range_of(alias)});
      continue;
    }
    c.apply_binding_origins.push_back(b.value >= 0 ? origin_of(g.producer_of(b.value)) : Candidate::BindingOrigin{});
  }
}

void note_config_arms(const std::vector<model::BranchCondition>& branches, Candidate& c) {
  std::set<std::string> files;
  for (const Candidate::SourceRange& op : c.apply_ops) files.insert(op.file);
  for (const model::BranchCondition& b : branches) {
    if (b.form != "if" || b.config_arm.empty() || !b.test || !files.count(b.where.file)) continue;
    c.apply_config_arms.push_back(Candidate::ConfigArm{Candidate::SourceRange{b.where.file, b.test->begin, b.test->end},
                                                       b.config_arm == "then", b.condition, b.config_value});
  }
}

}  // namespace npufuse::plan

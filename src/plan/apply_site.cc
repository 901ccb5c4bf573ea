#include "plan/apply_site.h"

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
  }
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

}  // namespace npufuse::plan

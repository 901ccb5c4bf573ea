// Tensor layout of the query at the attention core: the last reshape/view
// that splits heads before the core, then the transposes after it; an einsum
// core's subscripts say it directly.
#include <vector>

#include "model/op_names.h"
#include "model/subchains_graph.h"

namespace npufuse::model::subchains {

namespace {

std::string op_at(const DataflowOp& o) { return (o.file ? o.file->path : std::string("?")) + ":" + std::to_string(o.line); }

// Shape arguments of a view/reshape (inputs after the receiver); -1 when one is starred.
int shape_rank(const DataflowOp& o) {
  for (const std::string& a : o.attrs)
    if (!a.empty() && a[0] == '*') return -1;
  return static_cast<int>(o.inputs.size()) - 1;
}

// The literal arguments after the receiver ("0", "2", "1", "3"); "?" for a computed one.
std::string literal_args(const BlockGraph& bg, const DataflowOp& o) {
  std::string out;
  for (size_t i = 1; i < o.inputs.size(); ++i) {
    const DataflowOp& p = bg.producer(o.inputs[i]);
    std::string lit = p.cls == OpClass::Constant && !p.attrs.empty() ? p.attrs[0] : "?";
    if (p.name == "neg" && p.inputs.size() == 1 && p.attrs.empty()) lit = "-" + literal_args(bg, p);
    out += (out.empty() ? "" : ",") + lit;
  }
  return out;
}

bool swaps_seq_and_heads(const BlockGraph& bg, const DataflowOp& o) {
  return model::swaps_seq_and_heads(o.name, literal_args(bg, o));
}

}  // namespace

CoreLayout find_core_layout(const BlockGraph& bg, const std::vector<int>& qk_ops) {
  CoreLayout layout;
  if (qk_ops.empty()) return layout;
  const DataflowOp& core = bg.op(qk_ops.front());
  if (core.inputs.empty()) return layout;
  if (core.name == "einsum") {
    // einsum("bshd,bthd->bsht", q, k): the query operand's subscripts.
    std::string t = bg.text(core);
    size_t quote = t.find('"') != std::string::npos ? t.find('"') : t.find('\'');
    if (quote != std::string::npos) {
      std::string eq = t.substr(quote + 1, t.find(',', quote) - quote - 1);
      if (eq.size() == 4) layout.layout = (eq[1] == 'h' || eq[1] == 'n') ? "BNSD" : "BSND";
      else if (eq.size() == 3) layout.layout = "TND";
      if (layout.layout != "unknown") {
        layout.evidence = "einsum subscripts \"" + eq + "\" of the query at " + op_at(core);
        return layout;
      }
    }
  }
  // The query operand: the first input that is data (not the callee of a
  // dispatch call, not a constant or an attribute such as `self`).
  int v = -1;
  for (size_t i = 0; i < core.inputs.size() && v < 0; ++i) {
    if (i < core.attrs.size() && core.attrs[i] == "callee=") continue;
    OpClass c = bg.source(core.inputs[i]).cls;
    if (c != OpClass::Constant && c != OpClass::Attribute) v = core.inputs[i];
  }
  if (v < 0) return layout;
  // The views on the query's data path: the head split closest to the core,
  // then the transposes after it.
  OpSet path = bg.data_upstream({v});
  const DataflowOp* split = nullptr;
  const DataflowOp* regroup = nullptr;
  for (int id : members(path)) {
    const DataflowOp& o = bg.op(id);
    // A rank-5 reshape regroups the heads of a split tensor ([b, n_kv, group,
    // s, d] for grouped queries); the head split is the view before it.
    int rank = o.cls == OpClass::View && (o.name == "view" || o.name == "reshape") ? shape_rank(o) : 0;
    // A 5-D view taken back to 4-D further on is a reordering inside the
    // head (DeepSeek-V3's interleaved RoPE: `q.view(b, h, s, d // 2, 2)
    // .transpose(4, 3).reshape(b, h, s, d)`), neither a head split nor a regroup.
    if (rank >= 2 && rank <= 4) {
      if (regroup) regroup = nullptr;
      else split = &o;
    }
    if (rank == 5) regroup = &o;
    // `t.view(t.size()[:-1] + (n, d))`: one computed shape; its rank is read
    // from the permute that follows (below).
    if (rank == 1 && bg.producer(o.inputs[1]).cls != OpClass::Constant) split = &o;
  }
  if (!split) return layout;
  int rank = shape_rank(*split);
  std::string evidence = "`" + bg.text(*split) + "` at " + op_at(*split);
  if (rank == 1) {
    rank = 0;
    for (int id : members(path)) {
      const DataflowOp& o = bg.op(id);
      if (id > split->id && o.name == "permute" && rank == 0) {
        rank = static_cast<int>(o.inputs.size()) - 1;
        evidence += " (a " + std::to_string(rank) + "-D tensor, as the permute after it shows)";
      }
    }
  }
  if (rank == 4) layout.layout = "BSND";
  else if (rank == 3) layout.layout = "TND";
  else if (rank == 2) layout.layout = "BSH";
  for (int id : members(path)) {
    const DataflowOp& o = bg.op(id);
    if (id <= split->id || !swaps_seq_and_heads(bg, o)) continue;
    if (layout.layout == "BSND" || layout.layout == "BNSD") {
      layout.layout = layout.layout == "BSND" ? "BNSD" : "BSND";
      evidence += ", then `" + bg.text(o) + "` at " + op_at(o);
    }
  }
  if (regroup && regroup->id > split->id && layout.layout != "unknown")
    evidence += ", heads regrouped by `" + bg.text(*regroup) + "` at " + op_at(*regroup);
  layout.evidence = evidence;
  return layout;
}

}  // namespace npufuse::model::subchains

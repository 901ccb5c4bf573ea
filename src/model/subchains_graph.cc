#include "model/subchains_graph.h"

#include <algorithm>
#include <map>
#include <set>

namespace npufuse::model::subchains {

OpSet make_set(size_t n) { return OpSet(n, 0); }

OpSet set_of(size_t n, const std::vector<int>& ids) {
  OpSet s = make_set(n);
  for (int id : ids) s[static_cast<size_t>(id)] = 1;
  return s;
}

OpSet intersect(const OpSet& a, const OpSet& b) {
  OpSet s = make_set(a.size());
  for (size_t i = 0; i < a.size(); ++i) s[i] = a[i] && b[i];
  return s;
}

std::vector<int> members(const OpSet& s) {
  std::vector<int> out;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i]) out.push_back(static_cast<int>(i));
  return out;
}

bool any(const OpSet& s) { return std::find(s.begin(), s.end(), 1) != s.end(); }

bool in_scope(const DataflowOp& o, const std::string& scope) {
  return o.scope == scope || (o.scope.size() > scope.size() && o.scope.compare(0, scope.size(), scope) == 0 &&
                              (o.scope[scope.size()] == '.' || o.scope[scope.size()] == '['));
}

bool is_matmul(const DataflowOp& o) { return o.name == "matmul" || o.name == "einsum" || o.name == "bmm"; }
bool is_linear(const DataflowOp& o) { return o.name == "linear" || o.name == "conv1d_linear"; }

bool is_activation(const DataflowOp& o) {
  // The element-wise activations, with the names an ACT2FN pick is emitted
  // under (BitNet's ACT2FN["relu2"] is relu2).
  static const std::set<std::string> acts = {"silu",     "gelu",  "relu",        "gelu_tanh",     "tanh",
                                             "sigmoid",  "swiglu", "quick_gelu", "relu2",         "relu6",
                                             "mish",     "swish", "gelu_python", "gelu_accurate", "gelu_10",
                                             "leaky_relu", "laplace", "xielu"};
  return acts.count(o.name) || o.name.rfind("activation", 0) == 0;
}
bool is_norm_anchor(const DataflowOp& o) {
  return o.name == "rsqrt" || o.name == "rms_norm" || o.name == "layer_norm" || o.name == "group_norm";
}

const std::vector<int>& BlockGraph::consumers(int value) const {
  if (readers_.empty()) readers_ = g.consumers_by_value();
  static const std::vector<int> none;
  return value >= 0 && static_cast<size_t>(value) < readers_.size() ? readers_[static_cast<size_t>(value)] : none;
}

OpSet BlockGraph::downstream(const OpSet& from) const {
  std::vector<char> value_mark(g.values.size(), 0);
  OpSet out = make_set(size());
  for (const DataflowOp& o : g.ops) {
    bool hit = false;
    for (int v : o.inputs) hit = hit || value_mark[static_cast<size_t>(v)];
    if (hit && !from[static_cast<size_t>(o.id)]) out[static_cast<size_t>(o.id)] = 1;
    if (hit || from[static_cast<size_t>(o.id)])
      for (int v : o.outputs) value_mark[static_cast<size_t>(v)] = 1;
  }
  return out;
}

OpSet BlockGraph::downstream_of_values(const std::vector<int>& values) const {
  std::vector<char> value_mark(g.values.size(), 0);
  for (int v : values) value_mark[static_cast<size_t>(v)] = 1;
  OpSet out = make_set(size());
  for (const DataflowOp& o : g.ops) {
    bool hit = false;
    for (int v : o.inputs) hit = hit || value_mark[static_cast<size_t>(v)];
    if (!hit) continue;
    out[static_cast<size_t>(o.id)] = 1;
    for (int v : o.outputs) value_mark[static_cast<size_t>(v)] = 1;
  }
  return out;
}

OpSet BlockGraph::upstream(const OpSet& to) const {
  std::vector<char> value_mark(g.values.size(), 0);
  OpSet out = make_set(size());
  for (auto it = g.ops.rbegin(); it != g.ops.rend(); ++it) {
    const DataflowOp& o = *it;
    bool hit = false;
    for (int v : o.outputs) hit = hit || value_mark[static_cast<size_t>(v)];
    if (hit && !to[static_cast<size_t>(o.id)]) out[static_cast<size_t>(o.id)] = 1;
    if (hit || to[static_cast<size_t>(o.id)])
      for (int v : o.inputs) value_mark[static_cast<size_t>(v)] = 1;
  }
  return out;
}

const DataflowOp& BlockGraph::source(int value) const {
  const DataflowOp* o = &producer(value);
  int v = value;
  for (int guard = 0; guard < 64; ++guard) {
    if (o->cls == OpClass::Structure && o->name == "unpack" && !o->inputs.empty()) {
      // `a, _ = f(x)` where f returned a tuple: follow the element unpacked.
      const DataflowOp& packed = producer(o->inputs[0]);
      auto at = std::find(o->outputs.begin(), o->outputs.end(), v);
      size_t index = static_cast<size_t>(at - o->outputs.begin());
      if (packed.name == "tuple" && index < packed.inputs.size()) {
        v = packed.inputs[index];
        o = &producer(v);
        continue;
      }
    }
    bool transparent = o->cls == OpClass::View || o->cls == OpClass::Cast ||
                       (o->cls == OpClass::Structure && (o->name == "unpack" || o->name == "phi"));
    if (!transparent || o->inputs.empty()) break;
    v = o->inputs[0];
    o = &producer(v);
  }
  return *o;
}

OpSet BlockGraph::data_upstream(const std::vector<int>& values) const {
  OpSet out = make_set(size());
  std::vector<int> stack = values;
  std::vector<char> seen(g.values.size(), 0);
  while (!stack.empty()) {
    int v = stack.back();
    stack.pop_back();
    if (v < 0 || seen[static_cast<size_t>(v)]) continue;
    seen[static_cast<size_t>(v)] = 1;
    const DataflowOp& o = producer(v);
    out[static_cast<size_t>(o.id)] = 1;
    if (o.cls == OpClass::Structure && o.name == "unpack" && !o.inputs.empty()) {
      const DataflowOp& packed = producer(o.inputs[0]);
      size_t index = static_cast<size_t>(std::find(o.outputs.begin(), o.outputs.end(), v) - o.outputs.begin());
      if (packed.name == "tuple" && index < packed.inputs.size()) {
        stack.push_back(packed.inputs[index]);
        continue;
      }
    }
    // Shape arguments of views and indices of slices are not data.
    if ((o.cls == OpClass::View || o.cls == OpClass::Slice) && !o.inputs.empty()) stack.push_back(o.inputs[0]);
    else if (o.cls != OpClass::Attribute) stack.insert(stack.end(), o.inputs.begin(), o.inputs.end());
  }
  return out;
}

std::string BlockGraph::attribute_path(const DataflowOp& o) const {
  if (o.cls != OpClass::Attribute) return "";
  // `x.weight` read off a value: the value's own path, then the attribute.
  if (o.name == "getattr" && o.inputs.size() == 1 && !o.attrs.empty()) {
    std::string base = attribute_path(producer(o.inputs[0]));
    return (base.empty() ? "?" : base) + "." + o.attrs[0];
  }
  return o.name;
}

std::string BlockGraph::weight_path(int value) const { return attribute_path(source(value)); }

bool BlockGraph::reads_weight_directly(int value) const {
  std::vector<int> stack = {value};
  std::set<int> seen;
  while (!stack.empty()) {
    int v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second || seen.size() > 256) continue;
    const DataflowOp& o = producer(v);
    if (o.cls == OpClass::Attribute) {
      std::string path = attribute_path(o);
      if (path.size() > 7 && path.compare(path.size() - 7, 7, ".weight") == 0) return true;
      continue;
    }
    // Only views, slices, casts and tuple plumbing keep a weight a weight; a
    // dequantising branch meets the plain weight again in a phi.
    bool plumbing = o.cls == OpClass::View || o.cls == OpClass::Cast || o.cls == OpClass::Slice || o.cls == OpClass::Structure;
    if (!plumbing) continue;
    if (o.cls == OpClass::View || o.cls == OpClass::Slice) stack.push_back(o.inputs.empty() ? v : o.inputs[0]);
    else for (int in : o.inputs) stack.push_back(in);
  }
  return false;
}

std::string BlockGraph::root_key(int value) const {
  const DataflowOp& s = source(value);
  if (s.cls == OpClass::Attribute) return "attr:" + attribute_path(s);
  return "v" + std::to_string(s.outputs.empty() ? value : s.outputs[0]);
}

std::string BlockGraph::text(const DataflowOp& o) const {
  if (!o.file || o.end <= o.begin) return o.name;
  std::string_view t = o.file->parsed->source.text().substr(o.begin, o.end - o.begin);
  std::string first(t.substr(0, t.find('\n')));
  if (first.size() > 80) first = first.substr(0, 77) + "...";
  return first;
}

std::vector<Projection> projections(const BlockGraph& bg, const std::vector<int>& linear_ops) {
  std::vector<Projection> out;
  std::map<std::string, size_t> index;
  for (int id : linear_ops) {
    const DataflowOp& o = bg.op(id);
    int weight = -1;
    for (size_t i = 0; i < o.inputs.size(); ++i)
      if (i < o.attrs.size() && o.attrs[i] == "weight=") weight = o.inputs[i];
    if (weight < 0 && o.inputs.size() > 1) weight = o.inputs[1];
    std::string key = weight >= 0 ? bg.weight_path(weight) : "";
    if (key.size() > 7 && key.compare(key.size() - 7, 7, ".weight") == 0) key.resize(key.size() - 7);
    if (key.empty() || key.find('.') == std::string::npos || key == "self") key = o.scope;
    auto [it, fresh] = index.try_emplace(key, out.size());
    if (fresh) out.push_back(Projection{key, {}});
    out[it->second].ops.push_back(id);
  }
  return out;
}

namespace {

// `sqrt(mean(x*x) + eps)` or `sqrt(var(x) + eps)`: the root of a second
// moment, a norm written as `x / sqrt(...)` or `1.0 / torch.sqrt(...)`
// instead of rsqrt.
bool is_root_of_moment(const BlockGraph& bg, const DataflowOp& o) {
  if (o.name != "sqrt" || o.inputs.empty()) return false;
  auto moment = [](const DataflowOp& p) { return p.name == "mean" || p.name == "var"; };
  const DataflowOp& under = bg.source(o.inputs[0]);
  if (moment(under)) return true;
  if (under.name != "add") return false;
  for (int in : under.inputs)
    if (moment(bg.source(in))) return true;
  return false;
}

}  // namespace

std::vector<Norm> norms_in(const BlockGraph& bg, const std::vector<int>& candidate_ops) {
  std::vector<Norm> out;
  std::map<std::string, size_t> index;
  for (int id : candidate_ops) {
    const DataflowOp& o = bg.op(id);
    if (!is_norm_anchor(o) && !is_root_of_moment(bg, o)) continue;
    // A norm layer inlined from its own class: every op of that scope is the
    // norm. A known layer (nn.RMSNorm) is one op keyed by its weight.
    std::string key = o.scope;
    if (o.name != "rsqrt" && o.name != "sqrt") {
      for (size_t i = 0; i < o.inputs.size(); ++i)
        if (i < o.attrs.size() && o.attrs[i] == "weight=") key = bg.weight_path(o.inputs[i]);
    }
    auto [it, fresh] = index.try_emplace(key, out.size());
    if (fresh) out.push_back(Norm{key, {}, id});
    out[it->second].ops.push_back(id);
  }
  for (Norm& n : out) {
    const DataflowOp& anchor = bg.op(n.ops[0]);
    std::vector<int> ops;
    bool own_scope = anchor.scope != "self" && anchor.scope == n.key;
    for (int id : candidate_ops) {
      const DataflowOp& o = bg.op(id);
      if (o.cls == OpClass::Constant || o.cls == OpClass::Attribute) continue;
      bool take = own_scope ? o.scope == n.key
                            : std::find(n.ops.begin(), n.ops.end(), id) != n.ops.end() ||
                                  (o.scope == anchor.scope && o.file == anchor.file && o.line >= anchor.line - 2 &&
                                   o.line <= anchor.line + 2 && (o.name == "pow" || o.name == "mean" || o.name == "mul" ||
                                                                  o.name == "add" || o.name == "div" || o.name == "var" ||
                                                                  o.cls == OpClass::Cast));
      if (take) ops.push_back(id);
    }
    n.ops = ops;
  }
  return out;
}

// The stage and the non-stage arm an op runs in, from the branch conditions
// its enclosing condition text contains.
std::pair<std::string, std::string> arm_of(const BlockGraph& bg, const DataflowOp& o) {
  std::string stage, variant;
  if (o.condition.empty()) return {stage, variant};
  for (const BranchCondition& b : bg.branches) {
    if (b.condition.empty()) continue;
    std::string negated = "not (" + b.condition + ")";
    bool in_false = o.condition.find(negated) != std::string::npos;
    bool in_true = !in_false && o.condition.find(b.condition) != std::string::npos;
    if (!in_false && !in_true) continue;
    for (BranchKind k : b.kinds) {
      if (k == BranchKind::PrefillDecode && stage.empty() && (b.true_stage == "prefill" || b.true_stage == "decode"))
        stage = in_true ? b.true_stage : opposite_stage(b.true_stage);
      if (k == BranchKind::AttentionDispatch && variant.empty()) variant = in_true ? b.condition : negated;
    }
  }
  return {stage, variant};
}

namespace {

std::vector<SourceSpan> spans_of(const BlockGraph& bg, const std::vector<int>& ops) {
  std::map<std::string, std::set<int>> lines;
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    // Merges and tuple plumbing stand at the statement that joins branches; they would widen spans.
    if (!o.file || o.line <= 0 || o.cls == OpClass::Structure || o.cls == OpClass::Constant || o.cls == OpClass::Attribute) continue;
    for (int l = o.line; l <= std::max(o.line, o.end_line); ++l) lines[o.file->path].insert(l);
  }
  std::vector<SourceSpan> out;
  for (const auto& [file, ls] : lines) {
    for (int l : ls) {
      if (!out.empty() && out.back().file == file && out.back().end_line + 1 >= l) {
        out.back().end_line = std::max(out.back().end_line, l);
        continue;
      }
      out.push_back(SourceSpan{file, l, l});
    }
  }
  return out;
}

}  // namespace

std::vector<SubChainStep> make_steps(const BlockGraph& bg, const std::string& kind, const std::vector<int>& ops,
                                     const std::string& detail) {
  std::vector<int> sorted = ops;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  // Group by arm; ops on every path belong to each arm's step.
  std::vector<std::pair<std::string, std::string>> arms;
  std::vector<std::pair<std::string, std::string>> arm_per_op;
  for (int id : sorted) {
    auto arm = arm_of(bg, bg.op(id));
    arm_per_op.push_back(arm);
    if ((!arm.first.empty() || !arm.second.empty()) && std::find(arms.begin(), arms.end(), arm) == arms.end())
      arms.push_back(arm);
  }
  // With dispatch arms, an op that only the stage decides (a mask add under
  // `if mask is not None:` after either arm) is part of each arm's step, not
  // a step of its own.
  if (std::any_of(arms.begin(), arms.end(), [](const auto& a) { return !a.second.empty(); }))
    arms.erase(std::remove_if(arms.begin(), arms.end(), [](const auto& a) { return a.second.empty(); }), arms.end());
  std::vector<SubChainStep> out;
  auto build = [&](const std::pair<std::string, std::string>* arm) {
    SubChainStep s;
    s.kind = kind;
    s.detail = detail;
    for (size_t i = 0; i < sorted.size(); ++i) {
      const auto& a = arm_per_op[i];
      bool common = a.first.empty() && a.second.empty();
      bool same = arm && ((a.first.empty() || arm->first.empty() || a.first == arm->first) &&
                          (a.second.empty() || a.second == arm->second));
      if (!arm || common || same) s.ops.push_back(sorted[i]);
    }
    if (arm) {
      s.stages = arm->first.empty() ? "both" : arm->first;
      s.variant = arm->second;
    }
    s.spans = spans_of(bg, s.ops);
    out.push_back(std::move(s));
  };
  bool common_compute = false;
  for (size_t i = 0; i < sorted.size(); ++i)
    if (arm_per_op[i].first.empty() && arm_per_op[i].second.empty() && bg.op(sorted[i]).cls == OpClass::Compute)
      common_compute = true;
  if (arms.size() <= 1) {
    // A step whose computation all sits in one arm runs only there; one that
    // also computes on every path (a softmax with a prefill-only mask) runs in both.
    build(arms.empty() || common_compute ? nullptr : &arms[0]);
  } else {
    for (const auto& arm : arms) build(&arm);
  }
  return out;
}

void add_steps(ModuleChain& chain, const BlockGraph& bg, const std::string& kind, const std::vector<int>& ops,
               const std::string& detail) {
  if (ops.empty()) return;
  for (SubChainStep& s : make_steps(bg, kind, ops, detail)) chain.steps.push_back(std::move(s));
}

}  // namespace npufuse::model::subchains

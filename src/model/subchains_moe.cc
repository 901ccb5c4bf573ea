// MoE and dense-FFN sub-chains: router linear -> score function -> top-k
// (grouped or not) -> renormalisation -> dispatch -> experts -> combine ->
// shared experts; gate/up -> activation -> down.
#include <algorithm>
#include <map>
#include <set>

#include "model/config_arms.h"
#include "model/subchains_graph.h"

namespace npufuse::model::subchains {

namespace {

// Matmuls one expert runs: a helper inlined with exclusive arms (a quantised
// GEMM and a plain one) puts each projection in the graph once per arm, so
// count along one path: the ops under each distinct condition plus the ops
// whose conditions that path also satisfies, and keep the largest.
int matmuls_on_one_path(const BlockGraph& bg, const std::vector<int>& matmuls) {
  int best = 0;
  for (int path : matmuls) {
    std::vector<std::string> along = condition_clauses(bg.op(path).condition);
    int count = 0;
    for (int id : matmuls) {
      bool on_path = true;
      for (const std::string& term : condition_clauses(bg.op(id).condition))
        on_path = on_path && std::find(along.begin(), along.end(), term) != along.end();
      count += on_path;
    }
    best = std::max(best, count);
  }
  return best;
}

// Training-only code (auxiliary losses) is not part of the inference chain.
bool training_only(const BlockGraph& bg, const DataflowOp& o) {
  if (o.condition.empty()) return false;
  for (const BranchCondition& b : bg.branches)
    for (BranchKind k : b.kinds)
      if (k == BranchKind::TrainingOnly && !b.condition.empty() && o.condition.find(b.condition) != std::string::npos &&
          o.condition.find("not (" + b.condition + ")") == std::string::npos)
        return true;
  return false;
}

// An op on an arm the loaded config rules out: DeepSeek-V2's group-limited
// top-k under `topk_method = "greedy"`, Cohere2-MoE's sigmoid router under
// `expert_selection_fn = "softmax"`, a renormalisation under
// `norm_topk_prob = False` (model/config_arms.h).
bool config_dead(const BlockGraph& bg, const DataflowOp& o) {
  return config_ruled_out(bg.branches, o.condition, o.file ? o.file->path : "") != nullptr;
}

bool useful(const DataflowOp& o) { return o.cls != OpClass::Constant && o.cls != OpClass::Attribute; }

// "self.mlp.experts[].w1" under "self.mlp" -> "self.mlp.experts[]".
std::string child_scope(const std::string& sub, const std::string& scope) {
  size_t cut = sub.find_first_of(".[", scope.size() + 1);
  if (cut != std::string::npos && sub[cut] == '[') cut = sub.find('.', cut);
  return sub.substr(0, cut);
}

// Among the experts' ops: a product of an expert result (downstream of an
// expert matmul) with a routing weight (from the selection, not from an
// expert), and the reductions after it.
std::vector<int> routing_weighting(const BlockGraph& bg, const std::vector<int>& experts, const OpSet& after_sel) {
  size_t n = bg.size();
  std::vector<int> matmuls;
  for (int id : experts)
    if (is_linear(bg.op(id)) || is_matmul(bg.op(id))) matmuls.push_back(id);
  if (matmuls.empty()) return {};
  OpSet computed = bg.downstream(set_of(n, matmuls));
  for (int id : matmuls) computed[static_cast<size_t>(id)] = 1;
  std::vector<int> out;
  for (int id : experts) {
    const DataflowOp& o = bg.op(id);
    if (o.name != "mul" || o.inputs.size() != 2 || !computed[static_cast<size_t>(id)]) continue;
    int routed_side = 0;
    for (int v : o.inputs) {
      size_t p = static_cast<size_t>(bg.producer(v).id);
      if (!computed[p] && after_sel[p]) ++routed_side;
    }
    if (routed_side == 1) out.push_back(id);
  }
  if (out.empty()) return out;
  OpSet after = bg.downstream(set_of(n, out));
  for (int id : experts) {
    const DataflowOp& o = bg.op(id);
    if (after[static_cast<size_t>(id)] && (o.name == "sum" || o.name == "add" || o.name == "index_add" || o.name == "index_add_"))
      out.push_back(id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

void find_moe_steps(const BlockGraph& bg, const std::string& scope, const std::vector<int>& all_ops, ModuleChain& chain) {
  size_t n = bg.size();
  std::vector<int> ops;
  for (int id : all_ops)
    if (!training_only(bg, bg.op(id)) && !config_dead(bg, bg.op(id))) ops.push_back(id);

  std::vector<int> topks;
  for (int id : ops)
    if (bg.op(id).name == "topk") topks.push_back(id);
  if (topks.empty()) {
    chain.missing.push_back("topk");
    return;
  }
  int selection = topks.back();  // the last top-k picks the experts; earlier ones rank groups
  OpSet sel = set_of(n, {selection});
  OpSet before_sel = bg.upstream(sel);
  OpSet after_sel = bg.downstream(sel);

  // Router: the linear before the selection, and the score function.
  std::vector<int> linear_before, scores;
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    if (is_linear(o) && before_sel[static_cast<size_t>(id)]) linear_before.push_back(id);
  }
  OpSet from_gate = bg.downstream(set_of(n, linear_before));
  bool bias = false;
  std::string score_name;
  // Scores before the selection; failing that, a softmax over the chosen logits (top-k first).
  for (int pass = 0; pass < 2 && scores.empty(); ++pass)
    for (int id : ops) {
      const DataflowOp& o = bg.op(id);
      size_t i = static_cast<size_t>(id);
      if ((o.name != "softmax" && o.name != "sigmoid") || !from_gate[i]) continue;
      bool fits = pass == 0 ? before_sel[i] : after_sel[i] && o.condition.find("for ") == std::string::npos;
      if (!fits) continue;
      scores.push_back(id);
      score_name = o.name + (pass == 1 ? " after top-k" : "");
    }
  OpSet score_set = set_of(n, scores);
  OpSet after_score = bg.downstream(score_set);
  std::vector<int> gate = linear_before;
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    // choice = scores + correction bias: an add of a parameter on the way to the selection.
    if (o.name == "add" && after_score[static_cast<size_t>(id)] && before_sel[static_cast<size_t>(id)])
      for (int v : o.inputs)
        if (bg.source(v).cls == OpClass::Attribute) {
          gate.push_back(id);
          bias = true;
        }
  }
  gate.insert(gate.end(), scores.begin(), scores.end());
  std::string gate_detail = "linear + " + (score_name.empty() ? std::string("no score function found") : score_name) +
                            (bias ? " + correction bias (selection only)" : "");
  add_steps(chain, bg, "gate", gate, gate_detail);

  // Top-k: the selection, the group ranking before it and the gather of the chosen weights.
  OpSet gate_set = set_of(n, gate);
  OpSet after_gate = bg.downstream(gate_set);
  std::vector<int> topk_ops;
  bool grouped = false;
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    size_t i = static_cast<size_t>(id);
    if (!useful(o) || gate_set[i] || o.cls == OpClass::Structure) continue;
    if (id == selection || (after_gate[i] && before_sel[i] && o.cls != OpClass::Cast)) {
      topk_ops.push_back(id);
      if (o.name == "masked_fill" || (o.name == "topk" && id != selection)) grouped = true;
    }
    if (o.name == "gather" && after_sel[i]) topk_ops.push_back(id);
  }
  add_steps(chain, bg, "topk", topk_ops,
            grouped ? "grouped: top groups by their best expert scores, other groups masked, then top-k" : "top-k over expert scores");

  // Renorm: division by the sum of the chosen weights (and a scaling factor after it).
  std::vector<int> renorm;
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    if (o.name != "div" || !after_sel[static_cast<size_t>(id)] || o.inputs.size() < 2) continue;
    OpSet up = bg.upstream(set_of(n, {id}));
    bool sums = false;
    // The sum must read the value divided (`w / (w.sum(-1, keepdim=True) + eps)`):
    // a sum elsewhere upstream (a one-hot mask's count of tokens per expert,
    // before a shared expert's average) is no renormalisation.
    const DataflowOp* divided = &bg.source(o.inputs[0]);
    for (int u : members(up))
      if (bg.op(u).name == "sum" && after_sel[static_cast<size_t>(u)] && !bg.op(u).inputs.empty() &&
          &bg.source(bg.op(u).inputs[0]) == divided) {
        sums = true;
        renorm.push_back(u);
      }
    if (!sums) continue;
    renorm.push_back(id);
    for (int u : members(up))
      if (bg.op(u).name == "add" && after_sel[static_cast<size_t>(u)] && bg.op(u).line == o.line) renorm.push_back(u);
  }
  if (!renorm.empty()) {
    // topk_weight * route_scale right after the division.
    OpSet after_div = bg.downstream(set_of(n, renorm));
    for (int id : ops) {
      const DataflowOp& o = bg.op(id);
      if (o.name == "mul" && after_div[static_cast<size_t>(id)] && o.inputs.size() == 2 &&
          bg.source(o.inputs[1]).cls == OpClass::Attribute && o.condition.find("for ") == std::string::npos)
        renorm.push_back(id);
    }
  }
  add_steps(chain, bg, "renorm", renorm, "chosen weights divided by their sum");

  // Experts and shared experts: submodules of the MoE (or batched matmuls in it).
  std::set<std::string> sub_scopes;
  OpSet gate_or_topk = set_of(n, gate);
  for (int id : topk_ops) gate_or_topk[static_cast<size_t>(id)] = 1;
  std::set<std::string> router_scopes;
  for (int id : members(gate_or_topk)) router_scopes.insert(bg.op(id).scope);
  std::vector<int> experts, shared;
  std::string experts_detail, shared_detail;
  // A sub-module that reads the routing result anywhere (its tokens or its
  // weights) holds the routed experts, even when every expert sees every
  // token (dense routing, the weights zero the rest); one that never does is
  // a shared expert.
  std::map<std::string, std::vector<int>> by_child;
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    if (o.scope == scope || router_scopes.count(o.scope) || !useful(o)) continue;
    by_child[child_scope(o.scope, scope)].push_back(id);
  }
  for (const auto& [child, child_ops] : by_child) {
    bool routed = std::any_of(child_ops.begin(), child_ops.end(), [&](int id) { return after_sel[static_cast<size_t>(id)] != 0; });
    (routed ? experts : shared).insert(routed ? experts.end() : shared.end(), child_ops.begin(), child_ops.end());
  }
  // Inside the experts' own code: the product with the routing weights and
  // the sum over experts after it are the combine, not the experts.
  std::vector<int> inner_combine = routing_weighting(bg, experts, after_sel);
  if (!inner_combine.empty()) {
    OpSet moved = set_of(n, inner_combine);
    experts.erase(std::remove_if(experts.begin(), experts.end(), [&](int id) { return moved[static_cast<size_t>(id)] != 0; }),
                  experts.end());
  }
  // Only sub-scopes that compute something with weights count.
  auto has_weights = [&](const std::vector<int>& v) {
    for (int id : v)
      if (is_linear(bg.op(id)) || is_matmul(bg.op(id))) return true;
    return false;
  };
  if (!has_weights(shared)) shared.clear();
  if (!has_weights(experts)) {
    // Batched expert weights in the MoE's own code, or an expert call that stayed opaque.
    experts.clear();
    for (int id : ops) {
      const DataflowOp& o = bg.op(id);
      if ((is_linear(o) || is_matmul(o) || o.cls == OpClass::Module) && after_sel[static_cast<size_t>(id)] && o.scope == scope)
        experts.push_back(id);
    }
  }
  // Dispatch: index building from the chosen experts, and the gather of tokens.
  static const std::set<std::string> dispatch_names = {"one_hot", "where", "nonzero", "argsort", "sort", "bincount",
                                                       "index_select", "histc", "cumsum", "tolist", "eq"};
  OpSet expert_set = set_of(n, experts);
  OpSet before_experts = bg.upstream(expert_set);
  std::vector<int> dispatch;
  std::string loop;
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    size_t i = static_cast<size_t>(id);
    if (!after_sel[i] || expert_set[i] || !useful(o)) continue;
    if (dispatch_names.count(o.name) && (before_experts[i] || o.name == "bincount" || o.name == "tolist")) dispatch.push_back(id);
    if (o.cls == OpClass::Slice && o.scope == scope && before_experts[i] && o.inputs.size() >= 2 &&
        !after_sel[static_cast<size_t>(bg.producer(o.inputs[0]).id)])
      dispatch.push_back(id);  // tokens[token_idx]
  }
  std::string dispatch_detail = "tokens grouped by chosen expert";
  // Experts that loop over the experts pick their tokens inside that loop; a
  // broadcast elsewhere among them (shared experts weighted by the router's
  // gammas, Inkling) is no dense routing, a scatter of the weights still is.
  bool expert_loop = false;
  for (int id : experts)
    for (const std::string& term : condition_clauses(bg.op(id).condition)) expert_loop = expert_loop || term.rfind("for ", 0) == 0;
  if (dispatch.empty() && !experts.empty() && !after_sel[static_cast<size_t>(experts.front())]) {
    // Dense routing: every expert computes every token; the chosen weights are
    // scattered into a [tokens, experts] matrix that zeroes the others.
    for (int id : ops) {
      const DataflowOp& o = bg.op(id);
      size_t i = static_cast<size_t>(id);
      bool scatter = (o.name == "scatter" || o.name == "scatter_") && after_sel[i];
      bool broadcast = (o.name == "expand" || o.name == "repeat") && expert_set[i] && !expert_loop;
      if (scatter || broadcast) dispatch.push_back(id);
    }
    std::sort(dispatch.begin(), dispatch.end());
    dispatch_detail = "dense: every expert computes every token, the routing weights scattered over all experts zero the others";
  }
  for (int id : experts)
    for (const std::string& term : condition_clauses(bg.op(id).condition))
      if (loop.empty() && term.rfind("for ", 0) == 0) loop = term;
  add_steps(chain, bg, "dispatch", dispatch, dispatch_detail);
  bool opaque = false;
  std::vector<int> expert_matmuls;
  for (int id : experts) {
    if (is_linear(bg.op(id)) || is_matmul(bg.op(id))) expert_matmuls.push_back(id);
    opaque = opaque || bg.op(id).cls == OpClass::Module;
  }
  int expert_linears = matmuls_on_one_path(bg, expert_matmuls);
  experts_detail = (loop.empty() ? std::string("batched expert weights") : "loop `" + loop + "`") + ", " +
                   (opaque ? "expert forward not inlined (`" + bg.text(bg.op(experts.front())) + "`)"
                           : std::to_string(expert_linears) + " matmul(s) per expert");
  add_steps(chain, bg, "experts", experts, experts_detail);

  // Combine: weighting by the routing weights and the scatter back to tokens.
  OpSet after_experts = bg.downstream(expert_set);
  OpSet shared_set = set_of(n, shared);
  OpSet after_shared = bg.downstream(shared_set);
  std::vector<int> combine = inner_combine, shared_add;
  static const std::set<std::string> combine_names = {"index_add", "index_add_", "scatter_add", "scatter_add_", "setitem",
                                                      "index_put",  "index_put_", "mul",         "sum",          "add"};
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    size_t i = static_cast<size_t>(id);
    if (!after_experts[i] || expert_set[i] || shared_set[i] || !combine_names.count(o.name)) continue;
    if (o.scope != scope) continue;
    if (after_shared[i]) shared_add.push_back(id);
    else combine.push_back(id);
  }
  std::string combine_detail = "weighted by routing weights";
  for (int id : combine)
    if (bg.op(id).in_place || bg.op(id).name == "setitem") combine_detail = "weighted, " + bg.op(id).name + " back into token order";
  add_steps(chain, bg, "combine", combine, combine_detail);
  if (!shared.empty()) {
    shared.insert(shared.end(), shared_add.begin(), shared_add.end());
    std::string sub = bg.op(shared.front()).scope;
    size_t cut = sub.find_first_of(".[", scope.size() + 1);
    shared_detail = sub.substr(0, cut) + " on every token" + (shared_add.empty() ? "" : ", added to the routed output");
    add_steps(chain, bg, "shared_expert", shared, shared_detail);
  }
}

void find_ffn_steps(const BlockGraph& bg, const std::string& scope, const std::vector<int>& ops, ModuleChain& chain) {
  size_t n = bg.size();
  std::vector<int> linear_ops, acts;
  for (int id : ops) {
    if (is_linear(bg.op(id))) linear_ops.push_back(id);
    if (is_activation(bg.op(id))) acts.push_back(id);
  }
  std::vector<Projection> projs = projections(bg, linear_ops);
  OpSet act_set = set_of(n, acts);
  OpSet after_act = bg.downstream(act_set);
  std::vector<int> gate_up, down, act_step = acts;
  std::string gate_keys, down_keys;
  for (const Projection& p : projs) {
    bool is_down = after_act[static_cast<size_t>(p.ops[0])] || (acts.empty() && &p == &projs.back() && projs.size() > 1);
    (is_down ? down : gate_up).insert(is_down ? down.end() : gate_up.end(), p.ops.begin(), p.ops.end());
    std::string& keys = is_down ? down_keys : gate_keys;
    keys += (keys.empty() ? "" : ", ") + p.key;
  }
  // The product gate * up and a merged projection's split belong to the activation step.
  OpSet down_set = set_of(n, down);
  OpSet before_down = bg.upstream(down_set);
  OpSet after_gate_up = bg.downstream(set_of(n, gate_up));
  // A norm between the product and the down projection (BitNet's
  // ffn_sub_norm: `x * rsqrt(...)`, `weight * x`) is not the activation: its
  // multiplies, downstream of the norm's rsqrt, stay out of the step. (A norm
  // before the projections, inside the MLP module, is upstream of all of it.)
  std::vector<int> anchors;
  for (int id : ops)
    if (is_norm_anchor(bg.op(id)) && after_act[static_cast<size_t>(id)]) anchors.push_back(id);
  OpSet after_norm = bg.downstream(set_of(n, anchors));
  bool merged = false;
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    size_t i = static_cast<size_t>(id);
    if (act_set[i] || !after_gate_up[i] || !before_down[i]) continue;
    if (o.name == "mul" && !after_norm[i]) act_step.push_back(id);
    if (o.name == "chunk" || o.name == "split" || (o.cls == OpClass::Slice && after_gate_up[i])) merged = merged || projs.size() == 2;
  }
  std::string gate_detail = gate_keys + (merged ? " (merged gate_up, split before the activation)" : "");
  add_steps(chain, bg, "gate_up_projection", gate_up, gate_detail);
  std::string act_names;
  for (int id : acts) act_names += (act_names.empty() ? "" : ", ") + bg.op(id).name;
  add_steps(chain, bg, "activation", act_step, act_names + (act_step.size() > acts.size() ? " * up" : ""));
  add_steps(chain, bg, "down_projection", down, down_keys);
  (void)scope;
}

}  // namespace npufuse::model::subchains

// Sparse-attention indexer sub-chain: query/key projections, key norm, RoPE,
// per-head weights, the relu-weighted score and the top-k of positions.
#include <set>

#include "model/subchains_graph.h"

namespace npufuse::model::subchains {

namespace {

std::vector<int> operands(const BlockGraph& bg, const DataflowOp& o) {
  std::vector<int> out;
  for (int v : o.inputs)
    if (bg.producer(v).cls != OpClass::Constant) out.push_back(v);
  return out;
}

}  // namespace

void find_indexer_steps(const BlockGraph& bg, const std::string& scope, const std::vector<int>& ops, ModuleChain& chain) {
  size_t n = bg.size();
  std::vector<int> topk, score, linear_ops, writes;
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    if (o.name == "topk") topk.push_back(id);
    if (is_matmul(o)) score.push_back(id);
    if (is_linear(o)) linear_ops.push_back(id);
    if (o.in_place && o.name == "setitem") writes.push_back(id);
  }
  OpSet score_set = set_of(n, score);
  OpSet topk_set = set_of(n, topk);
  OpSet between = intersect(bg.downstream(score_set), bg.upstream(topk_set));
  std::vector<int> score_ops = score;
  for (int id : members(between))
    if (bg.op(id).cls == OpClass::Compute && bg.op(id).scope.rfind(scope, 0) == 0) score_ops.push_back(id);

  std::vector<int> q_side, k_side;
  if (!score.empty()) {
    std::vector<int> args = operands(bg, bg.op(score[0]));
    if (args.size() >= 2) {
      q_side = members(bg.upstream(set_of(n, {bg.producer(args[0]).id})));
      q_side.push_back(bg.producer(args[0]).id);
    }
  }
  OpSet q_up = set_of(n, q_side);
  OpSet to_write = bg.upstream(set_of(n, writes));
  OpSet to_score = bg.upstream(score_set);
  OpSet to_topk = bg.upstream(topk_set);
  std::vector<int> index_q, index_k, index_w;
  for (const Projection& p : projections(bg, linear_ops)) {
    size_t first = static_cast<size_t>(p.ops[0]);
    if (q_up[first]) index_q.insert(index_q.end(), p.ops.begin(), p.ops.end());
    else if (to_write[first] || to_score[first]) index_k.insert(index_k.end(), p.ops.begin(), p.ops.end());
    else if (to_topk[first]) index_w.insert(index_w.end(), p.ops.begin(), p.ops.end());
  }
  std::vector<Norm> norms = norms_in(bg, ops);
  OpSet norm_ops = make_set(n);
  std::vector<int> norm_list;
  for (const Norm& nm : norms)
    for (int id : nm.ops) {
      norm_ops[static_cast<size_t>(id)] = 1;
      norm_list.push_back(id);
    }
  OpSet from_proj = bg.downstream(set_of(n, linear_ops));
  std::vector<int> rope;
  static const std::set<std::string> rope_names = {"mul", "add", "sub", "neg", "cat", "view_as_complex", "view_as_real", "stack"};
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    size_t i = static_cast<size_t>(id);
    if (!from_proj[i] || norm_ops[i] || score_set[i] || between[i] || !rope_names.count(o.name)) continue;
    if (to_score[i] || to_write[i]) rope.push_back(id);
  }
  add_steps(chain, bg, "index_q", index_q, "query projection of the indexer");
  add_steps(chain, bg, "index_k", index_k, "key projection of the indexer");
  add_steps(chain, bg, "index_norm", norm_list, "key norm");
  add_steps(chain, bg, "index_rope", rope, "RoPE on the rotary slice of q and k");
  add_steps(chain, bg, "index_weights", index_w, "per-head weights");
  add_steps(chain, bg, "index_score", score_ops, "relu(q.k) weighted by head weights, summed over heads");
  add_steps(chain, bg, "index_topk", topk, "top-k positions per query");
}

}  // namespace npufuse::model::subchains

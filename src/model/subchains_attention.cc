// Attention and MLA sub-chains: projections, RoPE, cache write/read,
// repeat_kv, the core and the output projection, found from the ops of the
// attention module's scope and how their values connect.
#include <algorithm>
#include <map>
#include <set>

#include "model/subchains_graph.h"

namespace npufuse::model::subchains {

namespace {

struct AttentionParts {
  std::vector<int> core;       // QK, mask/scale, softmax, PV (or sdpa, or an opaque dispatch call)
  std::string core_detail;
  std::vector<int> qk;         // the score matmuls (or sdpa / the dispatch call)
  std::vector<int> absorb_uk;  // weight-slice matmuls before the softmax
  std::vector<int> absorb_uv;  // weight-slice matmuls after it
};

bool scope_is_sub(const std::string& op_scope, const std::string& scope) { return op_scope != scope; }

// Finds the core: softmax(QK^T)V, a fused sdpa call, or a dispatch call that
// stayed opaque.
AttentionParts find_core(const BlockGraph& bg, const std::vector<int>& ops, const OpSet& after_projection) {
  AttentionParts p;
  size_t n = bg.size();
  std::vector<int> softmax, sdpa, opaque;
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    if (o.name == "softmax") softmax.push_back(id);
    else if (o.name == "sdpa" || o.name == "flash_attn_func" || o.name == "flash_attn_varlen_func") sdpa.push_back(id);
    else if ((o.unresolved || o.name.rfind("call:", 0) == 0) && after_projection[static_cast<size_t>(id)]) opaque.push_back(id);
  }
  if (!sdpa.empty()) {
    p.core = sdpa;
    p.qk = sdpa;
    p.core_detail = "scaled_dot_product_attention (fused core)";
    return p;
  }
  if (softmax.empty()) {
    if (!opaque.empty()) {
      p.core = {opaque[0]};
      p.qk = {opaque[0]};
      const DataflowOp& o = bg.op(opaque[0]);
      p.core_detail = "dispatch call `" + o.name + "` at " + o.file->path + ":" + std::to_string(o.line) + " could not be resolved" +
                      (o.unresolved_reason.empty() ? std::string() : ": " + o.unresolved_reason) + "; the core is not visible";
    }
    return p;
  }
  OpSet soft = set_of(n, softmax);
  OpSet before = bg.upstream(soft);
  OpSet after = bg.downstream(soft);
  std::vector<int> qk, pv;
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    // A matmul that reads nothing projected (RoPE's inv_freq @ positions) is
    // no score or value product, even when its result reaches the softmax.
    if (!is_matmul(o) || !after_projection[static_cast<size_t>(id)]) continue;
    bool weight_operand = false;
    for (int in : o.inputs) weight_operand = weight_operand || bg.reads_weight_directly(in);
    if (before[static_cast<size_t>(id)]) (weight_operand ? p.absorb_uk : qk).push_back(id);
    else if (after[static_cast<size_t>(id)]) (weight_operand ? p.absorb_uv : pv).push_back(id);
  }
  // Scale, mask and the sum of score parts lie between the score matmuls and the softmax.
  OpSet from_qk = bg.downstream(set_of(n, qk));
  std::vector<int> core = qk;
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    if (o.cls == OpClass::Constant || o.cls == OpClass::Attribute) continue;
    if (from_qk[static_cast<size_t>(id)] && before[static_cast<size_t>(id)]) core.push_back(id);
  }
  core.insert(core.end(), softmax.begin(), softmax.end());
  OpSet to_pv = bg.upstream(set_of(n, pv));
  for (int id : ops)
    if (after[static_cast<size_t>(id)] && to_pv[static_cast<size_t>(id)] && bg.op(id).cls != OpClass::Attribute) core.push_back(id);
  core.insert(core.end(), pv.begin(), pv.end());
  p.core = core;
  p.qk = qk;
  p.core_detail = std::string("softmax(QK^T*scale+mask)V") + (qk.size() > 1 ? ", scores summed from several matmuls" : "");
  return p;
}

std::string cache_mechanism(const BlockGraph& bg, const DataflowOp& o, const std::string& fallback) {
  for (const CacheAccess& a : bg.kv_cache.accesses)
    if (o.file && a.where.file == o.file->path && a.where.line == o.line) return a.mechanism;
  return fallback;
}

// Ops reached from `from`, where a cache update `cache.update(key, value,
// layer_idx)` hands each of its two tensors back in its own slot of the
// returned pair: what reads the returned values sees the keys from the keys
// only. Doge's per-head key norm then does not reach the projection its
// values feed (the dynamic mask's `dt_proj`), where a plain reachability
// through the opaque call would make it a down -> norm -> up latent norm.
OpSet downstream_through_cache(const BlockGraph& bg, const OpSet& from) {
  std::vector<char> value_mark(bg.g.values.size(), 0);
  std::map<int, std::vector<char>> pair_slots;  // update result value -> which of (keys, values) are reached
  OpSet out = make_set(bg.size());
  for (const DataflowOp& o : bg.g.ops) {
    size_t i = static_cast<size_t>(o.id);
    bool update_call = o.cls == OpClass::Call && o.inputs.size() == 4 && o.outputs.size() == 1 &&
                       (o.name == "update" || (o.name.size() > 7 && o.name.compare(o.name.size() - 7, 7, ".update") == 0));
    bool hit = false;
    for (int v : o.inputs) hit = hit || value_mark[static_cast<size_t>(v)];
    if (update_call && !from[i]) {
      if (hit) out[i] = 1;
      std::vector<char> slots = {value_mark[static_cast<size_t>(o.inputs[1])], value_mark[static_cast<size_t>(o.inputs[2])]};
      if (slots[0] || slots[1]) pair_slots[o.outputs[0]] = slots;
      continue;
    }
    if (o.cls == OpClass::Structure && o.name == "unpack" && o.inputs.size() == 1 && pair_slots.count(o.inputs[0]) &&
        o.outputs.size() == 2 && !from[i]) {
      const std::vector<char>& slots = pair_slots.at(o.inputs[0]);
      out[i] = 1;
      for (size_t k = 0; k < 2; ++k)
        if (slots[k]) value_mark[static_cast<size_t>(o.outputs[k])] = 1;
      continue;
    }
    if (hit && !from[i]) out[i] = 1;
    if (hit || from[i])
      for (int v : o.outputs) value_mark[static_cast<size_t>(v)] = 1;
  }
  return out;
}

}  // namespace

void find_attention_steps(const BlockGraph& bg, const std::string& scope, const std::vector<int>& ops, ModuleChain& chain) {
  size_t n = bg.size();
  std::vector<int> linear_ops;
  for (int id : ops)
    if (is_linear(bg.op(id))) linear_ops.push_back(id);
  std::vector<Projection> projs = projections(bg, linear_ops);
  OpSet all_linear = set_of(n, linear_ops);
  OpSet after_projection = bg.downstream(all_linear);

  AttentionParts core = find_core(bg, ops, after_projection);
  OpSet core_set = set_of(n, core.core);
  OpSet qk_set = set_of(n, core.qk);
  OpSet before_core = bg.upstream(core_set);
  OpSet after_core = bg.downstream(core_set);

  // Projections before the core (or before a cache write the core reads
  // back) feed it; the ones after it are the output projection.
  std::vector<int> stores;
  for (int id : ops)
    if (bg.op(id).in_place && !after_core[static_cast<size_t>(id)] && !core_set[static_cast<size_t>(id)]) stores.push_back(id);
  OpSet before_store = bg.upstream(set_of(n, stores));
  std::vector<const Projection*> in_projs, out_projs;
  for (const Projection& p : projs) {
    size_t first = static_cast<size_t>(p.ops[0]);
    if (after_core[first]) out_projs.push_back(&p);
    else if (before_core[first] || before_store[first] || core.qk.empty()) in_projs.push_back(&p);
  }

  // Norms inside the module (q/k norms, MLA latent norms).
  std::vector<Norm> norms = norms_in(bg, ops);
  auto proj_set = [&](const Projection& p) { return set_of(n, p.ops); };

  // MLA: a norm between two projections (down -> norm -> up), or a weight-slice absorb.
  bool mla = !core.absorb_uk.empty() || !core.absorb_uv.empty();
  std::vector<const Norm*> mid_norms;
  for (const Norm& nm : norms) {
    OpSet nset = set_of(n, {nm.anchor});
    OpSet down = downstream_through_cache(bg, nset);
    OpSet up = bg.upstream(nset);
    bool from_proj = false, to_proj = false;
    for (const Projection* p : in_projs) {
      from_proj = from_proj || up[static_cast<size_t>(p->ops[0])];
      to_proj = to_proj || down[static_cast<size_t>(p->ops[0])];
    }
    for (int a : core.absorb_uk) to_proj = to_proj || down[static_cast<size_t>(a)];
    // An absorbed MLA caches the normed latent and reads it back through the
    // cache buffer: down -> norm -> cache write is its latent norm.
    if (mla && from_proj && !to_proj)
      for (int id : ops)
        if (bg.op(id).in_place && bg.op(id).name == "setitem" && down[static_cast<size_t>(id)]) to_proj = true;
    if (from_proj && to_proj) mid_norms.push_back(&nm);
  }
  mla = mla || !mid_norms.empty();
  chain.module = mla ? "mla" : "attention";

  OpSet norm_ops = make_set(n);
  for (const Norm& nm : norms)
    for (int id : nm.ops) norm_ops[static_cast<size_t>(id)] = 1;

  // Cache writes and reads.
  std::vector<int> writes, reads;
  std::string write_detail, read_detail;
  std::set<std::string> written_roots;
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    bool update_call = o.cls == OpClass::Call && (o.name == "update" || (o.name.size() > 7 && o.name.compare(o.name.size() - 7, 7, ".update") == 0));
    if (update_call && after_projection[static_cast<size_t>(id)]) {
      writes.push_back(id);
      reads.push_back(id);
      write_detail = "cache_update: `" + bg.text(o) + "`";
      read_detail = "the full keys/values returned by Cache.update";
      continue;
    }
    if (o.name == "cat" && after_projection[static_cast<size_t>(id)] && before_core[static_cast<size_t>(id)] && !o.inputs.empty()) {
      // torch.cat((past, new)): one part comes from outside the projections.
      const DataflowOp& parts = bg.producer(o.inputs[0]);
      bool outside = false, inside = false;
      for (int v : parts.inputs) {
        bool from = after_projection[static_cast<size_t>(bg.producer(v).id)] || all_linear[static_cast<size_t>(bg.producer(v).id)];
        (from ? inside : outside) = true;
        if (!from && (bg.source(v).cls == OpClass::Constant)) outside = false;
      }
      if (outside && inside) {
        writes.push_back(id);
        reads.push_back(id);
        write_detail = "torch.cat growth of the past keys/values";
        read_detail = "the concatenated past and new keys/values";
      }
      continue;
    }
    bool write_op = o.in_place && (o.name == "setitem" || o.name == "index_copy" || o.name == "index_copy_" ||
                                   o.name == "index_put" || o.name == "index_put_" || o.name == "copy_" || o.name == "copy" ||
                                   o.name == "scatter" || o.name == "scatter_");
    // A tensor the forward makes itself (`torch.full(..., -inf).scatter_(-1,
    // topk_indices, 0)`, an index mask) holds nothing from earlier steps: no cache.
    static const std::set<std::string> factories = {"full", "zeros", "ones", "empty", "full_like", "zeros_like",
                                                    "ones_like", "empty_like", "new_full", "new_zeros", "new_ones",
                                                    "new_empty"};
    // Slices of such a tensor too (`key_states[..., :d].copy_(k_nope)` fills
    // a buffer the forward has just made).
    auto made_here = [&](int v) {
      for (int guard = 0; guard < 16; ++guard) {
        const DataflowOp& src = bg.source(v);
        if (factories.count(src.name)) return true;
        if (src.cls != OpClass::Slice || src.inputs.empty()) return false;
        v = src.inputs[0];
      }
      return false;
    };
    if (write_op && !o.inputs.empty() && made_here(o.inputs[0])) write_op = false;
    if (write_op && o.inputs.size() >= 2 && after_projection[static_cast<size_t>(id)] && !after_core[static_cast<size_t>(id)] &&
        !core_set[static_cast<size_t>(id)]) {
      writes.push_back(id);
      written_roots.insert(bg.root_key(o.inputs[0]));
      write_detail = cache_mechanism(bg, o, o.name == "setitem" ? "slice_write" : o.name);
    }
  }
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    if (o.cls != OpClass::Slice || o.in_place || o.inputs.empty() || !before_core[static_cast<size_t>(id)]) continue;
    if (written_roots.count(bg.root_key(o.inputs[0]))) {
      reads.push_back(id);
      read_detail = "reads back from the cache written above";
    }
  }
  OpSet cache_ops = set_of(n, writes);
  for (int id : reads) cache_ops[static_cast<size_t>(id)] = 1;

  // repeat_kv: repeat_interleave, or expand followed by reshape, on the way to the core (not MLA).
  std::vector<int> repeat;
  if (!mla) {
    for (int id : ops) {
      const DataflowOp& o = bg.op(id);
      if (!before_core[static_cast<size_t>(id)] || !after_projection[static_cast<size_t>(id)]) continue;
      if (o.name == "repeat_interleave") repeat.push_back(id);
      if (o.name == "expand")
        for (int c : bg.consumers(o.outputs[0]))
          if (bg.op(c).name == "reshape") repeat.insert(repeat.end(), {id, c});
    }
  }
  OpSet repeat_set = set_of(n, repeat);

  // RoPE: compute ops between the projections and the core that mix in a
  // value that does not come from the projections (cos/sin, freqs_cis).
  std::vector<int> data_values;
  for (int id : core.qk)
    for (size_t i = 0; i < bg.op(id).inputs.size(); ++i)
      if (i >= bg.op(id).attrs.size() || bg.op(id).attrs[i] != "callee=") data_values.push_back(bg.op(id).inputs[i]);
  for (int id : writes)
    for (size_t i = 1; i < bg.op(id).inputs.size(); ++i) data_values.push_back(bg.op(id).inputs[i]);
  OpSet path = intersect(after_projection, bg.data_upstream(data_values));
  std::vector<int> rope;
  bool complex_form = false, rotate_half = false, stacked = false;
  int outside_muls = 0;  // products with a factor from outside the projections
  OpSet absorb = set_of(n, core.absorb_uk);
  for (int id : ops) {
    const DataflowOp& o = bg.op(id);
    size_t i = static_cast<size_t>(id);
    if (!path[i] || norm_ops[i] || cache_ops[i] || repeat_set[i] || absorb[i] || core_set[i] || all_linear[i]) continue;
    if (o.cls != OpClass::Compute) continue;
    static const std::set<std::string> rope_ops = {"mul", "add", "sub", "neg", "cat", "view_as_complex", "view_as_real", "stack"};
    if (!rope_ops.count(o.name)) continue;
    rope.push_back(id);
    if (o.name == "view_as_complex") complex_form = true;
    if (o.name == "neg") rotate_half = true;
    if (o.name == "stack") stacked = true;
    // cos/sin (or freqs_cis) hold no projected data; a slice of them sized
    // from q's shape (`cos[..., : q.shape[-1]]`) still does not.
    if (o.name == "mul") {
      bool outside = false;
      for (int v : o.inputs) {
        const DataflowOp& src = bg.source(v);
        if (src.cls == OpClass::Constant || all_linear[static_cast<size_t>(src.id)]) continue;
        if (!any(intersect(bg.data_upstream({v}), all_linear))) outside = true;
      }
      outside_muls += outside ? 1 : 0;
    }
  }
  // A rotation multiplies by cos and by sin (two products), or by complex
  // frequencies; one product with an outside factor is a scale
  // (`q_proj(x) * self.scaling`), not RoPE.
  if (outside_muls == 0 || (!complex_form && outside_muls < 2)) rope.clear();
  std::string rope_detail = complex_form ? "complex multiply (view_as_complex * freqs_cis), interleaved pairs"
                            : rotate_half ? "rotate_half: x*cos + cat(-x2, x1)*sin, half-split"
                            : stacked     ? "even/odd pairs rotated and stacked"
                                          : "x*cos and x*sin combined (chunked halves)";

  // Projection steps.
  for (const Projection* p : in_projs) {
    OpSet pset = proj_set(*p);
    OpSet down = bg.downstream(pset);
    bool feeds_norm = false;
    for (const Norm* nm : mid_norms) feeds_norm = feeds_norm || down[static_cast<size_t>(nm->anchor)];
    OpSet up = bg.upstream(pset);
    bool after_norm = false;
    for (const Norm* nm : mid_norms) after_norm = after_norm || up[static_cast<size_t>(nm->anchor)];
    bool split_after = false;
    for (int id : ops)
      if (down[static_cast<size_t>(id)] && (bg.op(id).name == "split" || bg.op(id).name == "chunk") &&
          bg.source(bg.op(id).inputs[0]).id == bg.op(p->ops[0]).id)
        split_after = true;
    std::string detail = p->key;
    if (!mla) continue;
    if (feeds_norm && split_after) add_steps(chain, bg, "kv_down", p->ops, detail + " (latent + shared rope key, split after)");
    else if (feeds_norm) add_steps(chain, bg, "q_down", p->ops, detail);
    else if (after_norm) {
      // Up-projection of the query latent, or the naive path's K/V up-projection.
      bool from_kv = false;
      for (const Projection* other : in_projs) {
        if (other == p) continue;
        OpSet od = bg.downstream(proj_set(*other));
        bool other_splits = false;
        for (int id : ops)
          if (od[static_cast<size_t>(id)] && bg.op(id).name == "split" && bg.source(bg.op(id).inputs[0]).id == bg.op(other->ops[0]).id)
            other_splits = true;
        if (other_splits && up[static_cast<size_t>(other->ops[0])]) from_kv = true;
      }
      add_steps(chain, bg, from_kv ? "kv_up" : "q_up", p->ops, detail);
    } else {
      add_steps(chain, bg, "q_up", p->ops, detail + " (no query latent)");
    }
  }
  if (!mla && !in_projs.empty()) {
    std::vector<int> qkv;
    std::string keys;
    bool split = false;
    for (const Projection* p : in_projs) {
      qkv.insert(qkv.end(), p->ops.begin(), p->ops.end());
      keys += (keys.empty() ? "" : ", ") + p->key;
      OpSet down = bg.downstream(proj_set(*p));
      for (int id : ops) {
        const DataflowOp& o = bg.op(id);
        if (down[static_cast<size_t>(id)] && (o.name == "split" || o.name == "chunk") && !o.inputs.empty() &&
            bg.source(o.inputs[0]).id == p->ops.back())
          split = true;
      }
    }
    std::string detail = in_projs.size() == 1 && split ? "merged QKV " + keys + ", split into q/k/v"
                                                       : std::to_string(in_projs.size()) + " projections: " + keys;
    add_steps(chain, bg, "qkv_projection", qkv, detail);
  }

  // Norms: q/k norms (attention) or the latent norms (MLA).
  for (const Norm& nm : norms) {
    std::string kind = "qk_norm";
    if (mla) {
      OpSet up = bg.upstream(set_of(n, {nm.anchor}));
      bool after_split = false;
      for (int id : ops)
        if (up[static_cast<size_t>(id)] && bg.op(id).name == "split") after_split = true;
      kind = after_split ? "kv_norm" : "q_norm";
    } else if (!path[static_cast<size_t>(nm.anchor)]) {
      continue;
    }
    add_steps(chain, bg, kind, nm.ops, nm.key);
  }

  if (mla) {
    // Splits into no-position and rotary parts; the naive path's K/V split after kv_up is not one.
    OpSet after_kv_up = make_set(n);
    for (const SubChainStep& st : chain.steps)
      if (st.kind == "kv_up") after_kv_up = bg.downstream(set_of(n, st.ops));
    std::vector<int> splits;
    for (int id : ops)
      if (bg.op(id).name == "split" && after_projection[static_cast<size_t>(id)] && !after_kv_up[static_cast<size_t>(id)] &&
          !norm_ops[static_cast<size_t>(id)] && !after_core[static_cast<size_t>(id)] && !bg.reads_weight_directly(bg.op(id).inputs[0]))
        splits.push_back(id);
    add_steps(chain, bg, "nope_rope_split", splits, "query and latent split into no-position and rotary parts");
  }
  add_steps(chain, bg, "rope", rope, rope_detail);
  add_steps(chain, bg, "cache_write", writes, write_detail);
  add_steps(chain, bg, "cache_read", reads, read_detail);
  add_steps(chain, bg, "repeat_kv", repeat, "K/V heads repeated to the query head count");
  add_steps(chain, bg, "absorb_uk", core.absorb_uk, "query folded with the kv up-projection weight slice (W_UK)");
  add_steps(chain, bg, "attention_core", core.core, core.core_detail);
  add_steps(chain, bg, "absorb_uv", core.absorb_uv, "attention output lifted with the kv up-projection weight slice (W_UV)");
  for (const Projection* p : out_projs) add_steps(chain, bg, "o_projection", p->ops, p->key);

  chain.layout = find_core_layout(bg, core.qk);
  (void)scope;
  (void)scope_is_sub;
}

}  // namespace npufuse::model::subchains

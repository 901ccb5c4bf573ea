#include "plan/uncovered_steps.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "plan/candidate_builder.h"

namespace npufuse::plan {
namespace {

bool is_plain_projection(const std::string& chain_module, const std::string& kind) {
  static const std::set<std::string> projections = {"qkv_projection", "o_projection", "gate_up_projection",
                                                    "down_projection", "gate"};
  // MLA's output projection follows the attention (and the V absorb) as a
  // plain GEMM in every reference chain; no prolog takes it in.
  if (chain_module == "mla" || chain_module == "indexer") return kind == "o_projection";
  return (chain_module == "attention" || chain_module == "ffn" || chain_module == "moe") && projections.count(kind);
}

// Projections an MLA or indexer prolog operator takes in together with their norm and RoPE.
bool prolog_projection(const std::string& chain_module, const std::string& kind) {
  static const std::set<std::string> kinds = {"q_down", "q_up", "kv_down", "index_q", "index_k", "index_weights"};
  return (chain_module == "mla" || chain_module == "indexer") && kinds.count(kind);
}

// Steps that are one projection's GEMM. A shared `linear(x, w)` helper puts
// several of them on one line, so their coverage also compares the submodule.
bool projection_step(const std::string& kind) {
  bool named = kind.size() >= 11 && kind.compare(kind.size() - 11, 11, "_projection") == 0;
  return named || kind == "q_down" || kind == "q_up" || kind == "kv_down" || kind == "kv_up";
}

Location location_of(const model::SourceSpan& s) { return Location{s.file, s.line, s.end_line > 0 ? s.end_line : s.line}; }

// overlaps(location_of(a), location_of(b)), without copying the file names.
bool spans_overlap(const model::SourceSpan& a, const model::SourceSpan& b) {
  auto last = [](const model::SourceSpan& s) { return s.end_line > 0 ? s.end_line : s.line; };
  return a.file == b.file && a.line <= last(b) && b.line <= last(a);
}

// The half of a block a module belongs to: 1 the attention side, 2 the
// FFN/MoE side, 0 either (norms, quantisation).
int block_half(const std::string& module) {
  if (module == "attention" || module == "mla" || module == "kv_cache" || module == "rope" || module == "indexer") return 1;
  if (module == "ffn" || module == "moe_gate" || module == "moe_routing" || module == "moe_experts") return 2;
  return 0;
}

const model::FunctionDataflow* block_graph(const std::deque<model::FunctionDataflow>& graphs, const std::string& cls) {
  for (const model::FunctionDataflow& g : graphs)
    if (g.function == cls + ".forward") return &g;
  return nullptr;
}

// An activation step whose ops are element-wise activations and nothing
// else (F.gelu, an ACT2FN pick; the same line inlined once per branch arm,
// GPT-NeoX's parallel and sequential residual), none reading another's output:
// each already runs as one kernel and no product joins them, so there is
// nothing to fuse and no new-operator requirement. Their names ("gelu";
// "silu and sigmoid"), or "".
bool activation_op(const std::string& name) {
  static const std::set<std::string> acts = {"silu",  "gelu",    "relu",        "gelu_tanh",     "tanh",   "sigmoid",
                                             "quick_gelu", "relu2", "relu6", "mish", "swish", "gelu_python",
                                             "gelu_accurate", "gelu_10", "leaky_relu", "laplace", "xielu"};
  return acts.count(name) || name.rfind("activation", 0) == 0;
}

// An activation step that is one squared-ReLU or xIELU op and nothing else
// (a plain MLP's ACT2FN["relu2"] / ["xielu"]): its name, or "".
std::string composite_activation(const model::SubChainStep& step, const model::FunctionDataflow* g) {
  if (step.kind != "activation" || !g) return "";
  std::set<std::tuple<const void*, uint32_t, uint32_t, int, std::string>> sources;
  std::string name;
  for (int id : step.ops) {
    if (id < 0 || static_cast<size_t>(id) >= g->ops.size()) return "";
    const model::DataflowOp& o = g->ops[static_cast<size_t>(id)];
    if (o.cls != model::OpClass::Compute && o.cls != model::OpClass::Call && o.cls != model::OpClass::Module) continue;
    if (!sources.insert({o.file, o.begin, o.end, o.begin == o.end ? o.line : 0, o.name}).second) continue;
    if ((o.name != "relu2" && o.name != "xielu") || !name.empty()) return "";
    name = o.name;
  }
  return name;
}

// A gated unit `act(gate) * up` whose activation is a ReLU variant other
// than ReLU itself (BitNet's squared ReLU, ReLU6, leaky ReLU): the
// activation's name, or "". The gated operators documented in torch_npu take
// silu (npu_swiglu, npu_clipped_swiglu), GELU (npu_gelu_mul) or, in
// npu_ffn's geglu/swiglu/reglu modes, GELU, silu and plain ReLU.
std::string relu_gated_unit(const model::SubChainStep& step, const model::FunctionDataflow* g) {
  static const std::set<std::string> relus = {"relu2", "relu6", "leaky_relu"};
  if (step.kind != "activation" || !g) return "";
  std::string act;
  bool product = false;
  for (int id : step.ops) {
    if (id < 0 || static_cast<size_t>(id) >= g->ops.size()) return "";
    const model::DataflowOp& o = g->ops[static_cast<size_t>(id)];
    if (o.cls != model::OpClass::Compute && o.cls != model::OpClass::Call && o.cls != model::OpClass::Module) continue;
    if (o.name == "mul") {
      product = true;
      continue;
    }
    if (!relus.count(o.name) || (!act.empty() && act != o.name)) return "";
    act = o.name;
  }
  return product ? act : "";
}

std::string lone_activations(const model::SubChainStep& step, const model::FunctionDataflow* g) {
  if (step.kind != "activation" || !g) return "";
  std::vector<const model::DataflowOp*> compute;
  std::set<std::tuple<const void*, uint32_t, uint32_t, int, std::string>> sources;
  std::set<int> outputs;
  for (int id : step.ops) {
    if (id < 0 || static_cast<size_t>(id) >= g->ops.size()) return "";
    const model::DataflowOp& o = g->ops[static_cast<size_t>(id)];
    if (o.cls != model::OpClass::Compute && o.cls != model::OpClass::Call && o.cls != model::OpClass::Module) continue;
    if (!sources.insert({o.file, o.begin, o.end, o.begin == o.end ? o.line : 0, o.name}).second) continue;
    compute.push_back(&o);
    outputs.insert(o.outputs.begin(), o.outputs.end());
  }
  if (compute.empty()) return "";
  // ACT2FN picks that are several torch kernels (HF's relu2 is relu then a
  // square; xIELU, the Python GELU formulas, the clipped GELU) are not "one
  // kernel"; the caller says what they are where it can.
  static const std::set<std::string> several_kernels = {"relu2", "xielu", "gelu_python", "gelu_accurate", "gelu_10",
                                                        "laplace"};
  for (const model::DataflowOp* o : compute)
    if (several_kernels.count(o->name)) return "";
  if (compute.size() == 1) return compute.front()->name;
  std::vector<std::string> names;
  for (const model::DataflowOp* o : compute) {
    if (!activation_op(o->name)) return "";
    for (int v : o->inputs)
      if (outputs.count(v)) return "";
    if (std::find(names.begin(), names.end(), o->name) == names.end()) names.push_back(o->name);
  }
  if (names.size() == 1) return names.front();
  std::string last = names.back();
  names.pop_back();
  return fmt::format("{} and {}", fmt::join(names, ", "), last);
}

// Coverage is by lines; a helper both halves call (a `linear(x, w, bias)`
// function) puts an MLA projection and an FFN's GEMM on the same lines, so a
// candidate of one half never covers a step of the other.
//
// A helper every projection calls (`linear(x, w)`) also puts the query's and
// the output's projections on one line: for a projection step, where the
// candidate knows the module path of its ops' code and the step's ops are in
// the block graph, the paths must agree too (the candidate's `self.q_a_proj`,
// matched in the attention's forward, is the block's `self.attn.q_a_proj`,
// never `self.attn.o_proj`).

// Module paths with the list indices dropped (`self.experts[i]` and
// `self.mlp.experts[e]` are the same code).
std::string without_indices(const std::string& scope) {
  std::string out;
  int depth = 0;
  for (char ch : scope) {
    if (ch == '[') ++depth;
    if (depth == 0) out += ch;
    if (ch == ']' && depth > 0) --depth;
  }
  return out;
}

bool same_module_code(const std::string& candidate_scope, const std::string& step_scope) {
  std::string tail = without_indices(candidate_scope);
  if (tail.rfind("self", 0) == 0) tail.erase(0, 4);
  if (tail.empty()) return true;
  std::string step = without_indices(step_scope);
  return step.size() >= tail.size() && step.compare(step.size() - tail.size(), tail.size(), tail) == 0;
}

// `only_module`, when given: only candidates of that module count.
bool covered_by(const model::SubChainStep& step, const std::string& step_module_name,
                const std::vector<Candidate>& candidates, const model::FunctionDataflow* block,
                const std::string& only_module = "") {
  const int half = block_half(step_module_name);
  const bool projection = projection_step(step.kind);
  for (const Candidate& c : candidates) {
    if (c.status == Status::NoFusedOp) continue;
    if (!only_module.empty() && c.module != only_module) continue;
    // A linear mixer's step that only one stage's branch runs (its prefill
    // convolution and recurrence, its cached decode step) is covered by a
    // candidate for that stage: the decode operator matched in the decode
    // helper leaves the prefill path open.
    if (!only_module.empty() && step.stages != "both" &&
        std::find(c.stages.begin(), c.stages.end(), step.stages) == c.stages.end())
      continue;
    if (int other = block_half(c.module); half != 0 && other != 0 && other != half) continue;
    if (projection && block && !step.ops.empty() && !c.op_lines.empty() && c.op_scopes.size() == c.op_lines.size()) {
      bool met = false, other_code = false;
      for (int id : step.ops) {
        if (id < 0 || static_cast<size_t>(id) >= block->ops.size()) continue;
        const model::DataflowOp& op = block->ops[static_cast<size_t>(id)];
        if (op.line <= 0) continue;
        std::string file = op.file ? op.file->path : (block->file ? block->file->path : "");
        Location at{file, op.line, std::max(op.line, op.end_line)};
        for (size_t k = 0; k < c.op_lines.size(); ++k) {
          if (!overlaps(c.op_lines[k], at)) continue;
          if (same_module_code(c.op_scopes[k], op.scope)) met = true;
          else other_code = true;
        }
      }
      if (met) return true;
      if (other_code) continue;  // the same lines, run for another module
    }
    for (const Location& p : c.op_lines.empty() ? c.parts : c.op_lines)
      for (const model::SourceSpan& s : step.spans)
        if (overlaps(p, s)) return true;
  }
  return false;
}

// A value as the report names it: the model's name for it, else what made
// it (`self.q_a_proj.weight`, `split(...) at line 390`), never the
// dataflow's own numbering.
std::string value_name(const model::FunctionDataflow& g, int v) {
  const model::DataflowValue& value = g.values[static_cast<size_t>(v)];
  if (!value.name.empty()) return value.name;
  if (value.producer < 0 || static_cast<size_t>(value.producer) >= g.ops.size()) return "an unnamed value";
  const model::DataflowOp& op = g.ops[static_cast<size_t>(value.producer)];
  if (op.cls == model::OpClass::Attribute && op.inputs.empty() && op.attrs.empty()) return op.name;
  if (op.cls == model::OpClass::Attribute && op.name == "getattr" && op.inputs.size() == 1 && !op.attrs.empty())
    return value_name(g, op.inputs[0]) + "." + op.attrs[0];
  std::string what = op.name.rfind("module:", 0) == 0 ? "self." + op.name.substr(7) : op.name;
  return fmt::format("{}(...) at line {}", what, op.line);
}

// The step's inputs (values its ops read that other ops produce) and outputs
// (values its ops produce that other ops read, or that are returned).
void step_interface(const model::FunctionDataflow& g, const std::vector<int>& ops, NewOperatorRequirement& req) {
  std::set<int> inside(ops.begin(), ops.end());
  std::set<int> seen_in, seen_out;
  for (int id : ops) {
    if (id < 0 || static_cast<size_t>(id) >= g.ops.size()) return;
    const model::DataflowOp& op = g.ops[static_cast<size_t>(id)];
    for (int v : op.inputs) {
      if (v < 0 || static_cast<size_t>(v) >= g.values.size()) continue;
      int producer = g.values[static_cast<size_t>(v)].producer;
      if (producer >= 0 && inside.count(producer)) continue;
      if (producer >= 0 && g.ops[static_cast<size_t>(producer)].cls == model::OpClass::Constant) continue;
      if (seen_in.insert(v).second) req.inputs.push_back(value_name(g, v));
    }
    for (int v : op.outputs) {
      bool returned = std::find(g.returns.begin(), g.returns.end(), v) != g.returns.end();
      bool read_outside = false;
      for (int consumer : g.consumers(v)) read_outside = read_outside || !inside.count(consumer);
      if ((returned || read_outside) && seen_out.insert(v).second) req.outputs.push_back(value_name(g, v));
    }
  }
}

std::vector<std::string> near_miss_reasons(const model::SubChainStep& step, const std::vector<NearMissSite>& near,
                                           model::FunctionIndex* functions) {
  std::vector<std::string> out;
  for (const NearMissSite& n : near) {
    if (!n.trace.pattern || !n.trace.pattern->rule || n.trace.spans.empty()) continue;
    bool touches = false;
    for (const model::SourceSpan& a : n.trace.spans)
      for (const model::SourceSpan& b : step.spans) touches = touches || spans_overlap(a, b);
    if (!touches) continue;
    if (!near_miss_in_function(n, location_of(step.spans.front()), functions)) continue;
    std::string text = fmt::format("{}: {}", n.trace.pattern->rule->id, n.trace.reason);
    if (std::find(out.begin(), out.end(), text) == out.end()) out.push_back(text);
  }
  return out;
}

// How a MoE router scores its experts, from the gate step's detail
// (model/subchains_moe): "softmax", "sigmoid", "softmax after top-k" (the
// softmax over the k kept logits), or "" when not found.
std::string router_score(const model::ModuleChain& chain) {
  for (const model::SubChainStep& s : chain.steps) {
    if (s.kind != "gate") continue;
    for (const char* score : {"softmax after top-k", "sigmoid after top-k", "softmax", "sigmoid"})
      if (s.detail.find(std::string("linear + ") + score) != std::string::npos) return score;
  }
  return "";
}

// Why a residual add that no candidate takes stays a plain add, from the
// norm that reads its sum (model::SubChainStep::sum_read_by).
std::string residual_add_reason(const model::SubChainStep& step, const std::vector<NearMissSite>& near,
                                model::FunctionIndex* functions) {
  const std::string& reader = step.sum_read_by;
  if (reader == "none")
    return "no fused operator: no norm reads the sum (the block normalises the branch before the add, or passes the "
           "sum straight to the next module), so npu_add_rms_norm has no norm to take in";
  if (reader == "layer_norm")
    return "no fused operator: the sum feeds a LayerNorm; npu_add_layer_norm is in the op-plugin schema but has no "
           "torch_npu doc page in 26.1.0, so it is not proposed";
  if (reader == "rms_norm") {
    std::vector<std::string> why;
    for (const std::string& r : near_miss_reasons(step, near, functions))
      if (r.find("add_rms_norm") != std::string::npos) why.push_back(r);
    if (!why.empty())
      return fmt::format("the sum feeds an RMSNorm, but the add+RMSNorm rule refused it: {}", fmt::join(why, "; "));
    return "the sum feeds an RMSNorm, but no add+RMSNorm rule matched here and none says why";
  }
  return "no fused operator on its own: a residual add joins the next RMSNorm (norm.add_rms_norm) where one follows it";
}

// A step's name for its verification cut: the function holding its first line.
std::string function_name(const model::SourceSpan& where, const std::string& fallback, model::FunctionIndex* functions) {
  const model::FunctionRange* f = functions ? functions->at_line(where.file, where.line) : nullptr;
  return f ? f->qualified : fallback;
}

// A near-miss saying the model already calls the fused form (RULE["match"]
// ["already_fused"]: an F.layer_norm where the rule looks for the decomposed
// chain): the step needs no new operator.
const NearMissSite* already_fused(const model::SubChainStep& step, const std::vector<NearMissSite>& near,
                                  model::FunctionIndex* functions) {
  for (const NearMissSite& n : near) {
    const match::NearMissTrace& t = n.trace;
    if (!t.pattern || !t.pattern->rule || t.pattern->options.already_fused.empty() || t.spans.empty()) continue;
    if (t.matched_steps != t.pattern_steps || t.finding.find("already computes this as one fused call") == std::string::npos)
      continue;
    bool touches = false;
    for (const model::SourceSpan& s : step.spans) touches = touches || spans_overlap(s, t.spans.front());
    if (touches && near_miss_in_function(n, location_of(step.spans.front()), functions)) return &n;
  }
  return nullptr;
}

std::vector<std::string> step_stages(const std::string& step_stage, const std::string& requested) {
  std::vector<std::string> out;
  for (const char* s : {"prefill", "decode"}) {
    if (step_stage != "both" && step_stage != s) continue;
    if (requested != "both" && requested != s) continue;
    out.push_back(s);
  }
  return out;
}

}  // namespace

std::string step_module(const std::string& chain_module, const std::string& kind) {
  if (chain_module == "mla") return "mla";
  // The catalog files linear-attention operators with attention.
  if (chain_module == "linear_attention") return kind == "input_norm" || kind == "residual_add" ? "norm" : "attention";
  if (chain_module == "indexer") return "indexer";
  if (kind == "input_norm" || kind == "post_norm" || kind == "qk_norm" || kind == "residual_add") return "norm";
  if (kind == "rope") return "rope";
  if (kind == "cache_write" || kind == "cache_read") return "kv_cache";
  if (chain_module == "attention") return "attention";
  if (chain_module == "ffn") return "ffn";
  if (kind == "gate" || kind == "topk" || kind == "renorm") return "moe_gate";
  if (kind == "dispatch" || kind == "combine") return "moe_routing";
  if (kind == "experts" || kind == "shared_expert") return "moe_experts";
  return "other";
}

UncoveredSteps find_uncovered_steps(const std::vector<model::BlockChains>& blocks, const std::vector<Candidate>& covered,
                                    const std::deque<model::FunctionDataflow>& graphs,
                                    const std::vector<NearMissSite>& near_misses, const check::FactSet& facts,
                                    const std::string& requested_stage, model::FunctionIndex* functions) {
  UncoveredSteps out;
  std::set<std::string> seen;
  const check::Fact* dtype = facts.find("dtype");
  for (const model::BlockChains& block : blocks) {
    for (const model::ModuleChain& chain : block.modules) {
      for (const model::SubChainStep& step : chain.steps) {
        if (step.spans.empty()) continue;
        // A linear mixer's steps span helper code that other chains' candidates
        // share (its gated output norm): only an attention-module candidate covers them.
        const bool mixer_step =
            chain.module == "linear_attention" && (step.kind == "conv1d" || step.kind == "recurrence");
        if (covered_by(step, step_module(chain.module, step.kind), covered, block_graph(graphs, block.block_class),
                       mixer_step ? "attention" : ""))
          continue;
        Location where = location_of(step.spans.front());
        std::string key = fmt::format("{}.{}@{}:{}", chain.module, step.kind, where.file, where.start_line);
        if (!seen.insert(key).second) continue;
        std::string what = fmt::format("{}.{} of {} at {}:{}", chain.module, step.kind,
                                       chain.instance.empty() ? chain.class_name : chain.instance, where.file,
                                       where.start_line);
        if (is_plain_projection(chain.module, step.kind)) {
          out.dismissed.push_back(what + ": no fusion needed: plain projection");
          continue;
        }
        if (step.kind == "residual_add") {
          out.dismissed.push_back(what + ": " + residual_add_reason(step, near_misses, functions));
          continue;
        }
        if (step.kind == "topk" && router_score(chain) == "softmax after top-k") {
          out.dismissed.push_back(what +
                                  ": no new operator needed: top-k over the logits and a softmax over the k kept values "
                                  "are two kernels; npu_moe_gating_top_k_softmax (softmax over every expert) would need "
                                  "a division by the k weights' sum after it, three");
          continue;
        }
        if (step.kind == "renorm" && router_score(chain) == "softmax") {
          out.dismissed.push_back(what +
                                  ": no fused operator: no documented operator renormalises the chosen softmax weights "
                                  "(npu_moe_gating_top_k_softmax returns them as they are, npu_moe_gating_top_k "
                                  "renormalises only on its sigmoid path): the division by their sum stays in torch");
          continue;
        }
        if (step.kind == "recurrence" && step.detail == "selective state-space scan") {
          out.dismissed.push_back(what + ": no fused operator: no documented torch_npu operator computes a selective "
                                         "state-space scan (Mamba's SSD or selective scan): it stays in torch");
          continue;
        }
        if (step.kind == "recurrence" && step.detail.rfind("Kimi delta attention", 0) == 0) {
          out.dismissed.push_back(what + ": no fused operator: no documented operator takes a decay per key channel; "
                                         "npu_chunk_gated_delta_rule and npu_recurrent_gated_delta_rule take one log "
                                         "decay per value head (g as [T, Nv])");
          continue;
        }
        if (std::string acts = lone_activations(step, block_graph(graphs, block.block_class)); !acts.empty()) {
          bool several = acts.find(" and ") != std::string::npos;
          out.dismissed.push_back(
              several ? fmt::format("{}: no new operator needed: the element-wise {} each already run as one kernel, and "
                                    "no product joins them into a gated unit",
                                    what, acts)
                      : fmt::format("{}: no new operator needed: one element-wise {} already runs as one kernel", what, acts));
          continue;
        }
        if (std::string act = composite_activation(step, block_graph(graphs, block.block_class)); !act.empty()) {
          out.dismissed.push_back(fmt::format(
              "{}: no fused operator: no documented torch_npu operator computes {}; npu_ffn's activations are relu, "
              "gelu, fastgelu, silu and the gated geglu, swiglu and reglu, so it stays in torch",
              what, act == "relu2" ? "the squared ReLU (relu2: relu, then a square)" : "the xIELU activation"));
          continue;
        }
        if (std::string relu = relu_gated_unit(step, block_graph(graphs, block.block_class)); !relu.empty()) {
          out.dismissed.push_back(fmt::format(
              "{}: no fused operator: no documented torch_npu operator computes a {}-gated unit ({}(gate) * up): "
              "npu_swiglu and npu_clipped_swiglu gate with silu, npu_gelu_mul with GELU, and npu_ffn's gated "
              "activations are geglu, swiglu and reglu (plain ReLU); the activation and the product stay two "
              "element-wise kernels",
              what, relu, relu));
          continue;
        }
        if (const NearMissSite* fused = already_fused(step, near_misses, functions)) {
          out.dismissed.push_back(fmt::format("{}: no new operator needed: the model already calls the fused form ({}: {})",
                                              what, fused->trace.pattern->rule->id, fused->trace.reason));
          continue;
        }
        std::vector<std::string> stages = step_stages(step.stages, requested_stage);
        if (stages.empty()) continue;
        Candidate c;
        c.id = key;
        c.module = step_module(chain.module, step.kind);
        c.title = fmt::format("{} {}: no rule maps this step to a fused operator", chain.module, step.kind);
        c.title_zh = fmt::format("{} {}：没有规则把该步骤映射到融合算子", chain.module, step.kind);
        c.stages = stages;
        c.status = Status::NoFusedOp;
        for (const model::SourceSpan& s : step.spans) c.parts.push_back(location_of(s));
        c.location = c.parts.front();
        c.instance = chain.instance;
        c.evidence.push_back(fmt::format("sub-chain step {} of {} ({}){}", step.kind, chain.class_name, chain.module,
                                         step.detail.empty() ? "" : ": " + step.detail));
        c.verification_cut =
            fmt::format("{} lines {}-{} of {}", function_name(step.spans.front(), block.block_class + ".forward", functions),
                        where.start_line, where.end_line, where.file);
        NewOperatorRequirement& req = c.requirement;
        req.subgraph = step.detail.empty() ? chain.module + " " + step.kind : step.detail;
        if (const model::FunctionDataflow* g = block_graph(graphs, block.block_class)) step_interface(*g, step.ops, req);
        req.dtype = dtype ? dtype->value.repr() + " (" + dtype->provenance + ")" : "unknown (needs the config's torch_dtype)";
        bool core = chain.module == "attention" || chain.module == "mla";
        req.layout = core ? chain.layout.layout + (chain.layout.evidence.empty() ? "" : " (" + chain.layout.evidence + ")")
                          : "ND";
        std::vector<std::string> reasons = near_miss_reasons(step, near_misses, functions);
        req.why_nothing_fits = "no rule's pattern matched the ops of this step";
        if (prolog_projection(chain.module, step.kind))
          req.why_nothing_fits += "; a prolog operator (npu_mla_prolog_v3 / npu_lightning_indexer family) takes this "
                                  "projection in together with its norm and RoPE, but no rule maps it yet";
        if (step.kind == "recurrence")
          req.why_nothing_fits += "; npu_chunk_gated_delta_rule (prefill) and npu_recurrent_gated_delta_rule (decode, 1 to 8 "
                                  "tokens per request) compute a gated delta rule, taking q and k already L2-normalised, "
                                  "bfloat16, Dk = Dv = 128; the rules mapping one (attention.gated_delta_rule_chunk, "
                                  "attention.gated_delta_rule_recurrent) take it written as a loop over tokens, and "
                                  "neither matched this code";
        if (step.kind == "conv1d")
          req.why_nothing_fits += "; npu_fused_causal_conv1d and npu_masked_causal_conv1d take a depthwise causal "
                                  "convolution of kernel width 3 without activation or bias, on Ascend 950 only; "
                                  "attention.masked_causal_conv1d maps the whole-sequence form (F.conv1d padded by K - 1 "
                                  "and cut to the sequence) and did not match this code, and no rule maps the cached "
                                  "decode form (the conv state joined in front) to npu_fused_causal_conv1d yet";
        for (const std::string& r : reasons) req.why_nothing_fits += "; near-miss " + r;
        c.near_miss_reasons = reasons;
        out.no_fused_op.push_back(std::move(c));
      }
    }
  }
  return out;
}

}  // namespace npufuse::plan

// match_patterns: every pattern tried from every model op that could compute
// its first returned value; successes become matches (escapes, spans,
// hints), the deepest failures near-misses.
#include "match/matcher.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "match/graph_matcher.h"
#include "match/match_memo.h"
#include "match/pattern_needs.h"
#include "match/size_expression.h"
#include "match/op_signature.h"
#include "match/target_index.h"
#include "match/value_view.h"
#include "model/source_set.h"

namespace npufuse::match {

namespace {

using model::DataflowOp;
using model::FunctionDataflow;

std::vector<model::SourceSpan> spans_of(const FunctionDataflow& g, const std::vector<int>& ops) {
  std::vector<model::SourceSpan> spans;
  for (int id : ops) {
    const DataflowOp& op = g.ops[static_cast<size_t>(id)];
    if (op.line <= 0) continue;
    std::string file = op.file ? op.file->path : (g.file ? g.file->path : "");
    auto it = std::find_if(spans.begin(), spans.end(), [&](const model::SourceSpan& s) { return s.file == file; });
    if (it == spans.end()) {
      spans.push_back({file, op.line, std::max(op.line, op.end_line)});
    } else {
      it->line = std::min(it->line, op.line);
      it->end_line = std::max(it->end_line, std::max(op.line, op.end_line));
    }
  }
  return spans;
}

// Readers of `v` that count as uses: metadata reads do not.
std::vector<int> real_readers(const TargetIndex& t, int v) {
  std::vector<int> out;
  for (int r : t.readers[static_cast<size_t>(v)])
    if (!is_metadata_read(t.g.ops[static_cast<size_t>(r)])) out.push_back(r);
  return out;
}

// The ops a match covers: the paired ops, the casts and views passed between
// them, and the casts/views leading to a parameter's value when nothing
// outside the match reads them.
std::vector<int> covered_ops(const TargetIndex& t, const Attempt& a) {
  std::set<int> ops;
  for (int id : a.op_map)
    if (id >= 0) ops.insert(id);
  ops.insert(a.passed.begin(), a.passed.end());
  for (bool grew = true; grew;) {
    grew = false;
    for (int id : a.binding_passed) {
      if (ops.count(id)) continue;
      const DataflowOp& op = t.g.ops[static_cast<size_t>(id)];
      bool inside = !op.outputs.empty();
      for (int v : op.outputs) {
        if (t.returned[static_cast<size_t>(v)]) inside = false;
        for (int r : real_readers(t, v))
          if (!ops.count(r)) inside = false;
      }
      if (inside) grew = ops.insert(id).second || grew;
    }
  }
  return {ops.begin(), ops.end()};
}

std::string use_text(const FunctionDataflow& g, const DataflowOp& reader, int v) {
  if (reader.name == "setattr" && !reader.attrs.empty()) return "stored on " + reader.attrs[0];
  if (reader.name == "setitem" && reader.inputs.size() == 3 && reader.inputs[2] == v)
    return fmt::format("written into {} at {}", g.values[static_cast<size_t>(reader.inputs[0])].name, where(reader));
  return fmt::format("read by {} at {}", describe_op(reader), where(reader));
}

// Tuples, unpacking and branch merges only pass a value on.
bool is_packing(const DataflowOp& op) {
  return op.name == "tuple" || op.name == "list" || op.name == "unpack" || op.name == "phi";
}

// The values a packing op hands `v` on as: a tuple read by an unpack (or
// indexed with a literal) gives the element at the same position, also after
// phis that merge it with other values (HF's `attn_output, attn_weights =
// attention_interface(...)`, where the eager function's tuple meets an
// unresolved backend's result); a phi, a list or a tuple read any other way
// hands on all of its outputs.
std::vector<int> passed_on(const TargetIndex& t, const DataflowOp& packer, int v) {
  if (packer.name == "tuple") {
    auto pos = std::find(packer.inputs.begin(), packer.inputs.end(), v);
    size_t index = static_cast<size_t>(pos - packer.inputs.begin());
    std::vector<int> out;
    std::vector<int> todo(packer.outputs.begin(), packer.outputs.end());
    std::set<int> seen;
    while (!todo.empty()) {
      int tv = todo.back();
      todo.pop_back();
      if (!seen.insert(tv).second) continue;
      // A merged tuple handed on whole (returned) keeps all its elements.
      if (tv != packer.outputs.front() && t.returned[static_cast<size_t>(tv)]) out.push_back(tv);
      for (int r : t.readers[static_cast<size_t>(tv)]) {
        const DataflowOp& reader = t.g.ops[static_cast<size_t>(r)];
        if (reader.name == "phi") {
          todo.insert(todo.end(), reader.outputs.begin(), reader.outputs.end());
        } else if (reader.name == "unpack" && index < reader.outputs.size()) {
          out.push_back(reader.outputs[index]);
        } else if (reader.name == "getitem" && reader.inputs.size() == 2 && reader.inputs[0] == tv &&
                   !reader.outputs.empty()) {
          // `outputs = layer(h); h = outputs[0]`: only the element at its own position.
          std::optional<ConstantValue> at = constant_of(t.g, reader.inputs[1]);
          if (!at || !at->numeric) out.push_back(tv);
          else if (at->number == static_cast<double>(index)) out.push_back(reader.outputs[0]);
        } else {
          out.push_back(tv);
        }
      }
    }
    return out;
  }
  return packer.outputs;
}

// Whether what `reader` computes only steers the chain's own loop or is
// never used: plumbing that goes with the chain (Mixtral's hit list
// `mask.sum(...) > 0` that the expert loop iterates, the `self.experts[idx]`
// pick whose call is inlined). Feeding any other op of the match is a real
// use (a mask applied between two matched ops on one branch), as is anything
// returned, written in place, stored or handed to an opaque call, or a
// closure too large to follow.
bool feeds_only_the_match(const TargetIndex& t, int reader, const std::set<int>& inside) {
  std::vector<int> todo = {reader};
  std::set<int> seen;
  while (!todo.empty()) {
    int id = todo.back();
    todo.pop_back();
    if (inside.count(id)) {
      // The loop itself, or the matched op the loop takes its ids from (the
      // hit list's `nonzero`, read by nothing but the loop).
      const DataflowOp& in = t.g.ops[static_cast<size_t>(id)];
      bool steers = in.name == "iterate" ||
                    std::all_of(in.outputs.begin(), in.outputs.end(), [&](int out) {
                      const std::vector<int>& next = t.readers[static_cast<size_t>(out)];
                      return !next.empty() && std::all_of(next.begin(), next.end(), [&](int r) {
                        return t.g.ops[static_cast<size_t>(r)].name == "iterate";
                      });
                    });
      if (!steers) return false;
      continue;
    }
    if (!seen.insert(id).second) continue;
    if (seen.size() > 32) return false;
    const DataflowOp& op = t.g.ops[static_cast<size_t>(id)];
    if (op.in_place || op.cls == model::OpClass::Call || op.cls == model::OpClass::Module || op.name == "setattr" ||
        op.name == "setitem")
      return false;
    for (int out : op.outputs) {
      if (t.returned[static_cast<size_t>(out)]) return false;
      for (int next : t.readers[static_cast<size_t>(out)]) todo.push_back(next);
    }
  }
  return true;
}

// Whether `reader` reads only a size (`pairs.size(1)`) that, through size
// arithmetic, feeds ops of the match alone: shape metadata of an
// intermediate, not a use of its values.
bool sizes_only_the_match(const TargetIndex& t, int reader, const std::set<int>& inside) {
  const DataflowOp& op = t.g.ops[static_cast<size_t>(reader)];
  if (op.outputs.empty() || !is_shape_read(t.g, op.outputs.front())) return false;
  std::vector<int> todo(op.outputs.begin(), op.outputs.end());
  std::set<int> seen;
  while (!todo.empty()) {
    int v = todo.back();
    todo.pop_back();
    if (!seen.insert(v).second) continue;
    if (seen.size() > 32 || t.returned[static_cast<size_t>(v)]) return false;
    for (int r : t.readers[static_cast<size_t>(v)]) {
      if (inside.count(r)) continue;
      const DataflowOp& next = t.g.ops[static_cast<size_t>(r)];
      if (!is_index_arithmetic(t.g, next.outputs.empty() ? -1 : next.outputs.front()) && next.name != "unpack" &&
          next.name != "getitem")
        return false;
      todo.insert(todo.end(), next.outputs.begin(), next.outputs.end());
    }
  }
  return true;
}

// Whether `reader` is a cast whose value only ops of the match read (the
// norm's `h = x.float()` when the walk reached x first through the chain's
// `type_as(x)`): the chain's own cast, not a use outside it.
bool cast_for_the_match(const TargetIndex& t, int reader, const std::set<int>& inside) {
  const DataflowOp& op = t.g.ops[static_cast<size_t>(reader)];
  if (op.cls != model::OpClass::Cast || op.outputs.empty()) return false;
  for (int v : op.outputs) {
    if (t.returned[static_cast<size_t>(v)]) return false;
    std::vector<int> readers = real_readers(t, v);
    if (readers.empty() || !std::all_of(readers.begin(), readers.end(), [&](int r) { return inside.count(r) > 0; }))
      return false;
  }
  return true;
}

// Whether `reader` reads `v` only for its dtype (`out.type_as(v)`,
// `out.to(v)`): a cast whose data input is another value.
bool reads_only_its_dtype(const TargetIndex& t, int reader, int v) {
  const DataflowOp& op = t.g.ops[static_cast<size_t>(reader)];
  if (op.cls != model::OpClass::Cast || op.inputs.size() < 2 || op.inputs[0] == v) return false;
  return std::find(op.inputs.begin() + 1, op.inputs.end(), v) != op.inputs.end();
}

// Whether code under `condition` never runs together with a match that
// needs `branches` (the other arm of one of its `if`s).
bool on_another_arm(const std::string& condition, const std::vector<std::string>& branches) {
  if (condition.empty() || branches.empty()) return false;
  for (const std::string& clause : model::condition_clauses(condition))
    for (const std::string& branch : branches)
      for (const std::string& b : model::condition_clauses(branch))
        if (clause == "not (" + b + ")" || b == "not (" + clause + ")") return true;
  return false;
}

// The branch conditions a read must not contradict to meet the chain: the
// ones the match needs, and the arms the chain's own ops sit on (the other
// arm of a norm's `if hasattr(F, "rms_norm")`, a layer's other attention
// path), for the escape and the anchor-use checks alike.
std::vector<std::string> arms_of(const FunctionDataflow& g, const std::vector<int>& ops, std::vector<std::string> branches) {
  for (int id : ops) {
    const std::string& c = g.ops[static_cast<size_t>(id)].condition;
    if (!c.empty() && std::find(branches.begin(), branches.end(), c) == branches.end()) branches.push_back(c);
  }
  return branches;
}

std::vector<Escape> escapes_of(const TargetIndex& t, const std::vector<int>& ops, const std::vector<int>& anchors,
                               const std::vector<std::string>& branches) {
  std::vector<Escape> out;
  auto add = [&out](int v, int consumer, std::string how, const DataflowOp& at) {
    Escape e;
    e.value = v;
    e.consumer_op = consumer;
    e.how = std::move(how);
    e.line = at.line;
    e.line_op = at.id;
    out.push_back(std::move(e));
  };
  std::set<int> inside(ops.begin(), ops.end());
  for (int id : ops) {
    const DataflowOp& op = t.g.ops[static_cast<size_t>(id)];
    for (int v : op.outputs) {
      if (std::find(anchors.begin(), anchors.end(), v) != anchors.end()) continue;
      if (is_index_arithmetic(t.g, v)) continue;  // end_pos = start_pos + s stays in the model
      if (t.returned[static_cast<size_t>(v)]) add(v, -1, "returned", op);
      // Reads through tuples, unpacking and branch merges are reads of the
      // value itself: follow them to the ops that really use it.
      std::vector<int> todo = {v};
      std::set<int> seen;
      while (!todo.empty()) {
        int cur = todo.back();
        todo.pop_back();
        if (!seen.insert(cur).second) continue;
        for (int r : real_readers(t, cur)) {
          if (inside.count(r)) continue;
          const DataflowOp& reader = t.g.ops[static_cast<size_t>(r)];
          if (is_packing(reader)) {
            for (int next : passed_on(t, reader, cur)) {
              if (t.returned[static_cast<size_t>(next)]) add(v, -1, "returned", reader);
              else todo.push_back(next);
            }
            continue;
          }
          // A read on the other arm of an `if` the match goes through
          // happens only when the match's chain does not run.
          if (on_another_arm(reader.condition, branches) || feeds_only_the_match(t, r, inside) ||
              sizes_only_the_match(t, r, inside) || cast_for_the_match(t, r, inside) || reads_only_its_dtype(t, r, cur))
            continue;
          add(v, r, use_text(t.g, reader, v), reader);
        }
      }
    }
  }
  return out;
}

// Marks the escapes the fused operator returns as well: the model value
// the walk paired with a search value named in also_outputs (through casts
// on both sides).
void name_also_outputs(const Pattern& p, const FunctionDataflow& target, const std::vector<int>& op_map,
                       std::vector<Escape>& escapes) {
  const FunctionDataflow& pg = p.graph;
  std::map<int, std::string> provided;  // model value -> search name
  for (const model::DataflowValue& pv : pg.values) {
    if (!p.options.also_outputs.count(pv.name)) continue;
    int inner = through_casts(pg, pv.id);
    const DataflowOp& P = pg.producer_of(inner);
    if (P.cls == model::OpClass::Input || op_map[static_cast<size_t>(P.id)] < 0) continue;
    const DataflowOp& M = target.ops[static_cast<size_t>(op_map[static_cast<size_t>(P.id)])];
    size_t at = static_cast<size_t>(std::find(P.outputs.begin(), P.outputs.end(), inner) - P.outputs.begin());
    if (at < M.outputs.size()) provided[M.outputs[at]] = pv.name;
  }
  // The escaping value may be a branch merge the walk went through (a norm
  // helper's `if residual is None: return ...; else: return ..., residual`).
  std::function<const std::string*(int, int)> find = [&](int v, int depth) -> const std::string* {
    for (int u : {v, through_casts(target, v)}) {
      if (auto it = provided.find(u); it != provided.end()) return &it->second;
      const DataflowOp& op = target.producer_of(u);
      if (op.name == "phi" && depth < 4)
        for (int in : op.inputs)
          if (const std::string* name = find(in, depth + 1)) return name;
    }
    return nullptr;
  };
  for (Escape& e : escapes)
    if (const std::string* name = find(e.value, 0)) e.also_output = *name;
}

// RULE["match"] anchor_uses: who else may read a returned value. Reads
// through casts and layout views count as reads of the value itself.
std::string anchor_use_violation(const TargetIndex& t, const Pattern& p, const std::vector<int>& ops,
                                 const std::vector<int>& anchors, const std::vector<std::string>& arms) {
  std::set<int> inside(ops.begin(), ops.end());
  for (const AnchorUse& use : p.options.anchor_uses) {
    int v0 = anchors[use.anchor];
    if (v0 < 0) continue;
    std::vector<int> todo = {v0};
    std::set<int> seen;
    while (!todo.empty()) {
      int v = todo.back();
      todo.pop_back();
      if (!seen.insert(v).second) continue;
      if (t.returned[static_cast<size_t>(v)] && !use.allow.count("return"))
        return fmt::format("returned value {} is also returned by the function", use.anchor);
      for (int r : real_readers(t, v)) {
        if (inside.count(r)) continue;
        const DataflowOp& reader = t.g.ops[static_cast<size_t>(r)];
        if (use.allow.count(reader.name)) continue;
        // Not a use where the chain runs: code on the other arm of an `if`
        // a matched op sits on (a norm's `if hasattr(F, "rms_norm")`), or a
        // cast that takes only the value's dtype (`out.type_as(h)`).
        if (on_another_arm(reader.condition, arms) || reads_only_its_dtype(t, r, v)) continue;
        if (is_packing(reader)) {  // a tuple unpacked again hands on only its element
          std::vector<int> on = passed_on(t, reader, v);
          todo.insert(todo.end(), on.begin(), on.end());
          continue;
        }
        if (reader.cls == model::OpClass::Cast || is_layout_view(reader.name)) {
          todo.insert(todo.end(), reader.outputs.begin(), reader.outputs.end());
          continue;
        }
        return fmt::format("returned value {} ({}) is also {}", use.anchor, t.g.values[static_cast<size_t>(v0)].name,
                           use_text(t.g, reader, v));
      }
    }
  }
  return {};
}

std::vector<std::string> hints_for(const Pattern& p, const FunctionDataflow& target) {
  std::vector<std::string> out;
  if (!p.rule) return out;
  std::string owner = target.function.substr(0, target.function.find('.'));
  // One agreeing class is one hint, however many of the rule's names it contains.
  for (const std::string& name : p.rule->hint_class_names)
    if (!name.empty() && owner.find(name) != std::string::npos) {
      out.push_back("class " + owner);
      break;
    }
  return out;
}

bool overlaps(const std::vector<int>& a, const std::vector<int>& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) return true;
    if (a[i] < b[j]) ++i;
    else ++j;
  }
  return false;
}

const std::string& rule_id(const Pattern& p) { return p.rule ? p.rule->id : p.alternative; }

// A value one of the chain's ops reads through a name unpacked from a tuple
// or taken from it by index: that name (the first such read). It is the
// name the chain's own code uses; the value's first name may belong to the
// inlined callee that returned it (`attn_output` inside the attention).
int named_alias(const FunctionDataflow& g, const std::vector<int>& ops, int value) {
  for (int id : ops)
    for (int in : g.ops[static_cast<size_t>(id)].inputs) {
      if (in == value || g.values[static_cast<size_t>(in)].name.empty()) continue;
      const DataflowOp& producer = g.producer_of(in);
      if ((producer.name == "unpack" || producer.name == "getitem") && through_packing(g, in) == value) return in;
    }
  return -1;
}

// A named value one of the chain's ops reads that is `value` after casts the
// match looked through and left out of the chain (a rotary helper's
// `view_as_real(...).flatten(3)` returned as `.to(dtype)` and named by its
// caller): that value, the first such read; -1 when none.
int cast_reader(const FunctionDataflow& g, const std::vector<int>& ops, int value) {
  for (int id : ops)
    for (int in : g.ops[static_cast<size_t>(id)].inputs) {
      if (in == value || g.values[static_cast<size_t>(in)].name.empty()) continue;
      const DataflowOp& producer = g.producer_of(in);
      if (producer.cls == model::OpClass::Cast && through_casts(g, in) == value &&
          !std::binary_search(ops.begin(), ops.end(), producer.id))
        return in;
    }
  return -1;
}

// Steps a failed walk of `p` must pair to be told; negative when `p` tells
// none. A rule's own RULE["match"] near_miss_share replaces the default.
double near_miss_threshold(const Pattern& p, const MatchOptions& options) {
  if (p.near_miss_steps <= 0 || !p.lookalike_reason.empty()) return -1;
  return p.options.near_miss_share.value_or(options.near_miss_min_share) * p.near_miss_steps;
}

// What users read for a failed attempt: the rule author's explanation when
// RULE["match"]["explain"] recognises the finding, then the finding itself.
std::string explained(const Pattern& p, const std::string& finding) {
  for (const NearMissExplanation& e : p.options.explain)
    if (finding.find(e.when) != std::string::npos) return e.reason + " (" + finding + ")";
  return finding;
}

// RULE["match"]["already_fused"]: model ops that are already the fused form
// of the pattern, told as near-misses so the user sees why nothing is offered.
void add_already_fused(const Pattern& p, const TargetIndex& index, const std::function<void(KeptNearMiss&&)>& keep) {
  for (const std::string& name : p.options.already_fused)
    for (int id : index.ops_named(name)) {
      const DataflowOp& op = index.g.ops[static_cast<size_t>(id)];
      KeptNearMiss kept;
      NearMissTrace& n = kept.trace;
      n.pattern = &p;
      n.anchor_op = id;
      n.matched_steps = n.pattern_steps = std::max(p.steps, 1);
      n.finding = fmt::format("{} at {} already computes this as one fused call", describe_op(op), where(op));
      n.reason = explained(p, n.finding);
      kept.span_ops = {id};
      keep(std::move(kept));
    }
}

// A kept match made the target's: its graph, spans and class hints.
Match made_for(const KeptMatch& kept, const FunctionDataflow& target) {
  Match m = kept.match;
  m.target = &target;
  for (Escape& e : m.escapes) {
    e.how = resolve_places(e.how, target);
    if (e.line_op >= 0) e.line = target.ops[static_cast<size_t>(e.line_op)].line;
  }
  m.spans = spans_of(target, kept.span_ops);
  m.hints = hints_for(*m.pattern, target);
  if (!m.hints.empty()) m.confidence = std::min(1.0, m.confidence + 0.1);
  return m;
}

NearMissTrace made_for(const KeptNearMiss& kept, const FunctionDataflow& target, bool traces) {
  const NearMissTrace& from = kept.trace;
  NearMissTrace n;
  n.pattern = from.pattern;
  n.anchor_op = from.anchor_op;
  n.matched_steps = from.matched_steps;
  n.pattern_steps = from.pattern_steps;
  n.spans = spans_of(target, kept.span_ops);
  const Pattern& p = *n.pattern;
  if (!kept.lookalike_ops.empty()) {
    n.finding = n.spans.empty() ? fmt::format("matches its look-alike {}", p.alternative)
                                : fmt::format("matches its look-alike {}, lines {}-{}", p.alternative, n.spans.front().line,
                                              n.spans.back().end_line);
    n.reason = p.lookalike_reason + " (" + n.finding + ")";
    return n;
  }
  n.finding = resolve_places(from.finding, target);
  n.reason = resolve_places(from.reason, target);
  if (!traces) return n;
  n.trace.reserve(from.trace.size());
  for (const std::string& step : from.trace) n.trace.push_back(resolve_places(step, target));
  return n;
}

}  // namespace

namespace {

// Whether a class of `file` defines a method `name`.
bool file_defines_method(const model::ModelFile* file, const std::string& name) {
  if (!file || !file->parsed || !file->parsed->module) return false;
  for (const frontend::ast::stmt* s : file->parsed->module->body) {
    const auto* cls = frontend::ast::as<frontend::ast::ClassDef>(s);
    if (!cls) continue;
    for (const frontend::ast::stmt* m : cls->body)
      if (const auto* fn = frontend::ast::as<frontend::ast::FunctionDef>(m); fn && std::string_view(fn->name) == name)
        return true;
  }
  return false;
}

// RULE["match"]["opaque_calls"]: a matched method call the model's own file
// defines is code the analysis sees, not an opaque object.
bool calls_own_method(const Pattern& p, const FunctionDataflow& target, const std::vector<int>& op_map) {
  if (!p.options.opaque_calls) return false;
  for (size_t i = 0; i < op_map.size() && i < p.graph.ops.size(); ++i)
    if (p.graph.ops[i].cls == model::OpClass::Call && op_map[i] >= 0 &&
        file_defines_method(target.file, target.ops[static_cast<size_t>(op_map[i])].name))
      return true;
  return false;
}

// Whether `part`'s ops lie in `whole`: ops of its own may only be casts and
// layout views (the part spells `cos.unsqueeze(1)`, which the whole passes
// through), and the two share at least one computation.
bool lies_within(const Match& part, const Match& whole) {
  bool shared = false;
  for (int id : part.ops) {
    const model::OpClass cls = part.target->ops[static_cast<size_t>(id)].cls;
    bool layout_only = cls == model::OpClass::View || cls == model::OpClass::Cast;
    if (std::binary_search(whole.ops.begin(), whole.ops.end(), id)) shared = shared || !layout_only;
    else if (!layout_only) return false;
  }
  return shared;
}

// RULE["match"]["contains"]: a match of a named rule whose ops all lie in a
// match of the containing rule, which runs in all of its stages, is a part of
// that chain, not a chain.
void drop_contained_parts(std::vector<Match>& matches) {
  std::vector<bool> part(matches.size(), false);
  for (const Match& whole : matches) {
    const std::set<std::string>& contains = whole.pattern->options.contains;
    if (contains.empty()) continue;
    for (size_t i = 0; i < matches.size(); ++i) {
      const Match& m = matches[i];
      if (&m == &whole || !contains.count(rule_id(*m.pattern))) continue;
      // Only where the whole runs in every stage the part does: a decode-only
      // prolog leaves the prefill key path a chain of its own.
      const std::vector<std::string>& whole_stages = whole.pattern->rule->stages;
      const std::vector<std::string>& part_stages = m.pattern->rule->stages;
      bool covers = std::all_of(part_stages.begin(), part_stages.end(), [&](const std::string& st) {
        return std::find(whole_stages.begin(), whole_stages.end(), st) != whole_stages.end();
      });
      if (covers && lies_within(m, whole)) part[i] = true;
    }
  }
  size_t kept = 0;
  for (size_t i = 0; i < matches.size(); ++i) {
    if (part[i]) continue;
    if (kept != i) matches[kept] = std::move(matches[i]);
    ++kept;
  }
  matches.resize(kept);
}

}  // namespace

MatchResult match_patterns(const std::vector<Pattern>& patterns, const FunctionDataflow& target, const MatchOptions& options) {
  MatchResult result;
  // Texts name places by op until the results are made the target's
  // (value_view.h): that form is the one a memo keeps for other graphs.
  SymbolicPlaces symbolic(target);
  // Built on first use: a graph the memo has seen may need no walk at all.
  std::optional<TargetIndex> index_storage;
  auto index = [&]() -> const TargetIndex& {
    if (!index_storage) index_storage.emplace(target);
    return *index_storage;
  };
  // What the patterns gave, in pattern order: kept here when walked on this
  // graph, else in the memo's record that `replay` holds (not copied).
  std::deque<KeptMatch> own_found;
  std::deque<KeptNearMiss> own_misses;
  std::vector<const KeptMatch*> found;
  std::vector<const KeptNearMiss*> misses;
  auto keep_match = [&](KeptMatch&& k) { found.push_back(&own_found.emplace_back(std::move(k))); };
  auto keep_miss = [&](KeptNearMiss&& k) { misses.push_back(&own_misses.emplace_back(std::move(k))); };
  // One walk from model op `cand`, with what follows from it: a match, a
  // near-miss told, or nothing. True when it gave a match or a near-miss
  // (or matched and was then dropped): the walks a memo replays.
  auto consider = [&](const Pattern& p, int cand, double near_miss_at) -> bool {
    const TargetIndex& idx = index();
    Attempt a = attempt_match(p, idx, cand, near_miss_at < 0 ? std::numeric_limits<double>::infinity() : near_miss_at);
    std::vector<int> ops;
    if (a.ok) {
      ops = covered_ops(idx, a);
      std::string violation = anchor_use_violation(idx, p, ops, a.anchors, arms_of(target, ops, a.branches));
      if (!violation.empty()) {
        a.ok = false;
        a.reason = violation;
        a.failed_at = cand;
      }
    }
    if (!a.ok) {
      // What RULE["match"]["quiet"] names shows other code, not a near-miss.
      const bool quiet = std::any_of(p.options.quiet.begin(), p.options.quiet.end(),
                                     [&](const std::string& when) { return a.reason.find(when) != std::string::npos; });
      if (near_miss_at >= 0 && a.matched >= near_miss_at && !quiet) {
        KeptNearMiss kept;
        NearMissTrace& n = kept.trace;
        n.pattern = &p;
        n.anchor_op = cand;
        n.matched_steps = a.matched;
        n.pattern_steps = p.near_miss_steps;
        n.finding = a.reason;
        n.reason = explained(p, a.reason);
        n.trace = a.trace;
        for (int id : a.op_map)
          if (id >= 0) kept.span_ops.push_back(id);
        if (a.failed_at >= 0) kept.span_ops.push_back(a.failed_at);
        std::sort(kept.span_ops.begin(), kept.span_ops.end());
        keep_miss(std::move(kept));
        return true;
      }
      return false;
    }
    // From here on the walk matched: worth walking again in a graph like this one.
    if (calls_own_method(p, target, a.op_map)) return true;
    if (!p.lookalike_reason.empty()) {
      // A look-alike of the rule's chain: told as the rule's near-miss (its text is made per graph).
      KeptNearMiss kept;
      NearMissTrace& n = kept.trace;
      n.pattern = &p;
      n.anchor_op = cand;
      n.matched_steps = n.pattern_steps = std::max(p.steps, 1);
      kept.span_ops = ops;
      kept.lookalike_ops = ops;
      keep_miss(std::move(kept));
      return true;
    }
    KeptMatch kept;
    Match& m = kept.match;
    m.pattern = &p;
    m.ops = ops;
    m.anchors = a.anchors;
    m.optional_merges = a.optional_merges;
    for (int id : a.binding_passed)
      if (std::binary_search(ops.begin(), ops.end(), id) &&
          std::find(m.binding_passed.begin(), m.binding_passed.end(), id) == m.binding_passed.end())
        m.binding_passed.push_back(id);
    // A partial match (RULE["match"] partial_returns) names only what the model computes.
    if (p.options.partial_returns) m.anchors.erase(std::remove(m.anchors.begin(), m.anchors.end(), -1), m.anchors.end());
    for (size_t i = 0; i < p.parameters.size() && i < a.binding.size(); ++i) {
      if (p.options.partial_returns && a.binding[i] < 0) continue;
      Binding b{p.parameters[i], a.binding[i], ""};
      if (b.value >= 0) {
        b.spelled = named_alias(target, ops, b.value);
        b.cast_read = cast_reader(target, ops, b.value);
        b.text = value_spelling(target, b.spelled >= 0 ? b.spelled : b.value);
        if (i < a.binding_reciprocal.size() && a.binding_reciprocal[i]) b.text = "1 / " + b.text;
      }
      m.bindings.push_back(std::move(b));
    }
    // A returned value that is one input of a branch merge holds only on its branch.
    std::vector<std::string> branches = a.branches;
    for (int v : a.anchors) {
      if (v < 0) continue;
      const DataflowOp& producer = target.producer_of(v);
      for (int r : idx.readers[static_cast<size_t>(v)])
        if (target.ops[static_cast<size_t>(r)].name == "phi" && !producer.condition.empty() &&
            producer.condition != target.ops[static_cast<size_t>(r)].condition &&
            std::find(branches.begin(), branches.end(), producer.condition) == branches.end())
          branches.push_back(producer.condition);
    }
    // Both sides of one `if` cannot hold at once.
    // Compared clause by clause: an inlined helper's early return puts
    // `not (c)` inside a longer condition (the loop's, the caller's).
    std::set<std::string> clauses;
    for (const std::string& b : branches)
      for (std::string& c : model::condition_clauses(b)) clauses.insert(std::move(c));
    bool contradictory = std::any_of(clauses.begin(), clauses.end(),
                                     [&](const std::string& c) { return clauses.count("not (" + c + ")") > 0; });
    if (contradictory) return true;
    for (const std::string& b : branches) m.condition += (m.condition.empty() ? "" : " and ") + b;
    m.escapes = escapes_of(idx, ops, a.anchors, arms_of(target, ops, branches));
    if (!p.options.also_outputs.empty()) name_also_outputs(p, target, a.op_map, m.escapes);
    // Index bookkeeping (`end_pos = start_pos + s`) stays where it is: it
    // does not place the chain.
    for (int id : ops)
      if (!is_index_bookkeeping(target, target.ops[static_cast<size_t>(id)])) kept.span_ops.push_back(id);
    // Class hints raise it per graph (made_for).
    m.confidence = p.steps > 0 ? 1.0 - 0.5 * a.optional_skipped / p.steps : 1.0;
    keep_match(std::move(kept));
    return true;
  };

  const NameVocabulary* present_for = nullptr;  // the vocabulary `present` was worked out for
  std::vector<char> present;
  // A graph the memo has seen (the same code in another file or model)
  // takes over what each pattern gave there.
  std::optional<MemoKey> memo_key;
  std::shared_ptr<const MatchMemo::Outcomes> replay;
  size_t replay_at = 0;  // the next outcome of `replay`
  static const PatternOutcome gave_nothing;
  MatchMemo::Outcomes outcomes;  // per pattern while recording
  if (options.memo && options.memo->serves(patterns)) {
    memo_key = MatchMemo::key_of(target, options);
    replay = options.memo->find(*memo_key);
    if (!replay) outcomes.resize(patterns.size());
  }
  for (size_t pattern_index = 0; pattern_index < patterns.size(); ++pattern_index) {
    const Pattern& p = patterns[pattern_index];
    const PatternOutcome* recorded = nullptr;  // on a replay: what the pattern gave there
    if (replay) {
      recorded = &gave_nothing;
      if (replay_at < replay->size() && (*replay)[replay_at].pattern == pattern_index) recorded = &(*replay)[replay_at++];
      if (!recorded->rewalk) {
        for (const KeptMatch& k : recorded->matches) found.push_back(&k);
        for (const KeptNearMiss& k : recorded->near_misses) misses.push_back(&k);
        continue;
      }
    }
    const size_t found_before = found.size();
    if (&p == &patterns.front() || rule_id(p) != rule_id(*(&p - 1))) add_already_fused(p, index(), keep_miss);
    const int start = start_op(p);
    const double near_miss_at = near_miss_threshold(p, options);
    bool walk = start >= 0;
    if (!walk || replay) {
      // nothing to rule out: no start, or the starts recorded for the key
    } else if (!options.rule_out_early) {
      // every start op is walked
    } else if (p.vocabulary) {
      // Rule the pattern out when no walk from any start op could match or be
      // a near-miss: the result is the same, without the walks.
      if (p.vocabulary.get() != present_for) {
        present = names_present(*p.vocabulary, index().by_name);
        present_for = p.vocabulary.get();
      }
      walk = may_match_or_nearly(p.needs, present, near_miss_at);
    } else {
      walk = may_match_or_nearly(p.needs_known ? p.needs : needs_of(p), index().by_name, near_miss_at);
    }
    std::vector<int> gave;
    if (walk) {
      // The start op's other spellings start walks too (`x / sqrt(v)` for a
      // pattern ending in `x * rsqrt(v)`, `permute(0, 2, 1, 3)` for
      // `transpose(1, 2)`); from those only a match is told, no near-miss.
      const std::string& start_name = p.graph.ops[static_cast<size_t>(start)].name;
      std::vector<int> spelled;
      const std::vector<int>* start_ops = recorded ? &recorded->starts : nullptr;
      if (!start_ops) {
        const std::vector<std::string> names = pairing_names_of(start_name);
        start_ops = &index().ops_named(names.front());
        if (names.size() > 1) {
          spelled = *start_ops;
          for (size_t i = 1; i < names.size(); ++i) {
            const std::vector<int>& more = index().ops_named(names[i]);
            spelled.insert(spelled.end(), more.begin(), more.end());
          }
          std::sort(spelled.begin(), spelled.end());
          start_ops = &spelled;
        }
      }
      const std::vector<int>& starts = *start_ops;
      for (int cand : starts) {
        // Inside a copy of an unrolled layer loop only a chain that may run
        // across layers starts: every other one there is the layer's own.
        if (target.ops[static_cast<size_t>(cand)].unrolled != 0 && !p.options.across_layers) continue;
        const bool own_name = target.ops[static_cast<size_t>(cand)].name == start_name;
        if (consider(p, cand, own_name ? near_miss_at : -1)) gave.push_back(cand);
      }
    }
    if (!replay && !outcomes.empty()) {
      PatternOutcome& kept = outcomes[pattern_index];
      kept.pattern = pattern_index;
      // Whether the file's own classes define a call decides this pattern's
      // result, and the key does not hold the file.
      kept.rewalk = p.options.opaque_calls;
      if (kept.rewalk) {
        kept.starts = std::move(gave);
      } else {
        for (size_t i = found_before; i < found.size(); ++i) kept.matches.push_back(*found[i]);
      }
    }
  }

  // Which results are kept is decided on ops alone; only those kept are
  // made the target's (its files and lines, its class hints).
  // One match per place and rule: the widest, then the first alternative.
  std::vector<const KeptMatch*> by_width;
  by_width.reserve(found.size());
  for (const KeptMatch* k : found) by_width.push_back(k);
  std::stable_sort(by_width.begin(), by_width.end(),
                   [](const KeptMatch* a, const KeptMatch* b) { return a->match.ops.size() > b->match.ops.size(); });
  for (const KeptMatch* k : by_width) {
    const Match& m = k->match;
    bool clash = std::any_of(result.matches.begin(), result.matches.end(), [&](const Match& kept) {
      return rule_id(*kept.pattern) == rule_id(*m.pattern) && overlaps(kept.ops, m.ops);
    });
    if (!clash) result.matches.push_back(made_for(*k, target));
  }
  drop_contained_parts(result.matches);
  std::sort(result.matches.begin(), result.matches.end(), [](const Match& a, const Match& b) {
    return std::make_pair(a.ops.front(), rule_id(*a.pattern)) < std::make_pair(b.ops.front(), rule_id(*b.pattern));
  });

  // Ops each look-alike match covers, by rule: a failed walk of the rule
  // starting there is told by the look-alike instead.
  std::vector<std::pair<const std::string*, const std::vector<int>*>> lookalike_ops;
  for (const KeptNearMiss* k : misses)
    if (!k->lookalike_ops.empty()) lookalike_ops.emplace_back(&rule_id(*k->trace.pattern), &k->lookalike_ops);
  // Near-misses: not where the same rule matched; one per rule and start op, the deepest.
  std::vector<const KeptNearMiss*> by_depth;
  by_depth.reserve(misses.size());
  for (const KeptNearMiss* k : misses) by_depth.push_back(k);
  std::stable_sort(by_depth.begin(), by_depth.end(), [](const KeptNearMiss* a, const KeptNearMiss* b) {
    return a->trace.matched_steps * b->trace.pattern_steps > b->trace.matched_steps * a->trace.pattern_steps;
  });
  // `tellable`: told unless the rule matched there. Whether it did is the
  // same for every near-miss of one rule and start op, so these are the
  // only near-misses a graph of the same code can tell: all a memo keeps.
  std::vector<const KeptNearMiss*> told, tellable;
  for (const KeptNearMiss* k : by_depth) {
    const NearMissTrace& n = k->trace;
    const std::string& id = rule_id(*n.pattern);
    bool seen = std::any_of(tellable.begin(), tellable.end(), [&](const KeptNearMiss* t) {
      return rule_id(*t->trace.pattern) == id && t->trace.anchor_op == n.anchor_op;
    });
    bool told_by_lookalike = n.pattern->lookalike_reason.empty() &&
                             std::any_of(lookalike_ops.begin(), lookalike_ops.end(), [&](const auto& l) {
                               return *l.first == id && std::binary_search(l.second->begin(), l.second->end(), n.anchor_op);
                             });
    if (seen || told_by_lookalike) continue;
    tellable.push_back(k);
    bool matched_here = std::any_of(result.matches.begin(), result.matches.end(), [&](const Match& m) {
      return rule_id(*m.pattern) == id && std::binary_search(m.ops.begin(), m.ops.end(), n.anchor_op);
    });
    if (!matched_here) told.push_back(k);
  }
  result.near_misses.reserve(told.size());
  for (const KeptNearMiss* k : told) result.near_misses.push_back(made_for(*k, target, options.traces));

  if (memo_key && !replay) {
    // Each pattern keeps its tellable near-misses, in the order it gave them;
    // a look-alike's is kept whatever it tells, for the ops it covers.
    // Nothing was replayed, so every near-miss is one of `own_misses`, in order.
    std::sort(tellable.begin(), tellable.end());
    for (PatternOutcome& o : outcomes) o.near_misses.clear();
    for (KeptNearMiss& k : own_misses) {
      PatternOutcome& o = outcomes[static_cast<size_t>(k.trace.pattern - patterns.data())];
      const bool keep = std::binary_search(tellable.begin(), tellable.end(), static_cast<const KeptNearMiss*>(&k));
      if (!o.rewalk && (keep || !k.lookalike_ops.empty())) o.near_misses.push_back(std::move(k));
    }
    std::erase_if(outcomes, [](const PatternOutcome& o) { return !o.rewalk && o.matches.empty() && o.near_misses.empty(); });
    outcomes.shrink_to_fit();  // one slot per pattern was reserved while recording
    options.memo->remember(*memo_key, std::move(outcomes));
  }
  return result;
}

}  // namespace npufuse::match

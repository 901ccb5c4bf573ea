#include "match/graph_matcher.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <set>

#include "match/op_arguments.h"
#include "match/op_signature.h"
#include "match/size_expression.h"
#include "match/value_layout.h"
#include "match/value_view.h"

namespace npufuse::match {

namespace {

using model::DataflowOp;
using model::FunctionDataflow;
using model::OpClass;

// Same computation by name and payload (attribute name, global, slice shape).
bool same_kind(const DataflowOp& p, const DataflowOp& t) {
  if (p.cls != t.cls || !same_view_op(p.name, t.name)) return false;
  if (has_labels(p)) return true;
  if (p.name == "slice") {
    // Which of lower/upper/step are given: compare the colon layout of the text.
    auto shape = [](const DataflowOp& op) {
      const std::string& s = op.attrs.empty() ? std::string() : op.attrs[0];
      return std::make_pair(!s.empty() && s[0] == ':', op.inputs.size());
    };
    return shape(p) == shape(t);
  }
  return p.attrs == t.attrs;
}

class Walk {
 public:
  // `lenient`: a binding RULE["match"] refuses (not_from / only_from) is
  // noted and the walk goes on, so the refusal is told with the depth the
  // rest of the pattern reaches.
  Walk(const Pattern& p, const TargetIndex& t, double reported_from, bool lenient = false)
      : p_(p), t_(t), pg_(p.graph), tg_(t.g), lenient_(lenient), reported_from_(reported_from) {
    s_.op_map.assign(pg_.ops.size(), -1);
    s_.param_value.assign(pg_.values.size(), -1);
  }

  Attempt run(int anchor_op) {
    Attempt a;
    int start = start_op(p_);
    const DataflowOp& P = pg_.ops[static_cast<size_t>(start)];
    const DataflowOp& T = tg_.ops[static_cast<size_t>(anchor_op)];
    int first_anchor = -1;
    for (int v : p_.anchors)
      if (pg_.producer_of(through_casts(pg_, v)).id == start) {
        first_anchor = through_casts(pg_, v);
        break;
      }
    size_t out_index = static_cast<size_t>(std::find(P.outputs.begin(), P.outputs.end(), first_anchor) - P.outputs.begin());
    bool ok = out_index < T.outputs.size() && value(first_anchor, T.outputs[out_index]);
    if (ok) returned_.push_back(T.outputs[out_index]);
    for (size_t k = 0; ok && k < p_.anchors.size(); ++k) {
      if (!p_.options.partial_returns) {
        ok = other_anchor(p_.anchors[k]);
        continue;
      }
      // Returned values computed independently (q and k each through the
      // same per-tensor op): a model computing only some of them still matches.
      Checkpoint saved = mark();
      if (!other_anchor(p_.anchors[k])) rollback(saved);
    }
    if (ok && !lenient_ && !s_.refusal.empty()) {
      // A deferred layouts refusal on an otherwise whole match: the lenient
      // walk tells it.
      refused_ = true;
      a.ok = false;
      a.matched = s_.matched;
      a.reason = s_.refusal;
      a.failed_at = s_.refusal_at;
      return a;
    }
    a.ok = ok;
    // A value whose axis order the rule refuses, in a chain that differs
    // elsewhere too: the rule is about another layout, nothing to tell.
    if (!ok && best_state_.refusal_needs_rest && !best_state_.refusal.empty()) {
      a.matched = 0;
      a.failed_at = best_.at;
      return a;
    }
    if (!ok && best_.matched < reported_from_) {
      // Too shallow to be told: only the depth is of use.
      a.matched = best_.matched;
      a.failed_at = best_.at;
      return a;
    }
    const State& s = ok ? s_ : best_state_;
    a.op_map = s.op_map;
    a.passed = s.passed;
    a.binding_passed = s.binding_passed;
    a.matched = ok ? s_.matched : best_.matched;
    a.optional_skipped = s.skipped;
    a.optional_merges = s.optional_merges;
    for (const std::string& b : s.branches)
      if (std::find(a.branches.begin(), a.branches.end(), b) == a.branches.end()) a.branches.push_back(b);
    for (int v : p_.anchors) {
      int pv = reshaped_only(s, through_casts(pg_, v));
      const DataflowOp& op = pg_.producer_of(pv);
      if (op.cls == OpClass::Input) {
        a.anchors.push_back(s.param_value[static_cast<size_t>(pv)]);
      } else {
        int mapped = s.op_map[static_cast<size_t>(op.id)];
        size_t idx = static_cast<size_t>(std::find(op.outputs.begin(), op.outputs.end(), pv) - op.outputs.begin());
        a.anchors.push_back(mapped >= 0 && idx < tg_.ops[static_cast<size_t>(mapped)].outputs.size()
                                ? tg_.ops[static_cast<size_t>(mapped)].outputs[idx]
                                : -1);
      }
    }
    for (const DataflowOp& op : pg_.ops)
      if (op.cls == OpClass::Input) {
        a.binding.push_back(s.param_value[static_cast<size_t>(op.outputs[0])]);
        bool reciprocal = std::find(s.reciprocal.begin(), s.reciprocal.end(), op.outputs[0]) != s.reciprocal.end();
        a.binding_reciprocal.push_back(reciprocal ? 1 : 0);
      }
    if (!ok) {
      a.reason = best_.reason;
      a.trace = trace_text(best_.trace);
      a.failed_at = best_.at;
    }
    // A refused axis order is news only about a chain that is otherwise there.
    if (lenient_ && !s.refusal.empty() && (ok || !s.refusal_needs_rest)) {
      reported_refusal_ = true;
      a.reason = ok ? s.refusal : s.refusal + "; " + best_.reason;
      a.failed_at = s.refusal_at;
      a.ok = false;
    }
    return a;
  }

  // A binding was refused by RULE["match"] on the way (strict walk).
  bool refused() const { return refused_; }
  // The attempt's reason is a refusal (lenient walk).
  bool reported_refusal() const { return reported_refusal_; }

 private:
  struct State {
    std::vector<int> op_map;       // pattern op -> target op
    std::vector<int> param_value;  // pattern value (a parameter's) -> target value, through casts
    std::vector<int> claimed;      // target ops matched, for injectivity
    std::vector<int> passed;
    std::vector<int> binding_passed;
    int matched = 0;
    int skipped = 0;
    std::vector<std::string> branches;  // conditions of the branches a phi was entered through
    std::vector<int> optional_merges;   // phis entered through the arm that has an optional step
    // The first binding RULE["match"] refused: in a lenient walk any, in a
    // strict one a layouts refusal, deferred until the rest of the pattern is met.
    std::string refusal;
    int refusal_at = -1;
    bool refusal_needs_rest = false;    // told only where the rest of the pattern matches (layouts)
    std::vector<int> reciprocal;        // parameters bound to a divisor (the model divides by 1/parameter)
    // Every write to op_map and param_value, so that a failed try is undone
    // by replaying it backwards rather than by copying the whole state.
    struct Write {
      bool param;
      int index;
      int old;
    };
    std::vector<Write> journal;
  };
  // A point to come back to: the sizes of the append-only parts and the
  // scalars. Only valid on the state it was taken from or one grown from it.
  struct Checkpoint {
    size_t claimed, passed, binding_passed, branches, optional_merges, reciprocal, journal;
    int matched, skipped;
    std::string refusal;
    int refusal_at;
    bool refusal_needs_rest;
  };

  Checkpoint mark() const {
    return {s_.claimed.size(), s_.passed.size(), s_.binding_passed.size(), s_.branches.size(),
            s_.optional_merges.size(), s_.reciprocal.size(),
            s_.journal.size(), s_.matched, s_.skipped, s_.refusal, s_.refusal_at, s_.refusal_needs_rest};
  }

  void rollback(const Checkpoint& c) {
    while (s_.journal.size() > c.journal) {
      const State::Write& w = s_.journal.back();
      (w.param ? s_.param_value : s_.op_map)[static_cast<size_t>(w.index)] = w.old;
      s_.journal.pop_back();
    }
    s_.claimed.resize(c.claimed);
    s_.passed.resize(c.passed);
    s_.binding_passed.resize(c.binding_passed);
    s_.branches.resize(c.branches);
    s_.optional_merges.resize(c.optional_merges);
    s_.reciprocal.resize(c.reciprocal);
    s_.matched = c.matched;
    s_.skipped = c.skipped;
    s_.refusal = c.refusal;
    s_.refusal_at = c.refusal_at;
    s_.refusal_needs_rest = c.refusal_needs_rest;
  }

  void map_op(int pattern_op, int model_op) {
    int& slot = s_.op_map[static_cast<size_t>(pattern_op)];
    s_.journal.push_back({false, pattern_op, slot});
    slot = model_op;
  }

  void bind_value(int pattern_value, int model_value) {
    int& slot = s_.param_value[static_cast<size_t>(pattern_value)];
    s_.journal.push_back({true, pattern_value, slot});
    slot = model_value;
  }
  // The steps entered so far, formatted only for the attempt's reported
  // failure (most attempts fail, and only the deepest failure is told).
  struct TraceStep {
    int op;
    const char* note;
  };
  struct Failure {
    int matched = -1;
    std::string reason;
    std::vector<TraceStep> trace;
    int at = -1;
  };

  // A value a later anchor names: already matched on the way, or found by
  // trying every model op of its kind.
  // A returned value the pattern only reshapes (`scale.squeeze(-1)`) is,
  // in a model that keeps the shape, the value before the reshape.
  int reshaped_only(const State& s, int pv) const {
    const DataflowOp& P = pg_.producer_of(pv);
    if (P.cls != OpClass::View || P.inputs.empty() || s.op_map[static_cast<size_t>(P.id)] >= 0) return pv;
    int inner = through_casts(pg_, P.inputs[0]);
    const DataflowOp& I = pg_.producer_of(inner);
    return I.cls != OpClass::Input && s.op_map[static_cast<size_t>(I.id)] >= 0 ? inner : pv;
  }

  bool other_anchor(int v) {
    int pv = reshaped_only(s_, through_casts(pg_, v));
    const DataflowOp& P = pg_.producer_of(pv);
    if (P.cls == OpClass::Input || pattern_constant(pv)) return true;
    if (s_.op_map[static_cast<size_t>(P.id)] >= 0) return true;
    size_t idx = static_cast<size_t>(std::find(P.outputs.begin(), P.outputs.end(), pv) - P.outputs.begin());
    for (int cand : t_.ops_named(P.name)) {
      const DataflowOp& T = tg_.ops[static_cast<size_t>(cand)];
      if (idx >= T.outputs.size()) continue;
      // Two returned values of the pattern (q_embed, k_embed) are two values
      // of the model: a model op already matched cannot be a later anchor.
      if (std::find(s_.claimed.begin(), s_.claimed.end(), T.id) != s_.claimed.end()) continue;
      Checkpoint saved = mark();
      if (value(pv, T.outputs[idx]) && !tied_to_returned(T.outputs[idx])) {
        returned_.push_back(T.outputs[idx]);
        return true;
      }
      rollback(saved);
    }
    return fail_with([&] { return fmt::format("no {} in the model for returned value {}", describe_op(P), pg_.values[static_cast<size_t>(pv)].name); }, -1);
  }

  // Returned values a per-tensor operator computes independently (q's and
  // k's norm or RoPE) never feed one another: a pairing where one is computed
  // from the other (the layer's input norm taken for q, q_norm for k) is
  // two stages of one path, not two tensors.
  bool tied_to_returned(int tv) const {
    if (!p_.options.partial_returns && !p_.options.independent_returns) return false;
    for (int earlier : returned_)
      if (depends_on(tv, earlier) || depends_on(earlier, tv)) return true;
    return false;
  }

  // Whether model value `later` is computed (directly or not) from `earlier`.
  bool depends_on(int later, int earlier) const {
    std::vector<char> seen(tg_.values.size(), 0);
    std::vector<int> todo{later};
    while (!todo.empty()) {
      int v = todo.back();
      todo.pop_back();
      if (v == earlier) return true;
      if (v < 0 || static_cast<size_t>(v) >= seen.size() || seen[static_cast<size_t>(v)]) continue;
      seen[static_cast<size_t>(v)] = 1;
      for (int in : tg_.producer_of(v).inputs) todo.push_back(in);
    }
    return false;
  }

  bool fail(const std::string& reason, int target_op) {
    return fail_with([&] { return reason; }, target_op);
  }

  // The reason is built only for a failure deeper than the best so far:
  // shallower ones are never shown.
  template <class Reason>
  bool fail_with(Reason&& reason, int target_op) {
    if (s_.matched > best_.matched) {
      best_.matched = s_.matched;
      best_.at = target_op;
      if (s_.matched >= reported_from_) {
        best_.reason = reason();
        best_.trace = trace_;
        best_state_ = s_;
      }
    }
    return false;
  }

  std::vector<std::string> trace_text(const std::vector<TraceStep>& steps) const {
    std::vector<std::string> out;
    out.reserve(steps.size());
    for (const TraceStep& step : steps) {
      const DataflowOp& T = tg_.ops[static_cast<size_t>(step.op)];
      out.push_back(fmt::format("{} at {}{}", describe_op(T), where(T), step.note));
    }
    return out;
  }

  std::string parameter_name(int pv) const {
    const DataflowOp& op = pg_.producer_of(pv);
    return op.attrs.empty() ? "?" : op.attrs[0];
  }

  std::string value_text(int tv) const {
    const DataflowOp& op = tg_.producer_of(tv);
    const std::string& name = tg_.values[static_cast<size_t>(tv)].name;
    if (op.cls == OpClass::Attribute && op.inputs.empty()) return op.name;
    return name.empty() ? describe_op(op) : name;
  }

  // Two reads of `self.n_rep` or two literals `2` are one value for a parameter.
  bool same_value(int a, int b, int depth = 0) const {
    a = through_casts(tg_, a);
    b = through_casts(tg_, b);
    if (a == b) return true;
    const DataflowOp& pa = tg_.producer_of(a);
    const DataflowOp& pb = tg_.producer_of(b);
    if (pa.cls == OpClass::Attribute && pa.inputs.empty() && pb.cls == OpClass::Attribute && pb.inputs.empty())
      return pa.name == pb.name && pa.attrs == pb.attrs;
    const std::optional<ConstantValue>& ca = t_.constant(a);
    const std::optional<ConstantValue>& cb = t_.constant(b);
    if (ca || cb) return ca && cb && *ca == *cb;
    // The same pure computation of the same values (no in-place op, no call).
    if (depth > 6 || pa.name != pb.name || pa.attrs != pb.attrs || pa.inputs.size() != pb.inputs.size() || pa.in_place ||
        pb.in_place || pa.cls == OpClass::Call || pa.cls == OpClass::Module || pa.cls == OpClass::Input)
      return false;
    auto ia = std::find(pa.outputs.begin(), pa.outputs.end(), a) - pa.outputs.begin();
    auto ib = std::find(pb.outputs.begin(), pb.outputs.end(), b) - pb.outputs.begin();
    if (ia != ib) return false;
    for (size_t i = 0; i < pa.inputs.size(); ++i)
      if (!same_value(pa.inputs[i], pb.inputs[i], depth + 1)) return false;
    return true;
  }

  struct Refusal {
    std::string why;  // "" when RULE["match"] does not refuse
    int at = -1;
    bool needs_rest = false;  // a layouts refusal: told only where the rest matches
  };

  // Why RULE["match"] refuses binding `param` to model value `tv`.
  Refusal refusal_of(const std::string& param, int tv, int root) const {
    if (auto it = p_.options.not_from.find(param); it != p_.options.not_from.end()) {
      const DataflowOp& producer = tg_.producer_of(root);
      if (it->second.count(producer.name))
        return {fmt::format("{} is computed by {} at {}, not a plain value", param, describe_op(producer), where(producer)),
                producer.id, false};
    }
    if (auto it = p_.options.only_from.find(param); it != p_.options.only_from.end()) {
      const DataflowOp& producer = tg_.producer_of(through_casts(tg_, tv));
      if (!it->second.count(producer.name))
        return {fmt::format("{} is {} at {}, not computed by {}", param, describe_op(producer), where(producer),
                            fmt::join(it->second, "/")),
                producer.id, false};
    }
    if (auto it = p_.options.layouts.find(param); it != p_.options.layouts.end()) {
      ValueLayout l = layout_of(tg_, tv);
      if (l.layout != it->second)
        return {l.layout.empty() ? fmt::format("the code does not show the axis order of {} ({}); the rule needs {}", param,
                                               l.evidence, it->second)
                                 : fmt::format("{} is {} ({}), not {}", param, l.layout, l.evidence, it->second),
                tg_.producer_of(tv).id, true};
    }
    return {};
  }

  bool bind(int pv, int tv) {
    std::vector<int> passed;
    int root = through_layout(tg_, tv, &passed);
    std::string param = parameter_name(pv);
    if (Refusal r = refusal_of(param, tv, root); !r.why.empty()) {
      // An axis order is refused only once the rest of the pattern is there
      // (run()), so a chain that differs elsewhere is told by that difference.
      if (!lenient_ && !r.needs_rest) {
        refused_ = true;
        return fail(r.why, r.at);
      }
      if (s_.refusal.empty()) {
        s_.refusal = r.why;
        s_.refusal_at = r.at;
        s_.refusal_needs_rest = r.needs_rest;
      }
    }
    const int bound = s_.param_value[static_cast<size_t>(pv)];
    if (bound >= 0) {
      if (same_value(through_layout(tg_, bound), root)) return true;
      return fail_with([&] { return fmt::format("{} is used twice: {} and {} differ", param, value_text(bound), value_text(root)); },
                  tg_.producer_of(root).id);
    }
    bind_value(pv, through_casts(tg_, tv));
    s_.binding_passed.insert(s_.binding_passed.end(), passed.begin(), passed.end());
    return true;
  }

  // Pattern value `pv` is computed as model value `tv`.
  bool value(int pv, int tv) {
    pv = through_casts(pg_, pv);
    if (const std::optional<ConstantValue>& pc = pattern_constant(pv)) {
      const std::optional<ConstantValue>& tc = t_.constant(tv);
      if (tc && *tc == *pc) return true;
      if (s_.matched <= best_.matched) return false;
      const DataflowOp& T = tg_.producer_of(through_casts(tg_, tv));
      return fail_with([&] { return fmt::format("expected {}, found {} at {}", pc->str(), tc ? tc->str() : describe_op(T), where(T)); }, T.id);
    }
    // A size read from a tensor's shape is metadata: it ties no parameter.
    if (pattern_size_expression(pv)) {
      if (size_matches(pg_, pv, tg_, tv)) return true;
      if (s_.matched <= best_.matched) return false;
      const DataflowOp& T = tg_.producer_of(through_casts(tg_, tv));
      return fail_with([&] { return fmt::format("expected a size computed like {}, found {} at {}", describe_op(pg_.producer_of(pv)),
                              describe_op(T), where(T)); },
                  T.id);
    }
    const DataflowOp& P = pg_.producer_of(pv);
    if (P.cls == OpClass::Input) return bind(pv, tv);

    // Model-side casts are transparent; so are layout views unless the pattern
    // asks for that very view here.
    std::vector<int> passed;
    for (;;) {
      tv = through_packing(tg_, tv);
      const DataflowOp& op = tg_.producer_of(tv);
      bool skip = op.cls == OpClass::Cast || ((is_layout_view(op.name) || is_inference_identity(op.name)) && !same_view_op(op.name, P.name)) ||
                  (P.name == "iterate" && first_of_nonzero_row(tg_, op));
      if (!skip || op.inputs.empty() || op.outputs.size() != 1) break;
      passed.push_back(op.id);
      tv = op.inputs[0];
    }
    const DataflowOp& T = tg_.producer_of(tv);
    // A value merged from branches (`if n_rep == 1: return x`): the pattern
    // may be any one of them.
    // When the pattern step is optional (`if n_rep == 1: return x` around a
    // repeat_kv), either branch is the same chain for a fused kernel: the
    // branch that has the step is preferred and no condition is recorded.
    if (T.name == "phi" && P.name != "phi") {
      bool optional_step = p_.options.optional.count(P.name) > 0;
      std::optional<State> fallback;
      for (int in : T.inputs) {
        Checkpoint saved = mark();
        s_.passed.push_back(T.id);
        const std::string& branch = tg_.producer_of(through_casts(tg_, in)).condition;
        if (branch != T.condition && !branch.empty() && !optional_step) s_.branches.push_back(branch);
        if (value(pv, in)) {
          if (!optional_step) return true;
          // The arm where the step itself was paired (a deeper optional
          // step, a missing repeat_kv, may have been skipped on either).
          const int step = s_.op_map[static_cast<size_t>(P.id)];
          if (step >= 0) {
            if (other_arms_skip_step(T, in, step)) s_.optional_merges.push_back(T.id);
            return true;
          }
          if (!fallback) fallback = s_;
        }
        rollback(saved);
      }
      if (fallback) {
        s_ = std::move(*fallback);
        return true;
      }
      // A step adding an optional input the model lacks: the merge itself
      // (a loop's result) is the other value's.
      if (int rest = optional_input_rest(p_, P.id); rest >= 0) {
        ++s_.skipped;
        if (value(rest, tv)) return true;
        --s_.skipped;
      }
      return false;
    }
    size_t out_index = static_cast<size_t>(std::find(P.outputs.begin(), P.outputs.end(), pv) - P.outputs.begin());

    const int mapped = s_.op_map[static_cast<size_t>(P.id)];
    if (mapped >= 0) {
      const DataflowOp& M = tg_.ops[static_cast<size_t>(mapped)];
      bool same = mapped == T.id && out_index < T.outputs.size() && T.outputs[out_index] == tv;
      // `x.shape[-1] // 2` written once in the pattern may be computed in
      // each helper call of the model: equal computations are one value.
      if (!same && out_index < M.outputs.size()) same = same_value(M.outputs[out_index], tv);
      if (same) {
        s_.passed.insert(s_.passed.end(), passed.begin(), passed.end());
        return true;
      }
      return fail_with([&] { return fmt::format("{} feeds two places in the pattern; the model computes it twice ({} and {})", describe_op(P),
                              where(tg_.ops[static_cast<size_t>(mapped)]), where(T)); },
                  T.id);
    }

    bool optional = p_.options.optional.count(P.name) > 0 && !P.inputs.empty();
    if (optional) {
      Checkpoint saved = mark();
      if (pair(P, T, tv, out_index, passed)) return true;
      rollback(saved);
      ++s_.skipped;
      return value(P.inputs[0], tv);
    }
    // A step combining an optional input (`routed + shared`) the model may
    // not have: the match goes on with the other value.
    if (int rest = optional_input_rest(p_, P.id); rest >= 0) {
      Checkpoint saved = mark();
      if (pair(P, T, tv, out_index, passed)) return true;
      rollback(saved);
      ++s_.skipped;
      return value(rest, tv);
    }
    return pair(P, T, tv, out_index, passed);
  }

  // Every arm of `merge` other than `taken` is an input of `step` (the
  // model op an optional pattern step was paired with): the other arm is the
  // same chain with the step left out.
  bool other_arms_skip_step(const DataflowOp& merge, int taken, int step) const {
    if (step < 0) return false;
    const DataflowOp& op = tg_.ops[static_cast<size_t>(step)];
    for (int arm : merge.inputs) {
      if (arm == taken) continue;
      int plain = through_casts(tg_, arm);
      if (std::none_of(op.inputs.begin(), op.inputs.end(), [&](int in) { return through_casts(tg_, in) == plain; }))
        return false;
    }
    return true;
  }

  bool is_constant(const FunctionDataflow& g, int v, double number) {
    const std::optional<ConstantValue>& c = constant_in(g, v);
    return c && c->numeric && c->number == number;
  }

  // Spellings of one computation that differ in op names: `x ** 2` and
  // `x * x`; `rsqrt(y)` and `1 / sqrt(y)`. The pattern's step is paired with
  // the model's op(s) and matching goes on below them.
  // The pattern op names equivalent_spelling knows another spelling of.
  static bool has_other_spellings(std::string_view name) {
    return name == "mul" || name == "pow" || name == "div" || name == "rsqrt" || name == "repeat_interleave" || name == "view" ||
           name == "reshape" || name == "transpose";
  }

  bool equivalent_spelling(const DataflowOp& P, const DataflowOp& T, const std::vector<int>& passed) {
    auto claim = [&](std::initializer_list<int> target_ops, int next_p, int next_t) {
      map_op(P.id, T.id);
      for (int id : target_ops)
        if (id != T.id) s_.passed.push_back(id);
      s_.passed.insert(s_.passed.end(), passed.begin(), passed.end());
      ++s_.matched;
      trace_.push_back({T.id, ""});
      bool ok = value(next_p, next_t);
      trace_.pop_back();
      return ok;
    };
    if (P.name == "pow" && P.inputs.size() == 2 && is_constant(pg_, P.inputs[1], 2) && T.name == "mul" && T.inputs.size() == 2 &&
        same_value(T.inputs[0], T.inputs[1]))
      return claim({T.id}, P.inputs[0], T.inputs[0]);
    if (P.name == "mul" && P.inputs.size() == 2 && through_casts(pg_, P.inputs[0]) == through_casts(pg_, P.inputs[1]) &&
        T.name == "pow" && T.inputs.size() == 2 && is_constant(tg_, T.inputs[1], 2))
      return claim({T.id}, P.inputs[0], T.inputs[0]);
    if (P.name == "rsqrt" && P.inputs.size() == 1 && T.name == "div" && T.inputs.size() == 2 && is_constant(tg_, T.inputs[0], 1)) {
      const DataflowOp& root = tg_.producer_of(through_casts(tg_, T.inputs[1]));
      if (root.name == "sqrt" && root.inputs.size() == 1) return claim({T.id, root.id}, P.inputs[0], root.inputs[0]);
    }
    if (P.name == "mul" && P.inputs.size() == 2 && T.name == "div" && T.inputs.size() == 2 && divides_by_sqrt(P, T, passed))
      return true;
    if (P.name == "repeat_interleave" && T.name == "expand") return repeat_kv_spelling(P, T, passed);
    if (P.name == "transpose" && T.name == "permute" && P.inputs.size() == 3 && swaps_two_axes(P, T))
      return claim({T.id}, P.inputs[0], T.inputs[0]);
    if ((P.name == "view" || P.name == "reshape") && T.name == "unsqueeze") return unit_axes_spelling(P, T, passed);
    if (P.name == "mul" && P.inputs.size() == 2 && T.name == "div" && T.inputs.size() == 2) return reciprocal_scale(P, T, passed);
    if (P.name == "div" && P.inputs.size() == 2 && is_constant(pg_, P.inputs[0], 1) && T.name == "rsqrt" && T.inputs.size() == 1) {
      const DataflowOp& root = pg_.producer_of(through_casts(pg_, P.inputs[1]));
      if (root.name == "sqrt" && root.inputs.size() == 1) {
        map_op(root.id, T.id);
        return claim({T.id}, root.inputs[0], T.inputs[0]);
      }
    }
    return false;
  }

  // `x.transpose(1, 2)` written as `x.permute(0, 2, 1, 3)` (or with the
  // order as one tuple): a permutation that swaps the transpose's two axes
  // and keeps every other one in place.
  bool swaps_two_axes(const DataflowOp& P, const DataflowOp& T) {
    if (T.inputs.size() < 2) return false;
    std::vector<int> dims(T.inputs.begin() + 1, T.inputs.end());
    if (dims.size() == 1) {
      const DataflowOp& seq = tg_.producer_of(dims[0]);
      if (seq.name != "tuple" && seq.name != "list") return false;
      dims = seq.inputs;
    }
    const int rank = static_cast<int>(dims.size());
    std::vector<int> order;
    for (int v : dims) {
      const std::optional<ConstantValue>& c = constant_in(tg_, v);
      if (!c || !c->numeric) return false;
      order.push_back(static_cast<int>(c->number) < 0 ? static_cast<int>(c->number) + rank : static_cast<int>(c->number));
    }
    auto axis = [&](int v) {
      const std::optional<ConstantValue>& c = constant_in(pg_, v);
      if (!c || !c->numeric) return -1;
      int a = static_cast<int>(c->number);
      if (a < 0) a += rank;
      return a >= 0 && a < rank ? a : -1;
    };
    const int a = axis(P.inputs[1]), b = axis(P.inputs[2]);
    if (a < 0 || b < 0 || a == b) return false;
    for (int i = 0; i < rank; ++i)
      if (order[static_cast<size_t>(i)] != (i == a ? b : i == b ? a : i)) return false;
    return true;
  }

  // `x * rsqrt(y)` written as `x / sqrt(y)` (a cast on the divisor allowed).
  bool divides_by_sqrt(const DataflowOp& P, const DataflowOp& T, const std::vector<int>& passed) {
    std::vector<int> casts;
    const DataflowOp& root = tg_.producer_of(through_casts(tg_, T.inputs[1], &casts));
    if (root.name != "sqrt" || root.inputs.size() != 1) return false;
    for (size_t side = 0; side < 2; ++side) {
      const DataflowOp& r = pg_.producer_of(through_casts(pg_, P.inputs[side]));
      if (r.name != "rsqrt" || r.inputs.size() != 1) continue;
      Checkpoint saved = mark();
      map_op(P.id, T.id);
      map_op(r.id, root.id);
      s_.claimed.push_back(T.id);
      s_.claimed.push_back(root.id);
      s_.passed.insert(s_.passed.end(), passed.begin(), passed.end());
      s_.passed.insert(s_.passed.end(), casts.begin(), casts.end());
      s_.matched += 2;
      trace_.push_back({T.id, " (division by sqrt)"});
      bool ok = value(P.inputs[1 - side], T.inputs[0]) && value(r.inputs[0], root.inputs[0]);
      trace_.pop_back();
      if (ok) return true;
      rollback(saved);
    }
    return false;
  }

  // A table broadcast to a rank-4 operand: `t.view(1, s, 1, d)` in the
  // pattern, `t[None, :, None, :]` or `t.unsqueeze(0).unsqueeze(2)` in the
  // model. The view's literal 1s are the new unit axes; the model's chain of
  // unsqueezes (axes counted from the front) must put its new axes at the
  // same places. The view's other sizes are the input's own, as everywhere
  // the walk passes a layout view. T is the outermost unsqueeze.
  bool unit_axes_spelling(const DataflowOp& P, const DataflowOp& T, const std::vector<int>& passed) {
    if (P.inputs.size() < 3) return false;
    std::vector<int> pattern_units;
    for (size_t i = 1; i < P.inputs.size(); ++i) {
      const std::optional<ConstantValue>& c = pattern_constant(through_casts(pg_, P.inputs[i]));
      if (c && c->numeric && c->number == 1) pattern_units.push_back(static_cast<int>(i - 1));
      else if (c && !c->numeric) return false;  // a starred or packed size list: not this form
    }
    if (pattern_units.empty()) return false;
    // The model's unsqueezes, innermost first, and the tensor below them.
    std::vector<const DataflowOp*> chain;
    int base = -1;
    for (const DataflowOp* op = &T; op->name == "unsqueeze" && op->inputs.size() == 2 && op->outputs.size() == 1;
         op = &tg_.producer_of(base)) {
      chain.insert(chain.begin(), op);
      base = through_casts(tg_, op->inputs[0]);
    }
    std::vector<int> model_units;
    for (const DataflowOp* op : chain) {
      if (op->attrs.size() > 2 && op->attrs[2] == model::kAfterEllipsis) return false;
      const std::optional<ConstantValue>& c = t_.constant(op->inputs[1]);
      if (!c || !c->numeric || c->number < 0) return false;
      int d = static_cast<int>(c->number);
      for (int& u : model_units)
        if (u >= d) ++u;
      model_units.push_back(d);
    }
    std::sort(model_units.begin(), model_units.end());
    if (model_units != pattern_units) return false;
    map_op(P.id, T.id);
    s_.claimed.push_back(T.id);
    for (const DataflowOp* op : chain)
      if (op->id != T.id) s_.passed.push_back(op->id);
    s_.passed.insert(s_.passed.end(), passed.begin(), passed.end());
    ++s_.matched;
    trace_.push_back({T.id, " (new unit axes)"});
    bool ok = value(P.inputs[0], base);
    trace_.pop_back();
    return ok;
  }

  // The value of pattern argument `key` of `P` (-1 when absent).
  int argument_value(const DataflowOp& P, const std::string& key) const {
    for (const OpArgument& a : all_arguments(P))
      if (a.key == key) return a.value;
    return -1;
  }

  // HF's repeat_kv: `x[:, :, None].expand(b, kvh, n_rep, s, d).reshape(b, kvh * n_rep, s, d)`
  // (or `x.unsqueeze(2)`) is `repeat_interleave(x, n_rep, dim=1)`. The reshape
  // is a layout view the walk has already passed; T is the expand.
  bool repeat_kv_spelling(const DataflowOp& P, const DataflowOp& T, const std::vector<int>& passed) {
    if (T.inputs.empty()) return false;
    const DataflowOp& inner = tg_.producer_of(through_casts(tg_, T.inputs[0]));
    int new_axis = -1;
    if (inner.name == "unsqueeze" && inner.inputs.size() == 2) {
      const std::optional<ConstantValue>& c = t_.constant(inner.inputs[1]);
      if (c && c->numeric) new_axis = static_cast<int>(c->number);
    } else if (inner.name == "getitem" && inner.inputs.size() == 2) {
      const DataflowOp& index = tg_.producer_of(inner.inputs[1]);
      for (size_t i = 0; index.name == "tuple" && i < index.inputs.size(); ++i)
        if (is_none_constant(tg_, index.inputs[i])) {
          new_axis = static_cast<int>(i);
          break;
        }
    }
    if (new_axis < 1 || inner.inputs.empty()) return false;
    // The copies sit next to the axis they repeat.
    int dim = argument_value(P, "dim");
    if (auto c = dim >= 0 ? constant_of(pg_, dim) : std::nullopt; c && c->numeric && c->number >= 0 && c->number != new_axis - 1)
      return false;
    map_op(P.id, T.id);
    s_.claimed.push_back(T.id);
    s_.passed.push_back(inner.id);
    s_.passed.insert(s_.passed.end(), passed.begin(), passed.end());
    ++s_.matched;
    trace_.push_back({T.id, " (repeat_kv)"});
    bool ok = value(argument_value(P, "input"), inner.inputs[0]);
    int repeats = argument_value(P, "repeats");
    if (ok && repeats >= 0 && static_cast<size_t>(new_axis) + 1 < T.inputs.size()) ok = value(repeats, T.inputs[static_cast<size_t>(new_axis) + 1]);
    trace_.pop_back();
    return ok;
  }

  // `scores * scaling` written as `scores / math.sqrt(head_dim)`: the scale
  // parameter is bound to the divisor's reciprocal.
  bool reciprocal_scale(const DataflowOp& P, const DataflowOp& T, const std::vector<int>& passed) {
    for (int side = 0; side < 2; ++side) {
      int scale = through_casts(pg_, P.inputs[static_cast<size_t>(side)]);
      if (pg_.producer_of(scale).cls != OpClass::Input) continue;
      Checkpoint saved = mark();
      map_op(P.id, T.id);
      s_.claimed.push_back(T.id);
      s_.passed.insert(s_.passed.end(), passed.begin(), passed.end());
      ++s_.matched;
      trace_.push_back({T.id, " (division by the reciprocal scale)"});
      bool ok = value(P.inputs[static_cast<size_t>(1 - side)], T.inputs[0]) && bind(scale, T.inputs[1]);
      trace_.pop_back();
      if (ok) {
        s_.reciprocal.push_back(scale);
        return true;
      }
      rollback(saved);
    }
    return false;
  }

  // transpose(2, 3), transpose(3, 2) and transpose(-2, -1) swap the same two
  // axes of the 4-D tensors attention works on.
  std::optional<bool> same_transpose(const OpArguments& pa, const OpArguments& ta) {
    auto axes = [](const FunctionDataflow& g, const OpArguments& args) -> std::optional<std::set<int>> {
      std::set<int> out;
      for (const OpArgument& a : args) {
        if (a.key != "dim0" && a.key != "dim1") continue;
        auto c = constant_of(g, a.value);
        if (!c || !c->numeric) return std::nullopt;
        int d = static_cast<int>(c->number);
        out.insert(d < 0 ? d + 4 : d);
      }
      if (out.size() != 2) return std::nullopt;
      return out;
    };
    auto p = axes(pg_, pa), t = axes(tg_, ta);
    if (!p || !t) return std::nullopt;
    return *p == *t;
  }

  // unsqueeze's new axis: the same number, or one written as an index after
  // an Ellipsis (`x[..., None]`, counted from the back of a tensor of unknown
  // rank) and the other counted from the front (`x[:, :, None]`), which only
  // the rank tells apart. An axis the code wrote as a number (`unsqueeze(-2)`)
  // says what its author meant and is compared as it is. nullopt: a dim that
  // is no literal, compared as any other argument.
  std::optional<bool> same_new_axis(const DataflowOp& P, const DataflowOp& T, const OpArguments& pa,
                                    const OpArguments& ta) {
    auto dim = [](const FunctionDataflow& g, const OpArguments& args) -> std::optional<int> {
      for (const OpArgument& a : args) {
        if (a.key != "dim") continue;
        auto c = constant_of(g, a.value);
        if (!c || !c->numeric) return std::nullopt;
        return static_cast<int>(c->number);
      }
      return std::nullopt;
    };
    auto p = dim(pg_, pa), t = dim(tg_, ta);
    if (!p || !t) return std::nullopt;
    if (*p == *t) return true;
    auto after_ellipsis = [](const DataflowOp& op) { return op.attrs.size() > 2 && op.attrs[2] == model::kAfterEllipsis; };
    if ((*p < 0 && *t >= 0 && after_ellipsis(P)) || (*t < 0 && *p >= 0 && after_ellipsis(T))) return true;
    // Next to a unit axis the model's own unsqueeze just added at `a`, a new
    // axis at a or at a + 1 gives the same tensor: the second unsqueeze(0) of
    // `cos.unsqueeze(0).unsqueeze(0)` is the pattern's unsqueeze(1) of
    // `cos.unsqueeze(0)`.
    if (*p >= 0 && *t >= 0 && (*p == *t + 1 || *t == *p + 1) && !T.inputs.empty() &&
        tg_.values[static_cast<size_t>(T.inputs[0])].producer >= 0) {
      const DataflowOp& below = tg_.producer_of(T.inputs[0]);
      if (below.name == "unsqueeze" && below.outputs.size() == 1) {
        std::optional<int> a = dim(tg_, t_.arguments.of(below));
        if (a && *a == std::min(*p, *t)) return true;
      }
    }
    return false;
  }

  // `torch.cat([a, b])` and `torch.cat((a, b))`: the tensors a concatenation
  // or stack reads may be packed in a list or a tuple alike.
  bool same_tensor_sequence(const DataflowOp& P, const DataflowOp& T) const {
    auto packing = [](const DataflowOp& op) { return op.name == "list" || op.name == "tuple"; };
    if (!packing(P) || !packing(T) || P.cls != T.cls || P.outputs.empty()) return false;
    const std::vector<int>& readers = pattern_readers(P.outputs[0]);
    for (int reader : readers) {
      const std::string& name = pg_.ops[static_cast<size_t>(reader)].name;
      if (name != "cat" && name != "concat" && name != "concatenate" && name != "stack") return false;
    }
    return !readers.empty();
  }

  bool kinds_agree(const DataflowOp& P, const DataflowOp& T) const {
    return same_kind(P, T) || same_tensor_sequence(P, T);
  }

  // The pattern loops over every id (`for e in range(n)`); the model over
  // some of them: a slice `range(a, b)` (one rank's experts), or a tensor of
  // ids computed from what the loop body reads (`(mask.sum(...) > 0)
  // .nonzero()`: the experts some token chose; the others add nothing). A
  // tensor of ids needs `n` bound elsewhere, the slice leaves it unbound (the
  // plan names what its rewrite needs, plan/candidate_builder).
  bool loop_over_some_ids(const DataflowOp& P, const DataflowOp& T, const std::vector<int>& passed) {
    if (P.inputs.size() != 1 || T.outputs.size() != 1) return false;
    const std::vector<int>& readers = pattern_readers(P.outputs[0]);
    if (readers.empty() || !std::all_of(readers.begin(), readers.end(), [&](int r) { return pg_.ops[static_cast<size_t>(r)].name == "iterate"; }))
      return false;
    bool slice = T.name == "range" && T.inputs.size() == 2 && T.cls == OpClass::Compute;
    // `for e in ids.unique()`: the ids some token chose, read from a tensor the
    // match has bound to a parameter (the routing ids the body compares with
    // e). Like the slice it leaves the count unbound; the plan asks for it.
    bool present_ids = false;
    if (!slice && T.name == "unique" && T.cls == OpClass::Compute)
      for (size_t pv = 0; pv < s_.param_value.size() && !present_ids; ++pv)
        if (int bound = s_.param_value[pv]; bound >= 0 && depends_on(T.outputs[0], bound)) present_ids = true;
    if (!slice && !present_ids) {
      int count = through_casts(pg_, P.inputs[0]);
      bool bound = pg_.producer_of(count).cls == OpClass::Input && s_.param_value[static_cast<size_t>(count)] >= 0;
      if (!bound || T.cls != OpClass::Compute || T.name == "range") return false;
      bool from_walk = std::any_of(s_.claimed.begin(), s_.claimed.end(), [&](int op) {
        const DataflowOp& C = tg_.ops[static_cast<size_t>(op)];
        return std::any_of(C.outputs.begin(), C.outputs.end(), [&](int v) { return depends_on(T.outputs[0], v); });
      });
      if (!from_walk) return false;
    }
    map_op(P.id, T.id);
    s_.claimed.push_back(T.id);
    s_.passed.insert(s_.passed.end(), passed.begin(), passed.end());
    ++s_.matched;
    return true;
  }

  bool pair(const DataflowOp& P, const DataflowOp& T, int tv, size_t out_index, const std::vector<int>& passed) {
    if (P.name == "range" && !(T.name == "range" && T.inputs.size() == P.inputs.size())) {
      Checkpoint saved = mark();
      if (loop_over_some_ids(P, T, passed)) return true;
      rollback(saved);
    }
    const bool agree = kinds_agree(P, T);
    if (!agree && has_other_spellings(P.name)) {
      Checkpoint saved = mark();
      if (equivalent_spelling(P, T, passed)) return true;
      rollback(saved);
    }
    if (!agree && s_.matched <= best_.matched) return false;  // not deeper: no message to build
    if (!agree) return fail_with([&] { return fmt::format("expected {}, found {} at {}", describe_op(P), describe_op(T), where(T)); }, T.id);
    if (out_index >= T.outputs.size() || T.outputs[out_index] != tv)
      return fail_with([&] { return fmt::format("expected output {} of {} at {}", out_index, describe_op(T), where(T)); }, T.id);
    std::optional<Checkpoint> before;
    if (P.name == "mul") before = mark();
    map_op(P.id, T.id);
    s_.claimed.push_back(T.id);
    s_.passed.insert(s_.passed.end(), passed.begin(), passed.end());
    ++s_.matched;
    trace_.push_back({T.id, ""});
    bool ok = arguments_match(P, T);
    trace_.pop_back();
    if (ok || !before) return ok;
    // `x * 0.5 * y` grouped another way in the model (`x * (0.5 * y)`).
    rollback(*before);
    return same_product(P, T, passed);
  }

  // The factors of the product `op` computes: the inputs of the muls nested
  // under it that nothing else reads (casts end a product: they round).
  void product_factors(const FunctionDataflow& g, const DataflowOp& op, bool pattern, std::vector<int>& factors,
                       std::vector<int>& muls) const {
    muls.push_back(op.id);
    for (int in : op.inputs) {
      const DataflowOp& src = g.producer_of(in);
      size_t readers = pattern ? pattern_readers(in).size() : t_.readers[static_cast<size_t>(in)].size();
      if (src.name == "mul" && src.cls == OpClass::Compute && src.inputs.size() == 2 && readers == 1 && muls.size() < 6)
        product_factors(g, src, pattern, factors, muls);
      else
        factors.push_back(in);
    }
  }

  bool same_product(const DataflowOp& P, const DataflowOp& T, const std::vector<int>& passed) {
    std::vector<int> pattern_factors, pattern_muls, model_factors, model_muls;
    product_factors(pg_, P, true, pattern_factors, pattern_muls);
    product_factors(tg_, T, false, model_factors, model_muls);
    if (pattern_factors.size() < 3 || pattern_factors.size() != model_factors.size()) return false;
    for (size_t i = 0; i < pattern_muls.size(); ++i) {
      map_op(pattern_muls[i], model_muls[i]);
      s_.claimed.push_back(model_muls[i]);
    }
    s_.passed.insert(s_.passed.end(), passed.begin(), passed.end());
    s_.matched += static_cast<int>(pattern_muls.size());
    trace_.push_back({T.id, " (factors regrouped)"});
    std::vector<char> used(model_factors.size(), 0);
    bool ok = match_factors(pattern_factors, model_factors, used, 0);
    trace_.pop_back();
    return ok;
  }

  // Pattern factors from `i` on, each paired with a model factor not used yet.
  bool match_factors(const std::vector<int>& pattern, const std::vector<int>& model, std::vector<char>& used, size_t i) {
    if (i == pattern.size()) return true;
    for (size_t j = 0; j < model.size(); ++j) {
      if (used[j]) continue;
      Checkpoint saved = mark();
      used[j] = 1;
      if (value(pattern[i], model[j]) && match_factors(pattern, model, used, i + 1)) return true;
      used[j] = 0;
      rollback(saved);
    }
    return false;
  }

  bool is_full_slice(int v) const {
    const DataflowOp& op = tg_.producer_of(v);
    return op.name == "slice" && op.inputs.empty() && !op.attrs.empty() && op.attrs[0] == ":";
  }

  // An index `[..., i]` in the pattern and `[:, :, :, i]` in the model: the
  // model's leading whole-axis slices are what the Ellipsis stands for.
  std::optional<bool> ellipsis_index(const DataflowOp& P, const DataflowOp& T) {
    auto is_ellipsis = [this](const FunctionDataflow& g, int v) {
      const std::optional<ConstantValue>& c = constant_in(g, v);
      return c && !c->numeric && c->text == "...";
    };
    if (P.inputs.empty() || !is_ellipsis(pg_, P.inputs[0]) || T.inputs.size() < P.inputs.size()) return std::nullopt;
    for (int v : T.inputs)
      if (is_ellipsis(tg_, v)) return std::nullopt;
    size_t lead = T.inputs.size() - (P.inputs.size() - 1);
    for (size_t i = 0; i < lead; ++i)
      if (!is_full_slice(T.inputs[i])) return std::nullopt;
    for (size_t i = 1; i < P.inputs.size(); ++i)
      if (!value(P.inputs[i], T.inputs[lead + i - 1])) return false;
    return true;
  }

  // What compile_rule worked out once per pattern value; computed here for
  // a pattern built another way.
  const std::optional<ConstantValue>& pattern_constant(int pv) {
    if (p_.constants.size() == pg_.values.size()) return p_.constants[static_cast<size_t>(pv)];
    fallback_constant_ = constant_of(pg_, pv);
    return fallback_constant_;
  }
  // A literal of either graph, from the caches.
  const std::optional<ConstantValue>& constant_in(const FunctionDataflow& g, int v) {
    return &g == &tg_ ? t_.constant(v) : pattern_constant(v);
  }
  bool pattern_size_expression(int pv) const {
    if (p_.size_expressions.size() == pg_.values.size()) return p_.size_expressions[static_cast<size_t>(pv)] != 0;
    return is_size_expression(pg_, pv);
  }

  // The pattern ops reading value `pv` (each once).
  const std::vector<int>& pattern_readers(int pv) const {
    if (p_.readers.size() == pg_.values.size()) return p_.readers[static_cast<size_t>(pv)];
    fallback_readers_ = pg_.consumers(pv);
    return fallback_readers_;
  }

  const OpArguments& pattern_arguments(const DataflowOp& P) const {
    if (p_.compared_arguments.size() == pg_.ops.size()) return p_.compared_arguments[static_cast<size_t>(P.id)];
    return pattern_fallback_.of(P);
  }

  // A view's size list with -1 where the other side names the size
  // (`q.view(b, s, h, -1)` and `q.view(b, s, h, d)`): with every other size
  // equal, the inferred one can only be that size, so the pair is not
  // compared. Two or more such places could split the rest another way.
  void drop_inferred_size(std::vector<std::pair<int, int>>& pairs) {
    auto inferred = [this](const FunctionDataflow& g, int v) {
      const std::optional<ConstantValue>& c = constant_in(g, through_casts(g, v));
      return c && c->numeric && c->number == -1;
    };
    size_t at = pairs.size();
    for (size_t i = 0; i < pairs.size(); ++i) {
      if (inferred(pg_, pairs[i].first) == inferred(tg_, pairs[i].second)) continue;
      if (at != pairs.size()) return;
      at = i;
    }
    if (at != pairs.size()) pairs.erase(pairs.begin() + static_cast<long>(at));
  }

  bool arguments_match(const DataflowOp& P, const DataflowOp& T) {
    if (P.name == "tuple" && T.name == "tuple")
      if (std::optional<bool> same = ellipsis_index(P, T)) return *same;
    // Pattern arguments that do not change the computation are not compared;
    // a transpose's axes may be compared as a set and then dropped.
    OpArguments pattern_rest, model_rest;
    const OpArguments* pa = &pattern_arguments(P);
    const OpArguments* ta = &t_.arguments.of(T);
    for (const OpArgument& a : *ta) {
      bool known = std::any_of(pa->begin(), pa->end(), [&](const OpArgument& b) { return b.key == a.key; });
      if (!known) return fail_with([&] { return fmt::format("{} at {} has an argument {} the pattern does not", describe_op(T), where(T), a.key); }, T.id);
    }
    // Arguments compared above are dropped from both sides before the rest are.
    auto drop_compared = [&](auto compared) {
      pattern_rest.assign(pa->begin(), pa->end());
      model_rest.assign(ta->begin(), ta->end());
      pattern_rest.erase(std::remove_if(pattern_rest.begin(), pattern_rest.end(), compared), pattern_rest.end());
      model_rest.erase(std::remove_if(model_rest.begin(), model_rest.end(), compared), model_rest.end());
      pa = &pattern_rest;
      ta = &model_rest;
    };
    if (P.name == "transpose") {
      if (std::optional<bool> same = same_transpose(*pa, *ta)) {
        if (!*same) return fail_with([&] { return fmt::format("{} at {} swaps other axes than the pattern's", describe_op(T), where(T)); }, T.id);
        drop_compared([](const OpArgument& a) { return a.key == "dim0" || a.key == "dim1"; });
      }
    }
    if (P.name == "unsqueeze") {
      if (std::optional<bool> same = same_new_axis(P, T, *pa, *ta)) {
        if (!*same) return fail_with([&] { return fmt::format("{} at {} adds its axis elsewhere than the pattern's", describe_op(T), where(T)); }, T.id);
        drop_compared([](const OpArgument& a) { return a.key == "dim"; });
      }
    }
    std::vector<std::pair<int, int>> pairs;
    for (const OpArgument& a : *pa) {
      auto it = std::find_if(ta->begin(), ta->end(), [&](const OpArgument& b) { return b.key == a.key; });
      if (it == ta->end()) return fail_with([&] { return fmt::format("{} at {} lacks argument {}", describe_op(T), where(T), a.key); }, T.id);
      pairs.emplace_back(a.value, it->value);
    }
    if (same_view_op(P.name, "view")) drop_inferred_size(pairs);
    if (is_commutative(P.name) && pairs.size() == 2) {
      Checkpoint saved = mark();
      if (value(pairs[0].first, pairs[0].second) && value(pairs[1].first, pairs[1].second)) return true;
      rollback(saved);
      return value(pairs[0].first, pairs[1].second) && value(pairs[1].first, pairs[0].second);
    }
    for (const auto& [pv, tv] : pairs)
      if (!value(pv, tv)) return false;
    return true;
  }

  const Pattern& p_;
  const TargetIndex& t_;
  const FunctionDataflow& pg_;
  const FunctionDataflow& tg_;
  ComparedArguments pattern_fallback_{pg_, false};  // for a pattern built without compile_rule
  std::optional<ConstantValue> fallback_constant_;
  mutable std::vector<int> fallback_readers_;
  bool lenient_ = false;
  double reported_from_ = 0;  // shallower failures are not told: no reason or state kept for them
  bool refused_ = false;
  bool reported_refusal_ = false;
  State s_;
  State best_state_;
  Failure best_;
  std::vector<TraceStep> trace_;
  std::vector<int> returned_;  // model values matched to the pattern's returned values so far
};

}  // namespace

int start_op(const Pattern& pattern) {
  if (pattern.start_known) return pattern.start;
  for (int v : pattern.anchors) {
    int pv = through_casts(pattern.graph, v);
    const DataflowOp& op = pattern.graph.producer_of(pv);
    if (op.cls != OpClass::Input && !constant_of(pattern.graph, pv)) return op.id;
  }
  return -1;
}

Attempt attempt_match(const Pattern& pattern, const TargetIndex& target, int anchor_op, double reported_from) {
  Walk strict(pattern, target, reported_from);
  Attempt a = strict.run(anchor_op);
  if (a.ok || !strict.refused()) return a;
  // A value RULE["match"] refuses (a norm input computed by RoPE, a residual
  // that is scaled) is the near-miss to tell when the rest of the pattern is there.
  Walk lenient(pattern, target, reported_from, true);
  Attempt b = lenient.run(anchor_op);
  if (b.ok || (lenient.reported_refusal() && b.matched >= a.matched)) return b;
  return a;
}

}  // namespace npufuse::match

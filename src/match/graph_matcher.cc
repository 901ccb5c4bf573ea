#include "match/graph_matcher.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "match/op_signature.h"
#include "match/value_view.h"

namespace npufuse::match {

namespace {

using model::DataflowOp;
using model::FunctionDataflow;
using model::OpClass;

struct Arg {
  std::string key;
  int value = -1;
};

// Ops whose attrs are argument labels ("dim=") rather than a payload.
bool has_labels(const DataflowOp& op) {
  switch (op.cls) {
    case OpClass::Compute:
    case OpClass::Cast:
    case OpClass::View:
    case OpClass::Module:
    case OpClass::Call: return op.name != "opaque";
    case OpClass::Slice: return true;
    default: return false;
  }
}

std::vector<Arg> arguments(const DataflowOp& op) {
  std::vector<Arg> out;
  size_t positional = 0;
  bool labelled = has_labels(op);
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    std::string label = labelled && i < op.attrs.size() ? op.attrs[i] : "";
    std::string key;
    if (label.empty()) key = positional_key(op.name, positional++);
    else if (label.back() == '=') key = keyword_key(label);
    else key = label + std::to_string(i);  // *args, **kwargs
    out.push_back({key, op.inputs[i]});
  }
  return out;
}

// Same computation by name and payload (attribute name, global, slice shape).
bool same_kind(const DataflowOp& p, const DataflowOp& t) {
  if (p.cls != t.cls || p.name != t.name) return false;
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
  Walk(const Pattern& p, const TargetIndex& t) : p_(p), t_(t), pg_(p.graph), tg_(t.g) {
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
    for (size_t k = 0; ok && k < p_.anchors.size(); ++k) ok = other_anchor(p_.anchors[k]);
    a.ok = ok;
    const State& s = ok ? s_ : best_state_;
    a.op_map = s.op_map;
    a.passed = s.passed;
    a.binding_passed = s.binding_passed;
    a.matched = ok ? s_.matched : best_.matched;
    a.optional_skipped = s.skipped;
    for (const std::string& b : s.branches)
      if (std::find(a.branches.begin(), a.branches.end(), b) == a.branches.end()) a.branches.push_back(b);
    for (int v : p_.anchors) {
      int pv = through_casts(pg_, v);
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
      if (op.cls == OpClass::Input) a.binding.push_back(s.param_value[static_cast<size_t>(op.outputs[0])]);
    if (!ok) {
      a.reason = best_.reason;
      a.trace = best_.trace;
      a.failed_at = best_.at;
    }
    return a;
  }

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
  };
  struct Failure {
    int matched = -1;
    std::string reason;
    std::vector<std::string> trace;
    int at = -1;
  };

  // A value a later anchor names: already matched on the way, or found by
  // trying every model op of its kind.
  bool other_anchor(int v) {
    int pv = through_casts(pg_, v);
    const DataflowOp& P = pg_.producer_of(pv);
    if (P.cls == OpClass::Input || constant_of(pg_, pv)) return true;
    if (s_.op_map[static_cast<size_t>(P.id)] >= 0) return true;
    size_t idx = static_cast<size_t>(std::find(P.outputs.begin(), P.outputs.end(), pv) - P.outputs.begin());
    for (int cand : t_.ops_named(P.name)) {
      const DataflowOp& T = tg_.ops[static_cast<size_t>(cand)];
      if (idx >= T.outputs.size()) continue;
      // Two returned values of the pattern (q_embed, k_embed) are two values
      // of the model: a model op already matched cannot be a later anchor.
      if (std::find(s_.claimed.begin(), s_.claimed.end(), T.id) != s_.claimed.end()) continue;
      State saved = s_;
      if (value(pv, T.outputs[idx])) return true;
      s_ = std::move(saved);
    }
    return fail(fmt::format("no {} in the model for returned value {}", describe_op(P), pg_.values[static_cast<size_t>(pv)].name), -1);
  }

  bool fail(const std::string& reason, int target_op) {
    if (s_.matched > best_.matched) {
      best_.matched = s_.matched;
      best_.reason = reason;
      best_.trace = trace_;
      best_.at = target_op;
      best_state_ = s_;
    }
    return false;
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
    auto ca = constant_of(tg_, a), cb = constant_of(tg_, b);
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

  bool is_none(const FunctionDataflow& g, int v) const {
    auto c = constant_of(g, v);
    return c && !c->numeric && c->text == "None";
  }

  bool bind(int pv, int tv) {
    std::vector<int> passed;
    int root = through_layout(tg_, tv, &passed);
    std::string param = parameter_name(pv);
    if (auto it = p_.options.not_from.find(param); it != p_.options.not_from.end()) {
      const DataflowOp& producer = tg_.producer_of(root);
      if (it->second.count(producer.name))
        return fail(fmt::format("{} is computed by {} at {}, not a plain value", param, describe_op(producer), where(producer)),
                    producer.id);
    }
    if (auto it = p_.options.only_from.find(param); it != p_.options.only_from.end()) {
      const DataflowOp& producer = tg_.producer_of(through_casts(tg_, tv));
      if (!it->second.count(producer.name))
        return fail(fmt::format("{} is {} at {}, not computed by {}", param, describe_op(producer), where(producer),
                                fmt::join(it->second, "/")),
                    producer.id);
    }
    int& bound = s_.param_value[static_cast<size_t>(pv)];
    if (bound >= 0) {
      if (same_value(through_layout(tg_, bound), root)) return true;
      return fail(fmt::format("{} is used twice: {} and {} differ", param, value_text(bound), value_text(root)),
                  tg_.producer_of(root).id);
    }
    bound = through_casts(tg_, tv);
    s_.binding_passed.insert(s_.binding_passed.end(), passed.begin(), passed.end());
    return true;
  }

  // Pattern value `pv` is computed as model value `tv`.
  bool value(int pv, int tv) {
    pv = through_casts(pg_, pv);
    if (auto pc = constant_of(pg_, pv)) {
      auto tc = constant_of(tg_, tv);
      if (tc && *tc == *pc) return true;
      if (s_.matched <= best_.matched) return false;
      const DataflowOp& T = tg_.producer_of(through_casts(tg_, tv));
      return fail(fmt::format("expected {}, found {} at {}", pc->str(), tc ? tc->str() : describe_op(T), where(T)), T.id);
    }
    const DataflowOp& P = pg_.producer_of(pv);
    if (P.cls == OpClass::Input) return bind(pv, tv);

    // Model-side casts are transparent; so are layout views unless the pattern
    // asks for that very view here.
    std::vector<int> passed;
    for (;;) {
      tv = through_packing(tg_, tv);
      const DataflowOp& op = tg_.producer_of(tv);
      bool skip = op.cls == OpClass::Cast || (is_layout_view(op.name) && op.name != P.name);
      if (!skip || op.inputs.empty() || op.outputs.size() != 1) break;
      passed.push_back(op.id);
      tv = op.inputs[0];
    }
    const DataflowOp& T = tg_.producer_of(tv);
    // A value merged from branches (`if n_rep == 1: return x`): the pattern
    // may be any one of them.
    if (T.name == "phi" && P.name != "phi") {
      for (int in : T.inputs) {
        State saved = s_;
        s_.passed.push_back(T.id);
        const std::string& branch = tg_.producer_of(through_casts(tg_, in)).condition;
        if (branch != T.condition && !branch.empty()) s_.branches.push_back(branch);
        if (value(pv, in)) return true;
        s_ = std::move(saved);
      }
      return false;
    }
    size_t out_index = static_cast<size_t>(std::find(P.outputs.begin(), P.outputs.end(), pv) - P.outputs.begin());

    int& mapped = s_.op_map[static_cast<size_t>(P.id)];
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
      return fail(fmt::format("{} feeds two places in the pattern; the model computes it twice ({} and {})", describe_op(P),
                              where(tg_.ops[static_cast<size_t>(mapped)]), where(T)),
                  T.id);
    }

    bool optional = p_.options.optional.count(P.name) > 0 && !P.inputs.empty();
    if (optional) {
      State saved = s_;
      if (pair(P, T, tv, out_index, passed)) return true;
      s_ = std::move(saved);
      ++s_.skipped;
      return value(P.inputs[0], tv);
    }
    return pair(P, T, tv, out_index, passed);
  }

  bool is_constant(const FunctionDataflow& g, int v, double number) const {
    auto c = constant_of(g, v);
    return c && c->numeric && c->number == number;
  }

  // Spellings of one computation that differ in op names: `x ** 2` and
  // `x * x`; `rsqrt(y)` and `1 / sqrt(y)`. The pattern's step is paired with
  // the model's op(s) and matching goes on below them.
  bool equivalent_spelling(const DataflowOp& P, const DataflowOp& T, const std::vector<int>& passed) {
    auto claim = [&](std::initializer_list<int> target_ops, int next_p, int next_t) {
      s_.op_map[static_cast<size_t>(P.id)] = T.id;
      for (int id : target_ops)
        if (id != T.id) s_.passed.push_back(id);
      s_.passed.insert(s_.passed.end(), passed.begin(), passed.end());
      ++s_.matched;
      trace_.push_back(fmt::format("{} at {}", describe_op(T), where(T)));
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
    if (P.name == "div" && P.inputs.size() == 2 && is_constant(pg_, P.inputs[0], 1) && T.name == "rsqrt" && T.inputs.size() == 1) {
      const DataflowOp& root = pg_.producer_of(through_casts(pg_, P.inputs[1]));
      if (root.name == "sqrt" && root.inputs.size() == 1) {
        s_.op_map[static_cast<size_t>(root.id)] = T.id;
        return claim({T.id}, root.inputs[0], T.inputs[0]);
      }
    }
    return false;
  }

  bool pair(const DataflowOp& P, const DataflowOp& T, int tv, size_t out_index, const std::vector<int>& passed) {
    if (!same_kind(P, T)) {
      State saved = s_;
      if (equivalent_spelling(P, T, passed)) return true;
      s_ = std::move(saved);
    }
    if (!same_kind(P, T) && s_.matched <= best_.matched) return false;  // not deeper: no message to build
    if (!same_kind(P, T)) return fail(fmt::format("expected {}, found {} at {}", describe_op(P), describe_op(T), where(T)), T.id);
    if (out_index >= T.outputs.size() || T.outputs[out_index] != tv)
      return fail(fmt::format("expected output {} of {} at {}", out_index, describe_op(T), where(T)), T.id);
    s_.op_map[static_cast<size_t>(P.id)] = T.id;
    s_.claimed.push_back(T.id);
    s_.passed.insert(s_.passed.end(), passed.begin(), passed.end());
    ++s_.matched;
    trace_.push_back(fmt::format("{} at {}", describe_op(T), where(T)));
    bool ok = arguments_match(P, T);
    trace_.pop_back();
    return ok;
  }

  bool arguments_match(const DataflowOp& P, const DataflowOp& T) {
    std::vector<Arg> pa = arguments(P), ta = arguments(T);
    // Pattern arguments that do not change the computation are not compared.
    pa.erase(std::remove_if(pa.begin(), pa.end(), [](const Arg& a) { return is_ignorable_argument(a.key); }), pa.end());
    ta.erase(std::remove_if(ta.begin(), ta.end(), [](const Arg& a) { return is_ignorable_argument(a.key); }), ta.end());
    // An argument given as None is the same as one left out.
    pa.erase(std::remove_if(pa.begin(), pa.end(), [&](const Arg& a) { return is_none(pg_, a.value); }), pa.end());
    ta.erase(std::remove_if(ta.begin(), ta.end(), [&](const Arg& a) { return is_none(tg_, a.value); }), ta.end());
    for (const Arg& a : ta) {
      bool known = std::any_of(pa.begin(), pa.end(), [&](const Arg& b) { return b.key == a.key; });
      if (!known) return fail(fmt::format("{} at {} has an argument {} the pattern does not", describe_op(T), where(T), a.key), T.id);
    }
    std::vector<std::pair<int, int>> pairs;
    for (const Arg& a : pa) {
      auto it = std::find_if(ta.begin(), ta.end(), [&](const Arg& b) { return b.key == a.key; });
      if (it == ta.end()) return fail(fmt::format("{} at {} lacks argument {}", describe_op(T), where(T), a.key), T.id);
      pairs.emplace_back(a.value, it->value);
    }
    if (is_commutative(P.name) && pairs.size() == 2) {
      State saved = s_;
      if (value(pairs[0].first, pairs[0].second) && value(pairs[1].first, pairs[1].second)) return true;
      s_ = std::move(saved);
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
  State s_;
  State best_state_;
  Failure best_;
  std::vector<std::string> trace_;
};

}  // namespace

int start_op(const Pattern& pattern) {
  for (int v : pattern.anchors) {
    int pv = through_casts(pattern.graph, v);
    const DataflowOp& op = pattern.graph.producer_of(pv);
    if (op.cls != OpClass::Input && !constant_of(pattern.graph, pv)) return op.id;
  }
  return -1;
}

Attempt attempt_match(const Pattern& pattern, const TargetIndex& target, int anchor_op) {
  Walk walk(pattern, target);
  return walk.run(anchor_op);
}

}  // namespace npufuse::match

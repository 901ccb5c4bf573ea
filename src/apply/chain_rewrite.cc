#include "apply/chain_rewrite.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <variant>

#include "apply/binding_spelling.h"
#include "apply/branch_split.h"
#include "apply/chain_block.h"
#include "apply/config_fold.h"
#include "apply/module_buffer.h"
#include "apply/replacement.h"
#include "apply/source_functions.h"
#include "frontend/parser.h"
#include "model/ast_walk.h"
#include "util/identifier.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;
using Range = plan::Candidate::SourceRange;

bool holds(const ast::Node* n, const Range& r) { return n->begin <= r.begin && r.end <= n->end; }

int line_of(const model::ModelFile& file, uint32_t offset) { return file.parsed->source.line_col(offset).line; }

struct Refused {
  std::string reason;
  std::string where;
};

struct Rewritten {
  Edit edit;
  std::vector<Edit> buffers;
  std::vector<std::pair<std::string, std::string>> folded;
  std::vector<Edit> kept;  // results inside kept statements after the edit, each replaced where it is
};

// The first read of `wanted` names in `n` at or after byte `from`, as
// (name, line); empty name when none.
// Code in `skipped` (the arms a config fold drops) is not looked into.
std::pair<std::string, int> first_read(const model::ModelFile& file, const ast::Node* n, uint32_t from, uint32_t to,
                                       const std::set<std::string>& wanted, const ConfigFolds& skipped) {
  std::pair<std::string, int> found;
  model::walk(n, [&](const ast::Node* x) {
    if (!found.first.empty() || x->end <= from || x->begin >= to || skipped.dropped(x->begin, x->end)) return false;
    if (auto* name = ast::as<ast::Name>(x); name && name->ctx == ast::expr_context::Load && x->begin >= from &&
                                            wanted.count(std::string(name->id)))
      found = {std::string(name->id), line_of(file, x->begin)};
    return true;
  });
  return found;
}

bool calls(const ast::Node* n, std::string_view callee) {
  bool found = false;
  model::walk(n, [&](const ast::Node* x) {
    if (auto* call = ast::as<ast::Call>(x)) {
      if (auto* name = ast::as<ast::Name>(call->func); name && name->id == callee) found = true;
      if (auto* attr = ast::as<ast::Attribute>(call->func); attr && attr->attr == callee) found = true;
    }
    return !found;
  });
  return found;
}

// `self.X(...)` calls in `n`, and `self.X[i](...)` (a module list's
// member): the attribute names X.
// The attribute X of `self.X`, or of `self.X[i]` (a module list's member).
std::string self_member(const ast::expr* e) {
  if (auto* member = ast::as<ast::Subscript>(e)) e = member->value;
  auto* attr = ast::as<ast::Attribute>(e);
  auto* base = attr ? ast::as<ast::Name>(attr->value) : nullptr;
  return base && base->id == "self" ? std::string(attr->attr) : std::string();
}

// `NAME = self.X[i]`: a module list's member given a name (HF Mixtral's
// `expert_layer = self.experts[expert_idx]`); the attribute X, else empty.
std::string member_alias(const ast::stmt* s, std::string* name = nullptr) {
  auto* assign = ast::as<ast::Assign>(s);
  if (!assign || assign->targets.size != 1 || !ast::as<ast::Subscript>(assign->value)) return "";
  auto* target = ast::as<ast::Name>(assign->targets[0]);
  if (!target) return "";
  if (name) *name = std::string(target->id);
  return self_member(assign->value);
}

// `self.X(...)` calls in `n`, `self.X[i](...)` (a module list's member), and
// calls of a name `n` binds to `self.X[i]`: the attribute names X.
std::set<std::string> submodule_calls(const ast::Node* n) {
  std::set<std::string> out;
  std::map<std::string, std::string> aliases;
  model::walk(n, [&](const ast::Node* x) {
    if (auto* s = ast::as<ast::Assign>(x)) {
      std::string name;
      if (std::string member = member_alias(s, &name); !member.empty()) aliases[name] = member;
    }
    return true;
  });
  model::walk(n, [&](const ast::Node* x) {
    if (auto* call = ast::as<ast::Call>(x)) {
      if (std::string member = self_member(call->func); !member.empty()) out.insert(member);
      if (auto* name = ast::as<ast::Name>(call->func))
        if (auto a = aliases.find(std::string(name->id)); a != aliases.end()) out.insert(a->second);
    }
    return true;
  });
  return out;
}

// Whether `owner`'s __init__ makes `self.<attribute>` an instance of `cls`:
// then `self.<attribute>(...)` runs cls.forward.
bool submodule_of_class(const model::SourceSet& sources, const std::string& owner, const std::string& attribute,
                        const std::string& cls) {
  std::optional<FunctionAt> init = function_named(sources, owner + ".__init__");
  if (!init) return false;
  bool found = false;
  model::walk(init->fn, [&](const ast::Node* x) {
    auto* assign = ast::as<ast::Assign>(x);
    if (!assign || assign->targets.size != 1) return !found;
    auto* target = ast::as<ast::Attribute>(assign->targets[0]);
    if (!target || target->attr != attribute) return !found;
    // `Cls(...)`, or a module list made of them (`nn.ModuleList([Cls(...) for ...])`).
    model::walk(assign->value, [&](const ast::Node* v) {
      auto* call = ast::as<ast::Call>(v);
      auto* callee = call ? ast::as<ast::Name>(call->func) : nullptr;
      if (callee && callee->id == cls) found = true;
      return !found;
    });
    return !found;
  });
  return found;
}

// Whether the statements call `helper` ("rotate_half", or "Norm.forward"
// reached through a submodule of the function's class).
bool run_calls(const std::vector<const ast::stmt*>& run, const FunctionAt& fn, const std::string& helper,
               const model::SourceSet& sources) {
  size_t dot = helper.rfind('.');
  std::string name = dot == std::string::npos ? helper : helper.substr(dot + 1);
  for (const ast::stmt* s : run) {
    if (name != "forward" && calls(s, name)) return true;
    if (name == "forward" && fn.is_method) {
      std::string owner = fn.qualified.substr(0, fn.qualified.rfind('.'));
      std::string cls = helper.substr(0, dot);
      for (const std::string& attribute : submodule_calls(s))
        if (submodule_of_class(sources, owner, attribute, cls)) return true;
    }
  }
  return false;
}

// Whether `e` is `r`, or casts of it (`(r).to(dtype)`, `r.float()`, `r.type_as(x)`).
bool is_cast_of(const ast::expr* e, const Range& r) {
  while (e && !(e->begin == r.begin && e->end == r.end)) {
    auto* call = ast::as<ast::Call>(e);
    auto* method = call ? ast::as<ast::Attribute>(call->func) : nullptr;
    static const std::set<std::string_view> casts = {"to", "type_as", "float", "half", "bfloat16", "type"};
    if (!method || !casts.count(std::string_view(method->attr))) return false;
    e = method->value;
  }
  return e != nullptr;
}

// Whether fn's one return statement returns exactly `r`, or casts of it.
bool returns_exactly(const FunctionAt& fn, const Range& r) {
  std::vector<const ast::Return*> returns;
  model::walk(fn.fn, [&](const ast::Node* x) {
    if (x != fn.fn && (ast::as<ast::FunctionDef>(x) || ast::as<ast::Lambda>(x) || ast::as<ast::ClassDef>(x))) return false;
    if (auto* ret = ast::as<ast::Return>(x)) returns.push_back(ret);
    return true;
  });
  return returns.size() == 1 && returns[0]->value && r.file == fn.file->path && is_cast_of(returns[0]->value, r);
}

// Whether `call` runs `helper` (as run_calls).
bool call_reaches(const ast::Call* call, const FunctionAt& fn, const std::string& helper,
                  const model::SourceSet& sources) {
  size_t dot = helper.rfind('.');
  std::string name = dot == std::string::npos ? helper : helper.substr(dot + 1);
  if (name != "forward") {
    auto* callee = ast::as<ast::Name>(call->func);
    auto* attr = ast::as<ast::Attribute>(call->func);
    return (callee && callee->id == name) || (attr && attr->attr == name);
  }
  if (!fn.is_method) return false;
  std::string member = self_member(call->func);
  return !member.empty() &&
         submodule_of_class(sources, fn.qualified.substr(0, fn.qualified.rfind('.')), member, helper.substr(0, dot));
}

// The calls in fn's body, at any depth, that run `helper` (call_reaches).
std::vector<const ast::Call*> calls_reaching(const FunctionAt& fn, const std::string& helper,
                                             const model::SourceSet& sources) {
  std::vector<const ast::Call*> out;
  model::walk(fn.fn, [&](const ast::Node* x) {
    if (auto* call = ast::as<ast::Call>(x); call && call_reaches(call, fn, helper, sources)) out.push_back(call);
    return true;
  });
  return out;
}

// A result produced inside a helper the matched function calls (the norm
// module's forward, for add_rms_norm matched in the decoder layer) stands,
// for the rewrite, for the matched function's call of that helper: the one
// `NAME = call(...)` that binds the result's name and reaches the helper;
// else the one call reaching it inside a larger expression
// (`out = h + self.mlp(self.post_attention_layernorm(h))`). Results it
// cannot place so stay where they were produced.
std::vector<Range> results_in_caller(const plan::Candidate& c, const model::SourceSet& sources) {
  std::vector<Range> out = c.apply_outputs;
  std::optional<FunctionAt> caller = function_named(sources, c.apply_function);
  if (!caller) return out;
  for (size_t i = 0; i < out.size() && i < c.apply_output_names.size(); ++i) {
    const std::string& name = c.apply_output_names[i];
    if (out[i].file == caller->file->path && holds(caller->fn, out[i])) continue;
    const model::ModelFile* file = file_named(sources, out[i].file);
    std::optional<FunctionAt> helper = file ? function_around(*file, out[i].begin, out[i].end) : std::nullopt;
    if (!helper) continue;
    std::vector<const ast::expr*> calls_found;
    model::walk(caller->fn, [&](const ast::Node* x) {
      auto* assign = ast::as<ast::Assign>(x);
      if (!assign || assign->targets.size != 1 || !ast::as<ast::Call>(assign->value)) return true;
      auto* target = ast::as<ast::Name>(assign->targets[0]);
      if (!name.empty() && target && target->id == name && run_calls({assign}, *caller, helper->qualified, sources))
        calls_found.push_back(assign->value);
      return true;
    });
    // The nested call stands for the result only where it is what the
    // helper returns, its one return, and the chain has results in the
    // caller too (a rotary helper's two returned embeddings stay in it).
    bool nested = calls_found.empty() && returns_exactly(*helper, out[i]) &&
                  std::any_of(out.begin(), out.end(), [&](const Range& r) {
                    return r.file == caller->file->path && holds(caller->fn, r);
                  });
    if (nested)
      for (const ast::Call* call : calls_reaching(*caller, helper->qualified, sources)) calls_found.push_back(call);
    // The helper may be called more than once (HF's input and post-attention
    // norms are one class): the call computing this result comes after the
    // chain's own ops in the caller, whose values it reads.
    uint32_t after = 0;
    for (const Range& op : c.apply_ops)
      if (op.file == caller->file->path && holds(caller->fn, op)) after = std::max(after, op.end);
    if (calls_found.size() > 1 && after > 0)
      std::erase_if(calls_found, [&](const ast::expr* call) { return call->begin < after; });
    // Of several nested calls, the ones reading another of the chain's
    // results (the norm of the sum `h` the chain also gives).
    if (nested && calls_found.size() > 1) {
      std::set<std::string> others;
      for (size_t j = 0; j < c.apply_output_names.size(); ++j)
        if (j != i && !c.apply_output_names[j].empty()) others.insert(c.apply_output_names[j]);
      std::erase_if(calls_found, [&](const ast::expr* call) {
        for (const std::string& n : names_in(call, ast::expr_context::Load))
          if (others.count(n)) return false;
        return true;
      });
    }
    if (calls_found.size() == 1)
      out[i] = Range{caller->file->path, calls_found.front()->begin, calls_found.front()->end};
  }
  return out;
}

// A binding whose value a function fn calls computes and returns (the
// attention's `return self.o_proj(attn)`, for add_rms_norm's residual operand
// matched in the decoder layer) comes, in fn, from the call reaching it: its
// origin becomes that call, so a name of fn bound to it spells it, or the call
// moves into the replacement like any expression of the removed statements.
// Only where the function has one return, of that value (or casts of it), and
// fn one such call.
plan::Candidate bindings_at_calls(plan::Candidate c, const FunctionAt& fn, const model::SourceSet& sources) {
  using Kind = plan::Candidate::BindingOrigin::Kind;
  for (size_t i = 0; i < c.apply_binding_origins.size() && i < c.apply_bindings.size(); ++i) {
    plan::Candidate::BindingOrigin& o = c.apply_binding_origins[i];
    if (o.kind != Kind::Expression || (o.range.file == fn.file->path && holds(fn.fn, o.range))) continue;
    const model::ModelFile* file = file_named(sources, o.range.file);
    std::optional<FunctionAt> callee = file ? function_around(*file, o.range.begin, o.range.end) : std::nullopt;
    if (!callee) continue;
    if (!returns_exactly(*callee, Range{o.range.file, o.range.begin, o.range.end})) continue;
    std::vector<const ast::Call*> calls_found = calls_reaching(fn, callee->qualified, sources);
    if (calls_found.size() != 1) continue;
    o.range = plan::Candidate::SourceRange{fn.file->path, calls_found[0]->begin, calls_found[0]->end};
  }
  return c;
}

// `a = b`: one name copied to another.
bool name_copy(const ast::stmt* s) {
  auto* a = ast::as<ast::Assign>(s);
  return a && a->targets.size == 1 && ast::as<ast::Name>(a->targets[0]) && ast::as<ast::Name>(a->value);
}

std::string fresh(const std::string& base, std::set<std::string>& taken) {
  std::string name = base;
  for (int n = 2; taken.count(name); ++n) name = fmt::format("{}{}", base, n);
  taken.insert(name);
  return name;
}

// The name `s` binds `value` to, when `s` is `NAME = value` or one element
// of `A, B = x, y`; empty otherwise.
// `value_name` is the dataflow's name for the result: one call with several
// results unpacked at once (`weights, ids = torch.topk(...)`) gives each its
// element of the target tuple by that name.
std::string bound_name(const ast::stmt* s, const Range& value, const std::string& value_name) {
  auto same = [&](const ast::expr* e) { return e && e->begin == value.begin && e->end == value.end; };
  const ast::expr* target = nullptr;
  const ast::expr* rhs = nullptr;
  if (auto* a = ast::as<ast::Assign>(s); a && a->targets.size == 1) target = a->targets[0], rhs = a->value;
  if (auto* a = ast::as<ast::AnnAssign>(s)) target = a->target, rhs = a->value;
  // `weights *= self.route_scale`: the op is the whole statement, its result the name.
  if (auto* a = ast::as<ast::AugAssign>(s); a && s->begin == value.begin && s->end == value.end)
    if (auto* name = ast::as<ast::Name>(a->target)) return std::string(name->id);
  if (!target) return "";
  if (same(rhs))
    if (auto* name = ast::as<ast::Name>(target)) return std::string(name->id);
  auto* targets = ast::as<ast::Tuple>(target);
  // (the unpacking's range is the whole statement's)
  bool whole = s->begin == value.begin && s->end == value.end;
  if (targets && (same(rhs) || whole))
    for (const ast::expr* t : targets->elts)
      if (auto* name = ast::as<ast::Name>(t); name && !value_name.empty() && name->id == value_name) return value_name;
  auto* values = ast::as<ast::Tuple>(rhs);
  if (!targets || !values || targets->elts.size != values->elts.size) return "";
  for (size_t i = 0; i < values->elts.size; ++i)
    if (same(values->elts[i]))
      if (auto* name = ast::as<ast::Name>(targets->elts[i])) return std::string(name->id);
  return "";
}

// `x`, `self.experts` for `self.experts[i]`, `a.b.c`: the dotted path of
// what an expression names, subscripts dropped; "" when not rooted at a name.
std::string path_of(const ast::expr* e) {
  while (auto* sub = ast::as<ast::Subscript>(e)) e = sub->value;
  if (auto* name = ast::as<ast::Name>(e)) return std::string(name->id);
  auto* attr = ast::as<ast::Attribute>(e);
  if (!attr) return "";
  std::string base = path_of(attr->value);
  return base.empty() ? "" : base + "." + std::string(attr->attr);
}

// Every name `s` mentions, and every dotted path (`self.inv_freq`) it reads or writes.
std::set<std::string> mentioned_paths(const ast::stmt* s) {
  std::set<std::string> out = names_in(s, ast::expr_context::Load);
  for (const std::string& n : names_in(s, ast::expr_context::Store)) out.insert(n);
  model::walk(s, [&](const ast::Node* x) {
    if (auto* attr = ast::as<ast::Attribute>(x))
      if (std::string p = path_of(attr); !p.empty()) out.insert(p);
    return true;
  });
  return out;
}

// What `s` may change: the names it assigns, and what it changes in place
// (`x.add_(...)`, `x[i] = ...`, `self.a = ...` as `self.a`, `x += ...`, a
// call with `out=x` or `inplace=True` on its arguments), as paths.
std::set<std::string> changed_names(const ast::stmt* s) {
  std::set<std::string> out = names_in(s, ast::expr_context::Store);
  model::walk(s, [&](const ast::Node* x) {
    if (auto* a = ast::as<ast::Assign>(x))
      for (const ast::expr* t : a->targets)
        if (!ast::as<ast::Name>(t)) out.insert(path_of(t));
    if (auto* a = ast::as<ast::AugAssign>(x)) out.insert(path_of(a->target));
    if (auto* call = ast::as<ast::Call>(x)) {
      auto* attr = ast::as<ast::Attribute>(call->func);
      if (attr && attr->attr.size() > 1 && attr->attr.back() == '_' && attr->attr.front() != '_')
        out.insert(path_of(attr->value));
      for (const ast::keyword* k : call->keywords) {
        if (!ast::present(k->arg)) continue;
        if (k->arg == "out") out.insert(path_of(k->value));
        if (k->arg == "inplace")
          for (const ast::expr* arg : call->args) out.insert(path_of(arg));
      }
    }
    return true;
  });
  out.erase("");
  return out;
}

// Whether list[i], between the chain's statements first..last, can run
// before all of them: it reads no name they change before it (assigned or
// changed in place), assigns no name those before it mention, and neither
// returns nor jumps. The chain's statements after it may read what it
// assigns (DeepSeek-V3.2's `topk_indices = self.indexer(...)` between the
// scores and the index mask): it still runs before the replacement.
bool independent_of_chain(const std::vector<const ast::stmt*>& list, size_t first, size_t last, size_t i,
                          const std::vector<bool>& touched) {
  const ast::stmt* h = list[i];
  bool jumps = false;
  model::walk(h, [&](const ast::Node* x) {
    if (ast::as<ast::Return>(x) || ast::as<ast::Break>(x) || ast::as<ast::Continue>(x) || ast::as<ast::Yield>(x) ||
        ast::as<ast::YieldFrom>(x) || ast::as<ast::Await>(x))
      jumps = true;
    return !jumps && !ast::as<ast::FunctionDef>(x) && !ast::as<ast::Lambda>(x);
  });
  if (jumps) return false;
  std::set<std::string> writes = changed_names(h);
  std::set<std::string> read_paths = mentioned_paths(h);
  for (size_t j = first; j <= last; ++j) {
    if (j == i || !touched[j]) continue;
    if (j > i) continue;
    std::set<std::string> mentioned = mentioned_paths(list[j]);
    for (const std::string& n : writes)
      if (mentioned.count(n)) return false;
    for (const std::string& n : changed_names(list[j]))
      if (read_paths.count(n)) return false;
  }
  return true;
}

// A statement between the chain's statements that only prepares a value for
// the chain's later statements (GPT-J's `mask_value = torch.tensor(finfo(
// attn_weights.dtype).min, ...)` for the select the fused op replaces): one
// name assigned (or several unpacked from one value), each read only by ops
// of the chain (in its later statements) and
// by no other statement in between, and no in-place call or call of the
// module's own attributes (a submodule's work is not a value to drop). It goes
// with the chain; a read of its name after the run refuses the rewrite as for
// any removed name.
// `prep` holds the later statements already found to be such (GPT-2's
// `mask_value = finfo(w.dtype).min` read by `mask_value = torch.full([],
// mask_value, ...)`, which the select reads): a read there counts as the chain's.
bool feeds_only_chain(const std::vector<const ast::stmt*>& list, size_t last, size_t i, const std::vector<bool>& touched,
                      const std::vector<std::pair<uint32_t, uint32_t>>& ops, const std::set<size_t>& prep) {
  auto* a = ast::as<ast::Assign>(list[i]);
  if (!a || a->targets.size != 1) return false;
  // One name, or names unpacked from one value (DeepSeek-V3's
  // `b, h, s, d = k.shape` before k's de-interleave view).
  std::vector<std::string> names;
  if (auto* target = ast::as<ast::Name>(a->targets[0])) names.emplace_back(target->id);
  const frontend::Span<ast::expr*>* elts = nullptr;
  if (auto* t = ast::as<ast::Tuple>(a->targets[0])) elts = &t->elts;
  if (auto* l = ast::as<ast::List>(a->targets[0])) elts = &l->elts;
  if (elts)
    for (const ast::expr* e : *elts) {
      auto* n = ast::as<ast::Name>(e);
      if (!n) return false;
      names.emplace_back(n->id);
    }
  if (names.empty()) return false;
  bool acts = false;
  model::walk(a->value, [&](const ast::Node* x) {
    if (auto* call = ast::as<ast::Call>(x)) {
      auto* f = ast::as<ast::Attribute>(call->func);
      std::string called = f ? std::string(f->attr) : last_name(call->func);
      acts = acts || called.ends_with("_") || called == "print" || called == "setattr";
      // `self.proj(...)`, `self.cache.get(...)`: the module's own work.
      for (const ast::expr* callee = call->func; auto* at = ast::as<ast::Attribute>(callee); callee = at->value)
        if (auto* base = ast::as<ast::Name>(at->value); base && base->id == "self") acts = true;
    }
    acts = acts || ast::as<ast::Lambda>(x) || ast::as<ast::NamedExpr>(x) || ast::as<ast::Yield>(x) || ast::as<ast::Await>(x);
    return !acts;
  });
  if (acts) return false;
  bool read_by_chain = false;
  for (const std::string& name : names)
    for (size_t j = i + 1; j <= last; ++j) {
      if (!names_in(list[j], ast::expr_context::Load).count(name)) continue;
      if (prep.count(j)) {
        read_by_chain = true;
        continue;
      }
      if (!touched[j]) return false;
      bool outside_ops = false;
      model::walk(list[j], [&](const ast::Node* x) {
        auto* n = ast::as<ast::Name>(x);
        if (n && n->ctx == ast::expr_context::Load && n->id == name)
          outside_ops = outside_ops || std::none_of(ops.begin(), ops.end(), [&](const auto& op) {
                          return op.first <= n->begin && n->end <= op.second;
                        });
        return !outside_ops;
      });
      if (outside_ops) return false;
      read_by_chain = true;
    }
  return read_by_chain;
}

// A `for` loop that is all chain (an expert loop): every statement of its
// body computes an op of the chain, or only skips an iteration (`if not
// hits[e]: continue`); no `else` clause. The rewrite may replace it whole.
bool whole_loop_of_chain(const ast::stmt* s, const std::vector<std::pair<uint32_t, uint32_t>>& ops) {
  auto* loop = ast::as<ast::For>(s);
  if (!loop || loop->orelse.size || loop->body.size == 0) return false;
  auto holds_op = [&](const ast::stmt* x) {
    return std::any_of(ops.begin(), ops.end(), [&](const auto& op) { return x->begin <= op.first && op.second <= x->end; });
  };
  auto skips = [](const ast::stmt* x) {
    auto* guard = ast::as<ast::If>(x);
    if (!guard || guard->orelse.size) return false;
    for (const ast::stmt* b : guard->body)
      if (!ast::as<ast::Continue>(b) && !ast::as<ast::Pass>(b)) return false;
    return true;
  };
  for (const ast::stmt* x : loop->body)
    if (!holds_op(x) && !skips(x) && member_alias(x).empty()) return false;
  return true;
}

// `if cond:` (no else) whose body is an optional step of the chain, which
// the match holds with or without (plan::Candidate::apply_optional_ifs): the
// test reads none of the chain's ops and every statement of the body holds
// one or binds a name. The rewrite replaces it whole, test and all: the replacement is the
// rule's for the chain with the step and without it.
bool optional_if_of_chain(const ast::stmt* s, const std::vector<std::pair<uint32_t, uint32_t>>& ops,
                          const std::vector<plan::Candidate::SourceRange>& optional_ifs, const std::string& file) {
  auto* guard = ast::as<ast::If>(s);
  if (!guard || guard->orelse.size || guard->body.size == 0) return false;
  bool marked = std::any_of(optional_ifs.begin(), optional_ifs.end(), [&](const plan::Candidate::SourceRange& r) {
    return r.file == file && r.begin == s->begin && r.end == s->end;
  });
  if (!marked) return false;
  auto inside = [&](const auto& op, uint32_t begin, uint32_t end) { return begin <= op.first && op.second <= end; };
  for (const auto& op : ops)
    if (inside(op, guard->test->begin, guard->test->end)) return false;
  for (const ast::stmt* b : guard->body) {
    if (std::any_of(ops.begin(), ops.end(), [&](const auto& op) { return inside(op, b->begin, b->end); })) continue;
    // HF's `causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]`
    // before the add: a name bound for the step. It goes with the if; a
    // later read of the name refuses the rewrite (an intermediate read again),
    // and so does a binding that needs it.
    auto* assign = ast::as<ast::Assign>(b);
    if (!assign || assign->targets.size != 1 || !ast::as<ast::Name>(assign->targets[0])) return false;
  }
  return true;
}

// A statement of the run that stays, with the chain's results inside it
// replaced by the names the replacement assigns.
struct KeptStatement {
  std::vector<std::pair<Range, std::string>> results;  // range in the statement -> name
};

std::string kept_text(const model::ModelFile& file, const ast::stmt* s, const KeptStatement& kept) {
  std::vector<std::pair<Range, std::string>> results = kept.results;
  std::sort(results.begin(), results.end(), [](const auto& a, const auto& b) { return a.first.begin < b.first.begin; });
  std::string_view text = file.parsed->source.text();
  std::string out;
  uint32_t at = s->begin;
  for (const auto& [range, name] : results) {
    out.append(text.substr(at, range.begin - at));
    out += name;
    at = range.end;
  }
  out.append(text.substr(at, s->end - at));
  return out;
}

// When every read of `gone` names in fn from byte `from` on is a bare element
// of a returned tuple (HF's `return attn_output, attn_weights` after the
// weights were fused away), and fn is a module-level function whose every
// use is a call whose result is unpacked with `_` at those places
// (`attn_output, _ = eager_attention_forward(...)`): the edits returning None
// there instead. nullopt otherwise.
// `dropped`: names the analysis saw returned and dropped by every caller
// (plan::Candidate::apply_dropped_returns): when every gone name returned is
// one of them, the edits are made without looking for the callers here
// (they may call fn through a dispatch table and return it on, as HF's
// attention forward does before its decoder layer drops it).
std::optional<std::vector<Edit>> discarded_returns(const FunctionAt& fn, const std::set<std::string>& gone, uint32_t from,
                                                   const model::SourceSet& sources, const std::string& candidate,
                                                   const std::vector<std::string>& dropped) {
  std::vector<Edit> edits;
  std::set<size_t> places;  // tuple positions returned as None
  size_t arity = 0;
  bool other_read = false;
  model::walk(fn.fn, [&](const ast::Node* x) {
    if (other_read || x->end <= from) return false;
    if (auto* ret = ast::as<ast::Return>(x)) {
      auto* tuple = ret->value ? ast::as<ast::Tuple>(ret->value) : nullptr;
      if (!tuple) return true;
      for (size_t i = 0; i < tuple->elts.size; ++i) {
        auto* name = ast::as<ast::Name>(tuple->elts[i]);
        if (!name || !gone.count(std::string(name->id))) continue;
        if (arity && arity != tuple->elts.size) other_read = true;
        arity = tuple->elts.size;
        places.insert(i);
        edits.push_back(Edit{fn.file->path, name->begin, name->end, "None", candidate});
      }
      // the other elements may still read a gone name inside an expression
      for (size_t i = 0; i < tuple->elts.size; ++i)
        if (!ast::as<ast::Name>(tuple->elts[i]))
          for (const std::string& n : names_in(tuple->elts[i], ast::expr_context::Load))
            if (gone.count(n)) other_read = true;
      return false;
    }
    if (auto* name = ast::as<ast::Name>(x); name && name->ctx == ast::expr_context::Load && x->begin >= from &&
                                            gone.count(std::string(name->id)))
      other_read = true;
    return !other_read;
  });
  if (other_read || edits.empty()) return std::nullopt;
  bool all_seen_dropped = std::all_of(edits.begin(), edits.end(), [&](const Edit& e) {
    std::string_view name = fn.file->parsed->source.text().substr(e.begin, e.end - e.begin);
    return std::find(dropped.begin(), dropped.end(), name) != dropped.end();
  });
  if (all_seen_dropped) return edits;
  if (fn.is_method) return std::nullopt;
  // Every use of the function: `a, _ = fn(...)` with `_` at each place.
  const std::string name(fn.fn->name);
  bool all_dropped = true;
  size_t uses = 0;
  // One walk: an assignment is visited before the callee name inside it.
  std::set<const ast::Node*> dropping_calls;
  for (const auto& f : sources.files())
    model::walk(f->parsed->module, [&](const ast::Node* x) {
      if (auto* n = ast::as<ast::Name>(x); n && n->id == name && n->ctx == ast::expr_context::Load) {
        ++uses;
        if (!dropping_calls.count(x)) all_dropped = false;
        return all_dropped;
      }
      auto* assign = ast::as<ast::Assign>(x);
      auto* call = assign ? ast::as<ast::Call>(assign->value) : nullptr;
      auto* callee = call ? ast::as<ast::Name>(call->func) : nullptr;
      if (!callee || callee->id != name || assign->targets.size != 1) return all_dropped;
      auto* targets = ast::as<ast::Tuple>(assign->targets[0]);
      if (!targets || targets->elts.size != arity) return all_dropped;
      bool drops = std::all_of(places.begin(), places.end(), [&](size_t i) {
        auto* t = ast::as<ast::Name>(targets->elts[i]);
        return t && t->id == "_";
      });
      if (drops) dropping_calls.insert(callee);
      return all_dropped;
    });
  if (!all_dropped || uses == 0) return std::nullopt;
  return edits;
}

// `c` with only the bindings `keep(i)` says yes to (with their origins,
// reader sides and cast reads).
plan::Candidate only_bindings(const plan::Candidate& c, const std::function<bool(size_t)>& keep) {
  plan::Candidate out = c;
  out.apply_bindings.clear();
  out.apply_binding_origins.clear();
  out.apply_binding_readers.clear();
  out.apply_binding_cast_reads.clear();
  out.apply_binding_viewed.clear();
  for (size_t i = 0; i < c.apply_bindings.size(); ++i) {
    if (!keep(i)) continue;
    out.apply_binding_viewed.push_back(i < c.apply_binding_viewed.size() ? c.apply_binding_viewed[i]
                                                                         : plan::Candidate::ViewedSide{});
    out.apply_bindings.push_back(c.apply_bindings[i]);
    out.apply_binding_origins.push_back(i < c.apply_binding_origins.size() ? c.apply_binding_origins[i]
                                                                           : plan::Candidate::BindingOrigin{});
    out.apply_binding_readers.push_back(i < c.apply_binding_readers.size() ? c.apply_binding_readers[i]
                                                                           : plan::Candidate::ReaderSide{});
    out.apply_binding_cast_reads.push_back(i < c.apply_binding_cast_reads.size() ? c.apply_binding_cast_reads[i]
                                                                                 : plan::Candidate::ReaderSide{});
  }
  return out;
}

// `a.b.c`: identifiers joined by dots.
bool is_dotted_path(const std::string& text) {
  size_t at = 0;
  for (;;) {
    size_t dot = text.find('.', at);
    if (!is_identifier(text.substr(at, dot == std::string::npos ? std::string::npos : dot - at))) return false;
    if (dot == std::string::npos) return true;
    at = dot + 1;
  }
}

// Whether an if or a loop statement of fn spans exactly `r` (the merge after
// it, rather than one at a call).
bool branching_statement_at(const ast::FunctionDef& fn, const Range& r) {
  bool found = false;
  model::walk(&fn, [&](const ast::Node* x) {
    if (found) return false;
    if ((ast::as<ast::If>(x) || ast::as<ast::For>(x) || ast::as<ast::AsyncFor>(x) || ast::as<ast::While>(x)) &&
        x->begin == r.begin && x->end == r.end)
      found = true;
    return !found;
  });
  return found;
}

bool same_range(const Range& a, const Range& b) { return a.file == b.file && a.begin == b.begin && a.end == b.end; }

// `c` with the casts and views it took over on the way to some bindings left
// out, those bindings reading the value after them instead
// (plan::Candidate::ReaderSide), when `ops` all lie among them; nullopt
// otherwise. The chain's own unit-axis views of a bound value
// (plan::Candidate::ViewedSide: RoPE tables a caller broadcast before it
// calls the helper that multiplies) may be left so too, all of a binding's
// together: the binding then reads the value after them, those axes squeezed.
std::optional<plan::Candidate> leaving_views(const plan::Candidate& c, const std::vector<Range>& ops) {
  auto among = [](const std::vector<Range>& ranges, const Range& op) {
    return std::any_of(ranges.begin(), ranges.end(), [&](const Range& p) { return same_range(p, op); });
  };
  std::set<size_t> bindings, viewed;
  for (const Range& op : ops) {
    bool covered = false;
    for (size_t i = 0; i < c.apply_binding_readers.size() && i < c.apply_bindings.size(); ++i)
      if (among(c.apply_binding_readers[i].passed, op)) {
        bindings.insert(i);
        covered = true;
      }
    for (size_t i = 0; i < c.apply_binding_viewed.size() && i < c.apply_bindings.size(); ++i) {
      const std::vector<Range>& views = c.apply_binding_viewed[i].views;
      if (!among(views, op)) continue;
      bool all_left = std::all_of(views.begin(), views.end(), [&](const Range& v) { return among(ops, v); });
      if (!all_left) return std::nullopt;
      viewed.insert(i);
      covered = true;
    }
    if (!covered) return std::nullopt;
  }
  if (bindings.empty() && viewed.empty()) return std::nullopt;
  plan::Candidate left = c;
  left.apply_ops.clear();
  left.apply_op_copies.clear();
  for (size_t k = 0; k < c.apply_ops.size(); ++k) {
    bool passed = std::any_of(bindings.begin(), bindings.end(),
                              [&](size_t i) { return among(c.apply_binding_readers[i].passed, c.apply_ops[k]); }) ||
                  std::any_of(viewed.begin(), viewed.end(),
                              [&](size_t i) { return among(c.apply_binding_viewed[i].views, c.apply_ops[k]); });
    if (passed) continue;
    left.apply_ops.push_back(c.apply_ops[k]);
    if (k < c.apply_op_copies.size()) left.apply_op_copies.push_back(c.apply_op_copies[k]);
  }
  for (size_t i : bindings) {
    left.apply_bindings[i].second = c.apply_binding_readers[i].text;
    if (i < left.apply_binding_origins.size()) left.apply_binding_origins[i] = c.apply_binding_readers[i].origin;
    left.apply_binding_readers[i] = {};
  }
  for (size_t i : viewed) {
    plan::Candidate::ViewedSide& side = left.apply_binding_viewed[i];
    left.apply_bindings[i].second = side.text;
    if (i < left.apply_binding_origins.size()) left.apply_binding_origins[i] = side.origin;
    side.left_in_place = true;
  }
  return left;
}

std::variant<Rewritten, Refused> rewrite(const plan::Candidate& c, const model::SourceSet& sources, const rules::Rule& rule,
                                         const model::ModelConfig* config, bool kept_in_place) {
  std::string here = fmt::format("{}:{}", c.location.file, c.location.start_line);
  if (!rule.replace || !rule.file) return Refused{fmt::format("rule {} has no replace function", rule.id), here};
  if (c.apply_across_layers)
    return Refused{"the chain runs across the layer loop, and apply threads the residual through the layers "
                   "(prerequisite thread_residual) only for an add+RMSNorm chain: this one is done by hand",
                   here};
  if (c.apply_outputs.empty() || c.apply_outputs.front().file.empty())
    return Refused{"the chain's results were not located in the source", here};
  if (!c.escapes.empty())
    return Refused{fmt::format("an intermediate escapes the chain: {}", fmt::join(c.escapes, "; ")), here};

  std::vector<Range> outputs = results_in_caller(c, sources);
  const model::ModelFile* file = file_named(sources, outputs.front().file);
  if (!file) return Refused{"the chain's file is not among the loaded sources", here};
  const Range& first_out = outputs.front();
  std::optional<FunctionAt> fn = function_around(*file, first_out.begin, first_out.end);
  if (!fn) return Refused{"the chain's result is computed outside any function", here};
  here = fmt::format("{}:{}", file->path, line_of(*file, first_out.begin));
  for (const Range& out : outputs)
    if (out.file != file->path || !holds(fn->fn, out))
      return Refused{fmt::format("the chain's results are computed in different functions ({} and elsewhere)", fn->qualified),
                     here};

  // The chain's ops in fn (with its results) and the helpers holding the
  // others; the helpers must be called by the rewritten statements.
  std::vector<std::pair<uint32_t, uint32_t>> local;
  std::set<std::string> helpers;
  std::map<std::string, std::vector<Range>> helper_ops;
  for (const Range& op : c.apply_ops) {
    if (op.file == file->path && holds(fn->fn, op) && op.begin >= fn->fn->body[0]->begin) {
      local.emplace_back(op.begin, op.end);
      continue;
    }
    const model::ModelFile* other = file_named(sources, op.file);
    std::optional<FunctionAt> helper = other ? function_around(*other, op.begin, op.end) : std::nullopt;
    if (!helper)
      return Refused{fmt::format("an op of the chain lies outside any function ({}:{})", op.file,
                                 other ? line_of(*other, op.begin) : 0), here};
    helpers.insert(helper->qualified);
    helper_ops[helper->qualified].push_back(op);
  }
  for (const Range& out : outputs) local.emplace_back(out.begin, out.end);
  // The call of an inlined helper with several returns is a merge the chain
  // passes (`key_states = repeat_kv(key, n)`, whose `if n_rep == 1: return`
  // joins the repeat): its statement belongs to the chain, though its ops
  // lie in the helper.
  for (const Range& merge : c.apply_merges)
    if (merge.file == file->path && holds(fn->fn, merge) && merge.begin >= fn->fn->body[0]->begin &&
        !branching_statement_at(*fn->fn, merge))
      local.emplace_back(merge.begin, merge.end);

  // The run of statements of the innermost block that holds them.
  ChainBlock block = innermost_block(*fn->fn, local);
  // Config-decided ifs the chain's statements straddle: their taken arms
  // join the list in their place (apply/config_fold.h).
  ConfigFolds folds = fold_config_ifs(block.statements, local, c, *file);
  if (!folds.refusal.empty()) return Refused{folds.refusal, here};
  // A chain that runs into a `with` that only turns autocast or autograd
  // off (HF's rotary tables under `torch.autocast(..., enabled=False)`): the
  // with's body joins the list, and the replacement is written inside it.
  const ast::With* wrapper = nullptr;
  size_t body_first = 0, body_last = 0;  // the with's body in the list
  for (size_t i = 0; i < block.statements.size(); ++i) {
    const ast::stmt* s = block.statements[i];
    bool holds_op = std::any_of(local.begin(), local.end(), [&](const auto& op) { return s->begin <= op.first && op.second <= s->end; });
    if (!holds_op || !transparent_with(s, local)) continue;
    if (wrapper)
      return Refused{fmt::format("the chain runs into two with statements ({}:{} and {}:{}); edit it by hand", file->path,
                                 wrapper->lineno, file->path, s->lineno), here};
    wrapper = ast::as<ast::With>(s);
    std::vector<const ast::stmt*> body(wrapper->body.begin(), wrapper->body.end());
    block.statements.erase(block.statements.begin() + i);
    block.statements.insert(block.statements.begin() + i, body.begin(), body.end());
    body_first = i;
    body_last = i + body.size() - 1;
    i = body_last;
  }
  const std::vector<const ast::stmt*>& list = block.statements;
  size_t first = list.size(), last = 0;
  std::vector<bool> touched(list.size(), false);
  // An if the chain runs through, when it has one (apply/branch_split.h).
  const ast::If* split = nullptr;
  for (const auto& [begin, end] : local)
    for (size_t i = 0; i < list.size(); ++i) {
      if (!(list[i]->begin <= begin && end <= list[i]->end)) continue;
      if (std::string kind = compound_kind(list[i]); !kind.empty() && !whole_loop_of_chain(list[i], local) &&
                                                     !optional_if_of_chain(list[i], local, c.apply_optional_ifs, file->path)) {
        const ast::If* through = wrapper || !folds.ifs.empty() ? nullptr : split_if_of_chain(list[i], local);
        if (!through || (split && split != through))
          return Refused{fmt::format("the chain's ops lie in the header and body, or in several clauses, of the {} "
                                     "statement at {}:{}; edit it by hand", kind, file->path, list[i]->lineno), here};
        split = through;
      }
      touched[i] = true;
      first = std::min(first, i);
      last = std::max(last, i);
    }
  if (first == list.size()) return Refused{fmt::format("no op of the chain lies in {}", fn->qualified), here};
  if (wrapper && !folds.ifs.empty())
    return Refused{fmt::format("the chain runs into the with statement at {}:{} and through a config branch at {}:{}; "
                               "edit it by hand", file->path, wrapper->lineno, file->path, folds.ifs.front().statement->lineno),
                   here};
  if (wrapper && (first > body_first || last != body_last))
    return Refused{fmt::format("the chain does not end with the body of the with statement at {}:{}; edit it by hand",
                               file->path, wrapper->lineno), here};
  // Between the chain's statements only a plain copy of a name may sit
  // (`residual = hidden_states` between HF's residual add and its norm): it
  // stays, after the results it reads are bound.
  // Any other statement there that shares no name with the chain's
  // statements (HF's `if self.training: self.aux_loss = ...` inside an
  // expert block) moves, as written, before the replacement.
  std::set<const ast::stmt*> copies;
  std::vector<const ast::stmt*> hoisted;
  // Statements that only prepare values for the chain's ops, found from the
  // last one back so that one preparing for another counts.
  std::set<size_t> prep;
  for (size_t i = last; i > first; --i)
    if (!touched[i - 1] && !name_copy(list[i - 1]) && !independent_of_chain(list, first, last, i - 1, touched) &&
        feeds_only_chain(list, last, i - 1, touched, local, prep))
      prep.insert(i - 1);
  for (size_t i = first; i <= last; ++i) {
    if (touched[i]) continue;
    if (name_copy(list[i])) {
      // A copy only the chain's later statements read (DeepSeek's
      // `original_scores = scores` before the gather) is the chain's own
      // aliasing: it goes with the chain, and its name with the other removed
      // ones (read after the run, the rewrite is refused).
      std::string target(ast::as<ast::Name>(ast::as<ast::Assign>(list[i])->targets[0])->id);
      bool chain_reads_it = false;
      for (size_t j = i + 1; j <= last && !chain_reads_it; ++j)
        chain_reads_it = touched[j] && names_in(list[j], ast::expr_context::Load).count(target);
      if (!chain_reads_it) copies.insert(list[i]);
      continue;
    }
    if (wrapper && i >= body_first)
      return Refused{fmt::format("{}:{} sits inside the with statement at {}:{} and is not part of the chain", file->path,
                                 list[i]->lineno, file->path, wrapper->lineno), here};
    bool independent = independent_of_chain(list, first, last, i, touched);
    // One that cannot move, but only prepares a value for the chain, goes with it.
    if (!independent && prep.count(i)) {
      touched[i] = true;
      continue;
    }
    if (!independent)
      return Refused{fmt::format("{}:{} sits between the chain's statements and is not part of the chain", file->path,
                                 list[i]->lineno), here};
    hoisted.push_back(list[i]);
  }
  if (wrapper && !copies.empty())
    return Refused{fmt::format("{}:{} copies a name in a chain that runs into the with statement at {}:{}; edit it by hand",
                               file->path, (*copies.begin())->lineno, file->path, wrapper->lineno), here};
  if (!hoisted.empty() && !copies.empty())
    return Refused{fmt::format("{}:{} sits between the chain's statements and is not part of the chain", file->path,
                               hoisted.front()->lineno), here};
  std::vector<const ast::stmt*> run(list.begin() + first, list.begin() + last + 1);
  const std::set<const ast::stmt*> moved(hoisted.begin(), hoisted.end());
  // A split's test runs before the chain's statements: it must not read what
  // those before the if assign.
  if (split) {
    if (!copies.empty())
      return Refused{fmt::format("{}:{} copies a name in a chain that runs through the if statement at {}:{}; edit it "
                                 "by hand", file->path, (*copies.begin())->lineno, file->path, split->lineno), here};
    for (const Range& out : outputs)
      if (holds(split, out))
        return Refused{fmt::format("the chain's result is computed in the body of the if statement at {}:{}; edit it "
                                   "by hand", file->path, split->lineno), here};
    std::set<std::string> assigned;
    for (const ast::stmt* s : run) {
      if (s == split) break;
      if (moved.count(s)) continue;
      for (const std::string& n : names_in(s, ast::expr_context::Store)) assigned.insert(n);
    }
    for (const std::string& n : names_in(split->test, ast::expr_context::Load))
      if (assigned.count(n))
        return Refused{fmt::format("the test of the if statement at {}:{} reads '{}', which the chain's statements "
                                   "before it assign; edit it by hand", file->path, split->lineno, n), here};
  }
  for (const std::string& h : helpers)
    if (!run_calls(run, *fn, h, sources)) {
      // Only casts or views the chain took over on its way to a binding lie
      // there (a rotary helper's closing `.flatten(3).type_as(x)`): they
      // stay, and the replacement reads the value after them.
      // Where the chain was not matched in fn itself, the bindings are spelt
      // through the call's arguments: only when each then has one.
      if (std::optional<plan::Candidate> left = leaving_views(c, helper_ops[h])) {
        std::string missing;
        if (fn->qualified != c.apply_function) arguments_in(*fn, *left, sources, missing);
        if (missing.empty()) return rewrite(*left, sources, rule, config, kept_in_place);
      }
      return Refused{fmt::format("the chain spans {} and {}, which those statements do not call", fn->qualified, h), here};
    }

  ReplacementRequest request;
  request.replace = rule.replace;
  request.kept_returns = c.apply_output_anchors;
  request.rule_source = &rule.file->parsed->source;
  request.taken_names = names_in(fn->fn, ast::expr_context::Load);
  for (const std::string& s : names_in(fn->fn, ast::expr_context::Store)) request.taken_names.insert(s);
  for (const ast::arg* a : fn->fn->args->args) request.taken_names.insert(std::string(a->arg));

  // Where each result goes: the run's last statement returns exactly the
  // results; or a statement of the run binds it to a name (that statement
  // goes, the replacement assigns the name); or it is part of a larger
  // expression (that statement stays, reading the name the replacement
  // assigns).
  const ast::Return* ret = ast::as<ast::Return>(run.back());
  bool returned = false;
  if (ret && ret->value) {
    std::vector<const ast::expr*> values;
    if (auto* t = ast::as<ast::Tuple>(ret->value)) values.assign(t->elts.begin(), t->elts.end());
    else values.push_back(ret->value);
    returned = values.size() == outputs.size();
    for (size_t i = 0; returned && i < values.size(); ++i)
      returned = values[i]->begin == outputs[i].begin && values[i]->end == outputs[i].end;
  }
  // The dataflow's name for result o, or "".
  auto output_name = [&](size_t o) { return o < c.apply_output_names.size() ? c.apply_output_names[o] : std::string(); };
  std::map<const ast::stmt*, KeptStatement> kept;
  const ast::stmt* shared_result = nullptr;  // a kept statement whose one expression gives several results
  // With copies in the run, each result goes to a temporary and is bound to
  // its name where its statement was, so a copy sees what it saw before.
  struct OrderedLine {
    const ast::stmt* statement;  // where the line goes, in source order
    std::string name;            // the result's name; empty for a copy
    std::string text;            // "name = temporary", or the copy as written
  };
  std::vector<OrderedLine> ordered;
  if (!copies.empty()) {
    if (returned) return Refused{"a copy statement sits before the chain's return; edit it by hand", here};
    for (size_t o = 0; o < outputs.size(); ++o) {
      const Range& out = outputs[o];
      const ast::stmt* s = *std::find_if(run.begin(), run.end(), [&](const ast::stmt* x) { return holds(x, out); });
      std::string name = bound_name(s, out, output_name(o));
      // A result inside the run's last statement, after the copies (the norm
      // call in `mlp_out = self.mlp(self.post_attention_layernorm(h))` after
      // `residual = h`): that statement stays where it is, reading the
      // temporary (kept in place, so it still runs after the copies).
      bool last_kept = name.empty() && kept_in_place && s == run.back() && !copies.count(s);
      if (name.empty() && !last_kept)
        return Refused{fmt::format("{}:{}: with a copy statement in between, each result must be assigned to a name",
                                   file->path, s->lineno), here};
      std::string temporary = fresh("npu_result", request.taken_names);
      request.targets.push_back(temporary);
      if (last_kept) kept[s].results.emplace_back(out, temporary);
      else ordered.push_back({s, name, name + " = " + temporary});
    }
    for (const ast::stmt* s : copies) ordered.push_back({s, "", text_of(*file, s)});
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const OrderedLine& a, const OrderedLine& b) { return a.statement->begin < b.statement->begin; });
  } else if (!returned) {
    for (size_t o = 0; o < outputs.size(); ++o) {
      const Range& out = outputs[o];
      const ast::stmt* s = *std::find_if(run.begin(), run.end(), [&](const ast::stmt* x) { return holds(x, out); });
      std::string name = bound_name(s, out, output_name(o));
      // The value a whole loop leaves in a name (an expert loop's sum): that name.
      if (name.empty() && whole_loop_of_chain(s, local) && s->begin == out.begin && s->end == out.end) {
        name = output_name(o);
        if (name.empty())
          return Refused{fmt::format("{}:{}: the loop's result has no name", file->path, s->lineno), here};
      }
      // `cache[idx] = x`: the result is the write itself, which the
      // replacement makes in place; the statement goes and no name is bound.
      const auto* write = ast::as<ast::Assign>(s);
      if (name.empty() && write && write->targets.size == 1 && ast::as<ast::Subscript>(write->targets[0])) {
        request.targets.push_back("");
        continue;
      }
      // `cache.index_copy_(2, pos, k)` as a statement of its own: the model
      // drops the call's value and keeps its in-place write, which the
      // replacement makes; the statement goes and no name is bound.
      const auto* dropped = ast::as<ast::Expr>(s);
      if (name.empty() && dropped && dropped->value && dropped->value->begin == out.begin &&
          dropped->value->end == out.end) {
        request.targets.push_back("");
        continue;
      }
      if (name.empty()) {
        // Two results of one expression left in place would overwrite each
        // other's text (refused below, after the more specific reasons).
        for (const auto& [other, _] : kept[s].results)
          if (other.begin < out.end && out.begin < other.end && !shared_result) shared_result = s;
        name = fresh("npu_result", request.taken_names);
        kept[s].results.emplace_back(out, name);
      }
      request.targets.push_back(name);
    }
    // Every result an in-place write: nothing to assign.
    if (std::all_of(request.targets.begin(), request.targets.end(), [](const std::string& t) { return t.empty(); }))
      request.discard_result = true;
    else
      for (std::string& t : request.targets)
        if (t.empty()) t = "_";
  }
  // A kept statement keeps its other code, so it must not hold other ops of
  // the chain: they would run twice.
  for (const auto& [s, k] : kept)
    for (const auto& [begin, end] : local) {
      bool in_result = std::any_of(k.results.begin(), k.results.end(), [&, b = begin, e = end](const auto& r) {
        return r.first.begin <= b && e <= r.first.end;
      });
      if (s->begin <= begin && end <= s->end && !in_result)
        return Refused{fmt::format("{}:{} holds both the chain's result and other ops of the chain", file->path,
                                   line_of(*file, begin)), here};
    }

  // Names the removed statements bound must not be read afterwards (the
  // results are assigned again), nor by what kept statements keep.
  std::set<std::string> gone;
  for (const ast::stmt* s : run)
    if (!kept.count(s) && !copies.count(s) && !moved.count(s))
      for (const std::string& n : names_in(s, ast::expr_context::Store)) gone.insert(n);
  for (const std::string& t : request.targets) gone.erase(t);
  for (const OrderedLine& o : ordered) gone.erase(o.name);
  // A kept statement binding the name again after the last removed statement
  // that bound it (HF's `attn_output = attn_output.transpose(1, 2).contiguous()`
  // after the matmul it reads): later reads see the kept statement's value.
  for (const auto& [s, k] : kept)
    for (const std::string& n : names_in(s, ast::expr_context::Store)) {
      bool bound_later = std::any_of(run.begin(), run.end(), [&, s = s](const ast::stmt* x) {
        return x->begin > s->begin && !kept.count(x) && !copies.count(x) && !moved.count(x) &&
               names_in(x, ast::expr_context::Store).count(n);
      });
      if (!bound_later) gone.erase(n);
    }
  // A copy reads only results bound before it or names the run leaves alone;
  // and no chain statement after a copy reads the name it assigns (the
  // replacement reads everything before the copy runs).
  for (const ast::stmt* copy : copies) {
    for (const std::string& read : names_in(copy, ast::expr_context::Load)) {
      bool bound_before = std::any_of(ordered.begin(), ordered.end(), [&](const OrderedLine& o) {
        return o.name == read && o.statement->begin < copy->begin;
      });
      if (gone.count(read) || (!bound_before && std::any_of(run.begin(), run.end(), [&](const ast::stmt* s) {
                                 return !copies.count(s) && names_in(s, ast::expr_context::Store).count(read);
                               })))
        return Refused{fmt::format("the copy at {}:{} reads '{}', which the chain computes", file->path, copy->lineno, read), here};
    }
    for (const std::string& written : names_in(copy, ast::expr_context::Store))
      for (const ast::stmt* s : run)
        if (s->begin > copy->begin && !copies.count(s) && names_in(s, ast::expr_context::Load).count(written))
          return Refused{fmt::format("the chain reads '{}' at {}:{} after the copy at {}:{} assigns it", written, file->path,
                                     s->lineno, file->path, copy->lineno), here};
  }
  for (auto& [s, k] : kept) {
    // A kept `return result, probs` whose gone element every caller drops
    // (plan::Candidate::apply_dropped_returns): it returns None there.
    if (auto* ret = ast::as<ast::Return>(s))
      if (auto* tuple = ret->value ? ast::as<ast::Tuple>(ret->value) : nullptr)
        for (const ast::expr* e : tuple->elts)
          if (auto* name = ast::as<ast::Name>(e); name && gone.count(std::string(name->id)) &&
                                                  std::find(c.apply_dropped_returns.begin(), c.apply_dropped_returns.end(),
                                                            name->id) != c.apply_dropped_returns.end())
            k.results.emplace_back(Range{file->path, name->begin, name->end}, "None");
    auto inside_result = [&, &k = k](const ast::Node* x) {
      return std::any_of(k.results.begin(), k.results.end(),
                         [&](const auto& r) { return r.first.begin <= x->begin && x->end <= r.first.end; });
    };
    for (const std::string& read : names_in(s, ast::expr_context::Load, inside_result))
      if (gone.count(read))
        return Refused{fmt::format("the intermediate '{}' is read again at {}:{}", read, file->path, s->lineno), here};
  }
  // After the run; inside a loop, the next iteration reads the loop's whole body.
  uint32_t scope_begin = block.loop ? block.loop->begin : run.back()->end;
  uint32_t scope_end = block.loop ? block.loop->end : fn->fn->end;
  std::vector<Edit> returned_none;
  for (const ast::stmt* s : fn->fn->body) {
    auto [read, line] = first_read(*file, s, scope_begin, scope_end, gone, folds);
    bool in_run = !read.empty() && line >= static_cast<int>(run.front()->lineno) &&
                  line <= line_of(*file, run.back()->end);
    if (read.empty() || in_run) continue;
    // Only returned, to callers that all drop it: it is returned as None.
    if (!block.loop)
      if (std::optional<std::vector<Edit>> none =
              discarded_returns(*fn, gone, scope_begin, sources, c.id, c.apply_dropped_returns)) {
        returned_none = std::move(*none);
        break;
      }
    return Refused{fmt::format("the intermediate '{}' is read again at {}:{}", read, file->path, line), here};
  }

  // Each binding spelt where the replacement goes. In a folded if, the
  // replacement goes where the if was, after the taken arm's statements before
  // the run (which move there as written).
  const ast::stmt* placed = folds.top_of(run.front());
  SpellingRequest spelling{&*fn, placed->begin, {}, rule.replace, {}, {}};
  if (auto inputs = rule.literal.find("inputs"); inputs != rule.literal.end() && inputs->is_object())
    for (const auto& [param, spec] : inputs->items())
      if (auto shape = spec.find("shape"); shape != spec.end() && shape->is_array() && !shape->empty()) {
        std::vector<std::string> axes;
        for (const auto& axis : *shape) axes.push_back(axis.is_string() ? axis.get<std::string>() : axis.dump());
        spelling.declared_shape[param] = std::move(axes);
      }
  for (size_t i = 0; i < first; ++i)
    if (placed != run.front() && folds.top_of(list[i]) == placed && list[i] != placed)
      spelling.hoisted.emplace_back(list[i]->begin, list[i]->end);
  for (const ast::stmt* h : hoisted) spelling.hoisted.emplace_back(h->begin, h->end);
  for (const ast::stmt* s : run) {
    if (auto k = kept.find(s); k != kept.end())
      for (const auto& [range, name] : k->second.results) spelling.removed.emplace_back(range.begin, range.end);
    else
      spelling.removed.emplace_back(s->begin, s->end);
  }
  // A parameter the replacement never reads (FIA's mask, replaced by the
  // compressed causal one) needs no spelling.
  const std::set<std::string> read = names_in(rule.replace, ast::expr_context::Load);
  const plan::Candidate bound = only_bindings(c, [&](size_t i) { return read.count(c.apply_bindings[i].first) > 0; });
  if (fn->qualified == c.apply_function) {
    // Matched in fn itself.
    SpelledBindings spelled = spell_bindings(bindings_at_calls(bound, *fn, sources), spelling);
    if (!spelled.refusal.empty()) return Refused{spelled.refusal, here};
    request.arguments = std::move(spelled.arguments);
  } else {
    // Matched in a caller that inlined fn: the values computed inside fn
    // (HF's sliced mask `attention_mask[..., :n]` in the attention function)
    // are spelt there, the others through the call's arguments.
    auto computed_in_fn = [&](size_t i) {
      const plan::Candidate::BindingOrigin& o = bound.apply_binding_origins[i];
      return o.kind == plan::Candidate::BindingOrigin::Kind::Expression && o.range.file == file->path &&
             fn->fn->body[0]->begin <= o.range.begin && o.range.end <= fn->fn->end;
    };
    plan::Candidate outer = only_bindings(bound, [&](size_t i) { return !computed_in_fn(i); });
    plan::Candidate inner = only_bindings(bound, computed_in_fn);
    std::string missing;
    request.arguments = arguments_in(*fn, outer, sources, missing);
    if (!missing.empty()) return Refused{missing, here};
    if (!inner.apply_bindings.empty()) {
      SpelledBindings spelled = spell_bindings(inner, spelling);
      if (!spelled.refusal.empty()) return Refused{spelled.refusal, here};
      for (auto& [param, text] : spelled.arguments) request.arguments[param] = std::move(text);
    }
  }
  // A parameter the match bound to nothing (the rotary tables' length) has
  // no call-time spelling; module_buffer may find it in __init__.
  for (auto it = request.arguments.begin(); it != request.arguments.end();)
    it = it->second.empty() ? request.arguments.erase(it) : std::next(it);
  // The replacement runs before the kept statements: a binding must not
  // read a name one of them assigns, unless it comes after every removed
  // statement (gpt-oss's `x = x + self.mlp(<norm result>)` after the add the
  // chain takes: the chain read `x` before it, as the replacement does).
  std::set<std::string> assigned_by_kept;
  for (const auto& [s, k] : kept) {
    bool trailing = std::none_of(run.begin(), run.end(), [&, s = s](const ast::stmt* x) {
      return x->begin > s->begin && !kept.count(x) && !copies.count(x);
    });
    if (trailing) continue;
    for (const std::string& n : names_in(s, ast::expr_context::Store)) assigned_by_kept.insert(n);
  }
  for (const auto& [param, text] : request.arguments) {
    if (assigned_by_kept.empty()) break;
    std::set<std::string> reads;
    try {
      reads = names_in(frontend::parse_expression(text, "<binding>")->expr, ast::expr_context::Load);
    } catch (const std::exception&) {
      return Refused{fmt::format("{} = {} is not a Python expression", param, text), here};
    }
    for (const std::string& n : reads)
      if (assigned_by_kept.count(n))
        return Refused{fmt::format("{} = {} reads '{}', which the chain's own statements assign", param, text, n), here};
  }

  std::string_view text = file->parsed->source.text();
  auto indent_of = [&](const ast::stmt* s) { return own_line_indent(*file, s); };
  // The run's first statement (or the folded if it lies in), and the with's
  // body: each on lines of its own.
  const ast::stmt* top_front = folds.top_of(run.front());
  const ast::stmt* top_back = folds.top_of(run.back());
  std::optional<std::string> outer_indent = indent_of(wrapper && first == body_first ? wrapper : top_front);
  if (!outer_indent)
    return Refused{fmt::format("{}:{} shares its line with other code", file->path, top_front->lineno), here};
  // A split's arms are at its body's indentation.
  std::optional<std::string> arm_indent = split ? indent_of(split->body[0]) : outer_indent;
  if (!arm_indent)
    return Refused{fmt::format("{}:{} shares its line with other code", file->path, split->body[0]->lineno), here};
  // A statement moved to `to` from its own indentation.
  auto moved_to = [&](const ast::stmt* s, std::string text, const std::string& to) {
    std::optional<std::string> own = indent_of(s);
    return own ? reindented(text, *own, to) : text;
  };
  // A statement kept by the rewrite, at the replacement's indentation.
  auto at_replacement = [&](const ast::stmt* s, std::string text) {
    return moved_to(s, std::move(text), *arm_indent);
  };
  request.indent = *arm_indent;
  if (wrapper) {
    std::optional<std::string> body_indent = indent_of(wrapper->body[0]);
    if (!body_indent)
      return Refused{fmt::format("{}:{} shares its line with other code", file->path, wrapper->body[0]->lineno), here};
    request.indent = *body_indent;
  }

  ModuleBuffers buffers = module_buffers(*fn, sources, rule, request.arguments, c.id, config);
  if (!buffers.refusal.empty()) return Refused{buffers.refusal, here};
  request.module_reads = buffers.reads;
  request.left_out = buffers.left_out;

  // A binding the analysis spelt itself (an op's name, not model code)
  // would be an undefined name in the patched file.
  const std::set<std::string> known = names_in_file(*file);
  for (const auto& [param, text] : request.arguments) {
    std::set<std::string> reads;
    try {
      reads = names_in(frontend::parse_expression(text, "<binding>")->expr, ast::expr_context::Load);
    } catch (const std::exception&) {
      return Refused{fmt::format("{} = {} is not a Python expression", param, text), here};
    }
    for (const std::string& n : reads)
      if (!known.count(n) && !request.taken_names.count(n))
        return Refused{fmt::format("{} = {} is not model code ('{}' is defined nowhere in {})", param, text, n, file->path),
                       here};
  }

  // What stays of a statement before the with would move into it.
  for (const auto& [s, k] : kept)
    if (wrapper && s->begin < wrapper->body[0]->begin)
      return Refused{fmt::format("{}:{} keeps a result of the chain outside the with statement at {}:{}; edit it by hand",
                                 file->path, s->lineno, file->path, wrapper->lineno), here};
  if (shared_result)
    return Refused{fmt::format("{}:{}: one expression gives several of the chain's results; assign each to a name",
                               file->path, shared_result->lineno), here};
  std::vector<std::pair<std::string, std::string>> folded;
  std::string replaced;
  try {
    replaced = replacement_text(request);
  } catch (const std::exception& e) {
    return Refused{e.what(), here};
  }
  // Kept statements that end the run, when asked (kept_in_place), stay where
  // they are with only their results replaced: each its own edit, so a later
  // refactor of the same statement (thread_residual's last residual add) can
  // take it in (patch_plan).
  size_t kept_from = run.size();
  while (kept_from > 0 && kept.count(run[kept_from - 1])) --kept_from;
  bool trailing_kept = kept_in_place && kept_from > 0 && kept_from < run.size() && !wrapper &&
                       folds.ifs.empty() && !split &&
                       std::none_of(run.begin(), run.begin() + static_cast<long>(kept_from),
                                    [&](const ast::stmt* s) { return kept.count(s) > 0; });
  std::vector<Edit> kept_edits;
  for (size_t i = 0; i < run.size(); ++i) {
    auto k = kept.find(run[i]);
    if (k == kept.end()) continue;
    if (!trailing_kept) {
      replaced += "\n" + request.indent + at_replacement(run[i], kept_text(*file, run[i], k->second));
      continue;
    }
    for (const auto& [range, name] : k->second.results)
      kept_edits.push_back(Edit{file->path, range.begin, range.end, name, c.id});
  }
  for (const OrderedLine& o : ordered) replaced += "\n" + request.indent + o.text;
  // The with's header, as written (with the comments up to its body), then the replacement inside it.
  uint32_t edit_begin = top_front->begin;
  if (wrapper) {
    uint32_t body_line = file->parsed->source.line_start(wrapper->body[0]->lineno);
    replaced = std::string(text.substr(wrapper->begin, body_line - wrapper->begin)) + request.indent + replaced;
    edit_begin = std::min(edit_begin, wrapper->begin);
  }
  if (split) {
    std::vector<const ast::stmt*> original;
    for (const ast::stmt* s : run)
      if (s != split && !moved.count(s)) original.push_back(s);
    replaced = split_text(*file, split, *outer_indent, *arm_indent, replaced, original, run.front());
    folded.emplace_back(fmt::format("{}:{}", file->path, split->lineno), split_note(*file, split));
  }
  for (auto h = hoisted.rbegin(); h != hoisted.rend(); ++h)
    replaced = moved_to(*h, text_of(*file, *h), *outer_indent) + "\n" + *outer_indent + replaced;
  // A folded if's statements before and after the run stay, moved out of
  // their arm; a comment says which arm ran.
  std::string before;
  for (size_t i = 0; i < first; ++i)
    if (folds.top.count(list[i]) && folds.top_of(list[i]) == top_front)
      before += moved_text(*file, list[i], *outer_indent) + "\n" + *outer_indent;
  for (size_t i = last + 1; i < list.size(); ++i)
    if (folds.top.count(list[i]) && folds.top_of(list[i]) == top_back)
      replaced += "\n" + *outer_indent + moved_text(*file, list[i], *outer_indent);
  std::string notes;
  std::set<std::string> commented;  // one comment for ifs with the same test
  for (const FoldedIf& f : folds.ifs) {
    std::string comment = fold_comment(f);
    if (commented.insert(comment).second) notes += comment + "\n" + *outer_indent;
    folded.emplace_back(fmt::format("{}:{}", file->path, f.statement->lineno),
                        fmt::format("config branch `if {}` folded to its {} arm ({})", f.arm->condition,
                                    f.arm->then_arm ? "then" : "else", f.arm->value));
  }
  replaced = notes + before + replaced;
  buffers.edits.insert(buffers.edits.end(), returned_none.begin(), returned_none.end());
  uint32_t edit_end = trailing_kept ? run[kept_from - 1]->end : top_back->end;
  return Rewritten{Edit{file->path, edit_begin, edit_end, replaced, c.id}, buffers.edits, folded, kept_edits};
}

}  // namespace

std::map<std::string, std::string> arguments_in(const FunctionAt& fn, const plan::Candidate& c,
                                                const model::SourceSet& sources, std::string& missing) {
  std::map<std::string, std::string> out;
  // Views of a bound value left in the caller: the value after them, squeezed.
  auto undone = [&](size_t i, const std::string& text) {
    if (i >= c.apply_binding_viewed.size() || !c.apply_binding_viewed[i].left_in_place || text.empty()) return text;
    return viewed_spelling(text, c.apply_binding_viewed[i].axes);
  };
  if (fn.qualified == c.apply_function) {
    for (size_t i = 0; i < c.apply_bindings.size(); ++i) out[c.apply_bindings[i].first] = undone(i, c.apply_bindings[i].second);
    return out;
  }
  std::optional<FunctionAt> caller = function_named(sources, c.apply_function);
  std::map<std::string, std::string> caller_text_to_param;
  if (caller) {
    // A module-level function may be called through a name bound to it or to
    // a dispatch table's entry (llama_like's `attend(self, q, k, v, ...)`).
    const std::set<std::string> callees =
        fn.is_method ? std::set<std::string>{std::string(fn.fn->name)}
                     : names_holding(caller->fn, std::string(fn.fn->name), tables_holding(sources, std::string(fn.fn->name)));
    model::walk(caller->fn, [&](const ast::Node* x) {
      auto* call = ast::as<ast::Call>(x);
      if (!call) return true;
      bool via_self = false;
      if (auto* attr = ast::as<ast::Attribute>(call->func)) {
        if (attr->attr != fn.fn->name) return true;
        via_self = fn.is_method;
      } else if (auto* name = ast::as<ast::Name>(call->func); !name || !callees.count(std::string(name->id))) {
        return true;
      }
      size_t skip = via_self ? 1 : 0;
      for (size_t i = 0; i < call->args.size && i + skip < fn.fn->args->args.size; ++i)
        caller_text_to_param.emplace(text_of(*caller->file, call->args[i]), std::string(fn.fn->args->args[i + skip]->arg));
      for (const ast::keyword* k : call->keywords)
        if (ast::present(k->arg)) caller_text_to_param.emplace(text_of(*caller->file, k->value), std::string(k->arg));
      return true;
    });
  }
  for (size_t i = 0; i < c.apply_bindings.size(); ++i) {
    const auto& [param, text] = c.apply_bindings[i];
    // Bound to nothing: no spelling here either (module_buffer may find one).
    if (text.empty()) {
      out[param] = "";
      continue;
    }
    auto it = caller_text_to_param.find(text);
    if (it == caller_text_to_param.end()) {
      // `self.scaling` in the caller, which passes `self` as fn's `module`:
      // `module.scaling` inside fn.
      size_t dot = text.find('.');
      auto base = dot == std::string::npos ? caller_text_to_param.end() : caller_text_to_param.find(text.substr(0, dot));
      if (base != caller_text_to_param.end() && is_identifier(base->first) && is_dotted_path(text)) {
        out[param] = undone(i, base->second + text.substr(dot));
        continue;
      }
      missing = fmt::format("{} = {} (bound in {}) has no name inside {}", param, text, c.apply_function, fn.qualified);
      return {};
    }
    out[param] = undone(i, it->second);
  }
  return out;
}

ChainRewrite rewrite_chain(const plan::Candidate& c, const model::SourceSet& sources, const rules::Rule& rule,
                           const model::ModelConfig* config, bool kept_in_place) {
  auto result = rewrite(c, sources, rule, config, kept_in_place);
  if (auto* done = std::get_if<Rewritten>(&result))
    return ChainRewrite{done->edit, done->buffers, "", "", done->folded, done->kept};
  const Refused& r = std::get<Refused>(result);
  return ChainRewrite{std::nullopt, {}, r.reason, r.where, {}, {}};
}

}  // namespace npufuse::apply

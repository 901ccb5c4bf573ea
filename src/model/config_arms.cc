#include "model/config_arms.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "model/ast_walk.h"
#include "model/dataflow.h"

namespace npufuse::model {

namespace {

bool decided_by_settings(const BranchCondition& b) {
  return std::any_of(b.kinds.begin(), b.kinds.end(),
                     [](BranchKind k) { return k == BranchKind::ConfigChoice || k == BranchKind::AttentionDispatch; });
}

// The test reads only `self.X`, literals and module-level names: a name the
// forward binds (`seqlen`) must not be looked up among `__init__`'s locals,
// where the same spelling may mean something else.
bool reads_only_settings(const ast::expr* test, const EvalScope& init_scope) {
  bool ok = true;
  std::function<void(const ast::Node*)> visit = [&](const ast::Node* n) {
    if (!ok) return;
    if (const auto* name = ast::as<ast::Name>(n)) {
      std::string id(name->id);
      if (id != "self" && (init_scope.bound.count(id) || init_scope.locals.count(id))) ok = false;
      return;
    }
    if (ast::as<ast::Call>(n)) {  // a call asks something at run time
      ok = false;
      return;
    }
    // `self.bias is None`: whether an optional submodule or parameter was
    // built depends on which `__init__` branch ran, which the first-seen
    // definition of the attribute does not say.
    if (const auto* c = ast::as<ast::Compare>(n)) {
      for (ast::cmpop op : c->ops)
        if (op == ast::cmpop::Is || op == ast::cmpop::IsNot) ok = false;
      if (!ok) return;
    }
    for_each_child(n, visit);
  };
  visit(test);
  return ok;
}

// `self.X is None` or `self.X is not None`: X, and whether the test is `is not`.
std::optional<std::pair<std::string, bool>> none_test(const ast::expr* test) {
  auto* c = ast::as<ast::Compare>(test);
  if (!c || c->ops.size != 1 || c->comparators.size != 1) return std::nullopt;
  if (c->ops[0] != ast::cmpop::Is && c->ops[0] != ast::cmpop::IsNot) return std::nullopt;
  auto* none = ast::as<ast::Constant>(c->comparators[0]);
  auto* attr = ast::as<ast::Attribute>(c->left);
  auto* base = attr ? ast::as<ast::Name>(attr->value) : nullptr;
  if (!none || none->value.kind != ast::ConstantKind::None || !base || base->id != "self") return std::nullopt;
  return std::make_pair(std::string(attr->attr), c->ops[0] == ast::cmpop::IsNot);
}

bool is_none_expr(const ast::expr* e) {
  auto* k = ast::as<ast::Constant>(e);
  return k && k->value.kind == ast::ConstantKind::None;
}

// Whether the instance's `__init__` leaves `self.<attr>` None, when it
// assigns it once, as `A if COND else B` with one side None and COND decided
// by the config (DeepSeek's `self.bias = nn.Parameter(...) if self.dim ==
// 7168 else None`); `why` gets COND with its value.
std::optional<bool> none_by_config(const ClassInstance& inst, const std::string& attr, Evaluator& ev, EvalScope& scope,
                                   std::string& why) {
  if (!inst.init) return std::nullopt;
  const ast::IfExp* pick = nullptr;
  int assignments = 0;
  walk(inst.init, [&](const ast::Node* n) {
    if (auto* a = ast::as<ast::Assign>(n))
      for (const ast::expr* t : a->targets) {
        auto* target = ast::as<ast::Attribute>(t);
        auto* base = target ? ast::as<ast::Name>(target->value) : nullptr;
        if (!base || base->id != "self" || target->attr != attr) continue;
        ++assignments;
        pick = ast::as<ast::IfExp>(a->value);
      }
    // register_parameter / register_buffer / setattr naming it: another way in.
    if (auto* call = ast::as<ast::Call>(n); call && call->args.size >= 1)
      if (auto* name = ast::as<ast::Constant>(call->args[0]);
          name && name->value.kind == ast::ConstantKind::Str && ast::constant_string(name->value) == attr)
        ++assignments;
    return true;
  });
  if (assignments != 1 || !pick || is_none_expr(pick->body) == is_none_expr(pick->orelse)) return std::nullopt;
  if (!reads_only_settings(pick->test, scope)) return std::nullopt;
  SymValue cond = ev.eval(pick->test, scope);
  std::optional<bool> truth = cond.is_known() ? python_truth(cond) : std::nullopt;
  if (!truth) return std::nullopt;
  bool none = *truth ? is_none_expr(pick->body) : is_none_expr(pick->orelse);
  why = cond.display() + ": self." + attr + (none ? " is None" : " is set");
  return none;
}

}  // namespace

void evaluate_config_arms(std::vector<BranchCondition>& branches, const RoleTable& roles, Evaluator& ev) {
  for (BranchCondition& b : branches) {
    if (!b.test || b.owner.empty() || !decided_by_settings(b)) continue;
    const ClassInstance* inst = roles.standalone(b.owner);
    if (!inst) continue;
    if (auto tested = none_test(b.test)) {
      EvalScope scope = inst->scope;
      std::string why;
      if (std::optional<bool> none = none_by_config(*inst, tested->first, ev, scope, why)) {
        b.config_arm = (*none != tested->second) ? "then" : "else";
        b.config_value = why;
      }
      continue;
    }
    if (!reads_only_settings(b.test, inst->scope)) continue;
    EvalScope scope = inst->scope;
    SymValue v = ev.eval(b.test, scope);
    std::optional<bool> truth = v.is_known() ? python_truth(v) : std::nullopt;
    if (!truth) continue;
    b.config_arm = *truth ? "then" : "else";
    b.config_value = v.display();
  }
}

const BranchCondition* config_ruled_out(const std::vector<BranchCondition>& branches, const std::string& condition,
                                        const std::string& file) {
  if (condition.empty()) return nullptr;
  for (const std::string& clause : condition_clauses(condition)) {
    bool negated = clause.rfind("not (", 0) == 0 && clause.size() > 6 && clause.back() == ')';
    std::string test = negated ? clause.substr(5, clause.size() - 6) : clause;
    const BranchCondition* then_arm = nullptr;
    const BranchCondition* else_arm = nullptr;
    for (const BranchCondition& b : branches) {
      if (b.condition != test || b.config_arm.empty() || (!file.empty() && b.where.file != file)) continue;
      if (std::find(b.kinds.begin(), b.kinds.end(), BranchKind::ConfigChoice) == b.kinds.end()) continue;
      (b.config_arm == "then" ? then_arm : else_arm) = &b;
    }
    if ((then_arm != nullptr) == (else_arm != nullptr)) continue;  // undecided, or decided both ways
    if (negated && then_arm) return then_arm;
    if (!negated && else_arm) return else_arm;
  }
  return nullptr;
}

}  // namespace npufuse::model

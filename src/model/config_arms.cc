#include "model/config_arms.h"

#include <algorithm>

#include "model/ast_walk.h"

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

}  // namespace

void evaluate_config_arms(std::vector<BranchCondition>& branches, const RoleTable& roles, Evaluator& ev) {
  for (BranchCondition& b : branches) {
    if (!b.test || b.owner.empty() || !decided_by_settings(b)) continue;
    const ClassInstance* inst = roles.standalone(b.owner);
    if (!inst || !reads_only_settings(b.test, inst->scope)) continue;
    EvalScope scope = inst->scope;
    SymValue v = ev.eval(b.test, scope);
    std::optional<bool> truth = v.is_known() ? python_truth(v) : std::nullopt;
    if (!truth) continue;
    b.config_arm = *truth ? "then" : "else";
    b.config_value = v.display();
  }
}

}  // namespace npufuse::model

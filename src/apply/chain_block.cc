#include "apply/chain_block.h"

#include "apply/source_functions.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;
using Ops = std::vector<std::pair<uint32_t, uint32_t>>;

std::vector<const ast::stmt*> as_list(frontend::Span<ast::stmt*> span) { return {span.begin(), span.end()}; }

// The statement lists a compound statement's clauses hold. An `elif` is an
// If inside `orelse`, so it is reached by descending once more.
std::vector<std::vector<const ast::stmt*>> clauses(const ast::stmt* s) {
  if (auto* x = ast::as<ast::If>(s)) return {as_list(x->body), as_list(x->orelse)};
  if (auto* x = ast::as<ast::For>(s)) return {as_list(x->body), as_list(x->orelse)};
  if (auto* x = ast::as<ast::AsyncFor>(s)) return {as_list(x->body), as_list(x->orelse)};
  if (auto* x = ast::as<ast::While>(s)) return {as_list(x->body), as_list(x->orelse)};
  if (auto* x = ast::as<ast::With>(s)) return {as_list(x->body)};
  if (auto* x = ast::as<ast::AsyncWith>(s)) return {as_list(x->body)};
  if (auto* x = ast::as<ast::Try>(s)) {
    std::vector<std::vector<const ast::stmt*>> out{as_list(x->body), as_list(x->orelse), as_list(x->finalbody)};
    for (const ast::excepthandler* h : x->handlers)
      if (auto* handler = ast::as<ast::ExceptHandler>(h)) out.push_back(as_list(handler->body));
    return out;
  }
  return {};
}

bool holds_all(const std::vector<const ast::stmt*>& list, const Ops& ops) {
  for (const auto& [begin, end] : ops) {
    bool held = false;
    for (const ast::stmt* s : list) held = held || (s->begin <= begin && end <= s->end);
    if (!held) return false;
  }
  return !list.empty();
}

// The one statement of `list` that holds every op, if there is one.
const ast::stmt* sole_holder(const std::vector<const ast::stmt*>& list, const Ops& ops) {
  for (const ast::stmt* s : list) {
    bool all = true;
    for (const auto& [begin, end] : ops) all = all && s->begin <= begin && end <= s->end;
    if (all) return s;
  }
  return nullptr;
}

bool is_loop(const ast::stmt* s) {
  return ast::as<ast::For>(s) || ast::as<ast::AsyncFor>(s) || ast::as<ast::While>(s);
}

bool is_false(const ast::expr* e) {
  auto* c = ast::as<ast::Constant>(e);
  return c && c->value.kind == ast::ConstantKind::False;
}

// A context that only turns autocast or autograd off.
bool context_off_only(const ast::withitem* item) {
  if (item->optional_vars) return false;
  auto* call = ast::as<ast::Call>(item->context_expr);
  if (!call) return false;
  std::string callee = last_name(call->func);
  if (callee == "no_grad") return call->args.size == 0 && call->keywords.size == 0;
  if (callee == "inference_mode")
    return call->keywords.size == 0 && (call->args.size == 0 || ast::as<ast::Constant>(call->args[0]));
  // HF's `maybe_autocast` (recent transformers) is torch.autocast where the
  // device has one, and nothing otherwise: with enabled=False, either way off.
  if (callee != "autocast" && callee != "maybe_autocast") return false;
  for (const ast::keyword* k : call->keywords)
    if (ast::present(k->arg) && k->arg == "enabled") return is_false(k->value);
  return false;
}

}  // namespace

bool transparent_with(const ast::stmt* s, const Ops& ops) {
  auto* with = ast::as<ast::With>(s);
  if (!with || with->items.size == 0 || with->body.size == 0) return false;
  for (const ast::withitem* item : with->items) {
    if (!context_off_only(item)) return false;
    for (const auto& [begin, end] : ops)
      if (begin < item->context_expr->end && item->context_expr->begin < end) return false;
  }
  return true;
}

std::string compound_kind(const ast::stmt* s) {
  if (ast::as<ast::If>(s)) return "if";
  if (ast::as<ast::For>(s) || ast::as<ast::AsyncFor>(s)) return "for";
  if (ast::as<ast::While>(s)) return "while";
  if (ast::as<ast::With>(s) || ast::as<ast::AsyncWith>(s)) return "with";
  if (ast::as<ast::Try>(s) || ast::as<ast::TryStar>(s)) return "try";
  if (ast::as<ast::Match>(s)) return "match";
  if (ast::as<ast::FunctionDef>(s) || ast::as<ast::AsyncFunctionDef>(s)) return "def";
  if (ast::as<ast::ClassDef>(s)) return "class";
  return "";
}

ChainBlock innermost_block(const ast::FunctionDef& fn, const Ops& ops) {
  ChainBlock block{as_list(fn.body), nullptr};
  while (const ast::stmt* holder = sole_holder(block.statements, ops)) {
    bool descended = false;
    for (std::vector<const ast::stmt*>& clause : clauses(holder)) {
      if (!holds_all(clause, ops)) continue;
      if (is_loop(holder)) block.loop = holder;
      block.statements = std::move(clause);
      descended = true;
      break;
    }
    if (!descended) break;
  }
  return block;
}

}  // namespace npufuse::apply

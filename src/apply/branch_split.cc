#include "apply/branch_split.h"

#include <fmt/format.h>

#include <algorithm>

#include "apply/chain_block.h"
#include "apply/config_fold.h"
#include "apply/source_functions.h"

namespace npufuse::apply {

namespace ast = frontend::ast;

const ast::If* split_if_of_chain(const ast::stmt* s, const std::vector<std::pair<uint32_t, uint32_t>>& ops) {
  auto* guard = ast::as<ast::If>(s);
  if (!guard || guard->orelse.size || guard->body.size == 0) return nullptr;
  auto inside = [](const auto& op, uint32_t begin, uint32_t end) { return begin <= op.first && op.second <= end; };
  bool in_body = false;
  for (const auto& op : ops) {
    if (inside(op, guard->test->begin, guard->test->end)) return nullptr;
    in_body = in_body || inside(op, guard->body[0]->begin, guard->body[guard->body.size - 1]->end);
  }
  if (!in_body) return nullptr;
  for (const ast::stmt* b : guard->body) {
    if (!compound_kind(b).empty()) return nullptr;
    if (std::any_of(ops.begin(), ops.end(), [&](const auto& op) { return inside(op, b->begin, b->end); })) continue;
    // `kv_len = k.shape[-2]` before the mask built from it.
    auto* assign = ast::as<ast::Assign>(b);
    if (!assign || assign->targets.size != 1 || !ast::as<ast::Name>(assign->targets[0])) return nullptr;
  }
  return guard;
}

std::string split_comment(const model::ModelFile& file, const ast::If* split) {
  return fmt::format("# branch split: `if {}` -> the fused op where it holds, the original statements where not",
                     text_of(file, split->test));
}

std::string split_note(const model::ModelFile& file, const ast::If* split) {
  return fmt::format("branch `if {}` split: the replacement runs where the test holds (the chain's path), the chain's "
                     "statements without the if where it does not",
                     text_of(file, split->test));
}

std::string split_text(const model::ModelFile& file, const ast::If* split, const std::string& outer_indent,
                       const std::string& arm_indent, const std::string& then_arm,
                       const std::vector<const ast::stmt*>& else_arm, const ast::stmt* run_front) {
  std::string out = split_comment(file, split) + "\n" + outer_indent + "if " + text_of(file, split->test) + ":\n" +
                    arm_indent + then_arm + "\n" + outer_indent + "else:";
  for (const ast::stmt* s : else_arm) {
    std::string text = s == run_front ? reindented(text_of(file, s), own_line_indent(file, s).value_or(""), arm_indent)
                              : moved_text(file, s, arm_indent);
    out += "\n" + arm_indent + text;
  }
  return out;
}

}  // namespace npufuse::apply

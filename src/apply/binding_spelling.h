#pragma once
// How the replacement spells each value a chain was bound to. The matcher
// names a bound value by the first name it was given, which may be a name of
// an inlined helper (the norm's `hidden_states` for the view the attention
// forward passes it) or a name the function has since bound to something
// else (`x = x.to(torch.float32)`). So a name is used only when, at the place
// the replacement goes, it provably still holds the bound value; otherwise
// the expression that computed the value is moved into the replacement when
// the rewrite removes it anyway; otherwise the binding is refused with the
// reason.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "apply/source_functions.h"
#include "frontend/ast.h"
#include "plan/plan.h"

namespace npufuse::apply {

struct SpellingRequest {
  const FunctionAt* fn = nullptr;  // the function the replacement is written into
  uint32_t edit_point = 0;         // first byte of the replaced statements
  // Byte ranges of fn whose code the edit removes: the removed statements and
  // the results cut out of kept statements.
  std::vector<std::pair<uint32_t, uint32_t>> removed;
  const frontend::ast::FunctionDef* replace = nullptr;  // the rule's replace function
  // Statements after edit_point that move before the replacement (the
  // rewrite hoists them), in source order: a name one of them assigns is
  // read where the last such statement ends.
  std::vector<std::pair<uint32_t, uint32_t>> hoisted;
  // The rule's declared shape of each tensor parameter (RULE["inputs"]): its
  // axes, ["B", "N", "S", "D"]. A bound value the model made with a view of
  // another rank is refused (the fused call needs the tensor before that
  // view), except the grouped-query form of GQA (qwen3_like): the query's
  // heads regrouped per KV head, `q.reshape(b, kv, group, s, d)`, against
  // keys and values with a unit group axis, `k.unsqueeze(2)`. Each of the
  // group's query heads then reads its KV head, as the fused call's GQA
  // does: the tensors before those views are passed.
  std::map<std::string, std::vector<std::string>> declared_shape;
};

struct SpelledBindings {
  std::map<std::string, std::string> arguments;  // replace parameter -> text inside fn
  std::string refusal;                           // non-empty: no safe spelling for some binding
};

// For a candidate matched in fn itself (c.apply_function == fn's name).
// A binding whose value the chain's own unit-axis views read
// (plan::Candidate::ViewedSide) is spelt from the value after them, squeezed,
// where its own text would spell that later value (`cos[None, None]` when
// the chain bound the table after the first None) or where apply left the
// views in a caller.
SpelledBindings spell_bindings(const plan::Candidate& c, const SpellingRequest& request);

// `after_views` (the value after a chain's unit-axis views, as spelt) with
// those axes squeezed again, last first: the value before them.
std::string viewed_spelling(const std::string& after_views, const std::vector<int>& axes);

}  // namespace npufuse::apply

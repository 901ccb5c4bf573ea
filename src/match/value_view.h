#pragma once
// Looking at a dataflow value the way the matcher does: through casts (and,
// on the model side, through layout-only views), and as a constant when it is
// a literal or a negated literal.
#include <optional>
#include <string>
#include <vector>

#include "model/dataflow.h"

namespace npufuse::match {

// What `a, b = (x, y)` or `(x, y)[0]` names: the element itself.
int through_packing(const model::FunctionDataflow& g, int v);
// The value a cast chain starts from (through packing too); the casts passed are appended to `passed`.
int through_casts(const model::FunctionDataflow& g, int v, std::vector<int>* passed = nullptr);
// `e[0]` where `e` iterates the rows of a `nonzero()` result: the one id of
// that row (`for e in hit: e = e[0]`), which stands for the loop's id.
bool first_of_nonzero_row(const model::FunctionDataflow& g, const model::DataflowOp& op);
// Through casts and layout-only views (contiguous, view, reshape, ...).
int through_layout(const model::FunctionDataflow& g, int v, std::vector<int>* passed = nullptr);

// A literal's value: numbers compare by value (`2` == `2.0`, `-1` == `neg(1)`),
// anything else by its text ("None", "True", "'bias'").
struct ConstantValue {
  bool numeric = false;
  double number = 0;
  std::string text;
  bool operator==(const ConstantValue& o) const;
  std::string str() const;
};
std::optional<ConstantValue> constant_of(const model::FunctionDataflow& g, int v);

// How evidence spells a model value: an attribute or a literal as written,
// else the value's name, else a description of its op ("view(...)", which
// apply reads as no code).
std::string value_spelling(const model::FunctionDataflow& g, int v);

// "mean(...) at model.py:53" for messages.
std::string describe_op(const model::DataflowOp& op);
std::string where(const model::DataflowOp& op);

// While one of these lives on a thread, where() of an op of `g` gives a
// placeholder naming the op instead of its file and line. resolve_places()
// turns the placeholders into the texts for any graph with the same ops:
// the one matched, or another copy of the same code (match_memo.h).
class SymbolicPlaces {
 public:
  explicit SymbolicPlaces(const model::FunctionDataflow& g);
  ~SymbolicPlaces();
  SymbolicPlaces(const SymbolicPlaces&) = delete;
  SymbolicPlaces& operator=(const SymbolicPlaces&) = delete;

 private:
  const model::FunctionDataflow* previous_;
};

// `text` with each placeholder replaced by where() of that op of `g`.
std::string resolve_places(const std::string& text, const model::FunctionDataflow& g);

}  // namespace npufuse::match

#pragma once
// Splitting a rewrite on an `if` the chain runs through. A chain whose ops
// lie before, after and inside the body of an `if` without an else (the
// causal mask a layer builds only when `q_len > 1`, a mask added only when
// one is given) is matched on the path where that body runs. The rewrite
// then puts the test in front of the chain: where it holds, the replacement
// runs; where it does not, the chain's own statements run as written, without
// the if. Both arms then compute what the original computed on that path,
// whatever the test means; the rewrite says so in a comment and in apply's
// summary.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "frontend/ast.h"
#include "model/source_set.h"

namespace npufuse::apply {

// Whether `s` is such an if for the chain's `ops` (byte ranges): no else, no
// op in its test, and every statement of its body a simple statement that
// holds an op or binds one name.
const frontend::ast::If* split_if_of_chain(const frontend::ast::stmt* s,
                                           const std::vector<std::pair<uint32_t, uint32_t>>& ops);

// "# branch split: `if q_len > 1` -> the fused op where it holds, the original statements where not".
std::string split_comment(const model::ModelFile& file, const frontend::ast::If* split);

// What apply's summary says of it.
std::string split_note(const model::ModelFile& file, const frontend::ast::If* split);

// The split statement's text, without the indentation of its first line:
// the comment, `if TEST:` with `then_arm` (already at `arm_indent`), `else:`
// with `else_arm`'s statements as written (each with the comment lines above
// it, but `run_front`, whose comments stay above the split) moved to
// `arm_indent`.
std::string split_text(const model::ModelFile& file, const frontend::ast::If* split, const std::string& outer_indent,
                       const std::string& arm_indent, const std::string& then_arm,
                       const std::vector<const frontend::ast::stmt*>& else_arm, const frontend::ast::stmt* run_front);

}  // namespace npufuse::apply

#pragma once
// Sizes read from a tensor's metadata (`b, s, d = x.shape`, `x.shape[-1]`,
// `x.size(1)`) and arithmetic on them (`d // 2`). In a pattern they say how a
// view is shaped, not which tensor flows where: a model that views k with the
// sizes it read from q (`k.view(b, 1, s, d // 2, 2)` with `b, h, s, d =
// q.shape`) computes the same thing. So a size is compared as metadata: it
// binds no parameter, and only its arithmetic and its literals must agree.
#include "model/dataflow.h"

namespace npufuse::match {

// `x.shape`, an element or slice of it, or `x.size(...)`.
bool is_shape_read(const model::FunctionDataflow& g, int v);

// A shape read, or arithmetic over shape reads and literals with at least
// one shape read in it.
bool is_size_expression(const model::FunctionDataflow& g, int v);

// Integer bookkeeping of a chain: a size expression, or size arithmetic over
// sizes, literals and scalars the function takes or reads from an attribute
// (`end_pos = start_pos + seqlen`). It stays in the model when the chain is
// fused, so code outside reading it is no escape of the chain.
bool is_index_arithmetic(const model::FunctionDataflow& g, int v);

// An op computing only such bookkeeping: it does not place a chain.
bool is_index_bookkeeping(const model::FunctionDataflow& g, const model::DataflowOp& op);

// Does model value `tv` compute pattern size `pv`? A bare shape read stands
// for any size; arithmetic must be the same arithmetic with the same
// literals, or a size the model took from elsewhere (an attribute, an input,
// another shape read), never a literal where the pattern computes.
bool size_matches(const model::FunctionDataflow& pattern, int pv, const model::FunctionDataflow& target, int tv);

}  // namespace npufuse::match

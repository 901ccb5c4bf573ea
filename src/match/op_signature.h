#pragma once
// What the matcher needs to know about an op beyond its canonical name: the
// names of its positional parameters (so `mean(x, -1)` and
// `mean(x, dim=-1)` line up), which binary ops are symmetric, which views
// only change layout, and which arguments do not change the result.
#include <string>
#include <string_view>

namespace npufuse::match {

// The key an argument is compared under: the parameter name when the op's
// signature is known ("dim"), "#<index>" for other positional arguments,
// the keyword itself otherwise.
std::string positional_key(std::string_view op, size_t index);
// A keyword label as the dataflow writes it ("dim=") to its key ("dim").
std::string keyword_key(std::string_view label);

// add, mul, maximum, ...: both operand orders compute the same value.
bool is_commutative(std::string_view op);

// contiguous, view, reshape, ...: the same elements in another layout. A
// model may insert them anywhere; the matcher skips them unless the pattern
// asks for one.
bool is_layout_view(std::string_view op);
// `x.view(shape)` and `x.reshape(shape)` compute the same values (reshape
// only also accepts non-contiguous input): one pattern step for either.
bool same_view_op(std::string_view a, std::string_view b);

// dropout and its variants: the identity at inference, which is all a fused
// inference kernel replaces, so the matcher passes them like casts.
bool is_inference_identity(std::string_view op);

// Arguments that do not change which computation it is (an output dtype on
// softmax, `inplace=` on an activation, `out=`).
bool is_ignorable_argument(std::string_view key);

}  // namespace npufuse::match

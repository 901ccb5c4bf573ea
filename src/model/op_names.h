#pragma once
// Canonical operation names. PyTorch spells one computation many ways:
// `x.pow(2)`, `x ** 2`, `torch.pow(x, 2)` and `torch.square(x)` are all "pow";
// `F.silu`, `torch.nn.functional.silu` and `x.silu()` are all "silu"; an
// in-place `x.add_(y)` is "add" (in-place-ness is kept separately). Every
// consumer of the dataflow compares these names, never the spelling.
#include <string>
#include <string_view>

#include "frontend/ast.h"

namespace npufuse::model {

struct CanonicalOp {
  std::string name;      // e.g. "pow", "silu", "matmul"
  bool in_place = false;  // written as x.op_(...) or an augmented assignment
};

// From a qualified callee ("torch.nn.functional.silu", "torch.square") or a
// Tensor method name ("pow", "add_").
CanonicalOp canonical_call(std::string_view qualified_or_method);
// From a binary operator (`**` -> pow, `@` -> matmul).
std::string canonical_binop(frontend::ast::operator_ op);

// Whether a canonical `transpose` or `permute` with these literal axes
// ("1,2", "0,2,1,3") swaps the sequence and head axes of a 4-D attention
// tensor, turning BSND into BNSD and back.
bool swaps_seq_and_heads(std::string_view op, std::string_view axes);

}  // namespace npufuse::model

// Lazy decoding of constants: the parser records where a value's text is,
// and the value is only computed when someone asks for it.
#include <string>

#include "frontend/ast.h"

#if __has_include("frontend/literal.h")
#include "frontend/literal.h"
#define NPUFUSE_HAVE_LITERAL 1
#endif

namespace npufuse::frontend::ast {

#ifndef NPUFUSE_HAVE_LITERAL
// TODO(literal-hook): until literal.h provides decoding and repr, constants
// print their source text; dumps of string/number constants differ from
// CPython's until then.
std::string constant_string(const ConstantValue& v) {
  std::string s;
  for (const StrPiece& p : v.pieces) s += p.text;
  return s;
}
std::string constant_repr(const ConstantValue& v) {
  switch (v.kind) {
    case ConstantKind::None: return "None";
    case ConstantKind::True: return "True";
    case ConstantKind::False: return "False";
    case ConstantKind::Ellipsis: return "Ellipsis";
    case ConstantKind::Int:
    case ConstantKind::Float:
    case ConstantKind::Complex: return std::string(v.number);
    default: return "'" + constant_string(v) + "'";
  }
}
#endif

}  // namespace npufuse::frontend::ast

// Lazy decoding of constants: the parser records where a value's text is,
// and the value is only computed when someone asks for it.
#include <string>

#include "frontend/ast.h"
#include "frontend/literal.h"

namespace npufuse::frontend::ast {

namespace {

std::u32string decode_str_pieces(const ConstantValue& v) {
  std::u32string out;
  for (const StrPiece& p : v.pieces) {
    switch (p.form) {
      case StrPiece::Form::Literal: out += decode_str_literal(p.text); break;
      case StrPiece::Form::FStringText: out += decode_fstring_text(p.text, false); break;
      case StrPiece::Form::FStringRawText: out += decode_fstring_text(p.text, true); break;
      case StrPiece::Form::Verbatim: out += from_utf8(p.text); break;
    }
  }
  return out;
}

std::string decode_bytes_pieces(const ConstantValue& v) {
  std::string out;
  for (const StrPiece& p : v.pieces) out += decode_bytes_literal(p.text);
  return out;
}

}  // namespace

std::string constant_string(const ConstantValue& v) {
  if (v.kind == ConstantKind::Bytes) return decode_bytes_pieces(v);
  if (v.kind == ConstantKind::Str) return to_utf8(decode_str_pieces(v));
  if (v.kind == ConstantKind::Int || v.kind == ConstantKind::Float || v.kind == ConstantKind::Complex)
    return std::string(v.number);
  return constant_repr(v);
}

std::string constant_repr(const ConstantValue& v) {
  switch (v.kind) {
    case ConstantKind::None: return std::string(kReprNone);
    case ConstantKind::True: return std::string(kReprTrue);
    case ConstantKind::False: return std::string(kReprFalse);
    case ConstantKind::Ellipsis: return std::string(kReprEllipsis);
    case ConstantKind::Int:
    case ConstantKind::Float:
    case ConstantKind::Complex: return repr_number_literal(v.number);
    case ConstantKind::Str: return repr_str(decode_str_pieces(v));
    case ConstantKind::Bytes: return repr_bytes(decode_bytes_pieces(v));
  }
  return {};
}

}  // namespace npufuse::frontend::ast

#pragma once
// Typed Python AST, one struct per node class of CPython's `ast` module
// (3.11, plus the 3.12/3.13 type-parameter nodes). Field names and order
// follow CPython exactly so that ast_dump can print what `ast.dump` prints.
//
// Mapping of ASDL types: `expr` -> expr*, `expr?` -> expr* (null for None),
// `expr*` -> Span<expr*>, `identifier`/`string` -> std::string_view (a view
// into the source, or into the arena when the name had to be assembled;
// an empty view with null data means None), `int` -> int32_t, `constant` ->
// ConstantValue (decoded lazily, see below). Enumerations such as
// `operator` become enum classes (`operator_`, since `operator` is reserved).
//
// Every node lives in the Arena of its ParsedFile and records its byte range
// [begin, end) in the BOM-stripped source plus CPython's line/column
// attributes (1-based lines, 0-based UTF-8 byte columns).
#include <cstdint>
#include <string>
#include <string_view>

#include "frontend/arena.h"

namespace npufuse::frontend::ast {

#define NPUFUSE_AST_DECLARATIONS
#include "frontend/ast_nodes.inc"
#undef NPUFUSE_AST_DECLARATIONS

struct Node {
  NodeKind kind{};
  uint32_t begin = 0;  // byte offsets into the source text
  uint32_t end = 0;
  int32_t lineno = 0;  // CPython attributes; meaningful for nodes that have them
  int32_t col_offset = 0;
  int32_t end_lineno = 0;
  int32_t end_col_offset = 0;
};

// What kind of Python object a Constant holds.
enum class ConstantKind : uint8_t { None, True, False, Ellipsis, Int, Float, Complex, Str, Bytes };

// One piece of source text that contributes to a str/bytes constant. A
// constant made of implicitly concatenated literals has one piece per
// literal; the decoded value is the concatenation of the decoded pieces.
struct StrPiece {
  enum class Form : uint8_t {
    Literal,        // a whole string token: prefix, quotes, body
    FStringText,    // literal text between replacement fields, escapes to decode
    FStringRawText, // the same in a raw f-string (only {{ and }} collapse)
    Verbatim,       // text used as is (the `expr=` text of a debug field)
  };
  std::string_view text;
  Form form = Form::Literal;
};

// The value of a Constant or MatchSingleton. Decoding happens only when a
// consumer asks (constant_string / constant_repr), so parsing stays cheap.
struct ConstantValue {
  ConstantKind kind = ConstantKind::None;
  std::string_view number;  // Int/Float/Complex: the literal text as written
  Span<StrPiece> pieces;    // Str/Bytes
};

#define NPUFUSE_AST_STRUCTS
#include "frontend/ast_nodes.inc"
#undef NPUFUSE_AST_STRUCTS

// Checked downcast: the node as T, or null when it is another kind.
template <class T>
T* as(Node* n) {
  return n && n->kind == T::kKind ? static_cast<T*>(n) : nullptr;
}
template <class T>
const T* as(const Node* n) {
  return n && n->kind == T::kKind ? static_cast<const T*>(n) : nullptr;
}

inline const char* kind_name(NodeKind k) { return node_kind_names[static_cast<int>(k)]; }

// True when an optional identifier/string field holds a value.
inline bool present(std::string_view s) { return s.data() != nullptr; }

// Decoded text of a Str constant (UTF-8) or the bytes of a Bytes constant.
std::string constant_string(const ConstantValue& v);
// Python's repr() of the constant, as ast.dump prints it.
std::string constant_repr(const ConstantValue& v);

}  // namespace npufuse::frontend::ast

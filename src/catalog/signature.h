#pragma once
// Operator prototypes as text: the schema grammar of op_plugin_functions.yaml
// (`name.overload(Tensor? x, *, int[2]? y=None) -> (Tensor, Tensor)`) and the
// prototype lines of torch_npu docstrings (`torch_npu.name(...) -> Tensor`,
// sometimes without types). One tolerant reader serves both: a parameter is
// `[type] name [= default]`, `*` alone marks the start of keyword-only ones.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace npufuse::catalog {

struct SigParam {
  std::string name;
  std::string type;                          // may be empty in docstrings
  std::optional<std::string> default_value;  // literal text as written
  bool kw_only = false;
};

struct Signature {
  std::string name;      // without "torch_npu." and without the overload
  std::string overload;  // "out" for `name.out(...)`; empty for the base function
  std::vector<SigParam> params;
  std::string returns;   // text after "->", trimmed; may be empty
};

// Parses a prototype. On failure returns nullopt and sets *error to a short reason.
std::optional<Signature> parse_signature(std::string_view text, std::string* error);

// A canonical spelling of a default value so that equal values compare equal:
// 'BSH' and "BSH"; 1e-6 and 1e-06; 1.0, 1. and 1; 2^63-1, 2**63-1 and
// 9223372036854775807; [1, 1] and [1,1].
std::string normalize_default(std::string_view text);

}  // namespace npufuse::catalog

#pragma once
// The docstrings of an installed torch_npu, read from its
// `_op_plugin_docs.py` as text with the project's lexer; the file is never
// imported or run. Entries are calls
//   _add_torch_npu_docstr("npu_xxx", """...""")
// in file order. A call that does not have exactly two plain string
// arguments is reported (file:line) and skipped.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace npufuse::catalog {

struct DocstringEntry {
  std::string name;
  std::string text;  // decoded docstring, UTF-8
  int line = 0;      // line of the call
};

struct DocstringFile {
  std::string path;
  std::vector<DocstringEntry> entries;  // file order
  std::vector<std::string> skipped;     // "file:line: why" for malformed calls

  // The last entry of that name (a later call replaces the docstring at import).
  const DocstringEntry* find(std::string_view name) const;
};

// The file cannot serve as a docstring file: too large, not Python, or
// without any entry. The message names the file (and line when it can).
class DocstringError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr size_t kMaxDocstringFileBytes = 64u << 20;

DocstringFile parse_docstring_file(const std::string& path, std::string bytes);
// Reads and parses `path`; a missing or unreadable file is a DocstringError too.
DocstringFile read_docstring_file(const std::string& path);

// The prototype of an entry, from either docstring style: the older one
// starts with `torch_npu.name(...) -> T`; the newer one has a section
// `接口原型:` followed by the prototype. Returns the prototype on one line,
// or an empty string when the text holds none.
std::string docstring_prototype(std::string_view text, std::string_view name);

}  // namespace npufuse::catalog

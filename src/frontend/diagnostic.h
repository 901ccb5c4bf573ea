#pragma once
// Errors in the user's input, always anchored to a file position and printed
// as `file:line:col: message` (line 1-based, col 1-based for people, like
// compilers do; CPython's own 0-based offsets stay inside the AST).
#include <stdexcept>
#include <string>

namespace npufuse::frontend {

struct Diagnostic {
  std::string path;
  int line = 0;  // 1-based; 0 when the error concerns the whole file
  int col = 0;   // 1-based byte column; 0 when unknown
  std::string message;

  std::string format() const;  // "path:line:col: message"
};

// Thrown by the lexer and parser on the first syntax error.
class SyntaxError : public std::runtime_error {
 public:
  explicit SyntaxError(Diagnostic d);
  const Diagnostic& diagnostic() const { return diag_; }

 private:
  Diagnostic diag_;
};

}  // namespace npufuse::frontend

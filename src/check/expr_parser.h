#pragma once
// Parses constraint expression text with the Python front end
// (frontend::parse_expression) and keeps it only if it stays inside the
// constraint language. Errors are ExprSyntaxError with the 1-based column;
// the catalog loader adds the file and line of the TOML value.
#include <stdexcept>
#include <string>
#include <string_view>

#include "check/expr.h"

namespace npufuse::check {

class ExprSyntaxError : public std::runtime_error {
 public:
  ExprSyntaxError(int col, const std::string& message)
      : std::runtime_error(message), col_(col) {}
  int col() const { return col_; }

 private:
  int col_;
};

ExprPtr parse_constraint_expression(std::string_view text);

}  // namespace npufuse::check

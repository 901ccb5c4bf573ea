#include "frontend/diagnostic.h"

#include <fmt/format.h>

namespace npufuse::frontend {

std::string Diagnostic::format() const {
  if (line <= 0) return fmt::format("{}: {}", path, message);
  if (col <= 0) return fmt::format("{}:{}: {}", path, line, message);
  return fmt::format("{}:{}:{}: {}", path, line, col, message);
}

SyntaxError::SyntaxError(Diagnostic d) : std::runtime_error(d.format()), diag_(std::move(d)) {}

}  // namespace npufuse::frontend

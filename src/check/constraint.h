#pragma once
// One machine-checkable constraint of an operator, as the catalog declares it
// (docs/catalog-format.md, [[constraints]]).
#include <memory>
#include <string>

#include "check/expr.h"
#include "check/text.h"

namespace npufuse::check {

enum class Severity { Error, Warning };

struct Constraint {
  std::string id;
  std::string when_text;      // empty: always applies
  std::string require_text;
  std::shared_ptr<const Expr> when;  // null when when_text is empty
  std::shared_ptr<const Expr> require;
  Severity severity = Severity::Error;
  LocalizedText message;
  std::string doc;            // "file.md#Section"
  std::string origin;         // "catalog/norm/npu_rms_norm.toml:52:1"
};

const char* severity_name(Severity s);

}  // namespace npufuse::check

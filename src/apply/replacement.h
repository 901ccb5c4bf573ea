#pragma once
// The text that replaces a matched chain, made from the rule's `replace`
// function: its statements with every parameter replaced by the model
// expression it was bound to, its locals renamed where the model function
// already uses the name, and its final `return X` turned into an assignment
// to the names the model's later code reads (or kept as `return X` when the
// chain's result was returned).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/source.h"

namespace npufuse::apply {

struct ReplacementRequest {
  const frontend::ast::FunctionDef* replace = nullptr;
  const frontend::SourceFile* rule_source = nullptr;
  std::map<std::string, std::string> arguments;  // replace parameter -> expression text in the model function
  std::set<std::string> taken_names;             // every name the model function uses
  std::string indent;                            // indentation of the replaced statements
  std::vector<std::string> targets;              // names to assign the result to; empty: `return` it
  bool discard_result = false;                   // the chain's results were in-place writes nothing reads:
                                                 // the final `return X` is left out
  // The returned values to keep, by index into the final `return a, b, ...`
  // (a per-tensor rule matched on one tensor: the other's call and the
  // parameters only it reads are left out). Empty: all of them.
  std::vector<size_t> kept_returns;
  std::map<std::string, std::string> module_reads;  // replace local -> what to read instead ("self.causal_mask_2048");
                                                    // the statement assigning the local is left out
  std::set<std::string> left_out;  // replace locals built only in __init__: their statements are left out
};

// Statements separated by a newline and `indent`; the first line carries no
// indentation (the edit starts after the original one). Throws ApplyError
// when `replace` does not end in `return X` or a parameter has no argument.
std::string replacement_text(const ReplacementRequest& request);

}  // namespace npufuse::apply

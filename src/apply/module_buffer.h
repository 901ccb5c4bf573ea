#pragma once
// The buffers a rewrite needs, built once per module instead of on every
// call. A statement of a rule's `replace` that reads none of its parameters
// nor any earlier local (FIA's `causal_mask_2048 = torch.triu(...)`) is the
// same tensor on every call: when the chain sits in a method, the value
// becomes a buffer registered at the end of the class's `__init__`
// (non-persistent, so state_dict and checkpoints are unchanged, and it
// follows the module's `.to(device)`), and the replacement reads
// `self.<name>`.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "apply/edits.h"
#include "apply/source_functions.h"
#include "frontend/ast.h"
#include "frontend/source.h"
#include "model/source_set.h"

namespace npufuse::apply {

struct ConstantLocal {
  std::string name;  // the replace local
  std::string value; // its expression, as written in the rule
};

// The constant statements of `replace`, in order.
std::vector<ConstantLocal> constant_locals(const frontend::ast::FunctionDef& replace, const frontend::SourceFile& rule_source);

struct ModuleBuffers {
  std::vector<Edit> edits;             // the register_buffer lines, in __init__
  std::map<std::string, std::string> reads;  // local -> "self.<name>", for the replacement
  std::string refusal;                 // why the buffers cannot be added
};

// Registers each constant at the end of the __init__ of `fn`'s class.
ModuleBuffers module_buffers(const FunctionAt& fn, const model::SourceSet& sources,
                             const std::vector<ConstantLocal>& constants, const std::string& candidate);

}  // namespace npufuse::apply

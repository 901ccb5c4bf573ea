#pragma once
// Branch conditions of a model's forward code, classified.
//
// Every `if`/`elif` statement and `x if c else y` in the methods of the
// nn.Module classes (except __init__, whose conditions the module tree shows)
// and in the module-level helpers they call is recorded with what it decides:
// prefill vs decode, quantised vs not, tensor/expert/data-parallel paths,
// training-only code, attention-implementation dispatch, configuration choices. The condition text,
// the calls in each arm and the communication calls they make are kept so a
// reader can see what runs only in one stage.
#include <string>
#include <vector>

#include "model/source_set.h"

namespace npufuse::model {

// ConfigChoice: a test on the module's own settings only (`self.score_func ==
// "softmax"`), fixed for a given config; given only when no other kind applies.
enum class BranchKind { PrefillDecode, Quantization, Parallel, TrainingOnly, AttentionDispatch, ConfigChoice };

const char* branch_kind_name(BranchKind k);

struct BranchCondition {
  std::string function;   // "Class.method" or the helper's name
  std::string owner;      // the class, empty for module-level helpers
  SourceSpan where;
  std::string form;       // "if" or "ternary"
  std::string condition;  // as written
  std::vector<BranchKind> kinds;  // empty: none of the classes above
  // For prefill/decode branches: the stage in which the condition is true:
  // "prefill", "decode", "no_cache" / "with_cache" (only says whether a cache
  // object exists), or "" when it does not tell (e.g. `use_cache`).
  std::string true_stage;
  std::vector<std::string> then_calls;  // callees in the true arm, as written, first use order
  std::vector<std::string> else_calls;  // callees in the false arm
  std::vector<std::string> communication;  // collective calls (dist.*, all_reduce, ...) in either arm
  // Configuration choices and attention dispatch evaluated against the
  // loaded config (`config_arms.h`): "then" or "else" when the test's value
  // is known, "" otherwise; `config_value` is the test with what it read
  // ("self.score_func == 'sigmoid'" with score_func = 'sigmoid').
  std::string config_arm;
  std::string config_value;
  const frontend::ast::expr* test = nullptr;  // the test itself (not rendered)
};

// The stage in which the false arm runs ("decode" for "prefill", ...).
std::string opposite_stage(const std::string& stage);

// Branches of every non-__init__ method of `module_classes` and of the
// module-level functions those methods reach by name, in source order.
std::vector<BranchCondition> find_branches(const SourceSet& sources, const std::vector<const ClassDecl*>& module_classes);

}  // namespace npufuse::model

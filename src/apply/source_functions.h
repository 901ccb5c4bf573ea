#pragma once
// Finding functions in the model's parsed files by byte position or by
// qualified name ("LlamaRMSNorm.forward", "apply_rotary_pos_emb").
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "frontend/ast.h"
#include "model/source_set.h"

namespace npufuse::apply {

struct FunctionAt {
  const model::ModelFile* file = nullptr;
  const frontend::ast::FunctionDef* fn = nullptr;
  std::string qualified;  // "Class.method" or "function"
  bool is_method = false;
};

const model::ModelFile* file_named(const model::SourceSet& sources, const std::string& path);

// The innermost function whose body holds bytes [begin, end) of `file`.
std::optional<FunctionAt> function_around(const model::ModelFile& file, uint32_t begin, uint32_t end);

// Every top-level function and every method of a top-level class, in load order.
std::vector<FunctionAt> every_function(const model::SourceSet& sources);

// A top-level function or a method of a top-level class, in any file.
std::optional<FunctionAt> function_named(const model::SourceSet& sources, const std::string& qualified);

// The top-level class `name` of `file`, its method `name`, and the
// `self.<attribute> = ...` statement at the top of a method's body.
const frontend::ast::ClassDef* class_named(const model::ModelFile& file, std::string_view name);
const frontend::ast::FunctionDef* method_named(const frontend::ast::ClassDef& cls, std::string_view name);
const frontend::ast::Assign* self_assignment(const frontend::ast::FunctionDef& fn, std::string_view attribute);

// The name `id`.
bool is_name(const frontend::ast::expr* e, std::string_view id);

// A method's first parameter (its `self`), or "".
std::string first_param(const frontend::ast::FunctionDef& fn);

// `<self>.<attr>`, for a method's own first parameter `self`.
bool is_self_attribute(const frontend::ast::expr* e, const std::string& self, std::string_view attr);

// `<self>.register_buffer("attr", ...)` (or register_parameter, or
// setattr(<self>, "attr", ...)): the call, or null.
const frontend::ast::Call* registration(const frontend::ast::Node* n, const std::string& self, std::string_view attr);

// The first line at which `method` sets or changes `self.<attr>`
// (`self.inv_freq = ...`, `self.bias[...] = ...`, `self.inv_freq.copy_(...)`,
// a registration), leaving out the node `except` (the registration a caller
// already knows of); 0 when it does not.
int changes_attribute(const frontend::ast::FunctionDef& method, std::string_view attr,
                      const frontend::ast::Node* except = nullptr);

// The source text of a node of `file`.
std::string text_of(const model::ModelFile& file, const frontend::ast::Node* n);

// The whitespace before `n` on its line, when only whitespace precedes it
// there; nullopt when other code does.
std::optional<std::string> own_line_indent(const model::ModelFile& file, const frontend::ast::Node* n);

// Every name `file` reads or binds, and the names of its functions and classes.
std::set<std::string> names_in_file(const model::ModelFile& file);

// The last name of a reference: `autocast` for `torch.cuda.amp.autocast`,
// `x` for `x`; empty for anything else.
std::string last_name(const frontend::ast::expr* e);

// A statement that is a bare string literal (a docstring).
bool is_docstring(const frontend::ast::stmt* s);

// The names some code binds (Store) or reads (Load); subtrees for which
// `skip` says yes are not looked into.
std::set<std::string> names_in(const frontend::ast::Node* n, frontend::ast::expr_context ctx,
                               const std::function<bool(const frontend::ast::Node*)>& skip = nullptr);

// In `caller`, the if arms that bind a name holding the function `name` to
// something else: another implementation picked at run time (HF's
// `if self.config._attn_implementation != "eager": attention_interface =
// ALL_ATTENTION_FUNCTIONS[...]`, whose functions live outside the analysed
// files). A patch inside `name` does not run on that path.
struct OtherBinding {
  int line = 0;        // the if statement's
  std::string test;    // its test as written
  std::string holder;  // the name rebound
  std::string value;   // what it is rebound to
};
std::vector<OtherBinding> other_bindings(const FunctionAt& caller, const std::string& name,
                                         const std::set<std::string>& tables);

// A function's positional and keyword-only parameter names.
std::set<std::string> parameter_names(const frontend::ast::FunctionDef& fn);

// Whether `text` is a primary expression (a name, attribute, call or
// subscript; a constant too when `constants`), which needs no parentheses
// as an operand or a method's receiver; nullopt when it does not parse.
std::optional<bool> primary_expression(const std::string& text, bool constants);

// The module-level dicts of the files holding the function `name` among their
// values (llama_like's `ATTENTION_FUNCTIONS = {"eager": eager_attention_forward, ...}`).
std::set<std::string> tables_holding(const model::SourceSet& sources, const std::string& name);

// The names that may hold the function `name` when called inside `scope`:
// the name itself, and every name `scope` binds to it or to an entry of one of
// `tables` (HF's `attention_interface = eager_attention_forward`, a
// dispatch's `attend = ATTENTION_FUNCTIONS[...]`).
std::set<std::string> names_holding(const frontend::ast::Node* scope, const std::string& name,
                                    const std::set<std::string>& tables);

// The text of bytes [begin, end) of fn's file when they are an expression of
// another method of fn's class that reads only the module's attributes no
// method but __init__ sets, through builtins such as len (DeepSeek-V3's
// `len(self.experts)` in the `moe` method its forward calls): the same value
// anywhere in the class's methods, so fn may spell it as written. Empty
// otherwise.
std::string class_constant(const FunctionAt& fn, uint32_t begin, uint32_t end);

}  // namespace npufuse::apply

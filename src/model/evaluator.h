#pragma once
// Static evaluation of the expressions that size a model: constructor
// arguments, `self.head_dim = config.hidden_size // config.num_attention_heads`,
// `getattr(config, "head_dim", ...)`, ternaries on config fields. Nothing runs:
// names resolve to bound parameters, `__init__` locals, `self.` attributes
// defined earlier in `__init__`, module constants and config fields; whatever
// cannot be known stays symbolic.
#include <map>
#include <string>
#include <vector>

#include "model/config_schema.h"
#include "model/model_config.h"
#include "model/source_set.h"
#include "model/sym_value.h"

namespace npufuse::model {

// One read of a config field by the code, for the "config fields used" list.
struct ConfigRead {
  std::string key;
  bool found = false;    // present in the loaded config.json
  SourceSpan where;
};

// What names mean while evaluating inside one function (usually __init__).
struct EvalScope {
  const ModelFile* file = nullptr;
  std::map<std::string, SymValue, std::less<>> bound;            // parameters
  std::map<std::string, const ast::expr*, std::less<>> locals;    // local assignments
  std::map<std::string, const ast::expr*, std::less<>> self_attrs;  // self.X = expr
  std::map<std::string, SymValue, std::less<>> cache;             // evaluated locals / self.X
};

class Evaluator {
 public:
  Evaluator(const SourceSet& sources, const ModelConfig& config, const ConfigSchema& schema)
      : sources_(sources), config_(config), schema_(schema) {}

  SymValue eval(const ast::expr* e, EvalScope& scope);
  // Truth of a condition: true/false when decidable, nullopt otherwise.
  std::optional<bool> truth(const ast::expr* e, EvalScope& scope);

  const std::vector<ConfigRead>& reads() const { return reads_; }
  const ModelConfig& config() const { return config_; }
  const ConfigSchema& schema() const { return schema_; }

 private:
  SymValue eval_name(const ast::Name* n, EvalScope& scope);
  SymValue eval_attribute(const ast::Attribute* a, EvalScope& scope);
  SymValue eval_call(const ast::Call* c, EvalScope& scope);
  SymValue eval_binop(const ast::BinOp* b, EvalScope& scope);
  SymValue eval_compare(const ast::Compare* c, EvalScope& scope);
  SymValue eval_subscript(const ast::Subscript* s, EvalScope& scope);
  SymValue config_field(const SymValue& config_obj, const std::string& attr, const ast::expr* fallback,
                        EvalScope& scope, const ast::Node* at);
  SymValue eval_module_constant(const ConstantDecl& c);

  const SourceSet& sources_;
  const ModelConfig& config_;
  const ConfigSchema& schema_;
  std::vector<ConfigRead> reads_;
  int depth_ = 0;
};

// Truthiness of a known value, Python's rules.
std::optional<bool> python_truth(const SymValue& v);

}  // namespace npufuse::model

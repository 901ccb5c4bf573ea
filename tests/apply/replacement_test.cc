#include <gtest/gtest.h>

#include "apply/apply_error.h"
#include "apply/replacement.h"
#include "frontend/parser.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;

struct RuleFile {
  std::unique_ptr<frontend::ParsedFile> parsed;
  const ast::FunctionDef* replace = nullptr;
};

RuleFile rule_with(const std::string& text) {
  RuleFile r{frontend::parse_file("rule.py", text), nullptr};
  for (const ast::stmt* s : r.parsed->module->body)
    if (auto* fn = ast::as<ast::FunctionDef>(s); fn && fn->name == "replace") r.replace = fn;
  return r;
}

ReplacementRequest request_for(const RuleFile& r, std::map<std::string, std::string> arguments) {
  ReplacementRequest q;
  q.replace = r.replace;
  q.rule_source = &r.parsed->source;
  q.arguments = std::move(arguments);
  q.indent = "        ";
  return q;
}

TEST(Replacement, SingleReturnBecomesReturnWithArgumentsSubstituted) {
  RuleFile r = rule_with("def replace(hidden_states, weight, eps):\n"
                         "    return torch_npu.npu_rms_norm(hidden_states, weight, epsilon=eps)[0]\n");
  auto q = request_for(r, {{"hidden_states", "x"}, {"weight", "self.weight"}, {"eps", "self.variance_epsilon"}});
  EXPECT_EQ(replacement_text(q), "return torch_npu.npu_rms_norm(x, self.weight, epsilon=self.variance_epsilon)[0]");
}

TEST(Replacement, ResultAssignedToTargetsAndCompoundArgumentsParenthesised) {
  RuleFile r = rule_with("def replace(gate_up):\n    return torch_npu.npu_swiglu(gate_up, dim=-1) * gate_up\n");
  auto q = request_for(r, {{"gate_up", "a + b"}});
  q.targets = {"out"};
  EXPECT_EQ(replacement_text(q), "out = torch_npu.npu_swiglu((a + b), dim=-1) * (a + b)");
}

TEST(Replacement, StatementsReindentedAndLocalsRenamedAwayFromModelNames) {
  RuleFile r = rule_with("def replace(q, k):\n"
                         "    q_b = q.transpose(1, 2)\n"
                         "    torch_npu.op(q_b,\n"
                         "                 k)\n"
                         "    return q_b, k\n");
  auto q = request_for(r, {{"q", "query"}, {"k", "key"}});
  q.indent = "    ";
  q.taken_names = {"q_b"};
  q.targets = {"rq", "rk"};
  EXPECT_EQ(replacement_text(q),
            "q_b_npu = query.transpose(1, 2)\n"
            "    torch_npu.op(q_b_npu,\n"
            "                 key)\n"
            "    rq, rk = q_b_npu, key");
}

TEST(Replacement, DocstringSkippedAndMissingArgumentRefused) {
  RuleFile r = rule_with("def replace(x, w):\n    \"\"\"doc\"\"\"\n    return f(x, w)\n");
  EXPECT_EQ(replacement_text(request_for(r, {{"x", "a"}, {"w", "b"}})), "return f(a, b)");
  EXPECT_THROW(replacement_text(request_for(r, {{"x", "a"}})), ApplyError);
  RuleFile no_return = rule_with("def replace(x):\n    f(x)\n");
  EXPECT_THROW(replacement_text(request_for(no_return, {{"x", "a"}})), ApplyError);
}

}  // namespace
}  // namespace npufuse::apply

// Which statements of a rule's `replace` are built once per module.
#include <gtest/gtest.h>

#include "apply/module_buffer.h"
#include "frontend/parser.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;

TEST(ModuleBuffer, OnlyStatementsReadingNoParameterNorLocalAreConstant) {
  auto parsed = frontend::parse_file("rule.py",
                                     "def replace(query, scaling):\n"
                                     "    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)\n"
                                     "    scaled = query * scaling\n"
                                     "    twice = scaled * 2\n"
                                     "    both = mask & True\n"
                                     "    return op(twice, mask)\n");
  auto* replace = ast::as<ast::FunctionDef>(parsed->module->body[0]);
  std::vector<ConstantLocal> found = constant_locals(*replace, parsed->source);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].name, "mask");
  EXPECT_EQ(found[0].value, "torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)");
  // `both` reads the local `mask`, which does not exist in __init__: it stays.
}

TEST(ModuleBuffer, NothingConstantInAPlainReplace) {
  auto parsed = frontend::parse_file("rule.py",
                                     "def replace(x, w, eps):\n"
                                     "    return torch_npu.npu_rms_norm(x, w, epsilon=eps)[0]\n");
  auto* replace = ast::as<ast::FunctionDef>(parsed->module->body[0]);
  EXPECT_TRUE(constant_locals(*replace, parsed->source).empty());
}

}  // namespace
}  // namespace npufuse::apply

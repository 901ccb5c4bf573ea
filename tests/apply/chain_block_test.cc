// Which statement list a chain's rewrite works in: the innermost body or
// clause holding every op.
#include <gtest/gtest.h>

#include <string>

#include "apply/chain_block.h"
#include "frontend/parser.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;

const char* kSource =
    "def forward(self, x):\n"
    "    if self.fast:\n"
    "        y = x.float()\n"
    "        z = y * 2\n"
    "    else:\n"
    "        z = x\n"
    "    for i in range(3):\n"
    "        z = z + 1\n"
    "    return z\n";

// The byte range of the first occurrence of `what` in kSource.
std::pair<uint32_t, uint32_t> range_of(const std::string& what) {
  size_t at = std::string(kSource).find(what);
  return {static_cast<uint32_t>(at), static_cast<uint32_t>(at + what.size())};
}

const ast::FunctionDef& forward(const frontend::ParsedFile& parsed) {
  return *ast::as<ast::FunctionDef>(parsed.module->body[0]);
}

TEST(ChainBlock, OpsInOneIfArmGiveThatArm) {
  auto parsed = frontend::parse_file("m.py", kSource);
  ChainBlock block = innermost_block(forward(*parsed), {range_of("x.float()"), range_of("y * 2")});
  ASSERT_EQ(block.statements.size(), 2u);
  EXPECT_EQ(block.statements[0]->lineno, 3);
  EXPECT_EQ(block.loop, nullptr);
}

TEST(ChainBlock, OpsInBothArmsStayAtTheFunctionBody) {
  auto parsed = frontend::parse_file("m.py", kSource);
  ChainBlock block = innermost_block(forward(*parsed), {range_of("x.float()"), range_of("z = x")});
  EXPECT_EQ(block.statements.size(), 3u);  // if, for, return
  EXPECT_EQ(compound_kind(block.statements[0]), "if");
}

TEST(ChainBlock, OpInALoopBodyRemembersTheLoop) {
  auto parsed = frontend::parse_file("m.py", kSource);
  ChainBlock block = innermost_block(forward(*parsed), {range_of("z + 1")});
  ASSERT_EQ(block.statements.size(), 1u);
  ASSERT_NE(block.loop, nullptr);
  EXPECT_EQ(compound_kind(block.loop), "for");
}

TEST(ChainBlock, OpInAHeaderDoesNotDescend) {
  auto parsed = frontend::parse_file("m.py", kSource);
  ChainBlock block = innermost_block(forward(*parsed), {range_of("range(3)")});
  EXPECT_EQ(block.statements.size(), 3u);
  EXPECT_EQ(compound_kind(block.statements[1]), "for");
}

}  // namespace
}  // namespace npufuse::apply

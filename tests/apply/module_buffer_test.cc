// Which statements of a rule's `replace` are built once per module.
#include <gtest/gtest.h>

#include "apply/module_buffer.h"
#include "frontend/parser.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;

std::vector<std::string> names(const InitSplit& split) {
  std::vector<std::string> out;
  for (const InitStatement& s : split.statements) out.push_back(s.name + (s.buffer ? ":buffer" : ":local"));
  return out;
}

TEST(ModuleBuffer, OnlyStatementsReadingNoParameterNorLocalAreConstant) {
  auto parsed = frontend::parse_file("rule.py",
                                     "def replace(query, scaling):\n"
                                     "    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)\n"
                                     "    scaled = query * scaling\n"
                                     "    twice = scaled * 2\n"
                                     "    both = mask & True\n"
                                     "    return op(twice, mask, both)\n");
  auto* replace = ast::as<ast::FunctionDef>(parsed->module->body[0]);
  InitSplit split = split_init_time(*replace, {}, {});
  // `both` reads only the constant, so it is a buffer of its own.
  EXPECT_EQ(names(split), (std::vector<std::string>{"mask:buffer", "both:buffer"}));
  EXPECT_EQ(parsed->source.text().substr(split.statements[0].value->begin,
                                         split.statements[0].value->end - split.statements[0].value->begin),
            "torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)");
  EXPECT_EQ(split.call_time.at("twice"), "query is known only when the chain runs");
}

TEST(ModuleBuffer, NothingConstantInAPlainReplace) {
  auto parsed = frontend::parse_file("rule.py",
                                     "def replace(x, w, eps):\n"
                                     "    return torch_npu.npu_rms_norm(x, w, epsilon=eps)[0]\n");
  auto* replace = ast::as<ast::FunctionDef>(parsed->module->body[0]);
  EXPECT_TRUE(split_init_time(*replace, {}, {}).statements.empty());
}

TEST(ModuleBuffer, InitTimeParametersMakeTablesAndTheirTemporaries) {
  auto parsed = frontend::parse_file("rule.py",
                                     "def replace(inv_freq, position_ids, max_len):\n"
                                     "    t = torch.arange(max_len, dtype=torch.float32)\n"
                                     "    freqs = torch.outer(t, inv_freq)\n"
                                     "    unused = freqs * 2\n"
                                     "    cos_cached = freqs.cos()\n"
                                     "    cos = cos_cached[position_ids]\n"
                                     "    return cos\n");
  auto* replace = ast::as<ast::FunctionDef>(parsed->module->body[0]);
  InitSplit split = split_init_time(*replace, {"inv_freq", "max_len"}, {});
  // `unused` feeds no table: it stays with the call-time part.
  EXPECT_EQ(names(split), (std::vector<std::string>{"t:local", "freqs:local", "cos_cached:buffer"}));
  EXPECT_EQ(split.call_time.at("unused"), "needed by no value built once");
  // Without max_len in __init__, the tables read a call-time value, and say why.
  InitSplit without = split_init_time(*replace, {"inv_freq"}, {{"max_len", "no max_len in __init__"}});
  EXPECT_TRUE(without.statements.empty());
  EXPECT_EQ(without.call_time.at("cos_cached"), "no max_len in __init__");
}

}  // namespace
}  // namespace npufuse::apply

// Parser unit tests: node positions and byte ranges, error messages and
// their locations, the standalone-expression entry point and lazy constants.
#include <gtest/gtest.h>

#include <string>

#include "frontend/ast_dump.h"
#include "frontend/parser.h"

namespace npufuse::frontend {
namespace {

using namespace ast;

std::unique_ptr<ParsedFile> parse(const std::string& text) { return parse_file("test.py", text); }

std::string source_of(const ParsedFile& f, const Node* n) {
  return std::string(f.source.text().substr(n->begin, n->end - n->begin));
}

Diagnostic error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const SyntaxError& e) {
    return e.diagnostic();
  }
  ADD_FAILURE() << "no error for: " << text;
  return {};
}

TEST(Parser, AssignmentPositionsAndByteRanges) {
  auto f = parse("x = foo(1, b=2)\n");
  ASSERT_EQ(f->module->body.size, 1u);
  auto* assign = as<Assign>(f->module->body[0]);
  ASSERT_NE(assign, nullptr);
  auto* call = as<Call>(assign->value);
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(source_of(*f, call), "foo(1, b=2)");
  EXPECT_EQ(call->lineno, 1);
  EXPECT_EQ(call->col_offset, 4);
  EXPECT_EQ(call->end_col_offset, 15);
  ASSERT_EQ(call->keywords.size, 1u);
  EXPECT_EQ(call->keywords[0]->arg, "b");
  EXPECT_EQ(source_of(*f, call->keywords[0]), "b=2");
  auto* target = as<Name>(assign->targets[0]);
  ASSERT_NE(target, nullptr);
  EXPECT_EQ(target->ctx, expr_context::Store);
}

TEST(Parser, ParenthesesBelongToTheEnclosingNode) {
  auto f = parse("y = (a) + b\n");
  auto* binop = as<BinOp>(as<Assign>(f->module->body[0])->value);
  ASSERT_NE(binop, nullptr);
  EXPECT_EQ(binop->col_offset, 4);      // starts at '(' as in CPython
  EXPECT_EQ(binop->left->col_offset, 5);  // the name itself excludes it
  EXPECT_EQ(source_of(*f, binop), "(a) + b");
}

TEST(Parser, ColumnsAreUtf8Bytes) {
  auto f = parse("s = 'é'; t = 1\n");
  auto* second = as<Assign>(f->module->body[1]);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->col_offset, 10);  // 'é' is two bytes
}

TEST(Parser, CompoundStatementSpansItsBlock) {
  auto f = parse("def f(a, /, b=1, *c, d, **e):\n    return a\n\nx = 1\n");
  auto* fn = as<FunctionDef>(f->module->body[0]);
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(fn->end_lineno, 2);
  EXPECT_EQ(fn->end_col_offset, 12);
  EXPECT_EQ(fn->args->posonlyargs.size, 1u);
  EXPECT_EQ(fn->args->args.size, 1u);
  EXPECT_EQ(fn->args->defaults.size, 1u);
  ASSERT_NE(fn->args->vararg, nullptr);
  EXPECT_EQ(fn->args->kwonlyargs.size, 1u);
  EXPECT_EQ(fn->args->kw_defaults[0], nullptr);
  ASSERT_NE(fn->args->kwarg, nullptr);
  EXPECT_EQ(fn->args->kwarg->arg, "e");
}

TEST(Parser, ConstantsDecodeOnDemand) {
  auto f = parse("x = 'a' \"b\\n\"\ny = 0x10\nz = b'\\x00'\n");
  auto* s = as<Constant>(as<Assign>(f->module->body[0])->value);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->value.kind, ConstantKind::Str);
  EXPECT_EQ(constant_string(s->value), "ab\n");
  EXPECT_EQ(constant_repr(s->value), "'ab\\n'");
  auto* n = as<Constant>(as<Assign>(f->module->body[1])->value);
  EXPECT_EQ(n->value.kind, ConstantKind::Int);
  EXPECT_EQ(constant_repr(n->value), "16");
  auto* b = as<Constant>(as<Assign>(f->module->body[2])->value);
  EXPECT_EQ(b->value.kind, ConstantKind::Bytes);
  EXPECT_EQ(constant_string(b->value), std::string(1, '\0'));
}

TEST(Parser, DumpMatchesCPythonFormat) {
  auto f = parse("a.b[1:] = c\n");
  EXPECT_EQ(dump_ast(f->module),
            "Module(body=[Assign(targets=[Subscript(value=Attribute(value=Name(id='a', ctx=Load(), lineno=1, "
            "col_offset=0, end_lineno=1, end_col_offset=1), attr='b', ctx=Load(), lineno=1, col_offset=0, "
            "end_lineno=1, end_col_offset=3), slice=Slice(lower=Constant(value=1, lineno=1, col_offset=4, "
            "end_lineno=1, end_col_offset=5), lineno=1, col_offset=4, end_lineno=1, end_col_offset=6), ctx=Store(), "
            "lineno=1, col_offset=0, end_lineno=1, end_col_offset=7)], value=Name(id='c', ctx=Load(), lineno=1, "
            "col_offset=10, end_lineno=1, end_col_offset=11), lineno=1, col_offset=0, end_lineno=1, "
            "end_col_offset=11)], type_ignores=[])");
}

TEST(Parser, FStringPartsCarryTheWholeStringPosition) {
  auto f = parse("x = f'a{b!r:>4}' 'c'\n");
  auto* j = as<JoinedStr>(as<Assign>(f->module->body[0])->value);
  ASSERT_NE(j, nullptr);
  ASSERT_EQ(j->values.size, 3u);
  for (expr* part : j->values) {
    EXPECT_EQ(part->col_offset, 4);
    EXPECT_EQ(part->end_col_offset, 20);
  }
  auto* fv = as<FormattedValue>(j->values[1]);
  ASSERT_NE(fv, nullptr);
  EXPECT_EQ(fv->conversion, 'r');
  EXPECT_EQ(fv->value->col_offset, 8);  // the expression keeps its real position
  ASSERT_NE(fv->format_spec, nullptr);
  EXPECT_EQ(fv->format_spec->end_col_offset, 16);  // a spec spans only its own f-string
}

TEST(Parser, SoftKeywordsStayNames) {
  auto f = parse("match = 1\ntype = 2\nmatch x:\n    case [a, *_]:\n        pass\ntype T = int\n");
  ASSERT_EQ(f->module->body.size, 4u);
  EXPECT_NE(as<Assign>(f->module->body[0]), nullptr);
  EXPECT_NE(as<Assign>(f->module->body[1]), nullptr);
  auto* m = as<Match>(f->module->body[2]);
  ASSERT_NE(m, nullptr);
  EXPECT_NE(as<MatchSequence>(m->cases[0]->pattern), nullptr);
  EXPECT_NE(as<TypeAlias>(f->module->body[3]), nullptr);
}

TEST(Parser, ErrorsNameFileLineAndColumn) {
  Diagnostic d = error_of("x = 1\nif x\n    pass\n");
  EXPECT_EQ(d.path, "test.py");
  EXPECT_EQ(d.line, 2);
  EXPECT_EQ(d.col, 5);
  EXPECT_EQ(d.message, "expected ':'");

  d = error_of("f() = 1\n");
  EXPECT_EQ(d.message, "cannot assign to function call");
  EXPECT_EQ(d.col, 1);

  d = error_of("x = (1,\n");
  EXPECT_EQ(d.message, "'(' was never closed");

  d = error_of("x = 1\n    y = 2\n");
  EXPECT_EQ(d.message, "unexpected indent");
  EXPECT_EQ(d.line, 2);

  d = error_of("def f(a=1, b): pass\n");
  EXPECT_EQ(d.message, "non-default argument follows default argument");
  EXPECT_EQ(d.col, 12);

  d = error_of("x = a b\n");
  EXPECT_EQ(d.message, "invalid syntax");
  EXPECT_EQ(d.col, 7);
}

TEST(Parser, DeepNestingIsAnErrorNotACrash) {
  // CPython stops near 3000 levels too; deeper trees would overflow the
  // stack of any recursive walk.
  EXPECT_NO_THROW(parse("x = " + std::string(2000, '-') + "1\n"));
  Diagnostic d = error_of("x = " + std::string(100000, '-') + "1\n");
  EXPECT_EQ(d.message, "too many nested expressions");
  std::string chain = "x = 1";
  for (int i = 0; i < 50000; ++i) chain += "+1";
  EXPECT_EQ(error_of(chain + "\n").message, "too many nested expressions");
}

TEST(Parser, AcceptsWhatAstParseAccepts) {
  // Rejected only later by the compiler, not by ast.parse.
  EXPECT_NO_THROW(parse("return 1\n"));
  EXPECT_NO_THROW(parse("nonlocal x\n"));
  EXPECT_NO_THROW(parse("f(a=1, a=2)\n"));
  EXPECT_NO_THROW(parse("*a = b\n"));
}

TEST(ParseExpression, ReturnsTheExpressionTree) {
  auto e = parse_expression("hidden_size % 16 == 0 and dtype in ('fp16', 'bf16')", "constraint");
  auto* b = as<BoolOp>(e->expr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->op, boolop::And);
  ASSERT_EQ(b->values.size, 2u);
  EXPECT_NE(as<Compare>(b->values[0]), nullptr);
}

TEST(ParseExpression, AllowsLeadingIndentationLikeEval) {
  auto e = parse_expression("  a + b\n", "constraint");
  auto* b = as<BinOp>(e->expr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->col_offset, 2);
  EXPECT_THROW(parse_expression("", "constraint"), SyntaxError);
  EXPECT_THROW(parse_expression("a\nb", "constraint"), SyntaxError);
}

TEST(Parser, MissingBlockNamesTheHeader) {
  Diagnostic d = error_of("x = 1\nfor a in b:\nx = 2\n");
  EXPECT_EQ(d.message, "expected an indented block after 'for' statement on line 2");
  EXPECT_EQ(d.line, 3);
  d = error_of("match x:\n    case 1:\n    y\n");
  EXPECT_EQ(d.message, "expected an indented block after 'case' statement on line 2");
}

TEST(ParseExpression, ErrorsNameTheOrigin) {
  try {
    parse_expression("a +", "rule.toml:3");
    FAIL() << "expected a syntax error";
  } catch (const SyntaxError& e) {
    EXPECT_EQ(e.diagnostic().path, "rule.toml:3");
    EXPECT_EQ(e.diagnostic().line, 1);
  }
  EXPECT_THROW(parse_expression("x = 1", "c"), SyntaxError);
}

TEST(Parser, ManyParsesReuseBuffersSafely) {
  std::unique_ptr<ParsedFile> kept = parse("a = [1, 2, 3]\n");
  for (int i = 0; i < 50; ++i) {
    auto f = parse("def g(x):\n    return {k: v for k, v in x.items()}\n");
    ASSERT_EQ(f->module->body.size, 1u);
  }
  EXPECT_EQ(as<List>(as<Assign>(kept->module->body[0])->value)->elts.size, 3u);
}

}  // namespace
}  // namespace npufuse::frontend

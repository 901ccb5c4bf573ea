// RULE values read as JSON: what ast.literal_eval would give, or an error at
// the node that is not a plain literal.
#include <gtest/gtest.h>

#include "frontend/ast.h"
#include "model/source_set.h"
#include "rules/python_literal.h"
#include "rules/rule_docs.h"

namespace npufuse::rules {
namespace {

namespace ast = frontend::ast;

struct Converted {
  std::optional<nlohmann::ordered_json> value;
  std::string errors;
};

// Converts the value of the first statement `X = <literal>` of `text`.
Converted convert(const std::string& text) {
  model::SourceSet set = model::SourceSet::from_texts({{"t.py", text}});
  const model::ModelFile& file = *set.files().front();
  const auto* assign = ast::as<ast::Assign>(file.parsed->module->body[0]);
  LoadErrors errors;
  auto value = literal_to_json(file, assign->value, errors);
  return {value, errors.joined()};
}

TEST(PythonLiteral, ScalarsAsLiteralEvalReadsThem) {
  EXPECT_EQ(convert("X = 'a' 'b'\n").value, nlohmann::ordered_json("ab"));
  EXPECT_EQ(convert("X = -3\n").value, nlohmann::ordered_json(-3));
  EXPECT_EQ(convert("X = 0x10\n").value, nlohmann::ordered_json(16));
  EXPECT_EQ(convert("X = 1e-6\n").value, nlohmann::ordered_json(1e-6));
  EXPECT_EQ(convert("X = -0.5\n").value, nlohmann::ordered_json(-0.5));
  EXPECT_EQ(convert("X = True\n").value, nlohmann::ordered_json(true));
  EXPECT_EQ(convert("X = None\n").value, nlohmann::ordered_json(nullptr));
}

TEST(PythonLiteral, ContainersKeepSourceOrder) {
  auto c = convert("X = {'z': [1, (2, 3)], 'a': {'k': 'v'}}\n");
  ASSERT_TRUE(c.value) << c.errors;
  EXPECT_EQ(c.value->dump(), R"({"z":[1,[2,3]],"a":{"k":"v"}})");
}

TEST(PythonLiteral, NamesCallsAndArithmeticAreErrorsAtTheirNode) {
  auto name = convert("X = {'a': [1, eps]}\n");
  EXPECT_FALSE(name.value);
  EXPECT_EQ(name.errors, "t.py:1:15: RULE must be a plain literal; found Name (names, calls and arithmetic are not evaluated)");
  auto call = convert("X = [float('inf')]\n");
  EXPECT_EQ(call.errors.rfind("t.py:1:6: RULE must be a plain literal; found Call", 0), 0u) << call.errors;
  auto fstring = convert("X = f'{1}'\n");
  EXPECT_EQ(fstring.errors.rfind("t.py:1:5: RULE must be a plain literal; found JoinedStr", 0), 0u) << fstring.errors;
}

TEST(PythonLiteral, NonStringKeysBytesAndHugeIntsAreRefused) {
  EXPECT_EQ(convert("X = {1: 2}\n").errors, "t.py:1:6: RULE dict keys must be strings");
  EXPECT_EQ(convert("X = b'x'\n").errors.rfind("t.py:1:5: a bytes is not allowed in RULE", 0), 0u);
  EXPECT_EQ(convert("X = 123456789012345678901234567890\n").errors,
            "t.py:1:5: integer 123456789012345678901234567890 does not fit in 64 bits");
  EXPECT_EQ(convert("X = {'a': 1, 'a': 2}\n").errors, "t.py:1:14: duplicate key 'a'");
}

TEST(CleanDocLines, DedentsLikeInspectCleandoc) {
  size_t skipped = 0;
  auto lines = clean_doc_lines("\n  Title\n\n    body\n      more\n\n", &skipped);
  EXPECT_EQ(skipped, 1u);
  // The margin comes from every line after the first, the title included (as in Python).
  EXPECT_EQ(lines, (std::vector<std::string>{"Title", "", "  body", "    more"}));
  EXPECT_EQ(clean_doc_lines("Title\n    body\n      more\n"), (std::vector<std::string>{"Title", "body", "  more"}));
}

}  // namespace
}  // namespace npufuse::rules

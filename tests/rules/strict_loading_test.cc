// Strict loading: in-memory rule files with one mistake each; the error names
// the file, line and column of the mistake and says what is wrong.
#include <gtest/gtest.h>

#include <string>

#include "rules/ruleset.h"

namespace npufuse::rules {
namespace {

// A minimal valid rule; tests replace one piece of it.
const char* kDoc = R"("""Adds two tensors.

What it does
    Finds a + b.
Why
    One kernel.
Example
    a + b
Use instead
    torch_npu.npu_add(a, b)
Fix safety
    Safe.
References
    none.
"""
import torch
)";

std::string rule_dict(const std::string& id_line, const std::string& extra = "") {
  return "RULE = {\n" + id_line +
         "    \"title\": \"add\",\n"                                 // line 19
         "    \"module\": \"other\",\n"                              // line 20
         "    \"apis\": [\"npu_rms_norm\"],\n"                       // line 21
         "    \"stages\": [\"prefill\"],\n"                          // line 22
         "    \"safety\": \"safe\",\n"                               // line 23
         "    \"prerequisites\": [],\n"                              // line 24
         "    \"checks\": [],\n"                                     // line 25
         "    \"facts\": {},\n"                                      // line 26
         "    \"inputs\": {\"a\": {\"shape\": [2]}, \"b\": {\"shape\": [2]}},\n"  // line 27
         "    \"sizes\": {},\n" +                                    // line 28
         extra +
         "    \"doc_zh\": \"\"\"相加。\n\n功能\n    a + b\n原因\n    一个内核。\n示例\n    a + b\n"
         "替代写法\n    npu_add\n修复安全性\n    安全。\n参考\n    无。\n\"\"\",\n"
         "}\n";
}

const char* kFunctions = R"(

def search(a, b):
    return a + b


def replace(a, b):
    return torch.add(a, b)
)";

std::string valid_rule(const std::string& extra = "") {
  return std::string(kDoc) + rule_dict("    \"id\": \"demo.add\",\n", extra) + kFunctions;
}

std::string load_error(const std::vector<RuleFile>& files) {
  try {
    RuleSet::load(files, "rules");
  } catch (const RuleError& e) {
    return e.what();
  }
  return "";
}

std::string load_error(const std::string& text) { return load_error({{"demo/add.py", text}}); }

TEST(StrictLoading, TheBaseRuleLoads) {
  RuleSet set = RuleSet::load({{"demo/add.py", valid_rule()}}, "rules");
  ASSERT_EQ(set.rules().size(), 1u);
  const Rule& r = set.rules()[0];
  EXPECT_EQ(r.id, "demo.add");
  EXPECT_EQ(r.summary_en, "Adds two tensors.");
  EXPECT_EQ(r.summary_zh, "相加。");
  ASSERT_EQ(r.doc_en.size(), 6u);
  EXPECT_EQ(r.doc_en[0].body, "Finds a + b.");
  ASSERT_EQ(r.searches.size(), 1u);
  EXPECT_NE(r.replace, nullptr);
}

TEST(StrictLoading, FixturesAndReadmeAreNotRules) {
  RuleSet set = RuleSet::load({{"demo/add.py", valid_rule()},
                               {"demo/fixtures/add_match_plain.py", "# expect-match: demo.add\nx = 1\n"},
                               {"README.md", "# rules\n"}},
                              "rules");
  EXPECT_EQ(set.rules().size(), 1u);
}

TEST(StrictLoading, IdMustBeFamilyDotStem) {
  std::string text = std::string(kDoc) + rule_dict("    \"id\": \"demo.plus\",\n") + kFunctions;
  EXPECT_EQ(load_error(text), "rules/demo/add.py:18:11: id 'demo.plus' must be 'demo.add' (<family>.<file stem>)");
}

TEST(StrictLoading, UnknownKeyIsNamedAtItsPosition) {
  std::string error = load_error(valid_rule("    \"colour\": \"red\",\n"));
  EXPECT_EQ(error.rfind("rules/demo/add.py:29:5: unknown RULE key 'colour'", 0), 0u) << error;
}

TEST(StrictLoading, WrongTypeIsNamed) {
  std::string text = valid_rule();
  text.replace(text.find("\"title\": \"add\""), 14, "\"title\": 3");
  EXPECT_EQ(load_error(text), "rules/demo/add.py:19:14: title: expected a str, got int");
}

TEST(StrictLoading, DeinterleavedReturnsArePositions) {
  EXPECT_EQ(load_error(valid_rule("    \"deinterleaved_returns\": [0],\n")), "");
  std::string error = load_error(valid_rule("    \"deinterleaved_returns\": [\"k\"],\n"));
  EXPECT_EQ(error.rfind("rules/demo/add.py:29:31: deinterleaved_returns entry: expected an int, got str", 0), 0u) << error;
  error = load_error(valid_rule("    \"deinterleaved_returns\": 1,\n"));
  EXPECT_NE(error.find("deinterleaved_returns: expected a list"), std::string::npos) << error;
}

TEST(StrictLoading, AbsorbedReturnsNamePositionsAndAnInput) {
  EXPECT_EQ(load_error(valid_rule("    \"absorbed_returns\": {\"0\": {\"weight\": \"b\", \"head_axis\": 1}},\n")), "");
  std::string error = load_error(valid_rule("    \"absorbed_returns\": {\"q\": {\"weight\": \"b\", \"head_axis\": 1}},\n"));
  EXPECT_EQ(error.rfind("rules/demo/add.py:29:26: absorbed_returns 'q': the key is a returned value's position", 0), 0u) << error;
  error = load_error(valid_rule("    \"absorbed_returns\": {\"0\": {\"weight\": \"b\", \"head_axis\": \"1\"}},\n"));
  EXPECT_EQ(error.rfind("rules/demo/add.py:29:60: absorbed_returns '0' 'head_axis': expected an int, got str", 0), 0u) << error;
  error = load_error(valid_rule("    \"absorbed_returns\": {\"0\": {\"weight\": \"b\"}},\n"));
  EXPECT_EQ(error.rfind("rules/demo/add.py:29:31: absorbed_returns '0': missing 'head_axis'", 0), 0u) << error;
  error = load_error(valid_rule("    \"absorbed_returns\": {\"0\": {\"weight\": \"w_uk\", \"head_axis\": 1}},\n"));
  EXPECT_EQ(error.rfind("rules/demo/add.py:29:25: RULE['absorbed_returns'] '0' names weight 'w_uk', which is not in RULE['inputs']", 0), 0u) << error;
  error = load_error(valid_rule("    \"absorbed_returns\": [0],\n"));
  EXPECT_NE(error.find("absorbed_returns: expected a dict"), std::string::npos) << error;
}

TEST(StrictLoading, RejectSparesNameRules) {
  const std::string reject = "    \"rejects\": [{\"api\": \"npu_add\", \"en\": \"no\", \"zh\": \"不\", \"spares\": [\"demo.add\"]}],\n";
  RuleSet set = RuleSet::load({{"demo/add.py", valid_rule(reject)}}, "rules");
  ASSERT_EQ(set.rules()[0].rejects.size(), 1u);
  EXPECT_EQ(set.rules()[0].rejects[0].spares, std::vector<std::string>{"demo.add"});
  std::string unknown = reject;
  unknown.replace(unknown.find("[\"demo.add\"]"), 12, "[\"demo.sub\"]");
  EXPECT_EQ(load_error(valid_rule(unknown)),
            "rules/demo/add.py:29:17: RULE['rejects'] spares 'demo.sub', which is no rule's id");
}

TEST(StrictLoading, OperandFactsAreExpressions) {
  EXPECT_EQ(load_error(valid_rule("    \"operand_facts\": {\"head_dim\": \"kv_lora_rank\", \"num_kv_heads\": \"1\"},\n")), "");
  std::string error = load_error(valid_rule("    \"operand_facts\": {\"head_dim\": \"kv_lora_rank +\"},\n"));
  EXPECT_EQ(error.rfind("rules/demo/add.py:29:35: operand fact 'head_dim': column ", 0), 0u) << error;
  error = load_error(valid_rule("    \"operand_facts\": {\"head_dim\": 512},\n"));
  EXPECT_NE(error.find("operand fact 'head_dim': expected a str, got int"), std::string::npos) << error;
}

TEST(StrictLoading, ApplyNamesLocalsAndParametersOfReplace) {
  EXPECT_EQ(load_error(valid_rule("    \"apply\": {\"init_bindings\": {\"b\": [\"self.b\", \"config.b\"]}},\n")), "");
  std::string error = load_error(valid_rule("    \"apply\": {\"built_once\": [\"table\"]},\n"));
  EXPECT_EQ(error, "rules/demo/add.py:29:14: RULE['apply']['built_once'] names 'table', which no statement of replace assigns")
      << error;
  error = load_error(valid_rule("    \"apply\": {\"init_bindings\": {\"c\": [\"self.c\"]}},\n"));
  EXPECT_NE(error.find("RULE['apply']['init_bindings'] names 'c', which is not a parameter of replace"), std::string::npos)
      << error;
  error = load_error(valid_rule("    \"apply\": {\"init_bindings\": {\"b\": []}},\n"));
  EXPECT_NE(error.find("apply 'init_bindings' 'b': name at least one spelling"), std::string::npos) << error;
  error = load_error(valid_rule("    \"apply\": {\"build_once\": []},\n"));
  EXPECT_EQ(error.rfind("rules/demo/add.py:29:15: apply: unknown key 'build_once'", 0), 0u) << error;
  EXPECT_EQ(load_error(valid_rule("    \"apply\": {\"decorators\": {\"refresh\": {\"config_keys\": [\"rope_scaling.rope_type\"], "
                                  "\"stale_when\": [\"dynamic\"]}}},\n")),
            "");
  error = load_error(valid_rule("    \"apply\": {\"decorators\": {\"refresh\": {\"config_keys\": [\"rope_type\"]}}},\n"));
  EXPECT_NE(error.find("apply 'decorators' 'refresh': missing 'stale_when'"), std::string::npos) << error;
  error = load_error(valid_rule("    \"apply\": {\"decorators\": {\"refresh\": {\"config_keys\": [], \"stale_when\": [\"x\"]}}},\n"));
  EXPECT_NE(error.find("apply 'decorators' 'refresh': 'config_keys' and 'stale_when' each need an entry"), std::string::npos)
      << error;
}

TEST(StrictLoading, ModuleMustBeListed) {
  std::string text = valid_rule();
  text.replace(text.find("\"other\""), 7, "\"adder\"");
  std::string error = load_error(text);
  EXPECT_EQ(error.rfind("rules/demo/add.py:20:15: module 'adder' is not one of attention, kv_cache", 0), 0u) << error;
}

TEST(StrictLoading, SafetyMustBeKnown) {
  std::string text = valid_rule();
  text.replace(text.find("\"safe\""), 6, "\"unsafe\"");
  EXPECT_EQ(load_error(text),
            "rules/demo/add.py:23:15: safety 'unsafe' is not one of safe, needs_prerequisites, display_only");
}

TEST(StrictLoading, PrerequisiteNeedsIdEnZh) {
  std::string text = valid_rule();
  text.replace(text.find("\"prerequisites\": []"), 19, "\"prerequisites\": [{\"id\": \"x\", \"en\": \"do x\"}]");
  EXPECT_EQ(load_error(text), "rules/demo/add.py:24:23: prerequisite: missing 'zh'");
}

TEST(StrictLoading, NamesAndCallsAreNotLiterals) {
  std::string text = valid_rule();
  text.replace(text.find("\"sizes\": {}"), 11, "\"sizes\": {\"H\": 2 * 32}");
  std::string error = load_error(text);
  EXPECT_EQ(error.rfind("rules/demo/add.py:28:20: RULE must be a plain literal; found BinOp", 0), 0u) << error;
}

TEST(StrictLoading, ReplaceMustTakeTheSearchParameters) {
  std::string text = valid_rule() + "\n\ndef search_swapped(b, a):\n    return b + a\n";
  EXPECT_EQ(load_error(text), "rules/demo/add.py:55:1: search_swapped(b, a) and replace(a, b) must take the same parameters");
}

TEST(StrictLoading, MissingReplaceIsAnError) {
  std::string text = valid_rule();
  text.replace(text.find("def replace"), 11, "def replaced");
  EXPECT_EQ(load_error(text), "rules/demo/add.py:1:1: no `replace` function: a rule needs its fused replacement");
}

TEST(StrictLoading, MissingDocSectionIsNamed) {
  std::string text = valid_rule();
  text.erase(text.find("Fix safety\n    Safe.\n"), 21);
  EXPECT_EQ(load_error(text), "rules/demo/add.py:11:1: the module docstring: missing section 'Fix safety' before 'References'");
}

TEST(StrictLoading, UnknownHeadingInChineseDocIsNamed) {
  std::string text = valid_rule();
  text.replace(text.find("原因\n"), 6, "理由\n");
  // One message: the missing '原因' that follows from it is not reported again.
  EXPECT_EQ(load_error(text), "rules/demo/add.py:33:1: RULE['doc_zh']: '理由' is not a section heading "
                              "(功能, 原因, 示例, 替代写法, 修复安全性, 参考); indent body text");
}

TEST(StrictLoading, NearMissFileMustExistAndEveryNomatchFixtureBeListed) {
  std::string text = valid_rule("    \"near_misses\": [{\"file\": \"fixtures/add_nomatch_sub.py\", \"reason\": \"minus\"}],\n");
  EXPECT_EQ(load_error(text), "rules/demo/add.py:29:20: near miss 'fixtures/add_nomatch_sub.py' does not exist in demo/");
  std::string unlisted = load_error({{"demo/add.py", valid_rule()}, {"demo/fixtures/add_nomatch_mul.py", "x = 1\n"}});
  EXPECT_EQ(unlisted.rfind("rules/demo/add.py:17:8: fixture 'fixtures/add_nomatch_mul.py' is a near miss", 0), 0u) << unlisted;
}

TEST(StrictLoading, SyntaxErrorsKeepTheirPosition) {
  EXPECT_EQ(load_error("RULE = {\n"), "rules/demo/add.py:1:8: '{' was never closed");
}

TEST(StrictLoading, AllErrorsOfAllFilesAreReportedTogether) {
  std::string bad_title = valid_rule();
  bad_title.replace(bad_title.find("\"title\": \"add\""), 14, "\"title\": 3");
  std::string bad_safety = valid_rule();
  bad_safety.replace(bad_safety.find("\"safe\""), 6, "\"unsafe\"");
  std::string error = load_error({{"demo/add.py", bad_title}, {"other/add.py", bad_safety}});
  EXPECT_NE(error.find("rules/demo/add.py:19:14:"), std::string::npos) << error;
  EXPECT_NE(error.find("rules/other/add.py:18:11: id 'demo.add' must be 'other.add'"), std::string::npos) << error;
  EXPECT_NE(error.find("rules/other/add.py:23:15: safety"), std::string::npos) << error;
}

}  // namespace
}  // namespace npufuse::rules

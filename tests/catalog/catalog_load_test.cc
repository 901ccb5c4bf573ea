// Loading the catalog: the embedded copy, the test fixture, and the errors a
// broken file must produce (file:line:col, one line per problem).
#include "catalog/catalog.h"

#include <gtest/gtest.h>

#include "util/file_io.h"

namespace npufuse::catalog {
namespace {

const char* kFacts = R"(
[facts.chip]
type = "str"
values = ["A2", "A3", "inference"]
source = "--chip"
meaning = "Target product."

[facts.head_dim]
type = "int"
source = "config"
meaning = "Head dim."
)";

const char* kGoodOp = R"(name = "npu_demo"
family = "norm"
status = "beta"
summary.en = "Demo."
summary.zh = "示例。"
products = ["A2"]

[[params]]
name = "x"
type = "Tensor"

[[params]]
name = "eps"
type = "float"
default = "1e-06"
kw_only = true

[[constraints]]
id = "head_dim_small"
when = "chip == 'A2'"
require = "head_dim <= 512"
severity = "error"
message.en = "Too big."
doc = "torch_npu/demo.md#Constraints"
)";

std::vector<std::string> load_errors(const std::string& path, const std::string& text) {
  try {
    Catalog::load({{"facts.toml", kFacts}, {path, text}}, "cat");
  } catch (const CatalogError& e) {
    return e.errors();
  }
  return {};
}

std::string first_error(const std::string& text, const std::string& path = "norm/npu_demo.toml") {
  auto errors = load_errors(path, text);
  return errors.empty() ? "" : errors.front();
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(CatalogLoadTest, GoodEntryLoads) {
  Catalog c = Catalog::load({{"facts.toml", kFacts}, {"norm/npu_demo.toml", kGoodOp}}, "cat");
  const Operator* op = c.find("npu_demo");
  ASSERT_NE(op, nullptr);
  ASSERT_EQ(op->params.size(), 2u);
  EXPECT_TRUE(op->params[1].kw_only);
  EXPECT_EQ(op->params[1].default_value.value_or(""), "1e-06");
  ASSERT_EQ(op->constraints.size(), 1u);
  EXPECT_EQ(op->constraints[0].origin, "cat/norm/npu_demo.toml:18:1");
  EXPECT_TRUE(op->constraints[0].when);
}

TEST(CatalogLoadTest, SyntaxErrorNamesFileAndLine) {
  EXPECT_EQ(first_error(replace(kGoodOp, "status = \"beta\"", "status = beta\"")).substr(0, 26),
            "cat/norm/npu_demo.toml:3:1");
}

TEST(CatalogLoadTest, UnknownKeyAndWrongTypeNamePosition) {
  EXPECT_EQ(first_error(replace(kGoodOp, "status = \"beta\"", "status = \"beta\"\nstatsu = 1")),
            "cat/norm/npu_demo.toml:4:1: unknown key 'statsu' in the operator");
  EXPECT_EQ(first_error(replace(kGoodOp, "kw_only = true", "kw_only = \"yes\"")),
            "cat/norm/npu_demo.toml:16:11: 'kw_only' in [[params]] #2 must be true or false");
  EXPECT_EQ(first_error(replace(kGoodOp, "type = \"Tensor\"\n", "type = \"Tensor\"\nkwonly = true\n")),
            "cat/norm/npu_demo.toml:11:1: unknown key 'kwonly' in [[params]] #1");
}

TEST(CatalogLoadTest, MissingRequiredKey) {
  EXPECT_EQ(first_error(replace(kGoodOp, "summary.zh = \"示例。\"\n", "")),
            "cat/norm/npu_demo.toml:4:1: 'summary' of the operator lacks the required key 'zh' (a string)");
}

TEST(CatalogLoadTest, ExpressionErrorsAndUnknownFacts) {
  std::string bad_expr = first_error(replace(kGoodOp, "head_dim <= 512", "head_dim <= "));
  EXPECT_NE(bad_expr.find("cat/norm/npu_demo.toml:21:1: bad expression in 'require' (column 13"), std::string::npos)
      << bad_expr;
  EXPECT_EQ(first_error(replace(kGoodOp, "head_dim <= 512", "head_dims <= 512")),
            "cat/norm/npu_demo.toml:18:1: constraint 'head_dim_small' uses 'head_dims', which is not a fact in "
            "facts.toml");
  EXPECT_EQ(first_error(replace(kGoodOp, "chip == 'A2'", "chip == 'A5'")),
            "cat/norm/npu_demo.toml:18:1: constraint 'head_dim_small': 'A5' is not a value of fact 'chip' ('A2', 'A3', "
            "'inference')");
}

TEST(CatalogLoadTest, TypeErrorsAreFoundAtLoad) {
  EXPECT_EQ(first_error(replace(kGoodOp, "head_dim <= 512", "head_dim + chip > 0")),
            "cat/norm/npu_demo.toml:18:1: constraint 'head_dim_small': `head_dim + chip > 0` cannot be evaluated with "
            "facts of their declared types: column 1: unsupported operand types for +: 'int' and 'str'");
  EXPECT_EQ(first_error(replace(kGoodOp, "head_dim <= 512", "head_dim // (head_dim - 64) == 1")), "");
}

TEST(CatalogLoadTest, NameFamilyProductStatus) {
  EXPECT_EQ(first_error(kGoodOp, "norm/npu_other.toml"),
            "cat/norm/npu_other.toml:1:1: name \"npu_demo\" differs from the file name \"npu_other.toml\"");
  EXPECT_EQ(first_error(kGoodOp, "rope/npu_demo.toml"),
            "cat/rope/npu_demo.toml:1:1: family \"norm\" differs from the folder \"rope\"");
  EXPECT_NE(first_error(replace(kGoodOp, "[\"A2\"]", "[\"A9\"]")).find("unknown product \"A9\""), std::string::npos);
  EXPECT_NE(first_error(replace(kGoodOp, "\"beta\"", "\"alpha\"")).find("unknown status \"alpha\""),
            std::string::npos);
}

TEST(CatalogLoadTest, DuplicateNamesAndRelatedWarnings) {
  auto errors = [&] {
    try {
      Catalog::load({{"facts.toml", kFacts}, {"norm/npu_demo.toml", kGoodOp}, {"norm/npu_demo.toml", kGoodOp}}, "c");
    } catch (const CatalogError& e) {
      return e.errors();
    }
    return std::vector<std::string>{};
  }();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "c/norm/npu_demo.toml:1:1: operator 'npu_demo' is already defined in c/norm/npu_demo.toml");

  Catalog c = Catalog::load({{"facts.toml", kFacts}, {"norm/npu_demo.toml", std::string(kGoodOp) + "related = [\"npu_gone\"]\n"}}, "c");
  ASSERT_EQ(c.warnings().size(), 1u);
  EXPECT_EQ(c.warnings()[0], "c/norm/npu_demo.toml: related operator 'npu_gone' is not in the catalog");
}

// Keys written after a [[...]] header land in that table under TOML's rules;
// operator-level ones are taken back to the operator.
TEST(CatalogLoadTest, OperatorKeysAfterArrayTablesBelongToTheOperator) {
  Catalog c = Catalog::load(
      {{"facts.toml", kFacts},
       {"norm/npu_demo.toml", std::string(kGoodOp) + "dtypes = [\"float16\"]\nversions.cann = \"8.0\"\nrelated = []\n"}},
      "c");
  const Operator* op = c.find("npu_demo");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->dtypes, std::vector<std::string>{"float16"});
  EXPECT_EQ(op->versions_cann, "8.0");
  EXPECT_EQ(first_error(std::string("dtypes = []\n") + kGoodOp + "dtypes = [\"float16\"]\n"),
            "cat/norm/npu_demo.toml:26:10: 'dtypes' is given twice: at the top and inside a [[constraints]] table");
}

TEST(CatalogLoadTest, EveryErrorIsReportedNotJustTheFirst) {
  std::string text = replace(replace(kGoodOp, "status = \"beta\"", "status = 3"), "kw_only = true", "kw_only = 1");
  EXPECT_EQ(load_errors("norm/npu_demo.toml", text).size(), 2u);
}

// `same_kernels` in [facts.chip]: read as a map; every name must be one of
// the chip's values, and the table belongs to the chip alone.
TEST(CatalogLoadTest, SameKernelsIsReadAndChecked) {
  std::string facts = replace(kFacts, "meaning = \"Target product.\"\n", "meaning = \"Target product.\"\nsame_kernels = { A3 = [\"A2\"] }\n");
  Catalog c = Catalog::load({{"facts.toml", facts}, {"norm/npu_demo.toml", kGoodOp}}, "cat");
  const FactInfo* chip = c.facts().find("chip");
  ASSERT_NE(chip, nullptr);
  ASSERT_EQ(chip->same_kernels.count("A3"), 1u);
  EXPECT_EQ(chip->same_kernels.at("A3"), std::vector<std::string>{"A2"});

  auto errors_of = [&](const std::string& from, const std::string& to) {
    try {
      Catalog::load({{"facts.toml", replace(facts, from, to)}, {"norm/npu_demo.toml", kGoodOp}}, "cat");
    } catch (const CatalogError& e) {
      return e.errors();
    }
    return std::vector<std::string>{};
  };
  auto unknown = errors_of("A3 = [\"A2\"]", "A3 = [\"A9\"]");
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_NE(unknown[0].find("facts.toml:7:"), std::string::npos) << unknown[0];
  EXPECT_NE(unknown[0].find("must list other products among its values"), std::string::npos) << unknown[0];
  auto itself = errors_of("A3 = [\"A2\"]", "A3 = [\"A3\"]");
  ASSERT_EQ(itself.size(), 1u);
  auto not_product = errors_of("A3 = [\"A2\"]", "B7 = [\"A2\"]");
  ASSERT_EQ(not_product.size(), 1u);
  EXPECT_NE(not_product[0].find("none of [facts.chip] values"), std::string::npos) << not_product[0];
  auto elsewhere = errors_of("meaning = \"Head dim.\"", "meaning = \"Head dim.\"\nsame_kernels = { A3 = [] }");
  ASSERT_FALSE(elsewhere.empty());
  EXPECT_NE(elsewhere[0].find("belongs to [facts.chip]"), std::string::npos) << elsewhere[0];
}

// The catalog shipped in the binary loads without errors and covers the
// operator families of docs/catalog-format.md.
TEST(EmbeddedCatalogTest, LoadsCleanly) {
  Catalog c = Catalog::load(embedded_catalog_files(), "catalog");
  EXPECT_GE(c.operators().size(), 1u);
  for (const auto& w : c.warnings()) std::printf("warning: %s\n", w.c_str());
  std::printf("%zu catalog entries loaded\n", c.operators().size());
  for (const auto& op : c.operators()) {
    EXPECT_FALSE(op.summary.en.empty()) << op.name;
    for (const auto& con : op.constraints)
      EXPECT_NE(con.doc.find('#'), std::string::npos) << op.name << ": constraint " << con.id
                                                      << " needs a doc reference file#section";
  }
}

TEST(FixtureCatalogTest, LoadsFromDirectory) {
  Catalog c = Catalog::load(directory_catalog_files(NPUFUSE_SOURCE_DIR "/tests/data/ops/catalog"),
                            "tests/data/ops/catalog");
  EXPECT_GE(c.operators().size(), 3u);
  EXPECT_THROW(directory_catalog_files(NPUFUSE_SOURCE_DIR "/no/such/dir"), FileError);
}

}  // namespace
}  // namespace npufuse::catalog

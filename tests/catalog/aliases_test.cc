// catalog/aliases.toml: names that are not torch_npu operators. The loader
// checks that each points at a catalog operator; `npufuse ops show` refuses
// them with a notice naming the counterpart, `ops search` tags them.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "catalog/catalog.h"

namespace npufuse::catalog {
namespace {

namespace fs = std::filesystem;

const char* kFacts = R"(
[facts.chip]
type = "str"
values = ["A2"]
source = "--chip"
meaning = "Target product."
)";

const char* kOp = R"(name = "npu_demo"
family = "norm"
status = "beta"
summary.en = "Demo."
summary.zh = "示例。"
products = ["A2"]
)";

std::string alias_file(const std::string& use, const std::string& kind = "custom_op") {
  return "# aliases\n\n[[alias]]\nname = \"npu_demo_custom\"\nkind = \"" + kind + "\"\nuse = \"" + use +
         "\"\nnote.en = \"Port-only op.\"\nnote.zh = \"移植代码专用算子。\"\n";
}

std::vector<std::string> load_errors(const std::vector<CatalogFile>& files) {
  try {
    Catalog::load(files, "cat");
  } catch (const CatalogError& e) {
    return e.errors();
  }
  return {};
}

TEST(CatalogAliasTest, AliasLoadsAndPointsAtAnOperator) {
  Catalog c = Catalog::load({{"facts.toml", kFacts}, {"norm/npu_demo.toml", kOp}, {"aliases.toml", alias_file("npu_demo")}},
                            "cat");
  ASSERT_EQ(c.aliases().size(), 1u);
  const Alias* a = c.find_alias("npu_demo_custom");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->kind, "custom_op");
  EXPECT_EQ(a->use, "npu_demo");
  EXPECT_EQ(a->note.zh, "移植代码专用算子。");
  EXPECT_EQ(c.find("npu_demo_custom"), nullptr);  // not an operator
  EXPECT_EQ(c.operators().size(), 1u);
}

TEST(CatalogAliasTest, AliasesFileIsOptional) {
  Catalog c = Catalog::load({{"facts.toml", kFacts}, {"norm/npu_demo.toml", kOp}}, "cat");
  EXPECT_TRUE(c.aliases().empty());
}

TEST(CatalogAliasTest, UseThatIsNotAnOperatorIsAnErrorAtItsLine) {
  auto errors = load_errors({{"facts.toml", kFacts}, {"norm/npu_demo.toml", kOp}, {"aliases.toml", alias_file("npu_nope")}});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rfind("cat/aliases.toml:6:7: ", 0), 0u) << errors[0];  // the `use` value
  EXPECT_NE(errors[0].find("'npu_nope'"), std::string::npos) << errors[0];
}

TEST(CatalogAliasTest, UnknownKindAndUnknownKeyAreErrors) {
  std::string text = alias_file("npu_demo", "nickname") + "colour = \"red\"\n";
  auto errors = load_errors({{"facts.toml", kFacts}, {"norm/npu_demo.toml", kOp}, {"aliases.toml", text}});
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("cat/aliases.toml:5:"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("nickname"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("cat/aliases.toml:9:1: unknown key 'colour'"), std::string::npos) << errors[1];
}

TEST(CatalogAliasTest, AliasMayNotShadowAnOperator) {
  std::string text = "[[alias]]\nname = \"npu_demo\"\nkind = \"renamed\"\nuse = \"npu_demo\"\nnote.en = \"x\"\nnote.zh = \"x\"\n";
  auto errors = load_errors({{"facts.toml", kFacts}, {"norm/npu_demo.toml", kOp}, {"aliases.toml", text}});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("cat/aliases.toml:1:1: alias 'npu_demo' is also a catalog operator"), std::string::npos)
      << errors[0];
}

TEST(CatalogAliasTest, BuiltInAliasesPointAtBuiltInOperators) {
  Catalog c = Catalog::load(embedded_catalog_files(), "catalog");
  ASSERT_FALSE(c.aliases().empty());
  for (const Alias& a : c.aliases()) EXPECT_NE(c.find(a.use), nullptr) << a.name << " -> " << a.use;
  const Alias* li = c.find_alias("npu_lightning_indexer_quant");
  ASSERT_NE(li, nullptr);
  EXPECT_EQ(li->use, "npu_quant_lightning_indexer");
}

struct Result {
  std::string out;
  int status;
};

Result run(const std::string& args) {
  std::string command = std::string("cd '") + NPUFUSE_SOURCE_DIR + "' && NPUFUSE_PYTHON=/bin/false '" +
                        NPUFUSE_BINARY + "' " + args + " 2>&1";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  Result r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(OpsAliasCliTest, ShowOnAnAliasExitsOneNamingTheCounterpart) {
  Result r = run("ops show npu_lightning_indexer_quant");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("'npu_lightning_indexer_quant' is not a torch_npu operator: a custom op of the "
                       "cann-recipes-infer ports; the official counterpart is npu_quant_lightning_indexer"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("Signature:"), std::string::npos) << r.out;
}

TEST(OpsAliasCliTest, SearchTagsAliases) {
  Result r = run("ops search lightning_indexer --max 50");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("npu_lightning_indexer_quant  [alias; use npu_quant_lightning_indexer;"), std::string::npos)
      << r.out;
  Result list = run("ops list --prefix npu_lightning");
  EXPECT_EQ(list.out.find("npu_lightning_indexer_quant"), std::string::npos) << list.out;  // not an operator
}

TEST(OpsAliasCliTest, CatalogDirectoryWithABrokenAliasDoesNotLoad) {
  fs::path dir = fs::temp_directory_path() / "npufuse_alias_cli_test";
  fs::remove_all(dir);
  fs::create_directories(dir / "norm");
  std::ofstream(dir / "facts.toml") << kFacts;
  std::ofstream(dir / "norm" / "npu_demo.toml") << kOp;
  std::ofstream(dir / "aliases.toml") << alias_file("npu_missing");
  Result r = run("ops --catalog '" + dir.string() + "' show npu_demo");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find((dir / "aliases.toml").string() + ":6:7: alias 'npu_demo_custom' uses 'npu_missing'"),
            std::string::npos)
      << r.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace npufuse::catalog

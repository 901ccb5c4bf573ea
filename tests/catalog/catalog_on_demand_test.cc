// Catalog::load_on_demand reads an operator file when find() first asks for
// it; what it returns is what the eager, validated load returns.
#include <gtest/gtest.h>

#include "catalog/catalog.h"

namespace npufuse::catalog {
namespace {

TEST(CatalogOnDemand, FindsTheSameOperatorsAsTheFullLoad) {
  Catalog eager = Catalog::load(embedded_catalog_files(), "catalog");
  Catalog lazy = Catalog::load_on_demand(embedded_catalog_files(), "catalog");
  const Operator* rms = lazy.find("npu_rms_norm");
  ASSERT_NE(rms, nullptr);
  EXPECT_EQ(rms->path, eager.find("npu_rms_norm")->path);
  EXPECT_EQ(rms->constraints.size(), eager.find("npu_rms_norm")->constraints.size());
  EXPECT_EQ(lazy.find("npu_rms_norm"), rms);  // read once, then kept
  EXPECT_EQ(lazy.find("npu_no_such_operator"), nullptr);
  EXPECT_EQ(lazy.facts().find("head_dim") != nullptr, eager.facts().find("head_dim") != nullptr);
  EXPECT_EQ(lazy.aliases().size(), eager.aliases().size());

  // Asking for all of them reads the rest; the pointer handed out earlier stays valid.
  ASSERT_EQ(lazy.operators().size(), eager.operators().size());
  for (size_t i = 0; i < eager.operators().size(); ++i)
    EXPECT_EQ(lazy.operators()[i].name, eager.operators()[i].name);
  EXPECT_EQ(rms->name, "npu_rms_norm");
}

TEST(CatalogOnDemand, ABrokenOperatorFileFailsWhenItIsAskedFor) {
  std::vector<CatalogFile> files = embedded_catalog_files();
  for (CatalogFile& f : files)
    if (f.path.ends_with("/npu_rms_norm.toml")) f.text = "name = \"npu_rms_norm\"\nstatus = [unclosed\n";
  Catalog lazy = Catalog::load_on_demand(files, "catalog");
  EXPECT_NE(lazy.find("npu_swiglu"), nullptr);
  try {
    lazy.find("npu_rms_norm");
    FAIL() << "no error";
  } catch (const CatalogError& e) {
    EXPECT_NE(std::string(e.what()).find("npu_rms_norm.toml"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace npufuse::catalog

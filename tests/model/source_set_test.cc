// A model directory: files found through relative imports, and an HF-style
// configuration class whose defaults and computed fields fill what
// config.json leaves out.
#include "model/source_set.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/inventory.h"

namespace npufuse::model {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

class ModelDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / "npufuse_model_dir";
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write(dir_ / "configuration_tiny.py",
          "class TinyConfig(PretrainedConfig):\n"
          "    def __init__(self, hidden_size=64, nope_dim=16, rope_dim=8, **kwargs):\n"
          "        self.hidden_size = hidden_size\n"
          "        self.nope_dim = nope_dim\n"
          "        self.rope_dim = rope_dim\n"
          "        self.qk_dim = nope_dim + rope_dim\n");
    write(dir_ / "modeling_tiny.py",
          "from torch import nn\n"
          "from ...utils import something\n"
          "from .configuration_tiny import TinyConfig\n"
          "class TinyAttention(nn.Module):\n"
          "    def __init__(self, config: TinyConfig):\n"
          "        super().__init__()\n"
          "        self.q_proj = nn.Linear(config.hidden_size, 4 * config.qk_dim)\n");
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
};

TEST_F(ModelDirectoryTest, RelativeImportsPullInSiblingFiles) {
  SourceSet sources = SourceSet::load({(dir_ / "modeling_tiny.py").string()});
  ASSERT_EQ(sources.files().size(), 2u);
  EXPECT_NE(sources.find_class("TinyConfig"), nullptr);
}

TEST_F(ModelDirectoryTest, ComputedConfigFieldsAndDefaultsResolve) {
  SourceSet sources = SourceSet::load({(dir_ / "modeling_tiny.py").string()});
  // config.json gives only hidden_size and nope_dim: rope_dim comes from the
  // class default and qk_dim from the class's own formula.
  ModelConfig config = ModelConfig::from_json({{"hidden_size", 128}, {"nope_dim", 32}}, "config.json");
  Inventory inv = build_inventory(sources, config);
  const ClassSummary* attn = nullptr;
  for (const ClassSummary& c : inv.classes)
    if (c.cls->node->name == "TinyAttention") attn = &c;
  ASSERT_NE(attn, nullptr);
  ASSERT_EQ(attn->attributes.size(), 1u);
  const Attribute& q = attn->attributes[0];
  ASSERT_EQ(q.sizes.size(), 2u);
  EXPECT_EQ(q.sizes[0].value.integer(), 128);
  EXPECT_EQ(q.sizes[1].value.integer(), 4 * (32 + 8));
  EXPECT_EQ(q.sizes[1].value.text, "4 * qk_dim");
}

}  // namespace
}  // namespace npufuse::model

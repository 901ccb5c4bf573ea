// The merged operator index: ranking, near names, and the torch_npu version
// read next to a docstring file.
#include "catalog/ops/ops_index.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "catalog/torch_npu_discovery.h"

namespace npufuse::catalog {
namespace {

class OpsIndexTest : public ::testing::Test {
 protected:
  OpsIndexTest()
      : catalog_(Catalog::load(directory_catalog_files(NPUFUSE_SOURCE_DIR "/tests/data/ops/catalog"), "fixture")),
        docs_(read_docstring_file(NPUFUSE_SOURCE_DIR "/tests/data/ops/_op_plugin_docs.py")),
        index_(&catalog_, &docs_) {}

  std::string ranked(const std::string& keyword) {
    std::string out;
    for (const auto& hit : index_.search(keyword))
      out += hit.entry->name + ":" + match_tier_name(hit.tier) + " ";
    return out;
  }

  Catalog catalog_;
  DocstringFile docs_;
  OpsIndex index_;
};

TEST_F(OpsIndexTest, MergesCatalogAndDocstrings) {
  ASSERT_EQ(index_.entries().size(), 5u);
  const OpsEntry* gelu = index_.find("npu_fast_gelu");
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(gelu->op, nullptr);
  EXPECT_NE(gelu->docstring, nullptr);
  const OpsEntry* norm = index_.find("npu_rms_norm");
  ASSERT_NE(norm, nullptr);
  EXPECT_NE(norm->op, nullptr);
  EXPECT_NE(norm->docstring, nullptr);
  EXPECT_EQ(index_.find("npu_broken"), nullptr);  // the malformed call was skipped
}

TEST_F(OpsIndexTest, RanksNameBeforeSummaryBeforeKeywordBeforeText) {
  EXPECT_EQ(ranked("npu_rotary_mul"), "npu_rotary_mul:name ");
  EXPECT_EQ(ranked("NPU_RO"), "npu_rotary_mul:name_prefix ");
  EXPECT_EQ(ranked("rotary"), "npu_apply_rotary_pos_emb:name_substring npu_rotary_mul:name_substring ");
  EXPECT_EQ(ranked("RoPE"), "npu_apply_rotary_pos_emb:summary npu_rotary_mul:keyword ");  // keywords.en of rotary_mul
  EXPECT_EQ(ranked("gamma"), "npu_rms_norm:summary ");
  EXPECT_EQ(ranked("in place"), "npu_apply_rotary_pos_emb:summary ");
  EXPECT_EQ(ranked("32 bytes"), "npu_rms_norm:text ");  // a constraint message
  EXPECT_EQ(ranked("SwiGLU激活"), "npu_swiglu:text ");  // the installed docstring
  EXPECT_EQ(ranked("nothing like this"), "");
}

TEST_F(OpsIndexTest, NearNames) {
  EXPECT_EQ(index_.similar_names("npu_rotary_mull", 3), std::vector<std::string>{"npu_rotary_mul"});
  EXPECT_EQ(index_.similar_names("npu_swiglo", 3), std::vector<std::string>{"npu_swiglu"});
  EXPECT_EQ(index_.similar_names("rms_norm", 3), std::vector<std::string>{"npu_rms_norm"});
  EXPECT_TRUE(index_.similar_names("completely_different", 3).empty());
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(TorchNpuVersionTest, FromVersionPyOrDistInfo) {
  namespace fs = std::filesystem;
  fs::path site = fs::temp_directory_path() / "npufuse_version_test";
  fs::remove_all(site);
  fs::create_directories(site / "torch_npu");
  fs::create_directories(site / "torch_npu-2.6.0.post1.dist-info");
  std::string docs = (site / "torch_npu" / "_op_plugin_docs.py").string();
  std::ofstream(docs) << "\n";
  std::ofstream(site / "torch_npu-2.6.0.post1.dist-info" / "METADATA")
      << "Metadata-Version: 2.1\nName: torch-npu\nVersion: 2.6.0.post1\n\nVersion: not this one\n";
  EXPECT_EQ(torch_npu_version_near(docs), "2.6.0.post1");
  std::ofstream(site / "torch_npu" / "version.py") << "__version__ = \"2.6.0rc1\"\n";
  EXPECT_EQ(torch_npu_version_near(docs), "2.6.0rc1");  // version.py wins
  fs::remove_all(site);
  EXPECT_EQ(torch_npu_version_near("/nonexistent/torch_npu/_op_plugin_docs.py"), "");
}

}  // namespace
}  // namespace npufuse::catalog

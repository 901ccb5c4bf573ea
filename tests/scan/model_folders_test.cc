#include "scan/model_folders.h"

#include <gtest/gtest.h>

#include "scan_test_support.h"

namespace npufuse::scan {
namespace {

using testing::ScratchDir;
using testing::write_text;

std::vector<std::string> names(const std::vector<ModelFolder>& folders) {
  std::vector<std::string> out;
  for (const auto& f : folders) out.push_back(f.name);
  return out;
}

TEST(ModelFileName, ModelPyAndPytorchModelingFilesOnly) {
  EXPECT_TRUE(is_model_file_name("model.py"));
  EXPECT_TRUE(is_model_file_name("modeling_llama.py"));
  EXPECT_FALSE(is_model_file_name("modeling_tf_llama.py"));
  EXPECT_FALSE(is_model_file_name("modeling_flax_llama.py"));
  EXPECT_FALSE(is_model_file_name("configuration_llama.py"));
  EXPECT_FALSE(is_model_file_name("modeling_llama.pyc"));
  EXPECT_FALSE(is_model_file_name("my_model.py"));
}

TEST(FindModelFolders, FindsFoldersWithModelFilesAtAnyDepth) {
  ScratchDir root("discover");
  write_text(root.file("a/model.py"), "x = 1\n");
  write_text(root.file("a/inner/model.py"), "x = 1\n");  // below a model folder: a model of its own
  write_text(root.file("b/modeling_b.py"), "x = 1\n");
  write_text(root.file("b/modeling_tf_b.py"), "x = 1\n");
  write_text(root.file("b/configuration_b.py"), "x = 1\n");
  write_text(root.file("b/config.json"), "{}\n");
  write_text(root.file("org/c/model.py"), "x = 1\n");
  write_text(root.file("tf_only/modeling_tf_d.py"), "x = 1\n");
  write_text(root.file("docs/readme.py"), "x = 1\n");
  write_text(root.file(".hidden/model.py"), "x = 1\n");
  write_text(root.file("__pycache__/model.py"), "x = 1\n");
  write_text(root.file("out/old/model.py"), "x = 1\n");

  auto found = find_model_folders(root.str(), {root.file("out")});
  EXPECT_EQ(names(found), (std::vector<std::string>{"a", "a/inner", "b", "org/c"}));

  const ModelFolder& b = found[2];
  ASSERT_EQ(b.model_files.size(), 1u);
  EXPECT_EQ(std::filesystem::path(b.model_files[0]).filename(), "modeling_b.py");
  EXPECT_EQ(b.python_files.size(), 3u);  // the cache key covers the siblings the model may import
  EXPECT_EQ(std::filesystem::path(b.config).filename(), "config.json");
  EXPECT_TRUE(found[0].config.empty());
}

TEST(FindModelFolders, SymlinkedDirectoriesAreNotFollowed) {
  ScratchDir root("links");
  write_text(root.file("a/model.py"), "x = 1\n");
  std::filesystem::create_directory_symlink(root.str(), root.file("a/loop"));
  EXPECT_EQ(names(find_model_folders(root.str())), (std::vector<std::string>{"a"}));
}

TEST(FindModelFolders, RootThatIsNotADirectoryIsAnError) {
  ScratchDir root("notdir");
  write_text(root.file("model.py"), "x = 1\n");
  EXPECT_THROW(find_model_folders(root.file("model.py")), FileError);
}

TEST(IsTree, OnlyADirectoryOfModelFoldersIsATree) {
  ScratchDir root("istree");
  write_text(root.file("a/model.py"), "x = 1\n");
  write_text(root.file("b/modeling_b.py"), "x = 1\n");
  write_text(root.file("plain/helpers.py"), "x = 1\n");
  EXPECT_TRUE(is_tree({root.str()}));
  EXPECT_FALSE(is_tree({root.file("a")}));            // one model folder: one model
  EXPECT_FALSE(is_tree({root.file("a/model.py")}));   // a file: one model
  EXPECT_FALSE(is_tree({root.file("plain")}));        // Python files but no model folder
  EXPECT_FALSE(is_tree({root.file("a"), root.file("b")}));  // several paths: one model, as before
}

}  // namespace
}  // namespace npufuse::scan

#include <gtest/gtest.h>

#include "apply/torch_npu_import.h"

namespace npufuse::apply {
namespace {

std::string with_import(const std::string& text) {
  model::SourceSet set = model::SourceSet::from_texts({{"m.py", text}});
  std::optional<Edit> e = torch_npu_import(*set.files().front());
  return e ? apply_edits(text, {*e}) : text;
}

TEST(TorchNpuImport, GoesAfterTheLeadingImportBlock) {
  EXPECT_EQ(with_import("\"\"\"doc\"\"\"\nimport math\nfrom torch import nn  # layers\n\nX = 1\nimport os\n"),
            "\"\"\"doc\"\"\"\nimport math\nfrom torch import nn  # layers\nimport torch_npu\n\nX = 1\nimport os\n");
}

TEST(TorchNpuImport, AfterTheDocstringOrAtTheTopWithoutImports) {
  EXPECT_EQ(with_import("\"\"\"doc\"\"\"\nX = 1\n"), "\"\"\"doc\"\"\"\nimport torch_npu\nX = 1\n");
  EXPECT_EQ(with_import("X = 1\n"), "import torch_npu\nX = 1\n");
  EXPECT_EQ(with_import("import torch"), "import torch\nimport torch_npu\n");
}

TEST(TorchNpuImport, NothingWhenAlreadyImported) {
  std::string text = "import torch\nimport torch_npu\n\nX = 1\n";
  EXPECT_EQ(with_import(text), text);
}

TEST(TorchNpuImport, MultiLineImportKeptWhole) {
  EXPECT_EQ(with_import("from typing import (\n    List,\n)\nX = 1\n"),
            "from typing import (\n    List,\n)\nimport torch_npu\nX = 1\n");
}

}  // namespace
}  // namespace npufuse::apply

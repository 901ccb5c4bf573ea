// Reading torch_npu's _op_plugin_docs.py as text.
#include "catalog/docstrings.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace npufuse::catalog {
namespace {

const char* kFixture = NPUFUSE_SOURCE_DIR "/tests/data/ops/_op_plugin_docs.py";

TEST(DocstringsTest, ReadsEntriesInFileOrderAndSkipsTheMalformedOne) {
  DocstringFile f = read_docstring_file(kFixture);
  std::vector<std::string> names;
  for (const auto& e : f.entries) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"npu_rms_norm", "npu_swiglu", "npu_rotary_mul", "npu_fast_gelu",
                                             "npu_apply_rotary_pos_emb"}));
  ASSERT_EQ(f.skipped.size(), 1u);
  EXPECT_EQ(f.skipped[0], std::string(kFixture) +
                              ":75: skipped a malformed _add_torch_npu_docstr call: expected 2 arguments (name, "
                              "docstring), found 1");
  EXPECT_EQ(f.entries[0].line, 18);
}

TEST(DocstringsTest, DecodesEscapesRawStringsAndConcatenation) {
  DocstringFile f = read_docstring_file(kFixture);
  const std::string& rope = f.find("npu_rotary_mul")->text;
  EXPECT_NE(rope.find("旋转位置编码"), std::string::npos);            // \u escapes decoded
  EXPECT_NE(rope.find("\tTab and \"double quotes\" and \"\"\"triple\"\"\" inside."), std::string::npos);
  EXPECT_NE(rope.find("A backslash: \\ and a continued line."), std::string::npos);  // backslash-newline joins
  const std::string& gelu = f.find("npu_fast_gelu")->text;
  EXPECT_NE(gelu.find("\\d and \\n stay"), std::string::npos);
  const std::string& apply = f.find("npu_apply_rotary_pos_emb")->text;
  EXPECT_NE(apply.find("Tensor sin, str layout='BSND') -> (Tensor, Tensor)\n原地"), std::string::npos);
}

TEST(DocstringsTest, PrototypesOfBothStyles) {
  DocstringFile f = read_docstring_file(kFixture);
  EXPECT_EQ(docstring_prototype(f.find("npu_rms_norm")->text, "npu_rms_norm"),
            "torch_npu.npu_rms_norm(Tensor self, Tensor gamma, float epsilon=1e-06) -> (Tensor, Tensor)");
  EXPECT_EQ(docstring_prototype(f.find("npu_swiglu")->text, "npu_swiglu"),
            "torch_npu.npu_swiglu(Tensor self, int dim=-2, *, bool approximate=False) -> Tensor");
  EXPECT_EQ(docstring_prototype(f.find("npu_rotary_mul")->text, "npu_rotary_mul"),
            "torch_npu.npu_rotary_mul(Tensor self, Tensor r1, Tensor r2, str rotary_mode='half') -> Tensor");
  EXPECT_EQ(docstring_prototype("功能描述\n没有原型。", "npu_x"), "");
  // Spellings seen in released files: another heading, `func:` and `custom.` prefixes, no prefix.
  EXPECT_EQ(docstring_prototype("函数原型\ncustom.npu_x(query, *, k=1) -> Tensor\n", "npu_x"),
            "torch_npu.npu_x(query, *, k=1) -> Tensor");
  EXPECT_EQ(docstring_prototype("接口原型：\nfunc: npu_x(Tensor a,\nTensor? b=None) -> Tensor\n", "npu_x"),
            "torch_npu.npu_x(Tensor a, Tensor? b=None) -> Tensor");
  EXPECT_EQ(docstring_prototype("\nnpu_x(Tensor a)\n-> Tensor\n", "npu_x"), "torch_npu.npu_x(Tensor a) -> Tensor");
}

class DocstringFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("npufuse_docstrings_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::string error_of(const std::string& path) {
    try {
      read_docstring_file(path);
    } catch (const DocstringError& e) {
      return e.what();
    }
    return "";
  }
  std::filesystem::path dir_;
};

TEST_F(DocstringFileTest, NotPythonNoEntriesOrMissingFileAreErrors) {
  std::string not_python = write("a.py", "def broken(:\n    '''unterminated\n");
  EXPECT_NE(error_of(not_python).find(not_python + ":"), std::string::npos) << error_of(not_python);
  EXPECT_NE(error_of(not_python).find("not a readable Python file"), std::string::npos);
  std::string binary = write("b.py", std::string("\x7f" "ELF\0\0", 6));
  EXPECT_NE(error_of(binary).find("not a Python file"), std::string::npos) << error_of(binary);
  std::string empty = write("c.py", "import torch\nx = 1\n");
  EXPECT_NE(error_of(empty).find("no _add_torch_npu_docstr"), std::string::npos) << error_of(empty);
  EXPECT_NE(error_of((dir_ / "missing.py").string()).find("cannot open"), std::string::npos);
}

TEST_F(DocstringFileTest, HugeFileIsRefusedBeforeReading) {
  std::string path = (dir_ / "huge.py").string();
  { std::ofstream(path, std::ios::binary).put('#'); }
  std::filesystem::resize_file(path, kMaxDocstringFileBytes + 1);
  EXPECT_NE(error_of(path).find("too large"), std::string::npos) << error_of(path);
}

TEST_F(DocstringFileTest, OtherMalformedCallsAreSkipped) {
  std::string path = write("d.py",
                           "_add_torch_npu_docstr('npu_a', '''A''')\n"
                           "_add_torch_npu_docstr('npu_b', doc_variable)\n"
                           "_add_torch_npu_docstr('npu_c', 'x', 'y')\n"
                           "_add_torch_npu_docstr('npu_d', f'{x}')\n"
                           "_add_torch_npu_docstr('npu_e', 'E',)\n");
  DocstringFile f = read_docstring_file(path);
  ASSERT_EQ(f.entries.size(), 2u);
  EXPECT_EQ(f.entries[1].name, "npu_e");
  ASSERT_EQ(f.skipped.size(), 3u);
  EXPECT_NE(f.skipped[0].find(":2: skipped"), std::string::npos);
  EXPECT_NE(f.skipped[0].find("argument 2 is not a plain string literal"), std::string::npos);
  EXPECT_NE(f.skipped[1].find("found 3"), std::string::npos);
}

// A file the size of a real torch_npu release (200 entries of about 30 KB):
// every entry loads with the right text. bench/ops measures the time.
TEST_F(DocstringFileTest, LargeRealisticFileLoadsCompletely) {
  std::string body;
  while (body.size() < 30000) body += "参数说明: x (Tensor) 输入张量，shape为[B, S, H]，dtype为float16。 \\n escaped\n";
  std::string text = "import torch_npu\n\n";
  for (int i = 0; i < 200; ++i)
    text += "_add_torch_npu_docstr(\"npu_op_" + std::to_string(i) + "\", \"\"\"\ntorch_npu.npu_op_" +
            std::to_string(i) + "(Tensor x) -> Tensor\n" + body + "\"\"\")\n\n";
  DocstringFile f = parse_docstring_file("big.py", text);
  ASSERT_EQ(f.entries.size(), 200u);
  EXPECT_EQ(f.entries[199].name, "npu_op_199");
  EXPECT_GT(f.entries[199].text.size(), 29000u);
  EXPECT_NE(f.entries[5].text.find("。 \n escaped"), std::string::npos);  // the source's \n is decoded
  EXPECT_EQ(f.entries[5].text.find('\\'), std::string::npos);
}

}  // namespace
}  // namespace npufuse::catalog

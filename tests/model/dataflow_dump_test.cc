// The text form of a dataflow graph (`inspect --dataflow`): slices, attribute
// reads and payload-carrying ops read as Python does.
#include <gtest/gtest.h>

#include "model/dataflow.h"

namespace npufuse::model {
namespace {

struct Dumped {
  std::unique_ptr<SourceSet> sources;
  std::string text;
};

Dumped dump_of(const std::string& body, const std::string& params = "x") {
  std::string source = "import torch\ndef f(" + params + "):\n" + body;
  Dumped d{std::make_unique<SourceSet>(SourceSet::from_texts({{"m.py", source}})), {}};
  const FunctionDecl* fn = d.sources->find_function("f");
  d.text = build_dataflow(*d.sources, *fn->file, *fn->node).dump();
  return d;
}

bool has_line_with(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(DataflowDump, SlicesUsePythonNotation) {
  Dumped d = dump_of(
      "    half = x.shape[-1] // 2\n"
      "    a = x[..., :half]\n"
      "    b = x[..., half:]\n"
      "    c = x[..., 1::2]\n"
      "    return a, b, c\n");
  // The bound is the value that holds it, never glued to the text.
  EXPECT_FALSE(has_line_with(d.text, ":halfv")) << d.text;
  EXPECT_TRUE(has_line_with(d.text, "slice(:v")) << d.text;
  EXPECT_TRUE(has_line_with(d.text, ":) [structure]")) << d.text;  // half:
  EXPECT_TRUE(has_line_with(d.text, "slice(1::2)")) << d.text;
}

TEST(DataflowDump, AttributeReadsAndGlobalsReadAsWritten) {
  Dumped d = dump_of("    y = x.weight\n    return y.to(torch.float32)\n");
  EXPECT_TRUE(has_line_with(d.text, "= v0.weight [attribute]")) << d.text;
  EXPECT_TRUE(has_line_with(d.text, "= global torch.float32 [attribute]")) << d.text;
}

TEST(DataflowDump, PayloadIsNotTakenForAnArgumentLabel) {
  Dumped d = dump_of("    return [t * 2 for t in x]\n");
  // The comprehension's kind is shown apart from the values it reads.
  EXPECT_TRUE(has_line_with(d.text, "opaque[ListComp](v0)")) << d.text;
}

TEST(DataflowDump, KeywordsAndLiteralsInline) {
  Dumped d = dump_of("    return torch.softmax(x, dim=-1)\n");
  EXPECT_TRUE(has_line_with(d.text, "softmax(v0, dim=") ) << d.text;
}

}  // namespace
}  // namespace npufuse::model

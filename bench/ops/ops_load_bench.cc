// How long `npufuse ops` spends loading its inputs: a docstring file the size
// of a real torch_npu release (200 entries of ~30 KB, or the file given as
// argv[1]) and the embedded catalog. The baseline is one pass of counting
// newlines over the same bytes, measured in the same run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "catalog/catalog.h"
#include "catalog/docstrings.h"
#include "frontend/lexer.h"
#include "util/file_io.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string synthetic_docs() {
  std::string body;
  while (body.size() < 30000) body += "参数说明: x (Tensor) 输入张量，shape为[B, S, H]，dtype为float16。\\n\n";
  std::string text = "import torch_npu\n\n";
  for (int i = 0; i < 200; ++i)
    text += "_add_torch_npu_docstr(\"npu_op_" + std::to_string(i) + "\", \"\"\"\n接口原型:\ntorch_npu.npu_op_" +
            std::to_string(i) + "(Tensor x, *, int dim=-1) -> Tensor\n" + body + "\"\"\")\n\n";
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace npufuse::catalog;
  std::string path = argc > 1 ? argv[1] : "synthetic";
  std::string text = argc > 1 ? npufuse::read_file(argv[1]) : synthetic_docs();

  auto t0 = Clock::now();
  size_t lines = std::count(text.begin(), text.end(), '\n');
  double baseline = ms_since(t0);

  t0 = Clock::now();
  size_t tokens = npufuse::frontend::tokenize(npufuse::frontend::SourceFile(path, text)).size();
  double lex_ms = ms_since(t0);

  t0 = Clock::now();
  DocstringFile docs = parse_docstring_file(path, text);
  size_t prototypes = 0;
  for (const auto& e : docs.entries) prototypes += !docstring_prototype(e.text, e.name).empty();
  double docs_ms = ms_since(t0);

  t0 = Clock::now();
  Catalog catalog = Catalog::load(embedded_catalog_files(), "catalog");
  double catalog_ms = ms_since(t0);

  std::printf("docstrings: %s, %.1f MB, %zu lines, %zu entries, %zu prototypes: %.1f ms (%.0fx a newline count, %.2f ms)\n",
              path.c_str(), text.size() / 1048576.0, lines, docs.entries.size(), prototypes, docs_ms,
              docs_ms / std::max(baseline, 1e-3), baseline);
  std::printf("  of which the lexer alone: %zu tokens, %.1f ms\n", tokens, lex_ms);
  std::printf("embedded catalog: %zu operators: %.1f ms\n", catalog.operators().size(), catalog_ms);
  return 0;
}

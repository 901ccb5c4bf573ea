// Prints the token stream of each file given, one token per line:
//   KIND start_line,start_col end_line,end_col
// (1-based lines, 0-based byte columns, like Python's tokenize module), so
// tools/compare_tokens.py can hold it against CPython's tokenizer.
#include <cstdio>
#include <exception>

#include "frontend/lexer.h"
#include "frontend/token_names.h"
#include "util/file_io.h"

int main(int argc, char** argv) {
  using namespace npufuse::frontend;
  int status = 0;
  for (int a = 1; a < argc; ++a) {
    try {
      SourceFile source(argv[a], npufuse::read_file(argv[a]));
      std::printf("FILE %s\n", argv[a]);
      for (const Token& t : tokenize(source)) {
        LineCol b = source.line_col(t.begin), e = source.line_col(t.end);
        std::printf("%.*s %d,%d %d,%d\n", static_cast<int>(token_kind_name(t.kind).size()),
                    token_kind_name(t.kind).data(), b.line, b.col, e.line, e.col);
      }
    } catch (const std::exception& e) {
      std::printf("ERROR %s\n", e.what());
      status = 1;
    }
  }
  return status;
}

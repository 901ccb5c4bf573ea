#pragma once
// One Python source file held in memory, with the line index that turns
// byte offsets into (line, column) the way CPython reports them:
// lines are 1-based, columns are 0-based UTF-8 byte offsets.
//
// The buffer is the file's bytes with a leading UTF-8 BOM removed (the BOM
// length is kept so that byte ranges can be mapped back to the file).
// CR and CRLF line ends are kept as they are; the lexer treats them as line
// ends, so rewrites preserve the file's own line-end style.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace npufuse::frontend {

struct LineCol {
  int line = 1;  // 1-based
  int col = 0;   // 0-based, in UTF-8 bytes
};

class SourceFile {
 public:
  // `path` is used in messages only. `bytes` is the raw file content.
  SourceFile(std::string path, std::string bytes);

  const std::string& path() const { return path_; }
  std::string_view text() const { return text_; }  // BOM-stripped
  uint32_t bom_length() const { return bom_length_; }

  LineCol line_col(uint32_t offset) const;
  // Byte offset of the start of 1-based `line`.
  uint32_t line_start(int line) const;
  // Number of lines, counting the empty line after a final line end (where
  // CPython puts ENDMARKER), so every offset's line has a line_start().
  int line_count() const { return static_cast<int>(line_starts_.size()); }

 private:
  std::string path_;
  std::string bytes_;
  std::string_view text_;
  uint32_t bom_length_ = 0;
  std::vector<uint32_t> line_starts_;
};

}  // namespace npufuse::frontend

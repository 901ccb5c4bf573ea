#include "frontend/source.h"

#include <algorithm>
#include <cstring>

namespace npufuse::frontend {

namespace {
constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";
}

SourceFile::SourceFile(std::string path, std::string bytes)
    : path_(std::move(path)), bytes_(std::move(bytes)) {
  text_ = bytes_;
  if (text_.substr(0, kUtf8Bom.size()) == kUtf8Bom) {
    bom_length_ = static_cast<uint32_t>(kUtf8Bom.size());
    text_.remove_prefix(kUtf8Bom.size());
  }
  // A line starts at offset 0 and after every LF, lone CR, or CRLF (the pair
  // counts as one line end). The empty line after a final line end counts
  // too: CPython places the end-of-file tokens there (line N+1, column 0).
  line_starts_.reserve(text_.size() / 32 + 1);
  line_starts_.push_back(0);
  const char* data = text_.data();
  const size_t n = text_.size();
  if (n == 0) return;
  if (!std::memchr(data, '\r', n)) {
    // LF only, as nearly every file is: memchr finds each line end many
    // bytes at a time (this was a tenth of `npufuse parse` byte by byte).
    for (const char* p = data; (p = static_cast<const char*>(std::memchr(p, '\n', n - (p - data)))); ++p)
      line_starts_.push_back(static_cast<uint32_t>(p - data + 1));
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    char c = data[i];
    if (c == '\n') {
      line_starts_.push_back(static_cast<uint32_t>(i + 1));
    } else if (c == '\r') {
      if (i + 1 < n && data[i + 1] == '\n') ++i;
      line_starts_.push_back(static_cast<uint32_t>(i + 1));
    }
  }
}

LineCol SourceFile::line_col(uint32_t offset) const {
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text_.size()));
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  int line = static_cast<int>(it - line_starts_.begin());  // >= 1: line_starts_[0] == 0
  return LineCol{line, static_cast<int>(offset - line_starts_[line - 1])};
}

uint32_t SourceFile::line_start(int line) const {
  if (line < 1) return 0;
  if (line > line_count()) return static_cast<uint32_t>(text_.size());
  return line_starts_[line - 1];
}

}  // namespace npufuse::frontend

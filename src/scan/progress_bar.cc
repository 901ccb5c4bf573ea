#include "scan/progress_bar.h"

#include <unistd.h>

namespace npufuse::scan {

bool is_terminal(std::FILE* stream) { return stream && isatty(fileno(stream)) == 1; }

ProgressBar::ProgressBar(std::FILE* stream, size_t total, bool enabled)
    : stream_(stream), total_(total), enabled_(enabled && stream != nullptr) {}

ProgressBar::~ProgressBar() { finish(); }

std::string ProgressBar::render(size_t done, size_t total, const std::string& name, size_t width) {
  size_t filled = total == 0 ? width : done * width / total;
  std::string line = "[" + std::string(filled, '#') + std::string(width - filled, '-') + "] ";
  std::string count = std::to_string(done) + "/" + std::to_string(total);
  std::string pad(std::to_string(total).size() * 2 + 1 - count.size(), ' ');
  line += pad + count + "  ";
  // Long folder names are cut from the left: the end of a path tells most.
  constexpr size_t kNameWidth = 40;
  line += name.size() > kNameWidth ? "..." + name.substr(name.size() - (kNameWidth - 3)) : name;
  return line;
}

void ProgressBar::advance(const std::string& name) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  ++done_;
  auto now = std::chrono::steady_clock::now();
  if (done_ < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  // \r returns to the line's start, \x1b[K clears what a longer line left.
  std::fprintf(stream_, "\r%s\x1b[K", render(done_, total_, name, 30).c_str());
  std::fflush(stream_);
}

void ProgressBar::finish() {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  if (finished_) return;
  finished_ = true;
  std::fprintf(stream_, "\r\x1b[K");
  std::fflush(stream_);
}

}  // namespace npufuse::scan

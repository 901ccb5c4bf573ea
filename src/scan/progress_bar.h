#pragma once
// A one-line progress bar for a scan, redrawn in place on a terminal:
//   [#########-----------]  45/100  llama
// Nothing is written when the stream is not a terminal (piped or redirected
// output stays clean). No Debian package offers a small C++ bar (Debian has
// no indicators library), so it is these few lines.
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <string>

namespace npufuse::scan {

// Whether `stream` is a terminal (isatty of its descriptor).
bool is_terminal(std::FILE* stream);

class ProgressBar {
 public:
  // Draws only when `enabled`; callers pass is_terminal(stream) unless told otherwise.
  ProgressBar(std::FILE* stream, size_t total, bool enabled);
  ~ProgressBar();

  // One more model done; safe to call from any worker thread. Redraws at most
  // about ten times a second, and always for the last one.
  void advance(const std::string& name);
  // Clears the bar's line so that what follows starts on a clean line.
  void finish();

  // The line for `done` of `total`, `width` characters of bar (for tests).
  static std::string render(size_t done, size_t total, const std::string& name, size_t width);

 private:
  std::FILE* stream_;
  size_t total_;
  bool enabled_;
  bool finished_ = false;
  size_t done_ = 0;
  std::chrono::steady_clock::time_point last_draw_{};
  std::mutex mutex_;
};

}  // namespace npufuse::scan

#include "scan/progress_bar.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace npufuse::scan {
namespace {

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  return out;
}

TEST(ProgressBar, RendersFilledShareCountAndName) {
  EXPECT_EQ(ProgressBar::render(5, 10, "llama", 10), "[#####-----]  5/10  llama");
  EXPECT_EQ(ProgressBar::render(10, 10, "x", 4), "[####] 10/10  x");
  std::string long_name(60, 'n');
  std::string line = ProgressBar::render(1, 2, long_name + "tail", 4);
  EXPECT_NE(line.find("...n"), std::string::npos);
  EXPECT_EQ(line.substr(line.size() - 4), "tail");
}

TEST(ProgressBar, AFileOrPipeIsNotATerminal) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(is_terminal(f));
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::FILE* p = fdopen(fds[1], "w");
  EXPECT_FALSE(is_terminal(p));
  std::fclose(p);
  close(fds[0]);
  std::fclose(f);
}

TEST(ProgressBar, APseudoTerminalIsATerminal) {
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) GTEST_SKIP() << "no pseudo-terminals here";
  int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(slave, 0);
  std::FILE* tty = fdopen(slave, "w");
  EXPECT_TRUE(is_terminal(tty));
  std::fclose(tty);
  close(master);
}

TEST(ProgressBar, DisabledWritesNothing) {
  std::FILE* f = std::tmpfile();
  {
    ProgressBar bar(f, 3, false);
    for (int i = 0; i < 3; ++i) bar.advance("m");
  }
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

TEST(ProgressBar, EnabledDrawsInPlaceAndClearsAtTheEnd) {
  std::FILE* f = std::tmpfile();
  {
    ProgressBar bar(f, 2, true);
    bar.advance("first");
    bar.advance("second");
    bar.finish();
  }
  std::string out = contents(f);
  EXPECT_NE(out.find("\r[##############################] 2/2  second"), std::string::npos) << out;
  EXPECT_EQ(out.find('\n'), std::string::npos);  // never scrolls the terminal
  EXPECT_EQ(out.substr(out.size() - 4), "\r\x1b[K");
  std::fclose(f);
}

}  // namespace
}  // namespace npufuse::scan

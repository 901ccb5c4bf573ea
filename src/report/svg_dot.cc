#include "report/svg_dot.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

namespace npufuse::report {
namespace {

// A dot double-quoted string: only '"' and '\' need escaping; line breaks
// would end the label, so they become spaces.
std::string dot_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return out + "\"";
}

std::string slurp_with_deadline(int fd, std::chrono::steady_clock::time_point deadline, bool& timed_out) {
  std::string out;
  char buf[8192];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      return out;
    }
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r == 0) {
      timed_out = true;
      return out;
    }
    if (r < 0) return out;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

// The page's status colours again, as dot attributes: older graphviz
// releases drop the class attribute, and the picture must not depend on it.
const char* status_colour(const std::string& status) {
  if (status == "candidate") return "#2e7d32";
  if (status == "candidate_with_prerequisites") return "#b26a00";
  if (status == "not_applicable") return "#c62828";
  if (status == "no_fused_op") return "#6a1b9a";
  return "#888888";
}

}  // namespace

std::string dot_source(const PictureGraph& graph, const CandidateMarks& marks) {
  std::string out =
      "digraph block {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fillcolor=\"#f4f4f4\", "
      "fontname=\"monospace\", fontsize=10, height=0.3];\n  edge [arrowsize=0.6];\n";
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const PictureNode& n = graph.nodes[i];
    std::string attrs = "label=" + dot_quoted(n.label) + ", tooltip=" + dot_quoted(n.detail);
    if (n.candidate >= 0 && static_cast<size_t>(n.candidate) < marks.size()) {
      const CandidateMark& m = marks[static_cast<size_t>(n.candidate)];
      attrs += ", URL=" + dot_quoted("#" + m.anchor) + ", class=" + dot_quoted("node chain st-" + m.status) +
               ", tooltip=" + dot_quoted(n.detail + " — " + m.title) + ", fillcolor=" + dot_quoted(status_colour(m.status)) +
               ", fontcolor=\"#ffffff\"";
    } else {
      attrs += ", class=\"node\"";
    }
    out += fmt::format("  n{} [{}];\n", i, attrs);
  }
  for (auto [from, to] : graph.edges) out += fmt::format("  n{} -> n{};\n", from, to);
  return out + "}\n";
}

std::string find_dot() {
  const char* path = std::getenv("PATH");
  if (!path) return {};
  std::string dirs = path;
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!dir.empty()) {
      std::string candidate = dir + "/dot";
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return {};
}

std::optional<std::string> dot_svg(const PictureGraph& graph, const CandidateMarks& marks, int timeout_ms) {
  std::string dot = find_dot();
  if (dot.empty()) return std::nullopt;
  // The graph goes through a file rather than stdin, so a large graph cannot
  // fill both pipes and stall the two processes.
  std::filesystem::path input =
      std::filesystem::temp_directory_path() / fmt::format("npufuse-dot-{}-{}.gv", ::getpid(), static_cast<const void*>(&graph));
  {
    std::ofstream f(input);
    f << dot_source(graph, marks);
    if (!f) return std::nullopt;
  }
  int out_pipe[2];
  if (::pipe(out_pipe) != 0) return std::nullopt;
  pid_t child = ::fork();
  if (child < 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return std::nullopt;
  }
  if (child == 0) {
    ::dup2(out_pipe[1], STDOUT_FILENO);
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, STDERR_FILENO);
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    std::string in = input.string();
    char* argv[] = {const_cast<char*>("dot"), const_cast<char*>("-Tsvg"), const_cast<char*>(in.c_str()), nullptr};
    ::execv(dot.c_str(), argv);
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  bool timed_out = false;
  std::string svg = slurp_with_deadline(out_pipe[0], std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms),
                                        timed_out);
  ::close(out_pipe[0]);
  if (timed_out) ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::error_code ignored;
  std::filesystem::remove(input, ignored);
  if (timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  size_t at = svg.find("<svg");
  if (at == std::string::npos) return std::nullopt;
  return "<div class=\"dot\">" + svg.substr(at) + "</div>";
}

}  // namespace npufuse::report

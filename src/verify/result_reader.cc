#include "verify/result_reader.h"

#include <fmt/format.h>

namespace npufuse::verify {
namespace {

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin == std::string::npos ? 0 : begin + 1));
}

std::string tail(const std::string& text, size_t n) { return text.size() <= n ? text : "..." + text.substr(text.size() - n); }

}  // namespace

std::optional<double> CheckResult::number(const char* key) const {
  if (!data.is_object() || !data.contains(key) || !data[key].is_number()) return std::nullopt;
  return data[key].get<double>();
}

std::string CheckResult::text(const char* key) const {
  if (!data.is_object() || !data.contains(key) || !data[key].is_string()) return "";
  return data[key].get<std::string>();
}

CheckResult read_result(const ProcessResult& run, const std::string& what) {
  CheckResult r;
  if (!run.start_error.empty()) {
    r.error = fmt::format("{}: could not start: {}", what, run.start_error);
    return r;
  }
  if (run.timed_out) {
    r.error = fmt::format("{}: timed out; stderr: {}", what, tail(run.err, 400));
    return r;
  }
  if (run.signal != 0) {
    r.error = fmt::format("{}: killed by signal {}{}; stderr: {}", what, run.signal,
                          run.signal == 9 ? " (SIGKILL: most likely out of memory)" : "", tail(run.err, 400));
    return r;
  }
  std::string line = last_line(run.out);
  try {
    r.data = nlohmann::ordered_json::parse(line);
  } catch (const nlohmann::json::parse_error&) {
    r.error = fmt::format("{}: exit {} without a JSON result; stderr: {}", what, run.exit_code, tail(run.err, 600));
    return r;
  }
  if (!r.data.is_object()) {
    r.error = fmt::format("{}: printed {} instead of a JSON object", what, line.substr(0, 80));
    r.data = nlohmann::ordered_json();
    return r;
  }
  if (r.data.contains("error") && r.data["error"].is_string()) r.error = r.data["error"].get<std::string>();
  r.passed = r.data.value("passed", false) && r.error.empty();
  return r;
}

}  // namespace npufuse::verify

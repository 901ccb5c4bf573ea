#include "catalog/torch_npu_discovery.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace npufuse::catalog {
namespace {

namespace fs = std::filesystem;

// Prints one directory per line; never imports torch_npu.
constexpr const char* kSitePackagesScript =
    "import site, sys\n"
    "dirs = []\n"
    "try:\n"
    "    dirs += site.getsitepackages()\n"
    "except Exception:\n"
    "    pass\n"
    "try:\n"
    "    dirs.append(site.getusersitepackages())\n"
    "except Exception:\n"
    "    pass\n"
    "dirs += [p for p in sys.path if p]\n"
    "print('\\n'.join(dirs))\n";

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool runnable(const std::string& interpreter) {
  if (interpreter.find('/') != std::string::npos) return ::access(interpreter.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && ::access((fs::path(dir) / interpreter).c_str(), X_OK) == 0) return true;
  return false;
}

std::vector<std::string> site_dirs(const std::string& interpreter) {
  std::vector<std::string> out;
  std::string command = shell_quote(interpreter) + " -c " + shell_quote(kSitePackagesScript) + " 2>/dev/null </dev/null";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return out;
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0 && text.size() < (1u << 20)) text.append(buf, n);
  ::pclose(pipe);
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line))
    if (!line.empty()) out.push_back(line);
  return out;
}

std::string read_small(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string text;
  std::getline(in, text, '\0');
  return text.substr(0, 1 << 20);
}

// `__version__ = '2.5.1.post2'` in version.py.
std::string version_from_python(const std::string& text) {
  size_t at = text.find("__version__");
  if (at == std::string::npos) return "";
  size_t q = text.find_first_of("'\"", at);
  size_t eol = text.find('\n', at);
  if (q == std::string::npos || (eol != std::string::npos && q > eol)) return "";
  size_t end = text.find(text[q], q + 1);
  return end == std::string::npos ? "" : text.substr(q + 1, end - q - 1);
}

// `Version: 2.5.1` in a dist-info METADATA file.
std::string version_from_metadata(const std::string& text) {
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("Version:", 0) == 0) {
      std::string v = line.substr(8);
      v.erase(0, v.find_first_not_of(" \t"));
      while (!v.empty() && (v.back() == '\r' || v.back() == ' ')) v.pop_back();
      return v;
    }
    if (line.empty()) break;  // end of the header block
  }
  return "";
}

}  // namespace

std::vector<std::string> python_interpreters() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("NPUFUSE_PYTHON")) {
    std::stringstream list(env);
    std::string item;
    while (std::getline(list, item, ':'))
      if (!item.empty()) out.push_back(item);
    return out;
  }
  return {"python3", "/usr/bin/python3", "python"};
}

std::string torch_npu_version_near(const std::string& docs_path) {
  fs::path package = fs::path(docs_path).parent_path();
  std::error_code ec;
  if (fs::exists(package / "version.py", ec)) {
    std::string v = version_from_python(read_small(package / "version.py"));
    if (!v.empty()) return v;
  }
  for (const auto& entry : fs::directory_iterator(package.parent_path(), ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("torch_npu-", 0) == 0 && name.size() > 10 && entry.path().extension() == ".dist-info") {
      std::string v = version_from_metadata(read_small(entry.path() / "METADATA"));
      if (!v.empty()) return v;
    }
  }
  return "";
}

std::optional<TorchNpuInstall> discover_torch_npu(std::vector<std::string>* asked) {
  for (const auto& interpreter : python_interpreters()) {
    if (!runnable(interpreter)) continue;
    if (asked) asked->push_back(interpreter);
    for (const auto& dir : site_dirs(interpreter)) {
      fs::path docs = fs::path(dir) / "torch_npu" / "_op_plugin_docs.py";
      std::error_code ec;
      if (fs::is_regular_file(docs, ec)) return TorchNpuInstall{docs.string(), torch_npu_version_near(docs.string()), interpreter};
    }
  }
  return std::nullopt;
}

}  // namespace npufuse::catalog

#include "synthetic_tree.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "util/file_io.h"

namespace npufuse::bench {

namespace fs = std::filesystem;

namespace {

struct SourceModel {
  std::string name;
  std::string text;
  std::string config;
  std::vector<std::string> classes;  // names the file defines with `class X`
};

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::vector<std::string> class_names(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = text.find("class "); at != std::string::npos; at = text.find("class ", at + 6)) {
    if (at != 0 && text[at - 1] != '\n') continue;
    size_t end = at + 6;
    while (end < text.size() && is_ident(text[end])) ++end;
    if (end > at + 6) out.push_back(text.substr(at + 6, end - at - 6));
  }
  return out;
}

// Every whole-word use of `from` becomes `to`.
std::string rename_word(const std::string& text, const std::string& from, const std::string& to) {
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  size_t last = 0;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + from.size())) {
    bool left = at == 0 || !is_ident(text[at - 1]);
    bool right = at + from.size() >= text.size() || !is_ident(text[at + from.size()]);
    if (!left || !right) continue;
    out.append(text, last, at - last);
    out += to;
    last = at + from.size();
  }
  out.append(text, last, std::string::npos);
  return out;
}

// Padding of about `bytes` bytes: comment paragraphs and small helpers
// (each helper a few tensor ops, as utility code in model files is).
std::string padding(size_t bytes, size_t seed) {
  std::string out = "\n\n";
  for (size_t k = 0; out.size() < bytes; ++k) {
    size_t n = seed * 31 + k;
    if (k % 2 == 0) {
      out += "# Notes on the layout of block " + std::to_string(n) +
             ": the hidden states keep their shape through the residual path,\n"
             "# and the projections below only ever change the last dimension.\n"
             "# Nothing in this paragraph is executed; it is here to vary the file size.\n\n";
    } else {
      out += "def _pad_helper_" + std::to_string(n) + "(x, scale=" + std::to_string(n % 7 + 1) +
             "):\n"
             "    y = x * scale + " + std::to_string(n % 5) + "\n"
             "    if y.dim() > 2:\n"
             "        y = y.flatten(0, 1)\n"
             "    return y.clamp(min=-" + std::to_string(n % 9 + 1) + ".0, max=" + std::to_string(n % 9 + 1) + ".0)\n\n\n";
    }
  }
  return out;
}

std::vector<SourceModel> read_models(const std::string& models_dir) {
  std::vector<SourceModel> models;
  for (const auto& entry : fs::directory_iterator(models_dir)) {
    fs::path py = entry.path() / "model.py", cfg = entry.path() / "config.json";
    if (!fs::is_regular_file(py) || !fs::is_regular_file(cfg)) continue;
    SourceModel m{entry.path().filename().string(), read_file(py.string()), read_file(cfg.string()), {}};
    m.classes = class_names(m.text);
    models.push_back(std::move(m));
  }
  std::sort(models.begin(), models.end(), [](const SourceModel& a, const SourceModel& b) { return a.name < b.name; });
  if (models.empty()) throw std::runtime_error(models_dir + ": no <name>/model.py with config.json");
  return models;
}

}  // namespace

TreeStats build_synthetic_tree(const std::string& models_dir, const std::string& root, size_t count) {
  std::vector<SourceModel> models = read_models(models_dir);
  TreeStats stats;
  for (size_t i = 0; i < count; ++i) {
    const SourceModel& m = models[i % models.size()];
    std::string tag = "V" + std::to_string(i);
    std::string text = m.text;
    for (const auto& c : m.classes) text = rename_word(text, c, c + tag);
    // 0 to ~32 KB of padding, spread over the folders: ~30 KB per file on average.
    text += padding((i * 7919) % 32768, i);
    std::string folder = "m" + std::to_string(i) + "_" + m.name;
    fs::path dir = fs::path(root) / folder;
    fs::create_directories(dir);
    write_file_atomic((dir / ("modeling_" + folder + ".py")).string(), text);
    write_file_atomic((dir / "config.json").string(), m.config);
    stats.files++;
    stats.bytes += text.size();
  }
  return stats;
}

}  // namespace npufuse::bench

#include "model/model_config.h"

#include <string_view>
#include <vector>

#include "frontend/diagnostic.h"
#include "util/file_io.h"

namespace npufuse::model {

namespace {

frontend::Diagnostic position_of(const std::string& path, const std::string& text, size_t byte, std::string msg) {
  frontend::Diagnostic d;
  d.path = path;
  d.line = 1;
  d.col = 1;
  for (size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++d.line;
      d.col = 1;
    } else {
      ++d.col;
    }
  }
  d.message = std::move(msg);
  return d;
}

// Python's json module writes non-finite floats as the bare words NaN,
// Infinity and -Infinity (HF configs carry them, e.g. Mamba-2's
// `time_step_limit`), which JSON does not have. Outside strings they are
// read as null: a value not known as a number. `moved` maps each byte of
// the result back to the text's, for error positions.
std::string without_non_finite(const std::string& text, std::vector<size_t>* moved) {
  std::string out;
  out.reserve(text.size());
  moved->clear();
  bool in_string = false;
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (in_string) {
      if (c == '\\' && i + 1 < text.size()) {
        out += text.substr(i, 2);
        moved->push_back(i);
        moved->push_back(i + 1);
        i += 2;
        continue;
      }
      if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else {
      for (std::string_view word : {std::string_view("-Infinity"), std::string_view("Infinity"), std::string_view("NaN")}) {
        if (text.compare(i, word.size(), word) == 0) {
          for (char n : std::string_view("null")) {
            out += n;
            moved->push_back(i);
          }
          i += word.size();
          goto next;
        }
      }
    }
    out += c;
    moved->push_back(i);
    ++i;
  next:;
  }
  return out;
}

}  // namespace

ModelConfig ModelConfig::load(const std::string& path) {
  std::string text = read_file(path);
  std::vector<size_t> moved;
  std::string json_text = without_non_finite(text, &moved);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte counts from 1; map it back to the file's own bytes.
    size_t byte = e.byte == 0 ? 0 : (e.byte - 1 < moved.size() ? moved[e.byte - 1] + 1 : text.size() + 1);
    throw frontend::SyntaxError(position_of(path, text, byte, "invalid JSON in config"));
  }
  if (!j.is_object()) throw frontend::SyntaxError(position_of(path, text, 1, "config must be a JSON object"));
  return from_json(std::move(j), path);
}

ModelConfig ModelConfig::from_json(nlohmann::json j, std::string origin) {
  ModelConfig c;
  c.loaded_ = true;
  c.origin_ = std::move(origin);
  c.root_ = std::move(j);
  return c;
}

namespace {

// The keys under which multimodal checkpoints nest their text model's config.
constexpr const char* kTextConfigKeys[] = {"text_config", "language_config", "llm_config"};

const nlohmann::json* find_in(const nlohmann::json& root, std::string_view dotted_key) {
  const nlohmann::json* cur = &root;
  size_t start = 0;
  while (start <= dotted_key.size()) {
    size_t dot = dotted_key.find('.', start);
    std::string part(dotted_key.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(part);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return cur;
}

}  // namespace

const nlohmann::json* ModelConfig::find(std::string_view dotted_key) const { return find_where(dotted_key, nullptr); }

std::string ModelConfig::nested_origin(std::string_view dotted_key) const {
  const char* nested = nullptr;
  find_where(dotted_key, &nested);
  return nested ? nested : "";
}

const nlohmann::json* ModelConfig::find_where(std::string_view dotted_key, const char** nested_key) const {
  if (!loaded_) return nullptr;
  if (const nlohmann::json* j = find_in(root_, dotted_key)) return j;
  for (const char* nested : kTextConfigKeys) {
    auto it = root_.find(nested);
    if (it == root_.end() || !it->is_object()) continue;
    if (const nlohmann::json* j = find_in(*it, dotted_key)) {
      if (nested_key) *nested_key = nested;
      return j;
    }
  }
  return nullptr;
}

bool ModelConfig::has_sub_configs() const {
  if (!loaded_) return false;
  for (const auto& [key, value] : root_.items())
    if (value.is_object() && value.contains("model_type")) return true;
  return false;
}

}  // namespace npufuse::model

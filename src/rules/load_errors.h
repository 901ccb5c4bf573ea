#pragma once
// Errors found while loading rule files. Loading keeps going after an error so
// that one run reports every problem, each as "file:line:col: message".
#include <string>
#include <vector>

#include "model/source_set.h"

namespace npufuse::rules {

class LoadErrors {
 public:
  // At a node of `file`: CPython's 0-based column becomes a 1-based one for people.
  void at(const model::ModelFile& file, const frontend::ast::Node* node, const std::string& message) {
    int line = node ? node->lineno : 1;
    int col = node ? node->col_offset + 1 : 1;
    at_line(file.path, line, col, message);
  }
  void at_line(const std::string& path, int line, int col, const std::string& message) {
    messages_.push_back(path + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + message);
  }
  void raw(std::string message) { messages_.push_back(std::move(message)); }
  // Appends another collection's messages, in their order.
  void take(LoadErrors&& other) {
    for (std::string& m : other.messages_) messages_.push_back(std::move(m));
  }

  bool empty() const { return messages_.empty(); }
  size_t size() const { return messages_.size(); }
  // One message per line.
  std::string joined() const {
    std::string out;
    for (const auto& m : messages_) out += (out.empty() ? "" : "\n") + m;
    return out;
  }

 private:
  std::vector<std::string> messages_;
};

}  // namespace npufuse::rules

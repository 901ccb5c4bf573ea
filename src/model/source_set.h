#pragma once
// The Python files of one model, parsed, with the names they define.
//
// A model is usually a directory (modeling_x.py next to configuration_x.py)
// whose files import each other with relative imports. Loading starts from
// the paths the user gave and pulls in every sibling file reached through
// `from .name import ...`; absolute and out-of-tree imports stay external and
// are only remembered as aliases (`nn` -> `torch.nn`).
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/ast.h"
#include "frontend/parser.h"

namespace npufuse::model {

namespace ast = frontend::ast;
using frontend::Span;

// A place in the model's source, for people: path and 1-based lines.
struct SourceSpan {
  std::string file;
  int line = 0;
  int end_line = 0;

  std::string str() const { return file + ":" + std::to_string(line); }
};

struct ModelFile {
  std::unique_ptr<frontend::ParsedFile> parsed;
  std::string path;
  // Local name -> dotted name it stands for, from the file's imports
  // (`import torch.nn as nn` gives nn -> torch.nn; `from torch import nn`
  // gives the same; `from .configuration import Cfg` gives Cfg -> .configuration.Cfg).
  std::map<std::string, std::string, std::less<>> aliases;

  std::string_view text_of(const ast::Node* n) const;
  SourceSpan span_of(const ast::Node* n) const;
};

struct ClassDecl {
  const ast::ClassDef* node = nullptr;
  const ModelFile* file = nullptr;
};

struct FunctionDecl {
  const ast::FunctionDef* node = nullptr;
  const ModelFile* file = nullptr;
};

struct ConstantDecl {
  const ast::expr* value = nullptr;
  const ModelFile* file = nullptr;
};

class SourceSet {
 public:
  // Each path is a .py file or a directory (its *.py files, sorted). Throws
  // frontend::SyntaxError or FileError on the first file that fails.
  static SourceSet load(const std::vector<std::string>& paths);
  // For tests: in-memory files, no import following.
  static SourceSet from_texts(const std::vector<std::pair<std::string, std::string>>& files);

  const std::vector<std::unique_ptr<ModelFile>>& files() const { return files_; }
  const std::vector<ClassDecl>& classes() const { return classes_; }

  // Lookups by simple name over all files; the first definition wins, as the
  // files are searched in load order (the user's own files first).
  const ClassDecl* find_class(std::string_view name) const;
  const FunctionDecl* find_function(std::string_view name) const;
  const ConstantDecl* find_constant(std::string_view name) const;

  // The dotted name an expression like `nn.Linear` or `F.silu` stands for in
  // `file` ("torch.nn.Linear", "torch.nn.functional.silu"); a local class or
  // function keeps its own name; empty when the expression is not a dotted name.
  std::string qualified_name(const ModelFile& file, const ast::expr* e) const;

  // model::training_only_helpers(*this), worked out on first use and kept:
  // every graph built for the model asks (defined in loss_helpers.cc).
  const std::set<std::string>& training_only() const;

 private:
  void add_file(std::unique_ptr<ModelFile> f);
  void index(const ModelFile& f);

  std::vector<std::unique_ptr<ModelFile>> files_;
  std::vector<ClassDecl> classes_;
  std::map<std::string, ClassDecl, std::less<>> class_index_;
  std::map<std::string, FunctionDecl, std::less<>> function_index_;
  std::map<std::string, ConstantDecl, std::less<>> constant_index_;
  mutable std::optional<std::set<std::string>> training_only_;
};

// The dotted text of a Name/Attribute chain (`self.q_proj.weight`), or empty.
std::string dotted_name(const ast::expr* e);

// Visits, once each, the module-level functions of `sources` whose names
// `called()` returns, and then those named by what `visit` found in them, until
// no new name appears: the helpers a set of methods reaches by name.
void visit_reached_functions(const SourceSet& sources, const std::function<std::set<std::string>()>& called,
                             const std::function<void(const FunctionDecl&, const std::string& name)>& visit);

}  // namespace npufuse::model

#include "catalog/docstrings.h"

#include <fmt/format.h>

#include <filesystem>

#include "frontend/diagnostic.h"
#include "frontend/lexer.h"
#include "frontend/literal.h"
#include "util/file_io.h"
#include "util/text_lines.h"

namespace npufuse::catalog {
namespace {

using frontend::Kw;
using frontend::Op;
using frontend::Token;
using frontend::TokenKind;

constexpr std::string_view kRegisterCall = "_add_torch_npu_docstr";

bool is_trivia(const Token& t) {
  return t.kind == TokenKind::Comment || t.kind == TokenKind::Nl || t.kind == TokenKind::Continuation ||
         t.kind == TokenKind::Newline || t.kind == TokenKind::Indent || t.kind == TokenKind::Dedent;
}

// One argument of the call: the tokens between two top-level commas.
struct Argument {
  std::vector<const Token*> tokens;
};

class EntryScanner {
 public:
  EntryScanner(const frontend::SourceFile& source, const std::vector<Token>& tokens, DocstringFile& out)
      : source_(source), out_(out) {
    for (const Token& t : tokens)
      if (!is_trivia(t)) significant_.push_back(&t);
  }

  void run() {
    for (size_t i = 0; i < significant_.size(); ++i) {
      const Token& t = *significant_[i];
      if (t.kind != TokenKind::Name || text(t) != kRegisterCall) continue;
      if (i > 0) {
        const Token& prev = *significant_[i - 1];
        if (prev.kind == TokenKind::Keyword && prev.kw == Kw::Def) continue;  // the helper's own definition
        if (prev.kind == TokenKind::Op && prev.op == Op::Dot) continue;
      }
      if (i + 1 >= significant_.size() || significant_[i + 1]->op != Op::LPar) continue;  // a reference, not a call
      i = read_call(i);
    }
  }

 private:
  std::string_view text(const Token& t) const { return frontend::token_text(source_, t); }
  int line_of(const Token& t) const { return source_.line_col(t.begin).line; }

  void skip(const Token& call, const std::string& why) {
    out_.skipped.push_back(fmt::format("{}:{}: skipped a malformed {} call: {}", out_.path, line_of(call),
                                       kRegisterCall, why));
  }

  // Reads the call whose name is significant_[at]; returns the index of its ')'.
  size_t read_call(size_t at) {
    const Token& call = *significant_[at];
    std::vector<Argument> args(1);
    int depth = 0;
    size_t i = at + 1;
    for (; i < significant_.size(); ++i) {
      const Token& t = *significant_[i];
      if (t.kind == TokenKind::EndMarker) break;
      if (t.kind == TokenKind::Op) {
        if (t.op == Op::LPar || t.op == Op::LSqb || t.op == Op::LBrace) {
          if (depth++ == 0) continue;
        } else if (t.op == Op::RPar || t.op == Op::RSqb || t.op == Op::RBrace) {
          if (--depth == 0) break;
        } else if (t.op == Op::Comma && depth == 1) {
          args.emplace_back();
          continue;
        }
      }
      args.back().tokens.push_back(&t);
    }
    if (i >= significant_.size() || significant_[i]->kind == TokenKind::EndMarker) {
      skip(call, "the call is not closed");
      return i;
    }
    if (!args.empty() && args.back().tokens.empty() && args.size() > 1) args.pop_back();  // trailing comma
    if (args.size() != 2) {
      skip(call, fmt::format("expected 2 arguments (name, docstring), found {}",
                             args.size() == 1 && args[0].tokens.empty() ? 0 : args.size()));
      return i;
    }
    std::string decoded[2];
    for (int k = 0; k < 2; ++k) {
      if (!decode_string_argument(args[k], decoded[k])) {
        skip(call, fmt::format("argument {} is not a plain string literal", k + 1));
        return i;
      }
    }
    out_.entries.push_back({std::move(decoded[0]), std::move(decoded[1]), line_of(call)});
    return i;
  }

  // Adjacent string literals concatenate, as in Python; bytes and f-strings
  // are not docstrings.
  bool decode_string_argument(const Argument& arg, std::string& out) {
    if (arg.tokens.empty()) return false;
    for (const Token* t : arg.tokens) {
      if (t->kind != TokenKind::String) return false;
      auto prefix = frontend::string_prefix(text(*t));
      if (prefix.bytes || prefix.fstring) return false;
    }
    for (const Token* t : arg.tokens) out += frontend::to_utf8(frontend::decode_str_token(source_, *t));
    return true;
  }

  const frontend::SourceFile& source_;
  DocstringFile& out_;
  std::vector<const Token*> significant_;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

int paren_balance(std::string_view s) {
  int depth = 0;
  for (char c : s) depth += (c == '(') - (c == ')');
  return depth;
}

// Prototype lines come as `torch_npu.name(`, `name(`, `custom.name(` or
// `func: name(`; the returned view starts at the name.
std::string_view strip_prototype_prefix(std::string_view line) {
  line = trim(line);
  for (std::string_view prefix : {"func:", "torch_npu.", "custom.", "torch.ops.npu."}) {
    if (line.substr(0, prefix.size()) == prefix) line = trim(line.substr(prefix.size()));
  }
  return line;
}

// Joins lines from `first` until the parentheses close (and a `->` return
// type on the following line, if any).
std::string collect_prototype(const std::vector<std::string_view>& lines, size_t first) {
  std::string out;
  int depth = 0;
  bool opened = false;
  for (size_t i = first; i < lines.size() && i < first + 40; ++i) {
    std::string_view line = trim(lines[i]);
    if (i == first) {
      line = strip_prototype_prefix(line);
      out = "torch_npu.";
    }
    if (i != first) out += ' ';
    out += line;
    depth += paren_balance(line);
    opened = opened || line.find('(') != std::string_view::npos;
    if (opened && depth <= 0) {
      if (out.find("->") == std::string::npos && i + 1 < lines.size() && trim(lines[i + 1]).substr(0, 2) == "->")
        out += " " + std::string(trim(lines[i + 1]));
      return out;
    }
  }
  return "";
}

bool starts_prototype(std::string_view line, std::string_view name) {
  line = strip_prototype_prefix(line);
  return line.substr(0, name.size()) == name && line.substr(name.size()).substr(0, 1) == "(";
}

}  // namespace

const DocstringEntry* DocstringFile::find(std::string_view name) const {
  for (auto it = entries.rbegin(); it != entries.rend(); ++it)
    if (it->name == name) return &*it;
  return nullptr;
}

DocstringFile parse_docstring_file(const std::string& path, std::string bytes) {
  if (bytes.size() > kMaxDocstringFileBytes)
    throw DocstringError(fmt::format("{}: {} bytes is too large for a docstring file (limit {} MB)", path,
                                     bytes.size(), kMaxDocstringFileBytes >> 20));
  if (bytes.find('\0') != std::string::npos)
    throw DocstringError(fmt::format("{}: not a Python file (it contains NUL bytes)", path));
  DocstringFile out;
  out.path = path;
  frontend::SourceFile source(path, std::move(bytes));
  std::vector<Token> tokens;
  try {
    tokens = frontend::tokenize(source);
    EntryScanner(source, tokens, out).run();
  } catch (const frontend::SyntaxError& e) {
    throw DocstringError(fmt::format("{} (not a readable Python file)", e.diagnostic().format()));
  }
  if (out.entries.empty())
    throw DocstringError(fmt::format("{}: no {}(\"name\", \"\"\"...\"\"\") entries: not a torch_npu "
                                     "_op_plugin_docs.py file",
                                     path, kRegisterCall));
  return out;
}

DocstringFile read_docstring_file(const std::string& path) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxDocstringFileBytes)
    throw DocstringError(fmt::format("{}: {} bytes is too large for a docstring file (limit {} MB)", path, size,
                                     kMaxDocstringFileBytes >> 20));
  std::string bytes;
  try {
    bytes = read_file(path, kMaxDocstringFileBytes + 1);
  } catch (const FileError& e) {
    throw DocstringError(e.what());
  }
  return parse_docstring_file(path, std::move(bytes));
}

std::string docstring_prototype(std::string_view text, std::string_view name) {
  auto lines = split_lines(text);
  // Newer style: the prototype follows the 接口原型 (or 函数原型) heading;
  // fences and blank lines in between are skipped.
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find("接口原型") == std::string_view::npos && lines[i].find("函数原型") == std::string_view::npos)
      continue;
    for (size_t j = i + 1; j < lines.size() && j < i + 8; ++j) {
      if (starts_prototype(lines[j], name)) return collect_prototype(lines, j);
    }
  }
  // Older style: the first non-empty line is the prototype.
  for (size_t i = 0; i < lines.size(); ++i) {
    if (trim(lines[i]).empty()) continue;
    if (starts_prototype(lines[i], name)) return collect_prototype(lines, i);
    break;
  }
  return "";
}

}  // namespace npufuse::catalog

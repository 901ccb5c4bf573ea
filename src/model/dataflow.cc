#include "model/dataflow.h"

#include <fmt/format.h>

namespace npufuse::model {

const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::Input: return "input";
    case OpClass::Constant: return "constant";
    case OpClass::Compute: return "compute";
    case OpClass::Cast: return "cast";
    case OpClass::View: return "view";
    case OpClass::Slice: return "slice";
    case OpClass::Module: return "module";
    case OpClass::Call: return "call";
    case OpClass::Attribute: return "attribute";
    case OpClass::Structure: return "structure";
  }
  return "?";
}

std::vector<int> FunctionDataflow::consumers(int v) const {
  std::vector<int> out;
  for (const DataflowOp& op : ops)
    for (int in : op.inputs)
      if (in == v) {
        out.push_back(op.id);
        break;
      }
  return out;
}

std::vector<std::vector<int>> FunctionDataflow::consumers_by_value() const {
  std::vector<std::vector<int>> out(values.size());
  for (const DataflowOp& op : ops)
    for (int in : op.inputs) {
      if (in < 0 || static_cast<size_t>(in) >= out.size()) continue;
      std::vector<int>& readers = out[static_cast<size_t>(in)];
      if (readers.empty() || readers.back() != op.id) readers.push_back(op.id);  // an op reading it twice is one reader
    }
  return out;
}

std::vector<int> FunctionDataflow::unresolved_calls() const {
  std::vector<int> out;
  for (const DataflowOp& op : ops)
    if (op.unresolved) out.push_back(op.id);
  return out;
}

namespace {

// Which of a slice's lower/upper/step are written, from its source text
// (`: d // 2` has only an upper bound); colons inside brackets do not count.
std::vector<bool> slice_parts(const std::string& text) {
  std::vector<std::string> parts(1);
  int depth = 0;
  for (char c : text) {
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ':' && depth == 0) parts.emplace_back();
    else parts.back() += c;
  }
  std::vector<bool> present;
  for (const std::string& part : parts) present.push_back(part.find_first_not_of(" \t\n") != std::string::npos);
  return present;
}

class OpPrinter {
 public:
  explicit OpPrinter(const FunctionDataflow& g) : g_(g) {}

  // A value as an argument: literals inline (pow(v1, 2) rather than pow(v1, v2)).
  std::string arg(int v) const {
    const DataflowOp& p = g_.producer_of(v);
    if (p.cls == OpClass::Constant && !p.attrs.empty()) return literal(p.attrs[0]);
    return fmt::format("v{}", v);
  }

  // A literal on one line: a message string spread over lines (implicit
  // concatenation) would otherwise break the one-op-per-line form.
  static std::string literal(const std::string& text) {
    std::string out;
    bool space = false;
    for (char c : text) {
      bool blank = c == '\n' || c == '\r' || c == '\t' || c == ' ';
      if (blank && !space && !out.empty()) out += ' ';
      space = blank;
      if (!blank) out += c;
    }
    constexpr size_t kMax = 48;
    if (out.size() > kMax) out = out.substr(0, kMax - 3) + "...";
    return out;
  }

  // The right-hand side of one op.
  std::string expression(const DataflowOp& op) const {
    if (op.name == "slice" && op.cls == OpClass::Structure && !op.attrs.empty()) return slice(op);
    if (op.cls == OpClass::Attribute) {
      if (op.name == "global" && !op.attrs.empty()) return "global " + op.attrs[0];
      if (op.name == "getattr" && op.inputs.size() == 1 && !op.attrs.empty()) return arg(op.inputs[0]) + "." + op.attrs[0];
      if (op.inputs.empty() && op.attrs.empty()) return op.name;  // self.q_proj.weight
    }
    if (!labelled(op)) {
      // attrs are a payload (a literal's text, a parameter's name, an expression kind), not argument labels.
      std::string payload;
      for (const std::string& a : op.attrs) payload += (payload.empty() ? "" : ", ") + literal(a);
      if (op.inputs.empty()) return fmt::format("{}({})", op.name, payload);
      return fmt::format("{}[{}]({})", op.name, payload, plain_args(op));
    }
    std::string ins;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      std::string kw = i < op.attrs.size() ? op.attrs[i] : "";
      ins += (ins.empty() ? "" : ", ") + kw + arg(op.inputs[i]);
    }
    for (size_t i = op.inputs.size(); i < op.attrs.size(); ++i) ins += (ins.empty() ? "" : ", ") + op.attrs[i];
    return fmt::format("{}({})", op.name, ins);
  }

 private:
  static bool labelled(const DataflowOp& op) {
    for (const std::string& a : op.attrs)
      if (!a.empty() && a.back() != '=' && a != "*" && a != "**") return false;
    return true;
  }

  std::string plain_args(const DataflowOp& op) const {
    std::string out;
    for (int v : op.inputs) out += (out.empty() ? "" : ", ") + arg(v);
    return out;
  }

  // Python's own notation, the bounds replaced by their values: slice(:v78), slice(1::2).
  std::string slice(const DataflowOp& op) const {
    std::vector<bool> present = slice_parts(op.attrs[0]);
    size_t next = 0;
    std::string out;
    for (size_t i = 0; i < present.size(); ++i) {
      if (i > 0) out += ':';
      if (present[i] && next < op.inputs.size()) out += arg(op.inputs[next++]);
    }
    return "slice(" + out + ")";
  }

  const FunctionDataflow& g_;
};

}  // namespace

std::vector<std::string> condition_clauses(const std::string& condition) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < condition.size(); ++i) {
    char ch = condition[i];
    if (ch == '(' || ch == '[' || ch == '{') ++depth;
    if (ch == ')' || ch == ']' || ch == '}') --depth;
    if (depth == 0 && condition.compare(i, 5, " and ") == 0) {
      out.push_back(condition.substr(start, i - start));
      start = i + 5;
      i += 4;
    }
  }
  if (!condition.empty()) out.push_back(condition.substr(start));
  return out;
}

std::string FunctionDataflow::dump() const {
  OpPrinter printer(*this);
  std::string out;
  for (const DataflowOp& op : ops) {
    std::string outs;
    for (int v : op.outputs) outs += (outs.empty() ? "" : ", ") + fmt::format("v{}", v);
    std::string tags = op_class_name(op.cls);
    if (op.in_place) tags += ", in-place";
    if (op.unresolved) tags += ", unresolved: " + op.unresolved_reason;
    if (op.unrolled) tags += fmt::format(", copy {}", op.unrolled);
    out += fmt::format("{} = {} [{}] @{}{}\n", outs.empty() ? "_" : outs, printer.expression(op), tags, op.line,
                       op.condition.empty() ? "" : " if " + op.condition);
  }
  std::string rets;
  for (int v : returns) rets += (rets.empty() ? "" : ", ") + fmt::format("v{}", v);
  if (!rets.empty()) out += "return " + rets + "\n";
  return out;
}

}  // namespace npufuse::model

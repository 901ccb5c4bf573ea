#include "match/value_view.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <algorithm>

#include "match/op_signature.h"

namespace npufuse::match {

int through_packing(const model::FunctionDataflow& g, int v) {
  for (;;) {
    const model::DataflowOp& op = g.producer_of(v);
    if (op.cls != model::OpClass::Structure && op.cls != model::OpClass::Slice) return v;
    int index = -1;
    int packed = -1;
    if (op.name == "unpack" && op.inputs.size() == 1) {
      index = static_cast<int>(std::find(op.outputs.begin(), op.outputs.end(), v) - op.outputs.begin());
      packed = op.inputs[0];
    } else if (op.name == "getitem" && op.inputs.size() == 2) {
      auto k = constant_of(g, op.inputs[1]);
      if (!k || !k->numeric || k->number < 0 || k->number != static_cast<int>(k->number)) return v;
      index = static_cast<int>(k->number);
      packed = op.inputs[0];
    } else {
      return v;
    }
    const model::DataflowOp& seq = g.producer_of(packed);
    if ((seq.name != "tuple" && seq.name != "list") || index < 0 || static_cast<size_t>(index) >= seq.inputs.size()) return v;
    v = seq.inputs[static_cast<size_t>(index)];
  }
}

int through_casts(const model::FunctionDataflow& g, int v, std::vector<int>* passed) {
  while (v >= 0) {
    v = through_packing(g, v);
    const model::DataflowOp& op = g.producer_of(v);
    if (op.cls != model::OpClass::Cast || op.inputs.empty()) break;
    if (passed) passed->push_back(op.id);
    v = op.inputs[0];
  }
  return v;
}

bool first_of_nonzero_row(const model::FunctionDataflow& g, const model::DataflowOp& op) {
  if (op.cls != model::OpClass::Slice || op.name != "getitem" || op.inputs.size() != 2) return false;
  auto k = constant_of(g, op.inputs[1]);
  if (!k || !k->numeric || k->number != 0) return false;
  const model::DataflowOp& loop = g.producer_of(op.inputs[0]);
  if (loop.name != "iterate" || loop.inputs.empty()) return false;
  return g.producer_of(through_casts(g, loop.inputs[0])).name == "nonzero";
}

int through_layout(const model::FunctionDataflow& g, int v, std::vector<int>* passed) {
  while (v >= 0) {
    v = through_packing(g, v);
    const model::DataflowOp& op = g.producer_of(v);
    bool skip = (op.cls == model::OpClass::Cast || is_layout_view(op.name)) && !op.inputs.empty() && op.outputs.size() == 1;
    if (!skip) break;
    if (passed) passed->push_back(op.id);
    v = op.inputs[0];
  }
  return v;
}

bool ConstantValue::operator==(const ConstantValue& o) const {
  if (numeric != o.numeric) return false;
  if (!numeric) return text == o.text;
  if (number == o.number) return true;
  return std::fabs(number - o.number) <= 1e-12 * std::max(std::fabs(number), std::fabs(o.number));
}

std::string ConstantValue::str() const { return numeric ? fmt::format("{}", number) : text; }

std::optional<ConstantValue> constant_of(const model::FunctionDataflow& g, int v) {
  v = through_casts(g, v);
  const model::DataflowOp& op = g.producer_of(v);
  if (op.name == "neg" && op.inputs.size() == 1) {
    auto inner = constant_of(g, op.inputs[0]);
    if (!inner || !inner->numeric) return std::nullopt;
    inner->number = -inner->number;
    return inner;
  }
  if (op.cls != model::OpClass::Constant || op.attrs.empty()) return std::nullopt;
  ConstantValue c;
  c.text = op.attrs[0];
  std::string digits;
  for (char ch : c.text)
    if (ch != '_') digits += ch;
  char* end = nullptr;
  double d = std::strtod(digits.c_str(), &end);
  if (!digits.empty() && end == digits.c_str() + digits.size() && (std::isdigit(static_cast<unsigned char>(digits[0])) || digits[0] == '.')) {
    c.numeric = true;
    c.number = d;
  }
  return c;
}

namespace {

// The graph whose ops where() names by placeholder on this thread, or null.
thread_local const model::FunctionDataflow* symbolic_graph = nullptr;

// Placeholder text: a separator byte no source text holds, the op id, another one.
constexpr char kPlaceOpen = '\x1f';
constexpr char kPlaceClose = '\x1e';

std::string place_text(const model::DataflowOp& op) {
  std::string file = op.file ? op.file->path : "?";
  if (auto slash = file.rfind('/'); slash != std::string::npos) file = file.substr(slash + 1);
  return fmt::format("{}:{}", file, op.line);
}

}  // namespace

std::string where(const model::DataflowOp& op) {
  if (symbolic_graph) {
    const auto& ops = symbolic_graph->ops;
    if (!ops.empty() && &op >= ops.data() && &op < ops.data() + ops.size())
      return fmt::format("{}{}{}", kPlaceOpen, &op - ops.data(), kPlaceClose);
  }
  return place_text(op);
}

SymbolicPlaces::SymbolicPlaces(const model::FunctionDataflow& g) : previous_(symbolic_graph) { symbolic_graph = &g; }

SymbolicPlaces::~SymbolicPlaces() { symbolic_graph = previous_; }

std::string resolve_places(const std::string& text, const model::FunctionDataflow& g) {
  size_t open = text.find(kPlaceOpen);
  if (open == std::string::npos) return text;
  std::string out;
  out.reserve(text.size() + 16);
  size_t last = 0;
  for (; open != std::string::npos; open = text.find(kPlaceOpen, open + 1)) {
    // Only an open byte, digits and a close byte are a placeholder; any other
    // use of the byte (a model literal holding it) stays as written.
    size_t close = open + 1;
    size_t id = 0;
    while (close < text.size() && std::isdigit(static_cast<unsigned char>(text[close])))
      id = id * 10 + static_cast<size_t>(text[close++] - '0');
    if (close == open + 1 || close >= text.size() || text[close] != kPlaceClose) continue;
    out.append(text, last, open - last);
    out += id < g.ops.size() ? place_text(g.ops[id]) : "?";
    last = close + 1;
    open = close;
  }
  out.append(text, last, std::string::npos);
  return out;
}

std::string value_spelling(const model::FunctionDataflow& g, int v) {
  const model::DataflowOp& producer = g.producer_of(v);
  const std::string& name = g.values[static_cast<size_t>(v)].name;
  if (producer.cls == model::OpClass::Attribute && producer.inputs.empty()) return producer.name;
  if (producer.cls == model::OpClass::Constant && !producer.attrs.empty()) return producer.attrs[0];
  return !name.empty() ? name : describe_op(producer);
}

std::string describe_op(const model::DataflowOp& op) {
  std::string name = op.name;
  if ((op.name == "global" || op.name == "getattr") && !op.attrs.empty()) name += " " + op.attrs[0];
  if (op.cls == model::OpClass::Constant && !op.attrs.empty()) return "constant " + op.attrs[0];
  if (op.cls == model::OpClass::Input && !op.attrs.empty()) return "input " + op.attrs[0];
  if (op.cls == model::OpClass::Attribute && op.inputs.empty() && op.name != "global") return op.name;
  return name + "(...)";
}

}  // namespace npufuse::match

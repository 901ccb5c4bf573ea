#include "model/op_names.h"

#include <map>

namespace npufuse::model {

namespace {

// Spellings that differ from the canonical name; everything else is its own
// canonical name once module prefixes and the in-place underscore are gone.
const std::map<std::string, std::string, std::less<>>& synonyms() {
  static const std::map<std::string, std::string, std::less<>> table = {
      {"square", "pow"},
      {"float_power", "pow"},
      {"multiply", "mul"},
      {"divide", "div"},
      {"true_divide", "div"},
      {"subtract", "sub"},
      {"negative", "neg"},
      {"mm", "matmul"},
      {"bmm", "matmul"},
      {"swish", "silu"},
      {"SiLU", "silu"},
      {"GELU", "gelu"},
      {"ReLU", "relu"},
      {"Softmax", "softmax"},
      {"scaled_dot_product_attention", "sdpa"},
      {"concat", "cat"},
      {"concatenate", "cat"},
      {"arctan", "atan"},
      {"clip", "clamp"},
      {"moveaxis", "movedim"},
      {"swapaxes", "transpose"},
      {"swapdims", "transpose"},
      {"greater", "gt"},
      {"less", "lt"},
      {"type", "to"},       // x.type(dtype) is a cast
      {"type_as", "to"},
      {"float", "to"},
      {"half", "to"},
      {"bfloat16", "to"},
      {"double", "to"},
      {"int", "to"},
      {"long", "to"},
      {"bool", "to"},
  };
  return table;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

CanonicalOp canonical_call(std::string_view name) {
  static constexpr std::string_view prefixes[] = {"torch.nn.functional.", "torch.Tensor.", "torch.linalg.",
                                                  "torch.special.", "torch.nn.", "torch.", "math.", "F.", "nn."};
  for (std::string_view p : prefixes) {
    if (starts_with(name, p)) {
      name.remove_prefix(p.size());
      break;
    }
  }
  CanonicalOp op;
  std::string s(name);
  // x.add_(y) is in place; dunder names and names that are only underscores stay as they are.
  if (s.size() > 1 && s.back() == '_' && !(s.size() > 2 && s[s.size() - 2] == '_')) {
    s.pop_back();
    op.in_place = true;
  }
  auto it = synonyms().find(s);
  op.name = it == synonyms().end() ? s : it->second;
  return op;
}

std::string canonical_binop(frontend::ast::operator_ op) {
  using frontend::ast::operator_;
  switch (op) {
    case operator_::Add: return "add";
    case operator_::Sub: return "sub";
    case operator_::Mult: return "mul";
    case operator_::MatMult: return "matmul";
    case operator_::Div: return "div";
    case operator_::Mod: return "remainder";
    case operator_::Pow: return "pow";
    case operator_::LShift: return "bitwise_left_shift";
    case operator_::RShift: return "bitwise_right_shift";
    case operator_::BitOr: return "bitwise_or";
    case operator_::BitXor: return "bitwise_xor";
    case operator_::BitAnd: return "bitwise_and";
    case operator_::FloorDiv: return "floor_divide";
  }
  return "?";
}

bool swaps_seq_and_heads(std::string_view op, std::string_view axes) {
  if (op == "transpose") return axes == "1,2" || axes == "2,1";
  if (op == "permute") return axes == "0,2,1,3";
  return false;
}

}  // namespace npufuse::model
